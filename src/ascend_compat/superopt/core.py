"""``graph.superoptimize(...)``: search, emit, check, verify, choose, cache; and the ``OptimizedGraph`` it returns."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional, Union

from ascend_compat.superopt import cache as cachemod
from ascend_compat.superopt._data import target as load_target
from ascend_compat.superopt.checks import check, live_bytes, programs
from ascend_compat.superopt.emit import block_name, emit
from ascend_compat.superopt.graph import GraphError, KernelGraph
from ascend_compat.superopt.runtime import check_inputs, execution_mode, numeric_check, run_kernels, triton_version
from ascend_compat.superopt.search import Candidate, SearchResult, run_search

BACKENDS = ("ascend", "triton", "torch")
DEFAULT_TARGET = {"ascend": "ascend-910b", "triton": "nvidia-h100", "torch": "ascend-910b"}
MAX_VERIFY = 4  # candidates tried before giving up


def refuse_unsupported(graph: KernelGraph, target: dict[str, Any], backend: str) -> None:
    """Dtypes and ops the target lacks, refused before any search, with the reason."""
    if backend == "torch":
        return
    for i, n in enumerate(graph.nodes):
        if n.dtype not in target["dtypes"]:
            note = target.get("dtype_notes", {}).get(n.dtype)
            why = f" ({note})" if note else ""
            if n.dtype == "float64" and target["vendor"] == "ascend":
                why = " (Ascend's AI core has no fp64)"
            raise GraphError(f"{n.op} t{i} {n.shape}: dtype {n.dtype} is not supported on {target['name']}{why}")
        if n.op == "matmul" and n.dtype not in target["dot_dtypes"]:
            raise GraphError(f"matmul t{i}: tl.dot on {n.dtype} is not supported on {target['name']}")


def _with_consts(graph: KernelGraph, nodes: list[int]) -> list[int]:
    return sorted(set(nodes) | {j for i in nodes for j in graph.nodes[i].inputs if graph.nodes[j].op == "const"})


def _header(c: Candidate, k: int, kern: Any, target: dict[str, Any], graph_digest: str) -> str:
    s = kern.schedule
    passes = "; ".join(f"{'whole' if a in s.full else 'loop'} over {a} (level {lvl})" for lvl, a in s.passes) or "none"
    lines = [f"Kernel k{k} of {len(c.kernels)} for {target['name']}, emitted by ascend_compat.superopt "
             f"(user graph {graph_digest}).", "",
             f"Rewrites applied to the graph: {', '.join(c.rewrites) or 'none'}.",
             "Implements (plan graph; tN are its tensors):",
             *[f"    {line}" for line in c.graph.describe(_with_consts(c.graph, kern.nodes))],
             f"Reads {', '.join(f't{v}' for v in s.loads)}; writes {', '.join(f't{o}' for o in s.outputs)}.",
             f"Passes: {passes}.", f"Tiles: {', '.join(f'{a}={b}' for a, b in kern.tiles.items())}.",
             *([f"Schedule: online softmax (flash-decoding), one pass over the keys K1; {s.online.proof}."]
               if s.online is not None else []),
             *([f"Split-K: {kern.tiles['SPLITS']} programs per tile, each over one key range, write fp32 partials "
                f"(m, l, acc); k{k}_combine then rescales them to the largest m and divides; "
                f"{s.online.split_proof}."] if "SPLITS" in kern.tiles else []),
             f"Modelled live tiles: {live_bytes(c.graph, s, kern.tiles)} bytes "
             f"(budget {target['live_tile_budget_bytes']})."]
    return "\n".join(lines) + "\n"


def emit_candidate(c: Candidate, target: dict[str, Any], digest: str) -> tuple[list[dict[str, Any]], list[str]]:
    kernels, problems = [], []
    for k, kern in enumerate(c.kernels):
        ek = emit(c.graph, kern.schedule, f"k{k}", kern.tiles, _header(c, k, kern, target, digest))
        problems += [f"k{k}: {p}" for p in check(c.graph, kern.schedule, kern.tiles, target, ek.source)]
        kernels.append({"name": f"k{k}_{digest}", "source": ek.source, "loads": ek.loads, "outputs": ek.outputs,
                        "tiles": ek.tiles, "nodes": kern.nodes, "cost": kern.cost.as_dict(),
                        "max_programs": _max_programs(kern, target)})
    return kernels, problems


def _max_programs(kern: Any, target: dict[str, Any]) -> Any:
    """Grid limits on Ascend (the physical cores): one, or (partial, combine) for split-K."""
    if target["vendor"] != "ascend":
        return None
    grid = programs(kern.schedule, kern.tiles, target)[1]
    if "SPLITS" in kern.tiles:
        from ascend_compat.superopt.splitk import combine_programs

        return [grid, combine_programs(kern.schedule, kern.tiles, target)[1]]
    return grid


def _time_us(res: SearchResult, c: Candidate, kernels: list[dict[str, Any]], mode: str, kdir: Optional[Path],
             device: str, iters: tuple[int, int]) -> float:
    """Mean time of one run of the plan on the device at the real shapes (after ``iters[0]`` warm-up runs)."""
    import torch

    from ascend_compat.superopt.reference import random_inputs, run_graph

    ins = random_inputs(res.graph, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else torch.npu.synchronize  # type: ignore[attr-defined]

    def run() -> None:
        if kernels:
            run_kernels(c.graph, kernels, ins, mode, kdir)
        else:
            run_graph(c.graph, ins)

    for _ in range(iters[0]):
        run()
    sync()
    t0 = time.perf_counter()
    for _ in range(max(1, iters[1])):
        run()
    sync()
    return (time.perf_counter() - t0) / max(1, iters[1]) * 1e6


def _looped_extents(c: Candidate) -> dict[int, int]:
    """Extents of looped axes and the small extent they need to span three blocks in the numeric check."""
    out: dict[int, int] = {}
    for k in c.kernels:
        s = k.schedule
        for _, axis in s.passes:
            if axis not in s.full:
                # split-K: every key range spans >= 3 blocks (one range gets a partial fourth)
                blocks = 3 * k.tiles["SPLITS"] if "SPLITS" in k.tiles else 2
                out[s.extent[axis]] = max(out.get(s.extent[axis], 0), blocks * k.tiles[block_name(axis)] + 1)
    return out


def _verify_and_choose(res: SearchResult, mode: str, digest: str, kdir: Optional[Path],
                       iters: tuple[int, int]) -> dict[str, Any]:
    """The first candidates that pass the static and numeric checks; on a real device the fastest of up to 3."""
    failed: list[list[str]] = []
    passed: list[dict[str, Any]] = []
    device = {"triton": "cuda", "ascend": "npu"}.get(res.backend, "cpu") if mode == "compiled" else "cpu"
    for c in res.candidates[:MAX_VERIFY]:
        kernels, problems = ([], []) if res.backend == "torch" else emit_candidate(c, res.target, digest)
        if problems:
            c.status = f"rejected by static checks: {problems[0]}"
            failed.append([c.summary(), c.status])
            continue
        ok, why = numeric_check(res.graph, c.graph, kernels if res.backend != "torch" else None, mode, device, kdir,
                                at_least=_looped_extents(c))
        if not ok:
            c.status = f"rejected by the numeric check: {why}"
            failed.append([c.summary(), c.status])
            continue
        c.status = "verified"
        passed.append({"candidate": c, "kernels": kernels, "numeric": why, "failed": failed})
        if device == "cpu" or len(passed) == 3:
            break
    if not passed:
        raise GraphError("no candidate passed verification: " + "; ".join(f"{s}: {w}" for s, w in failed))
    choice = ("lowest modelled time (cost model: bytes moved and flops against the target's figures; "
              "no device to time on)")
    if device != "cpu" and iters[1] > 0:
        for p in passed:
            p["time_us"] = _time_us(res, p["candidate"], p["kernels"], mode, kdir, device, iters)
        passed.sort(key=lambda p: p["time_us"])
        choice = (f"fastest of {len(passed)} verified candidate(s) timed on {device} ({iters[0]} warm-up, "
                  f"{iters[1]} timed runs: " + ", ".join(f"{p['time_us']:.1f} us" for p in passed) + ")")
    best = passed[0]
    best["candidate"].status = "chosen"
    best["choice"] = choice
    return best


def superoptimize(graph: KernelGraph, backend: str = "ascend", target: Optional[str] = None, warmup_iters: int = 10,
                  profile_iters: int = 100, use_cache: bool = True, cache_dir: Optional[str] = None,
                  torch_compile: Union[bool, str] = False) -> OptimizedGraph:
    """Search, verify and emit an optimized version of ``graph`` for ``backend`` (see the README).

    ``torch_compile`` (``backend='torch'`` only): run the plan under ``torch.compile`` (True: the default backend,
    or a backend name).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if torch_compile and backend != "torch":
        raise ValueError("torch_compile applies to backend='torch' (the other backends run emitted kernels)")
    graph.validate()
    tgt = load_target(target or DEFAULT_TARGET[backend])
    refuse_unsupported(graph, tgt, backend)
    mode = execution_mode(backend)
    import torch

    from ascend_compat import __version__

    versions = {"ascend_compat": __version__, "torch": torch.__version__, "triton": triton_version()}
    root = Path(cache_dir) if cache_dir else None
    key = cachemod.key(graph.signature(), backend, tgt["name"], mode, versions)
    record = cachemod.load(key, root) if use_cache else None
    kdir = _kernel_dir(key, root) if use_cache else None
    if kdir is None:
        record, use_cache = None, False
    if record is None:
        record = _build(graph, tgt, backend, mode, kdir, (warmup_iters, profile_iters))
        record["versions"] = versions
        if use_cache:
            try:
                cachemod.store(key, record, root)
            except OSError as e:  # a full disk or a read-only cache: the plan is still good, only not kept
                _cache_warning(e)
        record["cache"] = "miss"
    else:
        record["cache"] = "hit"
    opt = OptimizedGraph(graph, record, mode, kdir, tgt, warmup_iters, profile_iters)
    if torch_compile:
        opt.compile(None if torch_compile is True else str(torch_compile))
    return opt


def _cache_warning(e: OSError) -> None:
    """Warn, pointing at the user's line (the first frame outside this package)."""
    import warnings

    from ascend_compat import _stacklevel_outside

    level = _stacklevel_outside(str(Path(__file__).parent))
    warnings.warn(f"ascend_compat.superopt: the plan cache cannot be written ({e}); running without it "
                  "(set ASCEND_COMPAT_CACHE_DIR to a writable folder to keep plans)", RuntimeWarning,
                  stacklevel=level)


def _kernel_dir(key: str, root: Optional[Path]) -> Optional[Path]:
    """The cache entry's kernel folder, or None (with a warning) when the cache cannot be written: a read-only
    home or a cache path under a file must not stop the search, which then runs uncached (kernels in a temporary
    folder)."""
    try:
        return cachemod.kernel_dir(key, root)
    except OSError as e:
        _cache_warning(e)
        return None


def _build(graph: KernelGraph, tgt: dict[str, Any], backend: str, mode: str, kdir: Optional[Path],
           iters: tuple[int, int]) -> dict[str, Any]:
    res = run_search(graph, tgt, backend)
    if not res.candidates:
        raise GraphError("no candidate plan: " + "; ".join(f"{n}x {w}" for w, n in res.rejected.items())
                         + " (backend='torch' runs any graph as torch ops)")
    t0 = time.perf_counter()
    chosen = _verify_and_choose(res, mode, graph.digest(), kdir, iters)
    c: Candidate = chosen["candidate"]
    verdicts = [v for r, v in res.variants if r == c.rewrites]
    return {
        "backend": backend, "target": tgt["name"], "mode": mode, "graph": graph.signature(),
        "plan_graph": c.graph.signature(), "rewrites": c.rewrites, "kernels": chosen["kernels"],
        "cost": c.cost.as_dict(), "eager": res.eager.as_dict() if res.eager else {},
        "search": {"seconds": round(res.seconds, 3), "verify_seconds": round(time.perf_counter() - t0, 3),
                   "variants": [{"rewrites": r, "equivalent": v.equivalent, "reason": v.reason}
                                for r, v in res.variants],
                   "partitions": res.partitions, "candidates": len(res.candidates),
                   "top": [{"plan": x.summary(ids=True), "rewrites": x.rewrites, "time_us": round(x.cost.time_us, 3),
                            "dram_bytes": int(x.cost.dram_bytes), "status": x.status, "proofs": _proofs(x)}
                           for x in res.candidates[:8]],
                   "rejected": res.rejected, "failed": chosen["failed"]},
        "verification": {"finite_field": verdicts[0].reason if verdicts else "", "numeric": chosen["numeric"],
                         "schedules": _proofs(c)},
        "choice": chosen["choice"],
        "plan": c.summary(),
    }


def _proofs(c: Candidate) -> list[str]:
    """The finite-field proofs of the candidate's reordered schedules (online softmax, split-K combine)."""
    out = []
    for i, k in enumerate(c.kernels):
        m = k.schedule.online
        if m is not None:
            out.append(f"k{i}: {m.proof}")
            if "SPLITS" in k.tiles:
                out.append(f"k{i}: {m.split_proof}")
    return out


class OptimizedGraph:
    """The result of ``superoptimize``: call it with ``inputs=[...]``; inspect it with ``explain()``."""

    def __init__(self, graph: KernelGraph, record: dict[str, Any], mode: str, kdir: Optional[Path],
                 target: dict[str, Any], warmup_iters: int, profile_iters: int) -> None:
        self.graph, self.record, self.mode, self.kdir, self.target = graph, record, mode, kdir, target
        self.plan_graph = KernelGraph.from_signature(record["plan_graph"])
        self.warmup_iters, self.profile_iters = warmup_iters, profile_iters
        self._compiled: Any = None

    def compile(self, backend: Optional[str] = None) -> None:
        """Run the torch plan under ``torch.compile`` from now on."""
        import torch

        from ascend_compat.superopt.reference import run_graph

        plan = self.plan_graph
        fn = lambda *xs: run_graph(plan, list(xs))  # noqa: E731
        self._compiled = torch.compile(fn, backend=backend) if backend else torch.compile(fn)

    @property
    def backend(self) -> str:
        return str(self.record["backend"])

    @property
    def kernels(self) -> list[dict[str, Any]]:
        return list(self.record["kernels"])

    def __call__(self, inputs: Optional[list[Any]] = None, *args: Any) -> list[Any]:
        """Run the optimized graph on torch tensors (cpu, cuda, or npu: real or simulated); returns the outputs.

        ``opt(inputs=[x, w])`` (Mirage's form), ``opt([x, w])`` or ``opt(x, w)``.
        """
        if inputs is None:
            inputs = list(args)
        elif isinstance(inputs, (list, tuple)) and not args:
            inputs = list(inputs)
        else:  # opt(x, w): the first tensor is not a list of inputs (iterating it would give its rows)
            inputs = [inputs, *args]
        check_inputs(self.graph, inputs)
        if self.backend == "torch":
            from ascend_compat.superopt.reference import run_graph

            return list(self._compiled(*inputs)) if self._compiled else run_graph(self.plan_graph, inputs)
        return run_kernels(self.plan_graph, self.kernels, inputs, self.mode, self.kdir)

    def triton_code(self) -> str:
        """The Triton source of every kernel, in launch order (empty for ``backend='torch'``)."""
        return "\n\n".join(k["source"] for k in self.kernels)

    def save(self, directory: str) -> list[Path]:
        """Write one ``<kernel>.py`` per kernel and ``plan.json`` to ``directory`` (each file atomically and
        durably, with the umask's mode: :mod:`ascend_compat._atomic`); returns the paths."""
        import json

        from ascend_compat import _atomic

        d = Path(directory)
        files = [(f"{k['name']}.py", k["source"]) for k in self.kernels]
        files.append(("plan.json", json.dumps({k: v for k, v in self.record.items() if k != "kernels"}, indent=2)))
        written = []
        for name, text in files:
            _atomic.write_text(d / name, text)
            written.append(d / name)
        return written

    def explain(self) -> str:
        from ascend_compat.superopt.explain import explain

        return explain(self.record)
