"""Online softmax (flash-decoding): ``softmax(f(Q @ Kt)) @ V`` as one kernel with one pass over the keys.

When the key axis is too wide to hold a row of scores in registers, the ordinary schedule needs the scores in
memory (a max pass before the exp pass). This schedule keeps a running max ``m``, a running sum ``l`` and an
accumulator rescaled by ``exp(m_old - m_new)`` whenever the max grows, so Q @ Kt, the softmax and P @ V share one
loop over key blocks. It applies to the plan graph ``div(matmul(e, V), sum(e))`` with ``e = exp(x - max(x))`` and
``x`` an elementwise function (of constants) of ``S = Q @ Kt``: the form ``scale-past-matmul`` gives softmax @ V.

The recurrence is data (``STEPS``): the Triton emitter writes it out and ``field_check`` runs the very same steps
over the finite field with a homomorphic ``exp`` (``ffield``), proving that for any max function the recurrence
computes the plan graph exactly. That proof cannot see float range (any shift cancels), so ``stability_check`` runs
the same steps in float32 on logits spread over thousands and on key blocks of -inf logits, against float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Optional, Union

import numpy as np

from ascend_compat.superopt import ffield
from ascend_compat.superopt._data import elem_bytes
from ascend_compat.superopt.graph import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, KernelGraph

Expr = Union[str, tuple[Any, ...]]
# The running max starts at the lowest finite float32, not -inf: on a first key block (or split-K key range) whose
# logits are all -inf, -inf - -inf would make alpha and p NaN; from a finite start alpha = 1 and p = 0.
LOWEST = -3.4028234663852886e38
# (variable, initial value, shape): "row" is (BLOCK_M, 1), "tile" is (BLOCK_M, BLOCK_N)
INIT: tuple[tuple[str, str, str], ...] = (("m_i", "lowest", "row"), ("l_i", "zero", "row"), ("acc", "zero", "tile"))
START = {"lowest": LOWEST, "zero": 0.0}  # the start values in float: emitted (INIT_TRITON) and run by ``_Float``
# one key block: ``x`` (the block's logits, masked keys at -inf) and ``v`` (its rows of V) are given
STEPS: tuple[tuple[str, Expr], ...] = (
    ("m_new", ("max2", "m_i", ("rowmax", "x"))),
    ("alpha", ("exp", ("sub", "m_i", "m_new"))),
    ("p", ("exp", ("sub", "x", "m_new"))),
    ("l_i", ("add", ("mul", "l_i", "alpha"), ("rowsum", "p"))),
    ("acc", ("add", ("mul", "acc", "alpha"), ("dot", "p", "v"))),
    ("m_i", "m_new"),
)
FINAL: Expr = ("div", "acc", "l_i")


@dataclass
class OnlineMatch:
    """The node ids of the pattern (plan-graph tensors) and, once checked, the finite-field proof."""

    q: int
    kt: int
    v: int
    s: int                   # S = q @ kt
    chain: list[int]         # elementwise ops from S to the logits x (x = chain[-1], or S itself)
    mx: int
    e: int
    pv: int
    lsum: int
    out: int
    steps: tuple[tuple[str, Expr], ...] = STEPS
    proof: str = ""
    split_proof: str = ""    # the split-K combine's proof (``splitk.split_check``), once checked

    @property
    def x(self) -> int:
        return self.chain[-1] if self.chain else self.s


def _last_dim_reduction(graph: KernelGraph, i: int, op: str) -> bool:
    n = graph.nodes[i]
    return n.op == op and n.attr("dim") == len(n.shape) - 1


def match(graph: KernelGraph, body: list[int], outputs: list[int]) -> Optional[OnlineMatch]:
    """The online-softmax pattern if the kernel ``body`` (writing ``outputs``) is exactly one, else None."""
    nodes = graph.nodes
    if len(outputs) != 1 or nodes[outputs[0]].op != "div":
        return None
    out = outputs[0]
    pv, lsum = nodes[out].inputs
    if nodes[pv].op != "matmul" or not _last_dim_reduction(graph, lsum, "sum"):
        return None
    e, v = nodes[pv].inputs
    if nodes[lsum].inputs[0] != e or nodes[e].op != "exp" or nodes[nodes[e].inputs[0]].op != "sub":
        return None
    x, mx = nodes[nodes[e].inputs[0]].inputs
    if not _last_dim_reduction(graph, mx, "max") or nodes[mx].inputs[0] != x:
        return None
    chain, cur = [], x
    while nodes[cur].op in ELEMENTWISE_UNARY or nodes[cur].op in ELEMENTWISE_BINARY:
        tensors = [j for j in nodes[cur].inputs if nodes[j].op != "const"]
        if len(tensors) != 1:
            return None
        chain.append(cur)
        cur = tensors[0]
    if nodes[cur].op != "matmul":
        return None
    q, kt = nodes[cur].inputs
    m = OnlineMatch(q, kt, v, cur, chain[::-1], mx, e, pv, lsum, out)
    inner = {m.s, *m.chain, mx, nodes[e].inputs[0], e, pv, lsum, out}
    if set(body) != inner or {q, kt, v} & inner or nodes[q].shape[-1] > 128:
        return None
    return m


# ---------------------------------------------------------------------------------------------------- schedule
def schedule(graph: KernelGraph, m: OnlineMatch, batch: int) -> Any:
    """The KernelSchedule: rows M (queries), N (V's columns, tiled), K0 (head dim, held whole), K1 (keys, looped)."""
    from ascend_compat.superopt.schedule import KernelSchedule, dims3

    sub = graph.nodes[m.e].inputs[0]
    col: dict[int, Optional[str]] = {m.q: "K0", m.kt: "K1", m.v: "N", m.s: "K1", sub: "K1", m.e: "K1", m.mx: None,
                                     m.lsum: None, m.pv: "N", m.out: "N", **{c: "K1" for c in m.chain}}
    row: dict[int, Optional[str]] = {v: "M" for v in col}
    row.update({m.kt: "K0", m.v: "K1"})
    for i in m.chain:
        for j in graph.nodes[i].inputs:
            if graph.nodes[j].op == "const":
                col[j], row[j] = None, None
    extent = {"M": dims3(graph.nodes[m.q].shape)[1], "N": dims3(graph.nodes[m.v].shape)[2],
              "K0": dims3(graph.nodes[m.q].shape)[2], "K1": dims3(graph.nodes[m.kt].shape)[2]}
    body = sorted(c for c in col if graph.nodes[c].op not in ("input", "const") and c not in (m.q, m.kt, m.v))
    s = KernelSchedule(body, [m.q, m.kt, m.v], [m.out], col, row, extent, {"K0"}, {v: 0 for v in col},
                       {m.s: [(m.q, m.kt)], m.pv: [(m.e, m.v)]}, passes=[(0, "K1")], batch=batch, kind="cube")
    s.online = m
    return s


def live_bytes(graph: KernelGraph, s: Any, tiles: dict[str, int]) -> int:
    """Q tile, accumulator, m and l live throughout; per key block Kt and V tiles (double buffered), S and P."""
    m: OnlineMatch = s.online
    bm, bn, bk0, bk1 = tiles["BLOCK_M"], tiles["BLOCK_N"], tiles["BLOCK_K0"], tiles["BLOCK_K1"]
    eb = elem_bytes(graph.nodes[m.q].dtype)
    persistent = bm * bk0 * eb + bm * bn * 4 + 2 * bm * 4
    return persistent + 2 * (bk0 * bk1 + bk1 * bn) * eb + 2 * bm * bk1 * 4


# ---------------------------------------------------------------------------------------------------- proof
class _Field:
    """The recurrence's operations over Z_P, with Z_Q for the values that feed exp (see ``ffield``)."""

    def __init__(self, x: np.ndarray, v: np.ndarray, salt: int) -> None:
        self.x, self.v, self.salt = x, v, salt

    def init(self, kind: str) -> tuple[np.ndarray, int]:
        if kind == "lowest":  # any start value: with l = acc = 0 it must not matter
            return np.array(ffield.const_value(1.5 + self.salt, ffield.Q)), ffield.Q
        return np.array(0), ffield.P

    def op(self, name: str, a: tuple[np.ndarray, int], b: Optional[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
        (x, mod) = a
        if name == "exp":
            if mod != ffield.Q:
                raise ValueError("exp of a value outside the exponent field")
            return ffield.powmod(np.array(ffield.OMEGA), x, ffield.P), ffield.P
        if name == "rowmax":  # uninterpreted, symmetric in the block's elements
            return np.sum(ffield.uninterpreted("max", x, mod), axis=-1, keepdims=True) % mod, mod
        if name == "rowsum":
            return np.sum(x, axis=-1, keepdims=True) % mod, mod
        assert b is not None
        y, mod_b = b
        if mod_b != mod:
            raise ValueError(f"{name} mixes Z_{mod} and Z_{mod_b}")
        if name == "max2":  # uninterpreted, not symmetric
            return (ffield.uninterpreted("max2a", x, mod) + ffield.uninterpreted("max2b", y, mod)) % mod, mod
        if name == "dot":
            return np.matmul(x, y) % mod, mod
        if name == "div":
            return x * ffield.powmod(y, np.full(np.shape(y), mod - 2), mod) % mod, mod
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply}[name](x, y) % mod, mod

    def block(self, x: np.ndarray, v: np.ndarray) -> tuple[Any, Any]:
        return (x, ffield.Q), (v, ffield.P)

    @staticmethod
    def value(r: Any) -> np.ndarray:
        return np.asarray(r[0])


class _Float:
    """The same operations in float32, as the kernel computes them, for ``stability_check``."""

    FN: ClassVar[dict[str, Any]] = {"max2": np.maximum, "dot": np.matmul, "add": np.add, "sub": np.subtract,
                                    "mul": np.multiply, "div": np.divide}

    def init(self, kind: str) -> np.ndarray:
        return np.full((), START[kind], np.float32)

    def block(self, x: np.ndarray, v: np.ndarray) -> tuple[Any, Any]:
        return x.astype(np.float32), v.astype(np.float32)

    @staticmethod
    def value(r: Any) -> np.ndarray:
        return np.asarray(r)

    def op(self, name: str, a: np.ndarray, b: Optional[np.ndarray]) -> np.ndarray:
        if name == "exp":
            return np.exp(a)
        if name in ("rowmax", "rowsum"):
            return (np.max if name == "rowmax" else np.sum)(a, axis=-1, keepdims=True)
        return np.asarray(self.FN[name](a, b), dtype=np.float32)


def _eval(expr: Expr, env: dict[str, Any], f: Any) -> Any:
    if isinstance(expr, str):
        return env[expr]
    args = [_eval(a, env, f) for a in expr[1:]]
    return f.op(expr[0], args[0], args[1] if len(args) > 1 else None)


def run_segment(steps: tuple[tuple[str, Expr], ...], x: np.ndarray, v: np.ndarray, block: int, salt: int = 0,
                f: Any = None) -> dict[str, Any]:
    """The recurrence over key blocks of ``block`` on logits ``x`` (Z_Q) and values ``v`` (Z_P), or in float32 with
    ``f=_Float()``: its final state (``m_i``, ``l_i``, ``acc``: what a split-K program writes as its partials)."""
    f = f or _Field(x, v, salt)
    env: dict[str, Any] = {name: f.init(kind) for name, kind, _ in INIT}
    for c in range(0, x.shape[-1], block):
        env["x"], env["v"] = f.block(x[..., c:c + block], v[..., c:c + block, :])
        for name, expr in steps:
            env[name] = _eval(expr, env, f)
    return env


def run_field(steps: tuple[tuple[str, Expr], ...], x: np.ndarray, v: np.ndarray, block: int, salt: int = 0,
              ) -> np.ndarray:
    """The recurrence over key blocks of ``block`` on logits ``x`` (Z_Q) and values ``v`` (Z_P); returns FINAL."""
    env = run_segment(steps, x, v, block, salt)
    return _Field.value(_eval(FINAL, env, _Field(x, v, salt)))


def field_inputs(graph: KernelGraph, m: OnlineMatch, tests: int) -> Optional[list[tuple[Any, Any, Any]]]:
    """(logits x in Z_Q, values v, the plan graph's output) on ``tests`` random inputs at small extents (>= 11
    keys), or None when the homomorphic exp does not apply."""
    sub, ids = graph.subgraph([m.q, m.kt, m.v], [m.out])
    qdom = ffield.exponent_domain(sub)
    if qdom is None:
        return None
    shapes = ffield.small_shapes(sub, at_least={graph.nodes[m.kt].shape[-1]: 11})
    small = sub.with_input_shapes(shapes)
    rng = np.random.default_rng(1)
    out = []
    for _ in range(tests):
        ins = [rng.integers(0, ffield.P, size=s, dtype=np.int64) for s in shapes]
        vals = ffield.evaluate_nodes(small, ins, qdom)
        out.append((vals[ids[m.x]], vals[ids[m.v]], vals[ids[m.out]]))
    return out


def field_check(graph: KernelGraph, m: OnlineMatch, tests: int = 3) -> ffield.Verdict:
    """Is the recurrence equal to the plan graph's kernel over the finite field (homomorphic exp, any max)?"""
    cases = field_inputs(graph, m, tests)
    if cases is None:
        return ffield.Verdict(False, "the homomorphic exp does not apply (a value feeds exp and something else)", 0)
    for t, (x, v, want) in enumerate(cases):
        for block in (3, 4):  # a partial last block, and blocks that change the running shift several times
            try:
                got = run_field(m.steps, x, v, block, salt=t)
            except ValueError as e:  # e.g. exp of a value outside the exponent field: ill-formed recurrence
                return ffield.Verdict(False, f"the online recurrence is ill-formed: {e}", t)
            if got.shape != want.shape or not np.array_equal(got, want):
                return ffield.Verdict(False, f"the online recurrence differs over Z_{ffield.P} on random test {t + 1} "
                                      f"(key blocks of {block})", t + 1)
    return ffield.Verdict(True, f"online recurrence equal to the plan graph on {tests} random tests over "
                          f"Z_{ffield.P} (exp homomorphic of order {ffield.Q}, max uninterpreted; key blocks of 3 and "
                          f"4 over {cases[0][0].shape[-1]} keys)", tests)


def hostile_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits (3 rows of 14 keys) that overflow exp in float32 under any shift but the largest max, values, and
    softmax @ V in float64: random logits spread over thousands, logits falling block by block, and a row whose
    first 9 keys have -inf logits (whole key blocks and split-K ranges of them)."""
    rng = np.random.default_rng(0)
    x = np.stack([rng.standard_normal(14) * 1000, np.linspace(3000, -3000, 14), rng.standard_normal(14)])
    x[2, :9] = -np.inf
    v = rng.standard_normal((14, 3))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return x, v, (e @ v) / e.sum(axis=-1, keepdims=True)


def float_error(got: np.ndarray, want: np.ndarray) -> str:
    """What is wrong with a float32 result against float64 (empty: within 1e-3)."""
    if not np.isfinite(got).all():
        return "NaN or inf"
    err = float(np.max(np.abs(got - want)))
    return "" if np.allclose(got, want, rtol=1e-3, atol=1e-3) else f"an error of {err:.3g}"


HOSTILE = "logits spread over thousands and key blocks of all -inf logits"


def stability_check(steps: tuple[tuple[str, Expr], ...]) -> ffield.Verdict:
    """Does the recurrence, run in float32 as emitted, stay finite and match float64 on ``hostile_inputs``? (The
    finite-field proof holds for any shift; only the running max keeps exp in float range.)"""
    x, v, want = hostile_inputs()
    f = _Float()
    for block in (3, 4):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            got = f.value(_eval(FINAL, run_segment(steps, x, v, block, f=f), f))
        why = float_error(got, want)
        if why:
            return ffield.Verdict(False, f"not float32-stable: the recurrence gives {why} against float64 on {HOSTILE} "
                                  f"(key blocks of {block})", 1)
    return ffield.Verdict(True, f"float32-stable on {HOSTILE} (within 1e-3 of float64; key blocks of 3 and 4)", 1)


# ---------------------------------------------------------------------------------------------------- Triton
TRITON = {"max2": "tl.maximum({0}, {1})", "rowmax": "tl.reduce({0}, 1, _max)[:, None]",
          "rowsum": "tl.reduce({0}, 1, _add)[:, None]", "exp": "tl.exp({0})", "sub": "({0} - {1})",
          "add": "({0} + {1})", "mul": "({0} * {1})", "div": "({0} / {1})", "dot": "tl.dot({0}.to({dt}), {1}{prec})"}
INIT_TRITON = {**{kind: f"float({str(x)!r})" for kind, x in START.items()}, "row": "(BLOCK_M, 1)",
               "tile": "(BLOCK_M, BLOCK_N)"}


def _triton(expr: Expr, dt: str, prec: str) -> str:
    if isinstance(expr, str):
        return expr
    return TRITON[expr[0]].format(*[_triton(a, dt, prec) for a in expr[1:]], dt=dt, prec=prec)


def splits(tiles: dict[str, int]) -> int:
    """Key ranges per (batch, row tile, column tile): 1, or S > 1 for a split-K plan (``splitk.py``)."""
    return tiles.get("SPLITS", 1)


def emit_kernel(graph: KernelGraph, s: Any, name: str, tiles: dict[str, int], header: str) -> Any:
    """The Triton module of an online-softmax schedule (same layout and launcher as every emitted kernel).

    With ``tiles["SPLITS"] > 1`` the program of task ``t`` runs the recurrence over key range ``t % SPLITS`` only and
    stores its partials; ``splitk.emit_module`` adds the combine kernel and the launcher of both.
    """
    from ascend_compat.superopt.emit import TL_DTYPE, Ctx, Emitter, module, preamble

    m: OnlineMatch = s.online
    split = splits(tiles) > 1
    em = Emitter(graph, s, tiles)
    dtype = graph.nodes[m.s].dtype
    # bf16 operands rounded to bf16, then the dtype the launcher picks (the interpreter's bf16 tl.dot is wrong)
    dt = "tl.bfloat16).to(DOT_BF16" if dtype == "bfloat16" else TL_DTYPE[dtype]
    prec = ', input_precision="ieee"' if dtype == "float32" else ""
    (qp, qm), (kp, km) = em.address(m.q, "offs_m", "f_K0", "fm_K0"), em.address(m.kt, "f_K0", "k_K1", "km_K1")
    (vp, vm), (op, om) = (em.address(m.v, "k_K1", "offs_n", "mask_n"),
                          em.address(m.out, "offs_m", "offs_n", "mask_n", store=True))
    ctx = Ctx("K1", "k_K1", "km_K1")
    ctx.cache[m.s] = "s_blk"
    logits = em.value(m.x, ctx)
    decode = preamble(s, tiles)
    keys = ("0", "K1")
    if split:  # the split is the fastest-varying part of the task; key blocks dealt out evenly (none empty)
        decode = ["split = task % SPLITS", "tile = task // SPLITS", *[x.replace("task", "tile") for x in decode]]
        decode += ["NBLK = (K1 + BLOCK_K1 - 1) // BLOCK_K1",
                   "lo = (split * NBLK // SPLITS) * BLOCK_K1", "hi = ((split + 1) * NBLK // SPLITS) * BLOCK_K1"]
        keys = ("lo", "hi")
    body = [*decode, f"q = tl.load({qp}, mask={qm}, other=0.0).to({dt})",
            *[f"{v} = tl.full({INIT_TRITON[shape]}, {INIT_TRITON[kind]}, tl.float32)" for v, kind, shape in INIT]]
    loop = ["k_K1 = c_K1 + tl.arange(0, BLOCK_K1)", "km_K1 = k_K1 < K1",
            f"kt = tl.load({kp}, mask={km}, other=0.0).to({dt})", f"s_blk = tl.dot(q, kt{prec})", *ctx.lines,
            f"x = tl.where(km_K1[None, :], {logits}, float('-inf'))  # keys past the end: no weight",
            f"v = tl.load({vp}, mask={vm}, other=0.0).to({dt})",
            *[f"{var} = {_triton(expr, dt, prec)}" for var, expr in m.steps]]
    body += ["# one pass over the keys: running max m_i, running sum l_i, accumulator rescaled by alpha",
             f"for c_K1 in range({keys[0]}, {keys[1]}, BLOCK_K1):", *["    " + line for line in loop]]
    if split:
        from ascend_compat.superopt import splitk

        body += splitk.partial_stores(dt, prec)
        return splitk.emit_module(graph, s, name, tiles, header, body, dtype == "bfloat16")
    out_ptr = op.replace(f"t{m.out}_ptr", f"out{m.out}_ptr")
    body.append(f"tl.store({out_ptr}, {_triton(FINAL, dt, prec)}.to({TL_DTYPE[graph.nodes[m.out].dtype]}), "
                f"mask={om})")
    return module(graph, s, name, tiles, header, body, dtype == "bfloat16")
