"""``-n auto``'s worker count: min(4, affinity CPUs, ceil(cgroup CPU quota)), read from fake cgroup trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import _cpus
from tests._cpus import OVERRIDE, cgroup_cpu_limit, worker_count


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _proc(tmp_path: Path, text: str) -> Path:
    proc = tmp_path / "proc_self_cgroup"
    proc.write_text(text)
    return proc


def _count(tmp_path: Path, proc: str, cpus: int, environ: dict[str, str] | None = None) -> int:
    return worker_count(cap=4, environ=environ or {}, root=tmp_path / "cg", proc_cgroup=_proc(tmp_path, proc),
                        cpus=cpus)


def test_v2_quota_below_the_core_count_caps_the_workers(tmp_path):
    _write(tmp_path / "cg" / "cpu.max", "150000 100000\n")  # 1.5 CPUs
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, "0::/\n")) == 1.5
    assert _count(tmp_path, "0::/\n", cpus=16) == 2


def test_v2_without_a_limit_leaves_the_affinity_and_the_cap(tmp_path):
    _write(tmp_path / "cg" / "cpu.max", "max 100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, "0::/\n")) is None
    assert _count(tmp_path, "0::/\n", cpus=3) == 3
    assert _count(tmp_path, "0::/\n", cpus=64) == 4


def test_v2_the_tightest_ancestor_wins(tmp_path):
    _write(tmp_path / "cg" / "ci.slice" / "cpu.max", "100000 100000\n")  # the parent allows 1 CPU
    _write(tmp_path / "cg" / "ci.slice" / "job" / "cpu.max", "800000 100000\n")  # the job itself 8
    proc = "0::/ci.slice/job\n"
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, proc)) == 1.0
    assert _count(tmp_path, proc, cpus=8) == 1


def test_v1_quota_and_period(tmp_path):
    proc = "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n2:cpuset:/\n"
    _write(tmp_path / "cg" / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us", "250000\n")
    _write(tmp_path / "cg" / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_period_us", "100000\n")
    _write(tmp_path / "cg" / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n")  # the root has no limit
    _write(tmp_path / "cg" / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, proc)) == 2.5
    assert _count(tmp_path, proc, cpus=2) == 2  # affinity below the quota
    assert _count(tmp_path, proc, cpus=32) == 3


def test_v1_no_limit_and_a_namespaced_path(tmp_path):
    # The path /proc/self/cgroup names is not under the mount (a cgroup namespace): the mount's own files count.
    _write(tmp_path / "cg" / "cpu" / "cpu.cfs_quota_us", "-1\n")
    _write(tmp_path / "cg" / "cpu" / "cpu.cfs_period_us", "100000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, "1:cpu:/elsewhere\n")) is None
    _write(tmp_path / "cg" / "cpu" / "cpu.cfs_quota_us", "50000\n")
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, "1:cpu:/elsewhere\n")) == 0.5
    assert _count(tmp_path, "1:cpu:/elsewhere\n", cpus=4) == 1


@pytest.mark.parametrize("text", ["", "garbage", "max", "0 100000", "100000 0", "abc 100000"])
def test_unreadable_or_malformed_quota_is_no_limit(tmp_path, text):
    _write(tmp_path / "cg" / "cpu.max", text)
    assert cgroup_cpu_limit(tmp_path / "cg", _proc(tmp_path, "0::/\n")) is None
    assert _count(tmp_path, "0::/\n", cpus=3) == 3


def test_no_cgroup_files_at_all(tmp_path):
    assert cgroup_cpu_limit(tmp_path / "missing", tmp_path / "missing_proc") is None
    assert worker_count(cap=4, environ={}, root=tmp_path / "missing", proc_cgroup=tmp_path / "p", cpus=1) == 1


def test_the_environment_override_wins_and_a_bad_one_is_ignored(tmp_path):
    _write(tmp_path / "cg" / "cpu.max", "100000 100000\n")
    assert _count(tmp_path, "0::/\n", cpus=2, environ={OVERRIDE: "6"}) == 6
    with pytest.warns(UserWarning, match="not a number"):
        assert _count(tmp_path, "0::/\n", cpus=2, environ={OVERRIDE: "lots"}) == 1


def test_the_xdist_hook_is_this_count(request, monkeypatch):
    # Through pytest's hook call, as `-n auto` asks: the conftest's answer wins over pytest-xdist's own (which
    # would count 64 CPUs here and read no cgroup quota).
    if not request.config.pluginmanager.has_plugin("xdist"):
        pytest.skip("pytest-xdist is not loaded")
    monkeypatch.setattr(_cpus, "affinity_cpus", lambda: 64)
    monkeypatch.delenv(OVERRIDE, raising=False)
    asked = request.config.hook.pytest_xdist_auto_num_workers(config=request.config)
    assert asked == worker_count(cap=4, environ={}) <= 4
    monkeypatch.setenv(OVERRIDE, "3")
    assert request.config.hook.pytest_xdist_auto_num_workers(config=request.config) == 3
