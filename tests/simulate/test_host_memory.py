"""The simulated device's host memory: large cached blocks ask for transparent huge pages, as NumPy's arrays do."""

from __future__ import annotations

from pathlib import Path

import pytest

_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _huge_kib(address: int, nbytes: int) -> int:
    """AnonHugePages (KiB) of this process's mappings overlapping ``[address, address + nbytes)``.

    madvise splits a mapping where the advised range starts and ends, so a block spans several of them.
    """
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:  # a mapping's header line: "start-end perms ..."
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start < address + nbytes and address < end
        elif inside and head == "AnonHugePages:":
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not _THP.exists() or "[madvise]" not in _THP.read_text(), reason="THP mode is not 'madvise'")
def test_large_npu_block_gets_huge_pages(sim):
    np = pytest.importorskip("numpy")
    control = np.ones(10_000_000, dtype=np.float32)  # NumPy advises huge pages for arrays this size
    if _huge_kib(control.ctypes.data, control.nbytes) == 0:
        pytest.skip("the kernel gave NumPy's array no huge pages either (none free)")
    torch = sim
    t = torch.empty(10_000_000, device="npu")  # 40 MB: a fresh block of the device's cache
    t.fill_(1.0)  # first touch faults the pages in
    assert _huge_kib(t.data_ptr(), t.nbytes) >= 20 * 1024  # most of the 40 MB
    assert float(t[-1]) == 1.0
