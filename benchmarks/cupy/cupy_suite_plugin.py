"""pytest plugin of the CuPy conformance runner (``run_cupy_suite.py``), loaded with ``-p cupy_suite_plugin``.

At import it (1) installs the simulated NPU when ``ASCEND_COMPAT_CUPY_SUITE_DEVICE=npu``, (2) makes ``import cupy``
resolve to ``ascend_compat.cupy``, (3) adds the test-only alias layer: ``cupy.testing`` from the CuPy sdist (MIT)
and stand-ins for the CuPy internals that ``cupy.testing`` and the test modules import (``cupy._core.internal``,
``cupyx.scipy``, ``cupy_backends``, ...). None of this is in the product. During the run it writes one JSON line per
collected test, per result and per collection error to ``ASCEND_COMPAT_CUPY_SUITE_OUT``; tests matching an N/A rule
are deselected; a skip raised from inside ``ascend_compat`` is reported as a failure.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import signal
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SDIST = Path(os.environ["ASCEND_COMPAT_CUPY_SUITE_SDIST"])
DEVICE = os.environ.get("ASCEND_COMPAT_CUPY_SUITE_DEVICE", "cpu")
OUT = os.environ["ASCEND_COMPAT_CUPY_SUITE_OUT"]
RULES: list[dict[str, str]] = json.loads(os.environ.get("ASCEND_COMPAT_CUPY_SUITE_RULES", "[]"))
TEST_TIMEOUT = int(os.environ.get("ASCEND_COMPAT_CUPY_SUITE_TEST_TIMEOUT", "60"))
PRODUCT = str(Path(importlib.util.find_spec("ascend_compat").origin).parent)  # type: ignore[arg-type]


def _emit(record: dict[str, Any]) -> None:
    with open(OUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


def _provide(package: types.ModuleType, alias: str, name: str, mod: types.ModuleType) -> None:
    """Attach ``mod`` as ``package.name`` unless the product has it; register it under both module names."""
    if hasattr(package, name) and isinstance(getattr(package, name), types.ModuleType):
        return
    setattr(package, name, mod)
    sys.modules[f"{alias}.{name}"] = mod
    sys.modules[f"{package.__name__}.{name}"] = mod


def _load_testing(cp: types.ModuleType) -> None:
    """``cupy.testing`` from the sdist, as a package whose submodules load from the sdist too."""
    root = SDIST / "cupy" / "testing"
    spec = importlib.util.spec_from_file_location("cupy.testing", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cupy.testing"] = mod
    cp.testing = mod
    spec.loader.exec_module(mod)


def _install_aliases() -> types.ModuleType:
    if DEVICE == "npu":
        from ascend_compat import simulate

        simulate.install(device_count=2, chip="910B")
    from ascend_compat.cupy import _install

    if not _install.install_as_cupy():
        raise RuntimeError("a real, usable CuPy is installed: the suite would test it, not ascend_compat.cupy")
    import cupy as cp
    from ascend_compat.cupy import cuda

    core = cp._core
    internal = _module("cupy._core.internal", prod=lambda shape: int(__import__("math").prod(shape)))
    _provide(core, "cupy._core", "internal", internal)
    if not hasattr(core, "get_size"):
        core.get_size = lambda size: () if size is None else (  # type: ignore[attr-defined]
            (int(size),) if isinstance(size, int) else tuple(int(s) for s in size))
    acc = _module("cupy._core._accelerator", ACCELERATOR_CUB=1, ACCELERATOR_CUTENSOR=2, ACCELERATOR_CUTENSORNET=3,
                  get_routine_accelerators=lambda: [], get_reduction_accelerators=lambda: [],
                  set_routine_accelerators=lambda accs: None, set_reduction_accelerators=lambda accs: None)
    _provide(core, "cupy._core", "_accelerator", acc)
    for lib in ("cub", "cutensor", "cusparselt", "jitify"):
        _provide(cuda, "cupy.cuda", lib, cuda._cuda_only.make_module(lib, available=False))
    import cupyx  # the product's cupyx subset; the suite also imports cupyx.scipy / cupyx.cusolver (not in it)

    sparse = _module("cupyx.scipy.sparse", issparse=lambda x: False)
    fftpack = _module("cupyx.scipy.fftpack", get_fft_plan=lambda *a, **k: cuda._cuda_only.refuse("cuFFT plans"))
    _provide(cupyx, "cupyx", "scipy", _module("cupyx.scipy", sparse=sparse, fftpack=fftpack))
    _provide(cupyx, "cupyx", "cusolver", _module("cupyx.cusolver", check_availability=lambda name: True))
    _module("cupy_backends")
    _module("cupy_backends.cuda", stream=cuda.stream)
    _module("cupy_backends.cuda.api", runtime=cuda.runtime, driver=cuda.driver)
    sys.modules["cupy_backends.cuda.api.runtime"] = cuda.runtime
    sys.modules["cupy_backends.cuda.stream"] = cuda.stream
    _module("cupy_backends.cuda.libs", curand=cuda.curand, nvrtc=cuda.nvrtc, cublas=cuda.cublas)
    limit = {"value": 0}
    cublas = _module("cupy.cublas", get_batched_gesv_limit=lambda: limit["value"],
                     set_batched_gesv_limit=lambda v: limit.update(value=v))
    _provide(cp, "cupy", "cublas", cublas)
    if not hasattr(cp, "_util"):
        warn = type("PerformanceWarning", (RuntimeWarning,), {})
        _provide(cp, "cupy", "_util", _module("cupy._util", PerformanceWarning=warn,
                                              experimental=lambda name: None))
    _load_testing(cp)
    return cp


_install_aliases()


def na_rule(nodeid: str) -> dict[str, str] | None:
    """The first N/A rule whose pattern matches the test id (``path::Class::test[param]``)."""
    nodeid = nodeid.removeprefix("tests/")
    for rule in RULES:
        if fnmatch.fnmatchcase(nodeid, rule["pattern"]):
            return rule
    return None


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: N/A counts only tests that were selected
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    done_file = os.environ.get("ASCEND_COMPAT_CUPY_SUITE_DONE")  # a resumed run: tests already reported or crashed
    done = set(Path(done_file).read_text("utf-8").splitlines()) if done_file else set()
    keep, drop = [], []
    for item in items:
        if item.nodeid in done:
            drop.append(item)
            continue
        rule = na_rule(item.nodeid)
        if rule:
            _emit({"kind": "collected", "nodeid": item.nodeid, "na": rule["id"]})
        (drop if rule else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    # after every plugin (-k, -m) has deselected what it will: the tests that are to run
    for item in session.items:
        _emit({"kind": "collected", "nodeid": item.nodeid, "na": None})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _emit({"kind": "collect_error", "nodeid": report.nodeid, "message": str(report.longrepr)[-2000:]})


def _from_product(excinfo: Any) -> bool:
    tb = excinfo.tb
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(PRODUCT):
            return True
        tb = tb.tb_next
    return False


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"test ran longer than {TEST_TIMEOUT}s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo
    if report.skipped and exc is not None and exc.errisinstance(pytest.skip.Exception) and _from_product(exc):
        report.outcome = "failed"  # a skip raised by the product hides a missing feature: count it as a failure
        report.longrepr = f"skip raised inside ascend_compat: {exc.value}"


_OUTCOMES: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        if report.when != "call" and report.outcome == "failed":
            outcome = "error"
        if hasattr(report, "wasxfail"):
            outcome = "skipped" if report.skipped else "passed"
        elif outcome == "failed" and str(report.longrepr).startswith("[XPASS(strict)]"):
            outcome = "passed"  # CuPy marks a NumPy feature it lacks as xfail; the test found NumPy's result here
        prev = _OUTCOMES.get(report.nodeid)
        if prev in ("failed", "error"):
            return
        _OUTCOMES[report.nodeid] = outcome
        message = "" if outcome in ("passed", "skipped") else str(report.longrepr)[-600:]
        if outcome == "skipped":
            message = str(report.longrepr)[-200:]
        _emit({"kind": "result", "nodeid": report.nodeid, "outcome": outcome, "when": report.when,
               "message": message})
