"""Precision verification of ``report --verify``, measured, never a plan: the operator checks of
``ascend-compat verify ops`` for the op groups the repository uses (NPU result against a float64 CPU golden), and a
forward pass of every model the repository can build by itself (its zero-argument ``make_model``-style factories,
and ``nn.Module`` classes constructible without arguments, with inputs inferred from their first layer) compared
layer by layer with the CPU (``ascend_compat.verify.compare``). A ``--model MODULE:FACTORY`` is compared too.

Each check runs in a child process with a time budget, writing one JSON line per result so a timeout keeps what
was measured.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import Callable, Optional

#: Op groups of ``verify ops`` and the torch names (last dotted part, lower case) that use them.
_GROUP_APIS: dict[str, frozenset[str]] = {
    "matmul": frozenset({"matmul", "bmm", "mm", "addmm", "baddbmm", "linear", "einsum"}),
    "conv": frozenset({"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "convtranspose2d"}),
    "softmax": frozenset({"softmax", "log_softmax", "logsoftmax", "cross_entropy", "crossentropyloss"}),
    "norm": frozenset({"layer_norm", "layernorm", "rms_norm", "rmsnorm", "group_norm", "groupnorm", "batch_norm",
                       "batchnorm1d", "batchnorm2d"}),
    "activation": frozenset({"gelu", "silu", "swish", "silu_"}),
    "reduction": frozenset({"sum", "mean", "var", "std", "max", "amax", "cumsum"}),
    "indexing": frozenset({"index_select", "gather", "scatter", "scatter_add", "embedding"}),
    "attention": frozenset({"scaled_dot_product_attention", "multiheadattention", "flash_attn_func",
                            "flash_attn_varlen_func"}),
    "optimizer": frozenset({"adamw", "adam", "sgd"}),
}
MAX_MODELS = 8

Runner = Callable[[list[str], str, float], "tuple[int, str, bool]"]


def op_groups(apis: Iterable[str]) -> list[str]:
    """The ``verify ops`` groups the repository's torch APIs fall in (matmul always: every model has one)."""
    names = {a.rsplit(".", 1)[-1].lower() for a in apis}
    return sorted({"matmul"} | {g for g, members in _GROUP_APIS.items() if names & members})


def _json_tail(output: str) -> Optional[dict]:
    start = output.find("{")
    while start >= 0:
        try:
            data = json.loads(output[start:])
            return data if isinstance(data, dict) else None
        except ValueError:
            start = output.find("\n{", start + 1)
            start = start + 1 if start >= 0 else -1
    return None


def _layers(n: int) -> str:
    return f"{n} layer{'s' if n != 1 else ''} compared"


def _fmt(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _ops_of(run: Runner, root: str, groups: list[str]) -> list[str]:
    """The op names of ``groups`` (``verify ops --list``): ``--only matmul`` would pick the op, not the group."""
    code, output, _ = run([sys.executable, "-m", "ascend_compat", "verify", "ops", "--list"], root, 60)
    listed = [ln.split()[:2] for ln in output.splitlines() if len(ln.split()) >= 2] if code == 0 else []
    return [name for name, group in listed if group in groups] or groups


def verify_ops(run: Runner, root: str, groups: list[str], simulate: bool, budget_s: float) -> dict:
    """``verify ops`` of every op in ``groups`` on the NPU: one row per op, the worst dtype's error shown."""
    t0 = time.perf_counter()
    ops = _ops_of(run, root, groups)
    cmd = [sys.executable, "-m", "ascend_compat", "verify", "ops", "--device", "npu", "--only", ",".join(ops),
           "--json"] + (["--simulate", "npu"] if simulate else [])
    shown = "ascend-compat verify ops --device npu --only " + ",".join(ops) + (" --simulate npu" if simulate
                                                                                else "")
    code, output, timed_out = run(cmd, root, budget_s)
    data = _json_tail(output)
    if data is None:
        last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        return {"command": shown, "groups": groups, "rows": [], "ok": False,
                "note": f"did not finish (exit {code}{', budget reached' if timed_out else ''}): {last[0][:300]}"}
    per_op: dict[str, list[dict]] = {}
    for r in data.get("results", []):
        per_op.setdefault(r["op"], []).append(r)
    rows = []
    for op, results in per_op.items():
        ran = [r for r in results if r["status"] != "skipped"]
        if not ran:
            rows.append([f"`{op}`", "-", "-", "-", f"skipped: {results[0].get('detail', '')[:120]}"])
            continue
        worst = max(ran, key=lambda r: float(r.get("ratio", 0) or 0))
        bad = [r["dtype"] for r in ran if r["status"] in ("fail", "error")]
        rows.append([f"`{op}`", ", ".join(r["dtype"] for r in ran), f"{_fmt(worst.get('max_abs'))} ({worst['dtype']})",
                     f"rtol {_fmt(worst.get('rtol'))}, atol {_fmt(worst.get('atol'))}",
                     f"❌ failed ({', '.join(bad)})" if bad else "✅ passed"])
    counts = data.get("counts", {})
    return {"command": shown, "groups": groups, "rows": rows, "ok": bool(data.get("ok")), "counts": counts,
            "device": data.get("device", ""), "simulated": bool(data.get("simulated")),
            "fallback": data.get("fallback"), "seconds": round(time.perf_counter() - t0, 2),
            "criterion": data.get("criterion", "")}


#: The child that builds and compares models: one JSON line per model, flushed.
_SMOKE_DRIVER = r'''
import importlib, inspect, json, signal, sys, time
import torch
from ascend_compat.verify import compare

out = open(sys.argv[1], "a", encoding="utf-8")
modules, limit, per_model = json.load(open(sys.argv[2], encoding="utf-8")), int(sys.argv[3]), int(sys.argv[4])
FACTORY = __import__("re").compile(r"^(make|build|create|get)_?\w*model\w*$", __import__("re").I)
# Required constructor arguments a smoke test can fill: sizes get small values that divide evenly.
SIZES = {"d_model": 64, "dim": 64, "d": 64, "hidden_size": 64, "hidden_dim": 64, "hidden_features": 64,
         "embed_dim": 64, "n_embd": 64, "in_features": 64, "out_features": 64, "in_channels": 8, "out_channels": 8,
         "channels": 8, "d_inner": 128, "num_features": 64, "features": 64, "width": 64, "num_heads": 4,
         "n_head": 4, "n_heads": 4, "nheads": 4, "heads": 4, "num_attention_heads": 4, "vocab_size": 256,
         "num_embeddings": 256, "n_vocab": 256, "seq_len": 16, "max_seq_len": 64}


def required(fn, skip):
    try:
        params = list(inspect.signature(fn).parameters.values())[skip:]
    except (TypeError, ValueError):
        return None
    return [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def guess(model):
    forward = required(type(model).forward, 1)
    if forward is None or len(forward) != 1:
        return None, "forward needs %s inputs" % ("unknown" if forward is None else len(forward))
    g = torch.Generator().manual_seed(0)
    for m in model.modules():  # the model itself first: it may be a Linear or an Embedding subclass
        if isinstance(m, torch.nn.Embedding):
            return torch.randint(0, min(m.num_embeddings, 1000), (2, 16), generator=g), "token ids (2, 16)"
        if isinstance(m, torch.nn.Linear):
            return torch.randn(2, 16, m.in_features, generator=g), "(2, 16, %d)" % m.in_features
        for cls, tail in ((torch.nn.Conv1d, (64,)), (torch.nn.Conv2d, (32, 32)), (torch.nn.Conv3d, (8, 16, 16))):
            if isinstance(m, cls):
                shape = (2, m.in_channels) + tail
                return torch.randn(*shape, generator=g), str(shape)
        if isinstance(m, torch.nn.LayerNorm):
            shape = (2, 16) + tuple(m.normalized_shape)
            return torch.randn(*shape, generator=g), str(shape)
    weight = getattr(model, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 1:  # a norm layer: normalizes the last dimension
        return torch.randn(2, 16, weight.numel(), generator=g), "(2, 16, %d)" % weight.numel()
    return None, "no Embedding/Linear/Conv/LayerNorm layer to infer an input from"


def candidates():
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except BaseException:
            continue
        for attr, obj in sorted(vars(mod).items()):
            if getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj) and FACTORY.match(attr) and required(obj, 0) == []:
                yield "%s.%s()" % (name, attr), obj, True
            elif inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and not inspect.isabstract(obj):
                need = required(obj.__init__, 1)
                if need is None or any(p.name not in SIZES for p in need):
                    continue
                kwargs = {p.name: SIZES[p.name] for p in need}
                args = ", ".join("%s=%d" % kv for kv in kwargs.items())
                yield "%s.%s(%s)" % (name, attr, args), (lambda cls=obj, kw=kwargs: cls(**kw)), False


def on_alarm(*_):
    raise TimeoutError("over %d s" % per_model)


signal.signal(signal.SIGALRM, on_alarm)
done = 0
for label, fn, factory in candidates():
    if done >= limit:
        out.write(json.dumps({"model": label, "status": "not_run", "detail": "over the limit of models"}) + "\n")
        continue
    t = time.perf_counter()
    rec = {"model": label}
    signal.alarm(per_model)
    try:
        torch.manual_seed(0)
        built = fn()
        model, inputs, how = built, None, ""
        if factory and isinstance(built, tuple) and len(built) == 2:
            model, inputs, how = built[0], built[1], "the factory's inputs"
        if not isinstance(model, torch.nn.Module):
            raise TypeError("returned %s, not an nn.Module" % type(model).__name__)
        if sum(p.numel() for p in model.parameters()) > 50_000_000:
            raise MemoryError("over 50M parameters: too large for a smoke test")
        if inputs is None:
            inputs, how = guess(model)
        if inputs is None:
            rec.update(status="skipped", detail=how)
        else:
            model.eval()
            with torch.no_grad():  # the CPU forward must work first: a failure there is the model's, not the NPU's
                if isinstance(inputs, dict):
                    model(**inputs)
                elif isinstance(inputs, (tuple, list)):
                    model(*inputs)
                else:
                    model(inputs)
            r = compare(model, inputs, reference="cpu", target="npu").to_dict()
            diffs = [d for d in r["outputs"] if isinstance(d.get("max_abs"), (int, float))]
            rec.update(status="pass" if r["ok"] else "fail", inputs=how, rtol=r["rtol"], atol=r["atol"],
                       max_abs=max((d["max_abs"] for d in diffs), default=0.0), layers=len(r["layers"]),
                       target=r["target"], simulated=r["simulated"], fallback=r["fallback"],
                       first_divergence=(r["first_divergence"] or {}).get("name", ""))
            done += 1
    except BaseException as exc:
        rec.update(status="skipped", detail=(type(exc).__name__ + ": " + str(exc)).splitlines()[0][:200]
                   if str(exc) else type(exc).__name__)
    finally:
        signal.alarm(0)
    rec["seconds"] = round(time.perf_counter() - t, 2)
    out.write(json.dumps(rec) + "\n")
    out.flush()
'''


def smoke_models(run: Runner, runner: list[str], root: str, modules: list[str], budget_s: float) -> dict:
    """Build every model the repository can build by itself and compare its forward on the NPU with the CPU."""
    with tempfile.TemporaryDirectory(prefix="ascend-compat-smoke-") as tmp:
        driver, names, results = (os.path.join(tmp, n) for n in ("driver.py", "names.json", "results.jsonl"))
        with open(driver, "w", encoding="utf-8") as fh:
            fh.write(_SMOKE_DRIVER)
        with open(names, "w", encoding="utf-8") as fh:
            json.dump(modules, fh)
        per_model = str(max(int(budget_s / 3), 10))
        code, output, timed_out = run([*runner, driver, results, names, str(MAX_MODELS), per_model], root, budget_s)
        recs = []
        if os.path.exists(results):
            with open(results, encoding="utf-8") as fh:
                recs = [json.loads(line) for line in fh if line.strip()]
    compared = [r for r in recs if r["status"] in ("pass", "fail")]
    rows = [[f"`{r['model']}`", r.get("inputs", ""), _fmt(r["max_abs"]),
             f"rtol {_fmt(r['rtol'])}, atol {_fmt(r['atol'])}",
             ("✅ passed" if r["status"] == "pass" else f"❌ failed (first divergence: {r['first_divergence']})")
             + f", {_layers(r['layers'])}"] for r in compared]
    skipped = [[f"`{r['model']}`", r.get("detail", "")] for r in recs if r["status"] in ("skipped", "not_run")]
    note = ""
    if code != 0 and not recs:
        last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        note = f"the model check did not start (exit {code}): {last[0][:300]}"
    elif code != 0:
        note = f"the model check stopped early (exit {code})"
    elif timed_out:
        note = "the time budget ran out before every model was tried"
    return {"rows": rows, "skipped": skipped, "candidates": len(recs), "note": note,
            "simulated": any(r.get("simulated") for r in compared)}


def compare_model(run: Runner, root: str, model: str, simulate: bool, budget_s: float) -> list[list[str]]:
    """``verify model MODULE:FACTORY`` as one row of the model table."""
    cmd = [sys.executable, "-m", "ascend_compat", "verify", "model", model, "--json"] + \
        (["--simulate", "npu"] if simulate else [])
    code, output, timed_out = run(cmd, root, budget_s)
    data = _json_tail(output)
    if data is None:
        last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        return [[f"`{model}` (--model)", "", "-", "-", f"❌ did not finish (exit {code}"
                 f"{', budget reached' if timed_out else ''}): {last[0][:200]}"]]
    diffs = [d["max_abs"] for d in data.get("outputs", []) if isinstance(d.get("max_abs"), (int, float))]
    first = (data.get("first_divergence") or {}).get("name", "")
    result = "✅ passed" if data.get("ok") else f"❌ failed (first divergence: {first or 'model output'})"
    return [[f"`{model}` (--model)", "the factory's inputs", _fmt(max(diffs, default=0.0)),
             f"rtol {_fmt(data.get('rtol'))}, atol {_fmt(data.get('atol'))}",
             f"{result}, {_layers(len(data.get('layers', [])))}"]]


def _model_name_ok(model: str) -> bool:
    return bool(re.fullmatch(r"[\w.]+:[\w.]+", model))


def verify_precision(run: Runner, runner: list[str], root: str, modules: list[str], groups: list[str],
                     simulate: bool, budget_s: float, model: Optional[str] = None) -> dict:
    """Operator checks of ``groups``, the models the importable ``modules`` build, and ``model`` when given."""
    t0 = time.perf_counter()
    ops = verify_ops(run, root, groups, simulate, budget_s * 0.45)
    left = max(budget_s - (time.perf_counter() - t0), 10.0)
    models = smoke_models(run, runner, root, modules, left * (0.6 if model else 0.95))
    if model:
        if not _model_name_ok(model):
            models["rows"] += [[f"`{model}`", "", "-", "-", "❌ not MODULE:FACTORY"]]
        else:
            left = max(budget_s - (time.perf_counter() - t0), 10.0)
            models["rows"] += compare_model(run, root, model, simulate, left)
    device = "the simulated NPU" if simulate else "the NPU"
    note = (f"Measured on {device}. " + ("The simulated NPU runs the host CPU's kernels, so these figures check "
                                         "that the code runs on the npu device and keeps its numerics through the "
                                         "port's plumbing (placement, dtypes, copies); NPU kernel accuracy needs "
                                         "the same command on an Ascend machine." if simulate else ""))
    return {"ops": ops, "models": models, "note": note.strip(), "seconds": round(time.perf_counter() - t0, 2)}


__all__ = ["MAX_MODELS", "compare_model", "op_groups", "smoke_models", "verify_ops", "verify_precision"]
