"""``port``'s diff (``PortSuccess.diff``): valid, difflib's on ordinary changes, and linear on long files.

difflib's unified diff is quadratic on long files with many changes and repeated lines: ``port`` on a 2 MB
generated file spent 14 minutes in it (issue 17, item 7).
"""

from __future__ import annotations

import difflib
import random
import re
import time

from ascend_compat.migrate.linediff import unified_diff
from ascend_compat.migrate.port import PortSuccess, port_source

HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(a: list[str], diff: list[str]) -> list[str]:
    """Apply a unified diff to ``a`` as ``patch`` does, checking every context and removed line."""
    out: list[str] = []
    pos = 0
    i = 2 if diff else 0
    while i < len(diff):
        m = HUNK.match(diff[i])
        assert m, diff[i]
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out.extend(a[pos:start])
        pos = start
        i += 1
        while i < len(diff) and not diff[i].startswith("@@"):
            tag, line = diff[i][0], diff[i][1:]
            if tag in " -":
                assert a[pos] == line, (pos, a[pos], line)
                pos += 1
            if tag in " +":
                out.append(line)
            i += 1
    return out + a[pos:]


def test_the_diff_of_a_port_is_difflibs() -> None:
    text = ("import torch\n\n\ndef main():\n    x = torch.zeros(3).cuda()\n    y = x.to('cuda:0')\n"
            + "    z = 1\n" * 20 + "    torch.cuda.synchronize()\n    return x, y, z\n")
    result = port_source("m.py", text)
    assert isinstance(result, PortSuccess)
    expected = "".join(difflib.unified_diff(text.splitlines(True), result.text.splitlines(True),
                                            fromfile="a/m.py", tofile="b/m.py"))
    assert result.diff() == expected
    assert "+import torch_npu" in expected  # the inserted line and the in-line rewrites both show


def test_random_edits_give_a_diff_that_applies() -> None:
    rnd = random.Random(17)
    for _ in range(400):
        a = [rnd.choice(["x\n", "y\n", ")\n", "\n", f"l{rnd.randint(0, 40)}\n"]) for _ in range(rnd.randint(0, 80))]
        b = list(a)
        for _ in range(rnd.randint(0, 8)):
            k = rnd.randint(0, len(b))
            op = rnd.random()
            if op < 0.4 and b:
                b[min(k, len(b) - 1)] = f"new{rnd.random()}\n"
            elif op < 0.7:
                b[k:k] = [f"ins{rnd.random()}\n"] * rnd.randint(1, 3)
            elif b:
                del b[k: k + rnd.randint(1, 3)]
        diff = list(unified_diff(a, b, "a", "b"))
        assert (diff == []) == (a == b)
        assert apply_patch(a, diff) == b


def test_the_diff_of_a_long_generated_file_is_linear() -> None:
    a: list[str] = []
    for i in range(8000):  # 48,000 lines, half of them rewritten, the rest repeated: difflib takes ~30 s
        a += [f"def f{i}(x):\n", "    y = x.cuda()\n", "    if torch.cuda.is_available():\n",
              "        torch.cuda.synchronize()\n", "    return y\n", "\n"]
    b = [line.replace("cuda", "npu") for line in a]
    result = PortSuccess("gen.py", "".join(a), "".join(b))
    t0 = time.process_time()
    diff = result.diff()
    took = time.process_time() - t0
    assert took < 5, f"the diff of 48,000 lines took {took:.1f} s of CPU"
    assert apply_patch(a, diff.splitlines(True)) == b
