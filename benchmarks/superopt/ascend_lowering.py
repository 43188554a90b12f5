"""Do the emitted Ascend kernels go through triton-ascend's own front end (TTIR -> linalg)?

Two steps, because triton-ascend installs as the ``triton`` package and so lives in its own virtualenv::

    python benchmarks/superopt/ascend_lowering.py emit /tmp/lowering           # this project's environment
    python -m venv /tmp/ta && /tmp/ta/bin/pip install triton-ascend==3.2.0 pybind11 numpy
    /tmp/ta/bin/python benchmarks/superopt/ascend_lowering.py lower /tmp/lowering   # no CANN needed

``emit`` writes the best plan's kernels for every benchmark workload (Mirage's shapes and the tests' small ones,
fp16, fp32 and bf16; GQA also at 300 keys) with a JSON sidecar giving each kernel's argument types and constexpr
values (GQA at 4096 and 300 keys is the online-softmax kernel, ``superopt/online.py``; for GQA the best split-K
candidate is emitted too, ``superopt/splitk.py``: its partial and combine kernels get a sidecar each). ``lower``
compiles each with ``triton.compile`` for an ``npu`` target: TTIR and the TTIR -> linalg lowering
(``triton-adapter-opt``) run without CANN; only the last step (linalg -> binary, BiSheng) needs
``ASCEND_HOME_PATH``, so a kernel counts as lowered when compilation gets past ConvertTritonIRToLinalgIR. Exit
status 1 if any kernel fails to lower.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

TYPES = {"float16": "*fp16", "bfloat16": "*bf16", "float32": "*fp32"}
DTYPES = ("float16", "float32", "bfloat16")  # the 910B has bf16 (the 310P does not: see targets.json)


def emit(out: Path) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import workloads

    from ascend_compat.superopt._data import target as load_target
    from ascend_compat.superopt.core import emit_candidate
    from ascend_compat.superopt.search import run_search

    tgt = load_target("ascend-910b")
    small = {"gated_mlp": {"k": 64, "n": 48}, "rmsnorm_linear": {"k": 64, "n": 48}, "lora": {"k": 64, "n": 48},
             "gqa_decode": {"kv_heads": 2, "head_dim": 32, "kv_len": 64}}
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, build in workloads.WORKLOADS.items():
        sizes = [("big", {}), ("small", small[name])]
        if name == "gqa_decode":  # 300 keys: too many for registers, so the online-softmax kernel
            sizes.append(("mid", {"kv_heads": 2, "head_dim": 32, "kv_len": 300}))
        else:  # one token: an output of one row (its store masks a row axis of its own)
            sizes.append(("one", {**small[name], "m": 1}))
        for size, kw in sizes:
            for dtype in DTYPES:
                g = build(dtype=dtype, **kw)
                cands = run_search(g, tgt, "ascend").candidates
                plans = [("", cands[0])]
                split = next((c for c in cands if any("SPLITS" in k.tiles for k in c.kernels)), None)
                if split is not None and split is not cands[0]:  # the split-K alternative lowers too
                    plans.append(("_splitk", split))
                for tag, best in plans:
                    kernels, problems = emit_candidate(best, tgt, g.digest())
                    for k, (rec, kern) in enumerate(zip(kernels, best.kernels)):
                        stem = f"{name}_{size}_{dtype}{tag}_k{k}"
                        for kname, meta in _sidecars(best.graph, kern, k, rec, tgt):
                            (out / f"{stem}{kname}.py").write_text(rec["source"])
                            (out / f"{stem}{kname}.json").write_text(json.dumps({**meta, "checks": problems}))
                            count += 1
    print(f"wrote {count} kernels to {out}")
    return 0


def _sidecars(graph: Any, kern: Any, k: int, rec: dict[str, Any], tgt: dict[str, Any],
              ) -> list[tuple[str, dict[str, Any]]]:
    """(file suffix, kernel name + argument types + constexpr values) of each jitted kernel in an emitted module:
    one, or for split-K the partial kernel and the combine kernel."""
    from ascend_compat.superopt.checks import programs
    from ascend_compat.superopt.splitk import combine_programs

    s = kern.schedule
    ptrs = {f"t{v}_ptr": TYPES[graph.nodes[v].dtype] for v in s.loads}
    outs = {f"out{o}_ptr": TYPES[graph.nodes[o].dtype] for o in s.outputs}
    tasks, grid = programs(s, kern.tiles, tgt)
    tiling = {"M": s.extent["M"], "N": s.extent.get("N", 1), "B": s.batch,
              "MB": -(-s.extent["M"] // kern.tiles["BLOCK_M"]), "NB": -(-s.extent.get("N", 1) // kern.tiles["BLOCK_N"])}
    consts = {**tiling, "TASKS": tasks, "GRID": grid, **{a: e for a, e in s.extent.items() if a not in ("M", "N")},
              **kern.tiles}
    if "DOT_BF16" in rec["source"]:  # the launcher's choice on a device (see emit.py)
        consts["DOT_BF16"] = "bfloat16"
    if "SPLITS" not in kern.tiles:
        return [("", {"kernel": f"k{k}_kernel", "signature": {**ptrs, **outs}, "constants": consts})]
    scratch = {"pm_ptr": "*fp32", "pl_ptr": "*fp32", "pacc_ptr": "*fp32"}
    ctasks, cgrid = combine_programs(s, kern.tiles, tgt)
    combine = {**tiling, "TASKS": ctasks, "GRID": cgrid, "BLOCK_M": kern.tiles["BLOCK_M"],
               "BLOCK_N": kern.tiles["BLOCK_N"], "SPLITS": kern.tiles["SPLITS"]}
    return [("", {"kernel": f"k{k}_kernel", "signature": {**ptrs, **scratch}, "constants": consts}),
            ("_combine", {"kernel": f"k{k}_combine", "signature": {**scratch, **outs}, "constants": combine})]


def _lower_one(py: Path, meta: dict[str, Any]) -> tuple[bool, str]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource

    spec = importlib.util.spec_from_file_location(py.stem, py)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, meta["kernel"])
    signature = dict(meta["signature"])
    signature.update({k: "constexpr" for k in meta["constants"]})
    constants = dict(meta["constants"])
    if "DOT_BF16" in constants:
        constants["DOT_BF16"] = getattr(triton.language, constants["DOT_BF16"])
    src = ASTSource(fn, signature, constants=constants)
    try:
        triton.compile(src, target=GPUTarget("npu", "Ascend910B3", 0))
        return True, "compiled to a binary"
    except Exception as e:  # the stage that failed decides
        text = str(e)
        if "[ConvertLinalgRToBinary]" in text:  # TTIR -> linalg done; the binary step (BiSheng) needs CANN
            return True, "lowered to linalg (the binary step needs CANN)"
        return False, f"{type(e).__name__}: {text.strip().splitlines()[0][:300] if text.strip() else ''}"


def lower(out: Path) -> int:
    results = {}
    for meta_path in sorted(p for p in out.glob("*.json") if p.name != "lowering.json"):  # not the results
        py = meta_path.with_suffix(".py")
        ok, why = _lower_one(py, json.loads(meta_path.read_text()))
        results[py.name] = {"lowered": ok, "detail": why}
        print(f"{'ok  ' if ok else 'FAIL'} {py.name}: {why}")
    done = sum(r["lowered"] for r in results.values())
    print(f"lowered {done}/{len(results)} kernels ({100 * done / max(1, len(results)):.0f}%)")
    (out / "lowering.json").write_text(json.dumps(results, indent=2))
    return 0 if done == len(results) else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("emit", "lower"):
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit((emit if sys.argv[1] == "emit" else lower)(Path(sys.argv[2])))
