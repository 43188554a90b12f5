"""Running a plan: loading the emitted Triton modules, executing the kernels, checking them against torch eager.

Execution modes: ``compiled`` (Triton on CUDA, or triton-ascend on a real NPU) and ``interpret`` (Triton's CPU
interpreter, ``TRITON_INTERPRET=1`` set only while our modules are imported, so the user's own kernels are
unaffected). Interpreted kernels run on CPU tensors and on the simulated NPU's tensors (host memory) alike.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from ascend_compat import _atomic
from ascend_compat.superopt._data import tolerance
from ascend_compat.superopt.graph import GraphError, KernelGraph
from ascend_compat.superopt.reference import random_inputs, run_graph


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here (the message says what is missing and what still works)."""


def triton_version() -> Optional[str]:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover
        return None
    for dist in ("triton-ascend", "triton"):
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:
            continue
    return None


def execution_mode(backend: str) -> str:
    """``torch``, ``compiled`` or ``interpret`` for ``backend`` on this machine, or BackendUnavailableError."""
    if backend == "torch":
        return "torch"
    try:
        import triton  # noqa: F401
    except ImportError:
        raise BackendUnavailableError(f"backend={backend!r} needs Triton, which is not installed: `pip install triton` "
                                 "(its CPU interpreter needs no GPU), or use backend='torch'") from None
    import torch

    if backend == "triton":
        if not torch.cuda.is_available():
            raise BackendUnavailableError("backend='triton' compiles for CUDA and no CUDA device is available; use "
                                     "backend='ascend' (checked Ascend kernels, run by Triton's CPU interpreter here) "
                                     "or backend='torch'")
        return "compiled"
    from ascend_compat.simulate import is_installed

    real_npu = hasattr(torch, "npu") and not is_installed() and torch.npu.is_available()
    has_ascend = (triton_version() or "").startswith("triton-ascend")
    return "compiled" if real_npu and has_ascend else "interpret"


_MODULES: dict[str, ModuleType] = {}
_SCRATCH: list[tuple[int, Path]] = []  # (pid, folder): this process's folder for uncached kernel modules


def _scratch_dir() -> Path:
    """One temporary folder per process for kernel modules of uncached plans, removed when the process exits
    (it was one folder per module, left in the temporary directory for good). Only by the process that made it:
    a forked child exiting must not remove its parent's modules."""
    if not _SCRATCH or _SCRATCH[0][0] != os.getpid():
        import atexit

        _SCRATCH[:] = [(os.getpid(), Path(tempfile.mkdtemp(prefix="ascend_compat_superopt_")))]
        atexit.register(_remove_scratch, *_SCRATCH[0])
    return _SCRATCH[0][1]


def _remove_scratch(pid: int, folder: Path) -> None:
    if os.getpid() == pid:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def interpreting(on: bool) -> Iterator[None]:
    """``TRITON_INTERPRET`` set while our modules are imported and launched (Triton reads it at both points)."""
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if on else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


def load_module(source: str, name: str, directory: Optional[Path], interpret: bool) -> ModuleType:
    """Import an emitted kernel module from a file (Triton reads the source of jitted functions)."""
    key = f"{interpret}:{source}"
    if key in _MODULES:
        return _MODULES[key]
    directory = directory or _scratch_dir()
    path = directory / f"{name}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # No fsync: a file a power loss left empty differs from the source and is written again here.
        _atomic.write_text(path, source, fsync=False)
    modname = f"ascend_compat_superopt_k_{abs(hash(key)):x}"
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with interpreting(interpret):
        sys.modules[modname] = module
        spec.loader.exec_module(module)
    _MODULES[key] = module
    return module


def _quiet_masked_lanes() -> Any:
    """The interpreter computes masked-off lanes too (0/0 there is harmless and never stored)."""
    import numpy as np

    return np.errstate(invalid="ignore", divide="ignore", over="ignore")


def run_kernels(graph: KernelGraph, kernels: list[dict[str, Any]], inputs: list[Any], mode: str,
                directory: Optional[Path]) -> list[Any]:
    """Execute the emitted kernels of ``graph`` in order on ``inputs``; returns the graph's outputs."""
    import torch

    shapes = [tuple(t.shape) for t in inputs]
    sized = graph.with_input_shapes(shapes)
    vals: dict[int, Any] = {}
    for idx, node_id in enumerate(graph.inputs):
        vals[node_id] = inputs[idx].contiguous()
    for k in kernels:
        module = load_module(k["source"], k["name"], directory, mode == "interpret")
        outs = [torch.empty(sized.nodes[o].shape, dtype=getattr(torch, sized.nodes[o].dtype),
                            device=inputs[0].device) for o in k["outputs"]]
        with interpreting(mode == "interpret"), _quiet_masked_lanes():
            module.launch(*[vals[v] for v in k["loads"]], *outs, max_programs=k.get("max_programs"))
        vals.update(zip(k["outputs"], outs))
    return [vals[o] for o in graph.outputs]


def check_inputs(graph: KernelGraph, inputs: list[Any]) -> None:
    """The call's inputs against the graph's: count, torch tensors, shapes, dtypes, and one device for all."""
    import torch

    if len(inputs) != len(graph.inputs):
        raise GraphError(f"the graph takes {len(graph.inputs)} inputs, got {len(inputs)}")
    for k, (i, t) in enumerate(zip(graph.inputs, inputs)):
        n = graph.nodes[i]
        if not isinstance(t, torch.Tensor):  # a NumPy array's dtype prints as torch's would, minus "torch."
            kind = type(t)
            raise GraphError(f"input {k}: expected a torch tensor of {n.shape} {n.dtype}, got "
                             f"{kind.__module__}.{kind.__qualname__}")
        if tuple(t.shape) != n.shape or str(t.dtype) != f"torch.{n.dtype}":
            raise GraphError(f"input {k}: expected {n.shape} {n.dtype}, got {tuple(t.shape)} "
                             f"{str(t.dtype).replace('torch.', '')}")
    # The emitted kernels take raw pointers: under Triton's interpreter, inputs on two devices would be read
    # wherever they are (on a device, a pointer of another device's memory is a fault), so refuse as torch does.
    devices = list(dict.fromkeys(str(t.device) for t in inputs))
    if len(devices) > 1:
        raise GraphError(f"the inputs are on different devices ({', '.join(devices)}); put all of them on one "
                         "device")


def compare(outputs: list[Any], reference: list[Any]) -> tuple[bool, str]:
    """Outputs against the eager reference within the dtype's tolerance (from data)."""
    worst = ""
    for k, (x, y) in enumerate(zip(outputs, reference)):
        tol = tolerance(str(y.dtype).replace("torch.", ""))
        xf, yf = x.float().cpu(), y.float().cpu()
        if xf.shape != yf.shape:
            return False, f"output {k}: shape {tuple(xf.shape)} != {tuple(yf.shape)}"
        err = (xf - yf).abs()
        bound = tol["atol"] + tol["rtol"] * yf.abs()
        if not bool((err <= bound).all()):
            return False, (f"output {k}: max abs error {float(err.max()):.3g} beyond atol {tol['atol']} "
                           f"rtol {tol['rtol']}")
        worst = f"max abs error {float(err.max()):.3g} (atol {tol['atol']}, rtol {tol['rtol']})"
    return True, worst


def numeric_check(original: KernelGraph, plan_graph: KernelGraph, kernels: Optional[list[dict[str, Any]]],
                  mode: str, device: str, directory: Optional[Path], seeds: int = 2,
                  at_least: Optional[dict[int, int]] = None) -> tuple[bool, str]:
    """Run the plan on random inputs at small extents and compare with torch eager on the user's graph.

    ``at_least``: extent -> smallest small extent (looped axes span several blocks, so the loop is exercised).
    """
    from ascend_compat.superopt.ffield import small_shapes

    shapes = small_shapes(original, at_least=at_least)
    small = original.with_input_shapes(shapes)
    small_plan = plan_graph.with_input_shapes(shapes)
    detail = ""
    for seed in range(seeds):
        ins = random_inputs(small, device=device, seed=seed)
        ref = run_graph(small, ins)
        try:
            got = run_graph(small_plan, ins) if kernels is None else run_kernels(
                plan_graph, kernels, ins, mode, directory)
        except Exception as e:  # a kernel that does not run is a failed candidate, shown in explain()
            first = (str(e).splitlines() or [""])[0][:200]
            return False, f"the plan failed to run: {type(e).__name__}: {first}"
        ok, detail = compare(got, ref)
        if not ok:
            return False, detail
    return True, f"matches torch eager on {seeds} random inputs at extents {shapes}: {detail}"
