"""A unified diff in linear time for texts that differ in small, scattered places (what ``port`` produces).

:func:`difflib.unified_diff` is quadratic on long files with many changes and repeated lines: a 200 KB
generated file took 17 s, a 2 MB one 14 minutes. ``port`` rewrites inside lines and inserts a few lines, so
the two texts resynchronise within a few lines of every change: walking both in step and looking a bounded
distance ahead at each difference finds every hunk in O(lines). The output is a valid unified diff (``patch``
applies it); it may differ from difflib's where difflib would pick another of several equally short ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["unified_diff"]

#: How far ahead (lines, both sides together) a difference is resynchronised; past it the rest is one hunk.
LOOKAHEAD = 64
# Lines that must match after a resync point, so a lone blank line or ``)`` does not end a change early.
_CONFIRM = 2

Opcode = tuple[str, int, int, int, int]


def _resync(a: Sequence[str], b: Sequence[str], i: int, j: int) -> tuple[int, int]:
    """The nearest ``(i2, j2)`` past a difference at ``(i, j)`` where both sides match again (for ``_CONFIRM``
    lines or to their ends); ``(len(a), len(b))`` when none is within :data:`LOOKAHEAD`."""
    na, nb = len(a), len(b)
    for d in range(1, LOOKAHEAD + 1):
        for k in range(d + 1):
            i2, j2 = i + k, j + d - k
            if i2 > na or j2 > nb:
                continue
            if i2 == na and j2 == nb:
                return i2, j2
            if i2 < na and j2 < nb and all(
                    a[i2 + t] == b[j2 + t] for t in range(min(_CONFIRM, na - i2, nb - j2))):
                return i2, j2
    return na, nb


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """:meth:`difflib.SequenceMatcher.get_opcodes`-style operations turning ``a`` into ``b``."""
    ops: list[Opcode] = []
    i = j = 0
    while i < len(a) or j < len(b):
        i0, j0 = i, j
        while i < len(a) and j < len(b) and a[i] == b[j]:
            i, j = i + 1, j + 1
        if i > i0:
            ops.append(("equal", i0, i, j0, j))
        if i == len(a) and j == len(b):
            break
        i2, j2 = _resync(a, b, i, j)
        tag = "replace" if i2 > i and j2 > j else "delete" if i2 > i else "insert"
        ops.append((tag, i, i2, j, j2))
        i, j = i2, j2
    return ops


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _hunks(changes: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """The changes in runs whose gaps are at most ``2 * n`` lines (one hunk each, as difflib merges them)."""
    group: list[Opcode] = []
    for op in changes:
        if group and op[1] - group[-1][2] > 2 * n:
            yield group
            group = []
        group.append(op)
    if group:
        yield group


def unified_diff(a: Sequence[str], b: Sequence[str], fromfile: str = "", tofile: str = "", n: int = 3
                 ) -> Iterator[str]:
    """Lines of a unified diff of line lists ``a`` and ``b`` (with their line endings, as ``splitlines(True)``)
    with ``n`` lines of context, in the format of :func:`difflib.unified_diff`."""
    changes = [op for op in opcodes(a, b) if op[0] != "equal"]
    if changes:
        yield f"--- {fromfile}\n"
        yield f"+++ {tofile}\n"
    for group in _hunks(changes, n):
        first, last = group[0], group[-1]
        a1, a2 = max(0, first[1] - n), min(len(a), last[2] + n)
        # Context lines are equal on both sides, so b's hunk extends by as many as a's.
        b1, b2 = first[3] - (first[1] - a1), last[4] + (a2 - last[2])
        yield f"@@ -{_range(a1, a2)} +{_range(b1, b2)} @@\n"
        at = a1
        for _tag, i1, i2, j1, j2 in group:
            yield from (" " + line for line in a[at:i1])
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])
            at = i2
        yield from (" " + line for line in a[at:a2])
