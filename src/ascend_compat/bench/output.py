"""A benchmark report as a table, CSV rows or a PNG chart; files are written atomically."""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any, Callable, Optional

from ascend_compat import _atomic
from ascend_compat.bench._common import BenchError


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _fingerprint_line(fp: dict[str, Any]) -> str:
    load = "/".join(str(x) for x in fp["load_avg"]) if fp.get("load_avg") else "?"
    return (
        f"{fp['cpu_model']} ({fp['cpu_count']} cores, {fp['cpu_affinity']} usable, load {load}), "
        f"python {fp['python']}, torch {fp['torch']} ({fp['torch_threads']} threads), "
        f"backend {fp['backend']}, device {fp['device']}{' (simulated)' if fp['simulated'] else ''}, "
        f"ascend-compat {fp['ascend_compat']}"
    )


def _threads_line(settings: dict[str, Any]) -> str:
    if "threads" not in settings:  # a report from before the threads rule
        return "torch threads: as the process had them"
    return f"torch threads: {settings['threads']} ({settings.get('threads_rule') or 'requested'})"


def _busy_note(fp: dict[str, Any]) -> list[str]:
    cores = fp.get("cpu_affinity") or fp.get("cpu_count") or 0
    if not (fp.get("load_avg") and cores and fp["load_avg"][0] > cores):
        return []
    hint = ""
    if (fp.get("torch_threads") or 1) > 1:
        hint = "; with more torch threads than free cores, multi-threaded ops stall (try --threads 1)"
    return [f"note: the machine is busy (load {fp['load_avg'][0]} on {cores} usable cores): figures are noisy{hint}"]


def _overhead_lines(report: dict[str, Any], bold: str, reset: str) -> list[str]:
    s = report["settings"]
    lines = [
        f"shim on vs native on {s['target']}: ns per call, median of {s['repeats']} (spread: IQR)",
        bold + f"{'call (shim on)':40} {'native':>9} {'shim':>9} {'IQR':>7} {'ratio':>6} "
        f"{'added':>8}  native spelling" + reset,
    ]
    for r in report["rows"]:
        if r["error"]:
            lines.append(f"{r['call']:40} error: {r['error']}")
            continue
        iqr = max(r["shim_ns"]["iqr"], r["native_ns"]["iqr"])
        lines.append(
            f"{r['call']:40} {_fmt(r['native_ns']['median'], 0):>9} {_fmt(r['shim_ns']['median'], 0):>9} "
            f"{_fmt(iqr, 0):>7} {_fmt(r['ratio'], 2):>6} {_fmt(r['added_ns'], 0):>8}  "
            f"{r['native'] if r['kind'] == 'redirect' else '(' + r['kind'] + ')'}"
        )
    act = report["activation_ms"]
    lines.append(
        f"activate(): {act['activate']['median']:.2f} ms, deactivate(): {act['deactivate']['median']:.2f} ms "
        "(median, in-process re-activation)"
    )
    first = report.get("first_activation")
    if first:
        ms = first["ms"]
        lines.append(
            f"first activation in a fresh process (import ascend_compat + activate(), after import torch): "
            f"{ms['median']:.2f} ms (median of {ms['n']}, IQR {ms['iqr']:.2f}; "
            f"{len(first['modules'])} ascend_compat modules imported)"
        )
    return lines


def _ops_lines(report: dict[str, Any], bold: str, reset: str) -> list[str]:
    s = report["settings"]
    lines = [
        f"ops on {s['device']} ({s['dtype']}): us per call, synchronized",
        _threads_line(s),
        bold + f"{'op':11} {'size':>5} {'p50':>10} {'p95':>10} {'p99':>10} {'iters':>6} {'GFLOP/s':>8}"
        "  shape" + reset,
    ]
    for r in report["rows"]:
        if r["error"]:
            lines.append(f"{r['op']:11} {r['size']:>5} error: {r['error']}")
            continue
        lat = r["latency_us"]
        lines.append(
            f"{r['op']:11} {r['size']:>5} {_fmt(lat['p50']):>10} {_fmt(lat['p95']):>10} {_fmt(lat['p99']):>10} "
            f"{lat['n']:>6} {_fmt(r['gflops'], 2):>8}  {r['shape']}"
        )
    return lines


def _model_lines(report: dict[str, Any], bold: str, reset: str) -> list[str]:
    s = report["settings"]
    lines = [
        f"{s['factory']} ({s['parameters']:,} parameters), {s['mode']}, batch {s['batch']}, {s['steps']} steps "
        f"per side in {s['rounds']} alternating rounds, on {s['target']}",
        _threads_line(s),
        bold + f"{'shim':5} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'samples/s':>10}" + reset,
    ]
    for side in ("off", "on"):
        r = report[f"shim_{side}"]
        lat = r["latency_ms"]
        lines.append(
            f"{side:5} {_fmt(lat['p50'], 2):>9} {_fmt(lat['p95'], 2):>9} {_fmt(lat['p99'], 2):>9} "
            f"{_fmt(r['samples_per_s']):>10}"
        )
    lines.append(
        f"shim on / off: latency p50 x{_fmt(report['latency_ratio_p50'], 3)}, "
        f"throughput x{_fmt(report['throughput_ratio'], 3)}"
    )
    return lines


_TABLES: dict[str, Callable[[dict[str, Any], str, str], list[str]]] = {
    "overhead": _overhead_lines, "ops": _ops_lines, "model": _model_lines,
}


def render(report: dict[str, Any], color: bool = False) -> str:
    """The report as a plain-text table (ANSI bold header when ``color``)."""
    bold, reset = ("\033[1m", "\033[0m") if color else ("", "")
    kind = report["kind"]
    table = _TABLES.get(kind)
    if table is None:
        raise BenchError(f"unknown report kind {kind!r}")
    fp = report["fingerprint"]
    return "\n".join([_fingerprint_line(fp), *_busy_note(fp), *table(report, bold, reset)])


_OVERHEAD_HEADER = ["call", "native", "kind", "native_ns_median", "native_ns_iqr", "native_ns_min", "native_ns_max",
                    "shim_ns_median", "shim_ns_iqr", "shim_ns_min", "shim_ns_max", "ratio", "added_ns", "repeats",
                    "error"]
_OPS_HEADER = ["op", "size", "shape", "device", "dtype", "p50_us", "p95_us", "p99_us", "mean_us", "min_us", "max_us",
               "iters", "gflops", "error"]
_MODEL_HEADER = ["shim", "mode", "batch", "steps", "device", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "samples_per_s"]


def _overhead_csv(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in report["rows"]:
        row = {"call": r["call"], "native": r["native"], "kind": r["kind"], "error": r["error"] or ""}
        if not r["error"]:
            for side in ("native", "shim"):
                for stat in ("median", "iqr", "min", "max"):
                    row[f"{side}_ns_{stat}"] = r[f"{side}_ns"][stat]
            row.update(ratio=r["ratio"], added_ns=r["added_ns"], repeats=r["shim_ns"]["n"])
        rows.append(row)
    return rows


def _ops_csv(report: dict[str, Any]) -> list[dict[str, Any]]:
    s = report["settings"]
    rows = []
    for r in report["rows"]:
        row = {"op": r["op"], "size": r["size"], "shape": r["shape"] or "", "device": s["device"], "dtype": s["dtype"],
               "error": r["error"] or ""}
        if not r["error"]:
            lat = r["latency_us"]
            row.update({f"{k}_us": lat[k] for k in ("p50", "p95", "p99", "mean", "min", "max")})
            row.update(iters=lat["n"], gflops=r["gflops"])
        rows.append(row)
    return rows


def _model_csv(report: dict[str, Any]) -> list[dict[str, Any]]:
    s = report["settings"]
    rows = []
    for side in ("off", "on"):
        r = report[f"shim_{side}"]
        lat = r["latency_ms"]
        row = {"shim": side, "mode": s["mode"], "batch": s["batch"], "steps": lat["n"], "device": s["target"],
               "samples_per_s": r["samples_per_s"]}
        row.update({f"{k}_ms": lat[k] for k in ("p50", "p95", "p99", "mean")})
        rows.append(row)
    return rows


_CSV: dict[str, tuple[list[str], Callable[[dict[str, Any]], list[dict[str, Any]]]]] = {
    "overhead": (_OVERHEAD_HEADER, _overhead_csv), "ops": (_OPS_HEADER, _ops_csv), "model": (_MODEL_HEADER, _model_csv),
}


def csv_rows(report: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """(header, rows): one flat row per timed case."""
    kind = report["kind"]
    if kind not in _CSV:
        raise BenchError(f"unknown report kind {kind!r}")
    header, rows = _CSV[kind]
    return list(header), rows(report)


def to_csv(report: dict[str, Any]) -> str:
    header, rows = csv_rows(report)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2)


def _directory_exists(path: str) -> None:
    """Unlike other writers, a report refuses a missing directory: a typo in ``--csv`` must not create folders."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise BenchError(f"cannot write {path}: its directory does not exist ({directory})")


def check_target(path: str) -> None:
    """BenchError now for what would fail the write of ``path`` after the run (a missing directory, a directory
    or FIFO in its place, a read-only file or folder): a long benchmark must not be lost to a bad ``--csv``."""
    _directory_exists(path)
    try:
        _atomic.check_target(path)
    except OSError as exc:
        raise BenchError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:mod:`ascend_compat._atomic`: never half a file)."""
    _directory_exists(path)
    _atomic.write_text(path, text)


def write_csv(report: dict[str, Any], path: str) -> None:
    write_text(path, to_csv(report))


def require_matplotlib() -> Any:
    """matplotlib's Figure and Agg canvas, or a BenchError saying how to install the ``plot`` extra."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise BenchError(
            "--plot needs matplotlib: pip install 'ascend-compat[plot]' (or pip install matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def plot(report: dict[str, Any], path: str, title: Optional[str] = None) -> None:
    """A PNG chart of the report (needs matplotlib; pyplot and its global backend are left alone)."""
    Figure, FigureCanvasAgg = require_matplotlib()  # noqa: N806  (classes)
    kind = report["kind"]
    fig = Figure(figsize=(10, 6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    if kind == "overhead":
        rows = [r for r in report["rows"] if not r["error"]]
        ys = list(range(len(rows)))
        native = [r["native_ns"]["median"] for r in rows]
        shim = [r["shim_ns"]["median"] for r in rows]
        ax.barh([y - 0.2 for y in ys], native, height=0.4, label=f"native ({report['settings']['target']})")
        ax.barh([y + 0.2 for y in ys], shim, height=0.4, label="CUDA spelling, shim on")
        ax.set_yticks(ys, [r["call"] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")  # calls span 100 ns to 100 us
        ax.set_xlabel("ns per call (median, log scale)")
    elif kind == "ops":
        for op in report["settings"]["ops"]:
            pts = [(r["size"], r["latency_us"]["p50"]) for r in report["rows"] if r["op"] == op and not r["error"]]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=op)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size n")
        ax.set_ylabel("p50 latency (us)")
    elif kind == "model":
        labels = ["shim off", "shim on"]
        vals = [report["shim_off"]["samples_per_s"] or 0, report["shim_on"]["samples_per_s"] or 0]
        ax.bar(labels, vals)
        ax.set_ylabel("samples/s")
    else:
        raise BenchError(f"unknown report kind {kind!r}")
    ax.legend() if kind != "model" else None
    fp = report["fingerprint"]
    ax.set_title(title or f"ascend-compat bench {kind}: {fp['device']}, torch {fp['torch']}", fontsize=10)
    fig.tight_layout()
    _directory_exists(path)
    _atomic.write_with(path, lambda tmp: fig.savefig(tmp, format="png"))
