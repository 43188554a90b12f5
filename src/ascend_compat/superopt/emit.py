"""Triton source for one scheduled kernel: readable, self-contained, the graph it implements in its docstring.

Layout of every kernel: a 1-D grid of ``GRID`` programs looping over ``TASKS`` tiles (on Ascend ``GRID`` is the
number of physical cores, so the grid maps onto them; elsewhere one program per tile); each tile is BLOCK_M rows x
BLOCK_N output columns of one batch entry. Then the passes in order (a ``for`` over the axis in chunks, or straight
code for an axis held whole), then the epilogue that computes and stores the outputs. Loads are upcast to fp32, the
operands of ``tl.dot`` are cast to the matmul's dtype, accumulators are fp32. Only builtins are used (reductions go
through ``tl.reduce`` with the module's own combine functions, sigmoid is spelled out): Triton's library functions
are themselves jitted, and cannot be interpreted when Triton was imported before interpreter mode was switched on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ascend_compat.superopt.graph import KernelGraph
from ascend_compat.superopt.schedule import KernelSchedule, dims3

TL_DTYPE = {"float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32", "float64": "tl.float64"}
UNARY = {
    "exp": "tl.exp({0})", "sqrt": "tl.sqrt({0})", "rsqrt": "tl.rsqrt({0})", "square": "{0} * {0}",
    "silu": "{0} / (1.0 + tl.exp(-{0}))", "gelu": "0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476))",
    "relu": "tl.maximum({0}, 0.0)", "neg": "-{0}",
}
BINARY = {"add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}"}


@dataclass
class Ctx:
    axis: Optional[str]          # column axis of the values computed here (None: per-row values)
    offs: str = ""
    mask: str = ""
    lines: list[str] = field(default_factory=list)
    cache: dict[int, str] = field(default_factory=dict)


@dataclass
class EmittedKernel:
    name: str
    source: str
    loads: list[int]
    outputs: list[int]
    tiles: dict[str, int]


def mask_of(offs: str) -> str:
    """The mask variable that goes with an offsets variable."""
    if offs in ("offs_m", "offs_n"):
        return offs.replace("offs", "mask")
    return offs.replace("k_", "km_", 1) if offs.startswith("k_") else offs.replace("f_", "fm_", 1)


def block_name(axis: Optional[str]) -> str:
    return "BLOCK_N" if axis == "N" else f"BLOCK_{axis}"


class Emitter:
    def __init__(self, graph: KernelGraph, s: KernelSchedule, tiles: dict[str, int]) -> None:
        self.g, self.s, self.tiles = graph, s, tiles
        self.row = Ctx(None)
        self.code: list[str] = []
        self.bf16_dot = False

    # ----------------------------------------------------------------- addressing
    def _extent_name(self, axis: Optional[str]) -> str:
        return axis if axis else "1"

    def address(self, v: int, row_offs: str, col_offs: str, col_mask: str, store: bool = False) -> tuple[str, str]:
        """Pointer expression and mask for value ``v`` at the given row/column offsets.

        ``store``: the address of an output. A one-row output (M = 1: a single token's ``x @ W``, a 1-D sum) is
        still computed as a (BLOCK_M, ...) tile, and Triton stores a tile only through a pointer of its shape, so
        its pointer gets the row axis too, with the stride a second row would have (triton-ascend's lowering refuses
        a zero stride), and a mask that stores row 0 only.
        """
        b, r, c = dims3(self.g.nodes[v].shape)
        rax, cax = self.s.row.get(v), self.s.col.get(v)
        rows_n, cols_n = self._extent_name(rax) if r > 1 else "1", self._extent_name(cax) if c > 1 else "1"
        terms, masks = [f"t{v}_ptr"], []
        if b > 1:
            terms.append(f"pid_b * {rows_n} * {cols_n}" if rows_n != "1" or cols_n != "1" else "pid_b")
        if r > 1:
            rm = "mask_m" if rax == "M" else mask_of(row_offs)
            terms.append(f"{row_offs}[:, None] * {cols_n}" if cols_n != "1" else f"{row_offs}[:, None]")
            masks.append(f"{rm}[:, None]")
        if c > 1:
            terms.append(f"{col_offs}[None, :]")
            masks.append(f"{col_mask}[None, :]")
        if store and r == 1:  # rows past the first are masked off; a real stride, as triton-ascend refuses 0
            terms.append(f"{row_offs}[:, None] * {cols_n}" if cols_n != "1" else f"{row_offs}[:, None]")
            masks.append(f"({row_offs}[:, None] < 1)")
        return " + ".join(terms), " & ".join(masks)

    def load(self, v: int, ctx: Ctx) -> str:
        ptr, mask = self.address(v, "offs_m", ctx.offs, ctx.mask)
        args = f"{ptr}, mask={mask}, other=0.0" if mask else ptr
        name = f"x{v}" if ctx.axis is None else f"x{v}_{ctx.axis}"
        ctx.lines.append(f"{name} = tl.load({args}).to(tl.float32)")
        return name

    # ----------------------------------------------------------------- values
    def value(self, v: int, ctx: Ctx) -> str:
        n = self.g.nodes[v]
        if n.op == "const":
            return repr(float(n.attr("value")))
        col = self.s.col.get(v)
        if col is None and ctx.axis is not None:
            return self.value(v, self.row)
        if v in ctx.cache:
            return ctx.cache[v]
        if v in self.s.loads:
            out = self.load(v, ctx)
        elif n.op == "matmul":
            out = f"acc{v}"
        elif n.op in ("sum", "mean", "max") and self.s.col.get(n.inputs[0]) is None:
            out = self.value(n.inputs[0], ctx)  # a reduction over a dim of size 1
        elif n.op in ("sum", "max"):
            out = f"red{v}"
        elif n.op == "mean":
            ax = self.s.col[n.inputs[0]]
            out = f"(red{v} / {ax})" if ax else f"red{v}"
        else:
            args = [self.value(j, ctx) for j in n.inputs]
            if n.op == "clamp":
                expr = args[0]
                if n.attr("min") is not None:
                    expr = f"tl.maximum({expr}, {float(n.attr('min'))!r})"
                if n.attr("max") is not None:
                    expr = f"tl.minimum({expr}, {float(n.attr('max'))!r})"
            else:
                expr = (UNARY.get(n.op) or BINARY[n.op]).format(*args)
            out = f"v{v}" if ctx.axis is None else f"v{v}_{ctx.axis}"
            ctx.lines.append(f"{out} = {expr}")
        ctx.cache[v] = out
        return out

    # ----------------------------------------------------------------- passes
    def pass_ctx(self, axis: str) -> Ctx:
        if axis == "N" and "N" in self.s.full:
            return Ctx(axis, "offs_n", "mask_n")
        if axis in self.s.full:
            return Ctx(axis, f"f_{axis}", f"fm_{axis}")
        return Ctx(axis, f"k_{axis}", f"km_{axis}")

    def emit_pass(self, stage: int, axis: str) -> None:
        ctx = self.pass_ctx(axis)
        mask2 = f"mask_m[:, None] & {ctx.mask}[None, :]"
        for i in self.s.nodes:
            n = self.g.nodes[i]
            if n.op in ("sum", "mean", "max") and self.s.col.get(n.inputs[0]) == axis \
                    and self.s.level[n.inputs[0]] == stage:
                e = self.value(n.inputs[0], ctx)
                if n.op == "max":
                    ctx.lines.append(f"red{i} = tl.maximum(red{i}, tl.reduce(tl.where({mask2}, {e}, float('-inf')), "
                                     "1, _max)[:, None])")
                else:
                    ctx.lines.append(f"red{i} += tl.reduce(tl.where({mask2}, {e}, 0.0), 1, _add)[:, None]")
            if n.op == "matmul":
                for a, b in self.s.segments[i]:
                    if self.s.col[a] != axis or self.s.level[a] != stage:
                        continue
                    e = self.value(a, ctx)
                    out_axis = self.s.col[i] or "N"
                    out_ctx = self.pass_ctx(out_axis) if out_axis != "N" else Ctx("N", "offs_n", "mask_n")
                    ptr, bmask = self.address(b, ctx.offs, out_ctx.offs, out_ctx.mask)
                    dt = TL_DTYPE[n.dtype]
                    if n.dtype == "bfloat16":  # rounded to bf16, then the dtype the launcher picks (see launch)
                        dt, self.bf16_dot = "tl.bfloat16).to(DOT_BF16", True
                    prec = ', input_precision="ieee"' if n.dtype == "float32" else ""
                    ctx.lines.append(f"w{b} = tl.load({ptr}, mask={bmask}, other=0.0).to({dt})")
                    ctx.lines.append(f"acc{i} += tl.dot(tl.where({mask2}, {e}, 0.0).to({dt}), w{b}{prec})")
        row_lines, self.row.lines = self.row.lines, []
        self.code += row_lines
        if ctx.offs.startswith("k_"):
            blk = block_name(axis)
            self.code.append(f"for c_{axis} in range(0, {axis}, {blk}):")
            body = [f"{ctx.offs} = c_{axis} + tl.arange(0, {blk})", f"{ctx.mask} = {ctx.offs} < {axis}", *ctx.lines]
            self.code += ["    " + line for line in body]
        else:
            self.code += ctx.lines

    def emit_outputs(self) -> None:
        for o in self.s.outputs:
            n = self.g.nodes[o]
            axis = self.s.col[o]
            ctx = Ctx(None) if axis is None else (Ctx("N", "offs_n", "mask_n") if axis == "N" else self.pass_ctx(axis))
            val = self.value(o, ctx)
            ptr, mask = self.address(o, "offs_m", ctx.offs, ctx.mask, store=True)
            if axis != "N":
                # a tensor-shaped condition: a scalar one is refused as a store mask by the interpreter
                first = "((tl.full((1, 1), 0, tl.int32) + pid_n) == 0)"
                mask = f"({mask}) & {first}" if mask else first
            self.code += self.row.lines + ctx.lines
            self.row.lines = []
            store = f"tl.store({ptr.replace(f't{o}_ptr', f'out{o}_ptr')}, {val}.to({TL_DTYPE[n.dtype]})"
            self.code.append(f"{store}, mask={mask})" if mask else f"{store})")


# a task's tile: column tile fastest, then row tile, then batch entry
TILE_DECODE = ("pid_n = task % NB", "pid_m = (task // NB) % MB", "pid_b = task // (NB * MB)",
               "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)", "mask_m = offs_m < M",
               "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "mask_n = offs_n < N")


def preamble(s: KernelSchedule, tiles: dict[str, int]) -> list[str]:
    lines = list(TILE_DECODE)
    for f in sorted(s.full - {"N"}):
        lines += [f"f_{f} = tl.arange(0, {block_name(f)})", f"fm_{f} = f_{f} < {f}"]
    return lines


def emit(graph: KernelGraph, s: KernelSchedule, name: str, tiles: dict[str, int], header: str) -> EmittedKernel:
    """The Triton module for schedule ``s`` with block sizes ``tiles`` (``header`` becomes its docstring)."""
    if s.online is not None:
        from ascend_compat.superopt import online

        return online.emit_kernel(graph, s, name, tiles, header)
    em = Emitter(graph, s, tiles)
    init = []
    for i in s.nodes:
        n = graph.nodes[i]
        if n.op == "matmul":
            width = block_name(s.col[i]) if s.col[i] else "1"
            init.append(f"acc{i} = tl.full((BLOCK_M, {width}), 0.0, tl.float32)")
        elif n.op in ("sum", "mean", "max") and s.col.get(n.inputs[0]) is not None:
            fill = "float('-inf')" if n.op == "max" else "0.0"
            init.append(f"red{i} = tl.full((BLOCK_M, 1), {fill}, tl.float32)")
    for stage, axis in s.passes:
        em.emit_pass(stage, axis)
    em.emit_outputs()
    return module(graph, s, name, tiles, header, preamble(s, tiles) + init + em.code, em.bf16_dot)


def module_head(header: str) -> list[str]:
    """The module's docstring, imports and the combine functions its reductions use."""
    return [f'"""{header}"""', "", "import math", "import os", "",
            "import triton", "import triton.language as tl", "", "",
            "@triton.jit", "def _add(a, b):", "    return a + b", "", "",
            "@triton.jit", "def _max(a, b):", "    return tl.maximum(a, b)", "", ""]


def kernel_def(fn: str, ptrs: list[str], consts: list[str], body: list[str]) -> list[str]:
    """A jitted kernel: a persistent loop of the 1-D grid's programs over ``TASKS`` tasks, each running ``body``."""
    sig = ", ".join(ptrs) + ",\n        " + ", ".join(f"{c}: tl.constexpr" for c in consts)
    return ["@triton.jit", f"def {fn}(\n        {sig}):", "    pid = tl.program_id(0)",
            "    for task in range(pid, TASKS, GRID):", *["        " + line for line in body]]


def module(graph: KernelGraph, s: KernelSchedule, name: str, tiles: dict[str, int], header: str, body: list[str],
           bf16_dot: bool) -> EmittedKernel:
    """The whole module: the kernel (a persistent loop over tasks running ``body``) and its launcher."""
    axes = ["M", "N", *sorted(a for a in s.extent if a not in ("M", "N"))]
    ptrs = [f"t{v}_ptr" for v in s.loads] + [f"out{o}_ptr" for o in s.outputs]
    consts = [*axes, "B", "MB", "NB", "TASKS", "GRID", "BLOCK_M", "BLOCK_N",
              *[block_name(a) for a in axes if a not in ("M", "N")], *(["DOT_BF16"] if bf16_dot else [])]
    src = [*module_head(header), *kernel_def(f"{name}_kernel", ptrs, consts, body)]
    src += ["", "", *_launcher(graph, s, name, tiles, axes, bf16_dot)]
    return EmittedKernel(name, "\n".join(src) + "\n", list(s.loads), list(s.outputs), dict(tiles))


def launch_sizes(graph: KernelGraph, s: KernelSchedule, axes: list[str]) -> list[str]:
    """Launcher lines binding each axis extent to a dimension of an argument tensor."""
    sizes: dict[str, str] = {}
    for v in [*s.loads, *s.outputs]:
        arg = f"t{v}" if v in s.loads else f"out{v}"
        _, r, c = dims3(graph.nodes[v].shape)
        cax, rax = s.col.get(v), s.row.get(v)
        if c > 1 and cax:
            sizes.setdefault(cax, f"{arg}.shape[-1]")
        if r > 1 and rax:
            sizes.setdefault(rax, f"{arg}.shape[-2]")
    return [f"    {a} = {sizes.get(a, '1')}" for a in axes]


#: Launcher lines for a kernel with bf16 products: Triton's CPU interpreter computes bf16 tl.dot wrongly.
DOT_BF16_LINES = ("    # Triton's CPU interpreter computes bf16 tl.dot wrongly: there the bf16-rounded operands go "
                  "in as fp32",
                  '    DOT_BF16 = tl.float32 if os.environ.get("TRITON_INTERPRET") == "1" else tl.bfloat16')


def launch_tiles(outs: str, tiles: dict[str, int]) -> list[str]:
    """Launcher lines for the batch size (from the outputs ``outs``), the row/column tiles and their counts."""
    return [f"    B = max(math.prod(t.shape[:-2]) for t in ({outs},))",
            f"    BLOCK_M, BLOCK_N = {tiles['BLOCK_M']}, {tiles['BLOCK_N']}",
            "    MB, NB = triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)"]


def _launcher(graph: KernelGraph, s: KernelSchedule, name: str, tiles: dict[str, int], axes: list[str],
              bf16_dot: bool) -> list[str]:
    args = [f"t{v}" for v in s.loads] + [f"out{o}" for o in s.outputs]
    lines = [f"def launch({', '.join(args)}, max_programs=None):",
             '    """Run the kernel: inputs then preallocated outputs (contiguous); sizes come from the tensors."""']
    lines += launch_sizes(graph, s, axes)
    lines += launch_tiles(", ".join(f"out{o}" for o in s.outputs), tiles)
    lines += ["    TASKS = B * MB * NB", "    GRID = min(TASKS, max_programs or TASKS)",
              *(DOT_BF16_LINES if bf16_dot else ()),
              f"    {name}_kernel[(GRID,)](",
              f"        {', '.join(args)},",
              "        " + ", ".join(f"{c}={c}" for c in [*axes, "B", "MB", "NB", "TASKS", "GRID", "BLOCK_M",
                                                   "BLOCK_N"])
              + ("," if len(axes) > 2 else ""),
              ]
    if len(axes) > 2:
        lines.append("        " + ", ".join(f"{block_name(a)}={tiles[block_name(a)]}" for a in axes[2:])
                     + ("," if bf16_dot else ""))
    if bf16_dot:
        lines.append("        DOT_BF16=DOT_BF16,")
    lines.append("    )")
    return lines
