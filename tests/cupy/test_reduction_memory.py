"""``all``/``any`` of a bool array add no temporary wider than the array (CuPy's huge-size tests allocate 2 GiB
bool arrays; comparing bool with 0 would build an int64 copy, 8x the array)."""

from __future__ import annotations

from tests.conftest import run_python


def test_all_any_of_bool_array_need_no_wide_temporary():
    proc = run_python(
        """
        import resource
        import ascend_compat.cupy as cp
        n = 128 << 20  # 128 MiB of bool
        a = cp.ones(n, dtype=bool)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        results = (bool(cp.all(a)), bool(cp.any(a)), bool(cp.all(a, axis=0)))
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        print(results, round(grown / n, 2))
        """
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results, ratio = proc.stdout.rsplit(")", 1)
    assert results.strip() == "(True, True, True"
    assert float(ratio) <= 2.0, f"{ratio}x the array's size in temporaries"
