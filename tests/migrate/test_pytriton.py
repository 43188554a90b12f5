"""The Triton rules (AC420-AC424) beyond the fixture corpus: their data, and precision on what is not evident."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from ascend_compat.migrate import pytriton
from ascend_compat.migrate.model import RULES
from ascend_compat.migrate.pyscan import scan_python
from tests._forkserver import cli

TRITON_CODES = {"AC420", "AC421", "AC422", "AC423", "AC424"}
HEADER = "import triton\nimport triton.language as tl\n\n"


def _codes(body: str) -> list[str]:
    return [f.code for f in scan_python("k.py", HEADER + body).findings if f.code in TRITON_CODES]


def test_every_triton_rule_is_registered_and_sourced_in_the_data() -> None:
    data = json.loads((resources.files("ascend_compat.migrate") / "data" / "triton_ascend.json").read_text("utf-8"))
    assert set(data["rules"]) == TRITON_CODES
    for code, entry in data["rules"].items():
        assert entry["source"].strip() and entry["what"].strip(), code
        rule = RULES[code]
        assert rule.language == "python" and rule.category == "custom_kernel" and rule.alternative
        assert not rule.fixable and not rule.shim_handles  # a kernel needs a person
    lim = pytriton.limits()
    assert lim.max_programs == 65535 and lim.dot_operand_dtypes <= lim.tl_dtypes and lim.dot_out_dtypes <= lim.tl_dtypes
    assert "tf32" not in lim.dot_input_precisions and lim.sources.keys() == TRITON_CODES


@pytest.mark.parametrize("perm,flagged", [
    ([1, 0], False), ([0, 2, 1], False), ([1, 0, 2], False), ([0, 1, 2], False), ([0, 1, 3, 2], False),
    ([2, 1, 0], True), ([1, 2, 0], True), ([2, 0, 1], True), ([0, 3, 2, 1], True), ([1, 0, 3, 2], True),
    ([0, 0, 1], False),  # not a permutation: left to Triton's own error
])
def test_non_adjacent(perm: list[int], flagged: bool) -> None:
    assert pytriton.non_adjacent(perm) is flagged


def test_nothing_outside_a_kernel_is_checked() -> None:
    body = (
        "def helper(x, a, b):\n"
        "    y = tl.permute(x, (2, 1, 0))\n"
        "    return tl.dot(a.to(tl.float8e5), b, allow_tf32=True), tl.inline_asm_elementwise('', '', [x])\n"
    )
    assert _codes(body) == []


def test_grids_known_only_at_run_time_are_not_flagged() -> None:
    body = (
        "@triton.jit\n"
        "def k(x, BLOCK: tl.constexpr):\n"
        "    pass\n\n"
        "N = 1 << 30\n\n"
        "def launch(x, n, grid):\n"
        "    k[grid](x, BLOCK=1)\n"
        "    k[(n,)](x, BLOCK=1)\n"
        "    k[(triton.cdiv(n, 4),)](x, BLOCK=4)\n"
        "    k[lambda meta: (triton.cdiv(N, meta['BLOCK']),)](x, BLOCK=1 << 20)\n"  # 1024 programs
        "    k[lambda meta: (triton.cdiv(N, meta['BLOCK']),)](x, **opts)\n"
        "    g = (1 << 20,)\n"
        "    g = (1,)\n"  # bound twice: not evident
        "    k[g](x, BLOCK=1)\n"
        "\n"
        "def rebinding(k, x):\n"
        "    k[(1 << 20,)](x)\n"  # a parameter named like the kernel
        "\n"
        "class Launcher:\n"
        "    SIZE = 1 << 20\n"
        "    def go(self, x, SIZE=4):\n"
        "        k[(SIZE,)](x, BLOCK=1)\n"  # the parameter, not the class attribute
        "    def go2(self, x):\n"
        "        k[(SIZE,)](x, BLOCK=1)\n"  # a class attribute is not visible here
    )
    assert _codes(body) == []


def test_grid_limit_counts_every_dimension_and_names_bound_once() -> None:
    body = (
        "@triton.autotune(configs=[], key=['n'])\n"
        "@triton.jit\n"
        "def k(x, n, BLOCK: tl.constexpr):\n"
        "    pass\n\n"
        "ROWS: int = 4096\n\n"
        "def launch(x):\n"
        "    cols = ROWS // 128\n"
        "    k[(ROWS, cols)](x, 1, BLOCK=1)\n"  # 4096 * 32 programs
        "    k[(ROWS, 16)](x, 1, BLOCK=1)\n"  # 65536 programs
        "    k[(ROWS, 15)](x, 1, BLOCK=1)\n"  # 61440: fine
    )
    found = [(f.line, f.code, f.message) for f in scan_python("k.py", HEADER + body).findings if f.code == "AC423"]
    assert [(line, code) for line, code, _ in found] == [(13, "AC423"), (14, "AC423")]
    assert "131072 programs (4096 x 32)" in found[0][2] and "65535" in found[0][2]


def test_grid_lambda_meta_is_evaluated_where_the_kernel_is_launched() -> None:
    body = (
        "BLOCK_SIZE = 16\n"
        "N = 1 << 22\n"
        "grid = lambda meta: (triton.cdiv(N, meta['BLOCK_SIZE']),)\n\n"
        "@triton.jit\n"
        "def k(x, n, BLOCK_SIZE: tl.constexpr):\n"
        "    pass\n\n"
        "def launch(x):\n"
        "    BLOCK_SIZE = 1024\n"
        "    k[grid](x, N, BLOCK_SIZE=BLOCK_SIZE)\n"  # 4096 programs: the launch's BLOCK_SIZE, not the module's
        "def launch_any(x, BLOCK_SIZE=4096):\n"
        "    k[grid](x, N, BLOCK_SIZE=BLOCK_SIZE)\n"  # a parameter: unknown, not judged
        "def launch_small(x):\n"
        "    k[grid](x, N, BLOCK_SIZE=16)\n"  # 262144 programs
    )
    found = [f.line for f in scan_python("k.py", HEADER + body).findings if f.code == "AC423"]
    assert found == [18]


def test_constant_folding_evaluates_each_name_once(monkeypatch) -> None:
    # x1 = x0 + x0, x2 = x1 + x1, ...: folding without memory re-evaluates x0 2**n times.
    calls = []
    original = pytriton._Folder._value
    monkeypatch.setattr(pytriton._Folder, "_value", lambda self, node, scope: calls.append(1) or original(
        self, node, scope))
    chain = "x0 = 1\n" + "".join(f"x{i} = x{i - 1} + x{i - 1}\n" for i in range(1, 17))
    body = f"@triton.jit\ndef k(x):\n    pass\n\n{chain}k[(x16,)](0)\n"
    assert _codes(body) == ["AC423"]  # 2**16 = 65536 programs
    assert len(calls) < 200


def test_dot_operands_bound_in_the_kernel_and_aliases() -> None:
    body = (
        "from triton.language import dot as matmul, float8e4nv\n\n"
        "@triton.jit\n"
        "def k(a_ptr, b_ptr, DT: tl.constexpr):\n"
        "    a = tl.load(a_ptr).to(float8e4nv)\n"
        "    b = tl.load(b_ptr).to(DT)\n"  # a constexpr dtype: not evident
        "    c = matmul(a, b)\n"
        "    d = tl.dot(b, b, input_precision='tf32x3')\n"
        "    e = tl.dot(b, b, input_precision=PREC)\n"
    )
    assert _codes(body) == ["AC422", "AC422"]


def test_list_rules_names_the_triton_rules() -> None:
    out = cli("check", "--list-rules", timeout=120).stdout
    for code in sorted(TRITON_CODES):
        assert code in out
    assert "triton-grid-limit" in out


def test_every_definition_of_a_kernel_name_is_checked_and_old_math_names_are_flagged() -> None:
    body = (
        "if hasattr(tl, 'extra'):\n"
        "    @triton.jit\n"
        "    def k(x):\n"
        "        return tl.extra.cuda.libdevice.tanh(x)\n"
        "else:\n"
        "    @triton.jit\n"
        "    def k(x):\n"
        "        return tl.math.tanh(x) + tl.math.max(x, 0) + tl.math.exp(x)\n"  # exp is core; tanh, max were libdevice
    )
    found = [(f.line, f.code) for f in scan_python("k.py", HEADER + body).findings if f.code in TRITON_CODES]
    assert found == [(7, "AC421"), (11, "AC421"), (11, "AC421")]
