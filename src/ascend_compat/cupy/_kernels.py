"""User kernels: ``ElementwiseKernel``/``ReductionKernel`` whose bodies are simple C expressions are translated to
array expressions (evaluated by walking a whitelisted syntax tree, never ``eval``); anything else (loops, pointers,
``raw`` parameters, CUDA built-ins) and ``RawKernel``/``RawModule`` raise ``UnsupportedKernelError``."""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, Callable, Optional, Union

import numpy

from ascend_compat.cupy import _ufuncs as U  # noqa: N812
from ascend_compat.cupy._core import _wrap, asarray, ndarray

#: What a kernel call returns: its one output, or a tuple of them (several outputs, or ``return_tuple=True``).
KernelResult = Union[ndarray, tuple[ndarray, ...]]


class UnsupportedKernelError(NotImplementedError):
    """A CUDA kernel that ascend_compat.cupy cannot run."""


def check_kernel_name(name: str) -> str:
    """``name`` when it is a valid C identifier (as CuPy requires of kernel names), else ValueError."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f'Invalid kernel name: "{name}"')
    return name


_C_TYPES = {"float": "float32", "double": "float64", "int": "int32", "long long": "int64", "long": "int64",
            "unsigned int": "uint32", "unsigned char": "uint8", "char": "int8", "short": "int16", "bool": "bool",
            "signed char": "int8", "unsigned short": "uint16", "unsigned long long": "uint64", "half": "float16",
            "float16": "float16", "complex<float>": "complex64", "complex<double>": "complex128"}


def _dtype_name(name: str) -> Optional[numpy.dtype]:
    name = _C_TYPES.get(name, name)
    if len(name) < 3:  # T, U, ...: type placeholders bound from the arguments
        return None
    try:
        dt = numpy.dtype(name)
    except TypeError:
        return None
    return dt if dt.kind in "biufc" else None


def _parse_params(spec: str) -> list[tuple[str, str]]:
    out = []
    for part in [p.strip() for p in spec.split(",") if p.strip()]:
        words = part.split()
        if words[0] == "raw" or "*" in part:
            raise UnsupportedKernelError(f"kernel parameter {part!r}: raw/pointer parameters index memory "
                                         "directly; write the computation with array operations instead")
        out.append((" ".join(words[:-1]), words[-1]))
    return out


def _rsqrt(x: Any) -> ndarray:
    return U.reciprocal(U.sqrt(x))


def _c_round(x: Any) -> Any:
    """C's ``round``: halfway cases away from zero (NumPy's ``rint`` rounds them to even: round(0.5) is 1 in C)."""
    t = U.trunc(x)
    return U.add(t, _where(U.greater_equal(U.absolute(U.subtract(x, t)), 0.5), U.sign(x), U.multiply(x, 0)))


def _is_int(v: Any) -> bool:
    if isinstance(v, ndarray):
        return v._dtype.kind in "biu"
    return isinstance(v, (int, numpy.integer, numpy.bool_))


def _c_divide(a: Any, b: Any) -> Any:
    """C's ``/``: integer operands divide truncating toward zero (``1 / 2`` is 0, ``-3 / 2`` is -1), others exactly.
    ``a - fmod(a, b)`` is a multiple of ``b`` (the remainder takes the dividend's sign), so the floor division of it
    is the truncated quotient, exactly, in the operands' integer type."""
    if not (_is_int(a) and _is_int(b)):
        return U.true_divide(a, b)
    if not isinstance(a, ndarray) and not isinstance(b, ndarray):
        q = abs(int(a)) // abs(int(b)) if b else 0  # Python ints: no dtype to keep
        return q if (a < 0) == (b < 0) else -q
    return U.floor_divide(U.subtract(a, U.fmod(a, b)), b)


#: C / CUDA math constants (math.h's M_*, CUDA's CUDART_*), and C++'s boolean literals.
_CONSTANTS: dict[str, Any] = {
    "true": True, "false": False, "M_PI": numpy.pi, "M_PI_2": numpy.pi / 2, "M_PI_4": numpy.pi / 4,
    "M_1_PI": 1 / numpy.pi, "M_2_PI": 2 / numpy.pi, "M_2_SQRTPI": 2 / numpy.sqrt(numpy.pi), "M_E": numpy.e,
    "M_LN2": numpy.log(2), "M_LN10": numpy.log(10), "M_LOG2E": numpy.log2(numpy.e),
    "M_LOG10E": numpy.log10(numpy.e), "M_SQRT2": numpy.sqrt(2), "M_SQRT1_2": numpy.sqrt(0.5),
    "CUDART_PI": numpy.pi, "CUDART_PI_F": numpy.pi, "INFINITY": numpy.inf, "NAN": numpy.nan,
    "CUDART_INF": numpy.inf, "CUDART_INF_F": numpy.inf, "CUDART_NAN": numpy.nan, "CUDART_NAN_F": numpy.nan,
}


_FUNCS: dict[str, Callable[..., Any]] = {
    "exp": U.exp, "log": U.log, "sqrt": U.sqrt, "sin": U.sin, "cos": U.cos, "tan": U.tan, "tanh": U.tanh,
    "abs": U.absolute, "fabs": U.fabs, "floor": U.floor, "ceil": U.ceil, "pow": U.power, "powf": U.power,
    "max": U.maximum, "min": U.minimum, "fmax": U.fmax, "fmin": U.fmin, "log2": U.log2, "log10": U.log10,
    "exp2": U.exp2, "atan2": U.arctan2, "hypot": U.hypot, "isnan": U.isnan, "isinf": U.isinf,
    "isfinite": U.isfinite, "copysign": U.copysign, "round": _c_round, "rint": U.rint, "trunc": U.trunc,
    "sinh": U.sinh, "cosh": U.cosh, "asin": U.arcsin, "acos": U.arccos, "atan": U.arctan, "log1p": U.log1p,
    "expm1": U.expm1, "rsqrt": _rsqrt, "fmod": U.fmod, "cbrt": U.cbrt, "nearbyint": U.rint,
    "where": lambda c, a, b: _where(c, a, b),
}
# CUDA's float-suffixed spellings (expf, fmaxf, roundf, ...) compute the same in the operands' dtype.
_FUNCS.update({f"{n}f": _FUNCS[n] for n in list(_FUNCS) if n != "where"})
_BINOPS = {ast.Add: U.add, ast.Sub: U.subtract, ast.Mult: U.multiply, ast.Div: _c_divide, ast.Mod: U.fmod,
           ast.BitAnd: U.bitwise_and, ast.BitOr: U.bitwise_or, ast.BitXor: U.bitwise_xor,
           ast.LShift: U.left_shift, ast.RShift: U.right_shift}
_CMPS = {ast.Lt: U.less, ast.LtE: U.less_equal, ast.Gt: U.greater, ast.GtE: U.greater_equal, ast.Eq: U.equal,
         ast.NotEq: U.not_equal}


def _where(c: Any, a: Any, b: Any) -> ndarray:
    from ascend_compat.cupy._indexing import where

    return where(c, a, b)


def strip_comments(source: str) -> str:
    """C source without its ``//`` and ``/* */`` comments (Python would read ``//`` as floor division)."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)


_C_TYPE_WORDS = ("float|double|int|long long|long|unsigned int|unsigned char|unsigned short|unsigned long long|"
                 "signed char|char|short|bool|half")
# A cast: a C type keyword (which no variable can be named: a signed operand is allowed after it, `(float)-x`), or
# a type placeholder / dtype name (T, float32) before a name, number or parenthesis.
_CAST = re.compile(rf"\(\s*(?:({_C_TYPE_WORDS})\s*\)\s*(?=[-+\w(.])|([A-Z]\w*|[a-z]+\d+)\s*\)\s*(?=[\w(.]))")
_OPERAND = re.compile(r"[-+]?\s*(?:[A-Za-z_]\w*|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)?")


def _casts(e: str) -> str:
    """``(float)x * 2`` as ``_cast_float(x) * 2``: a C cast applies to the operand right after it (a name, a
    number, a call or a parenthesised expression, maybe signed), so that operand is wrapped in the cast's call.
    The last cast first: in ``(float)(T)x`` the operand of ``(float)`` is ``(T)x``."""
    for _ in range(e.count("(") + 1):  # each pass removes one "(type)" (bounded: no input loops forever)
        found = list(_CAST.finditer(e))
        if not found:
            return e
        m = found[-1]
        start, rest = m.end(), e[m.end():]
        op = _OPERAND.match(rest)
        end = start + (op.end() if op else 0)
        if end < len(e) and e[end] == "(":  # a call, or the parenthesised operand itself: to its closing paren
            depth = 0
            for k in range(end, len(e)):
                depth += {"(": 1, ")": -1}.get(e[k], 0)
                if depth == 0:
                    end = k + 1
                    break
            else:
                raise UnsupportedKernelError(f"unbalanced parentheses in kernel expression {e!r}")
        e = f"{e[:m.start()]}_cast_{(m.group(1) or m.group(2)).replace(' ', '_')}({e[start:end]}){e[end:]}"
    raise UnsupportedKernelError(f"kernel expression {e!r} has casts that cannot be translated")


def _to_python(expr: str) -> str:
    """A C expression rewritten as Python syntax (``&&``/``||``/``!``, ``?:``, casts, ``1.0f``/``1u`` literals,
    ``_ind.size()``)."""
    e = re.sub(r"(?<![\w.])(\d+\.?\d*(?:[eE][-+]?\d+)?)[fF]\b", r"\1", strip_comments(expr))
    e = re.sub(r"\b(\d+)[uU]?[lL]{0,2}[uU]?\b", r"\1", e)
    e = re.sub(r"\b(_ind|_in_ind|_out_ind)\.size\(\s*\)", r"\1_size", e)
    e = re.sub(r"static_cast<\s*([\w ]+?)\s*>", r"_cast_\1", e)
    e = _casts(e)
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    if "?" in e:
        if e.count("?") != 1 or e.count(":") != 1:
            raise UnsupportedKernelError(f"nested conditional expression {expr!r} is not supported")
        cond, rest = e.split("?")
        a, b = rest.split(":")
        e = f"where({cond}, {a}, {b})"
    return e.strip()


@functools.lru_cache(maxsize=1024)
def _parse(expr: str) -> ast.expr:
    """The syntax tree of C expression ``expr`` (parsed once per distinct expression)."""
    try:
        return ast.parse(_to_python(expr), mode="eval").body
    except SyntaxError:
        raise UnsupportedKernelError(f"kernel expression {expr!r} is not a simple C expression") from None


class _Evaluator:
    def __init__(self, env: dict[str, Any], types: dict[str, numpy.dtype]) -> None:
        self.env, self.types = env, types

    def run(self, expr: str) -> Any:
        return self.visit(_parse(expr))

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            raise UnsupportedKernelError(f"unknown name {node.id!r} in kernel body")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](self.visit(node.left), self.visit(node.right))
        if isinstance(node, ast.UnaryOp):
            v = self.visit(node.operand)
            ops = {ast.USub: U.negative, ast.UAdd: U.positive, ast.Not: U.logical_not, ast.Invert: U.invert}
            return ops[type(node.op)](v)
        if isinstance(node, ast.BoolOp):
            fn = U.logical_and if isinstance(node.op, ast.And) else U.logical_or
            vals = [self.visit(v) for v in node.values]
            res = vals[0]
            for v in vals[1:]:
                res = fn(res, v)
            return res
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPS:
            return _CMPS[type(node.ops[0])](self.visit(node.left), self.visit(node.comparators[0]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            args = [self.visit(a) for a in node.args]
            name = node.func.id
            if name.startswith("_cast_"):
                dt = self.types.get(name[6:]) or _dtype_name(name[6:].replace("_", " "))
                if dt is None or len(args) != 1:
                    raise UnsupportedKernelError(f"cast {name[6:]!r} is not supported")
                return asarray(args[0]).astype(dt)
            if name in _FUNCS:
                return _FUNCS[name](*args)
            dt = self.types.get(name) or _dtype_name(name)  # C++'s functional cast: T(0), float(x), _type_reduce(n)
            if dt is not None and len(args) == 1:
                return asarray(args[0]).astype(dt)
            raise UnsupportedKernelError(f"function {name!r} is not supported in translated kernels")
        raise UnsupportedKernelError(f"construct {ast.dump(node)[:60]!r} is not supported in translated kernels")


def _bind(params: list[tuple[str, str]], args: Any, types: dict[str, numpy.dtype]) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for (tp, name), value in zip(params, args):
        if isinstance(value, numpy.ndarray):
            raise TypeError("Unsupported type <class 'numpy.ndarray'>")
        fixed = _dtype_name(tp)
        if isinstance(value, ndarray):
            if fixed is None:
                if tp in types and types[tp] != value._dtype:
                    raise TypeError(f"Type is mismatched. {name} {value._dtype} {types[tp]}")
                types.setdefault(tp, value._dtype)
            elif value._dtype != fixed:
                value = value.astype(fixed)
        env[name] = value
    for (tp, name), value in zip(params, args):
        if not isinstance(value, ndarray):
            dt = _dtype_name(tp) or types.get(tp)
            env[name] = asarray(value, dtype=dt) if dt is not None else value
    return env


_STATEMENT = re.compile(r"(?:(?:const\s+)?([\w<> ]+?)\s+)?(\w+)\s*([-+*/|&^]?=)\s*(.+)", re.S)


def _parse_statement(name: str, stmt: str) -> tuple[Any, ...]:
    """``(declared type, target, assignment operator, expression)`` of one statement of a kernel body."""
    if re.search(r"\b(for|while|if|return|__syncthreads|threadIdx|blockIdx|atomic\w*)\b|\[", stmt):
        raise UnsupportedKernelError(f"ElementwiseKernel {name!r}: statement {stmt!r} uses loops, control flow, "
                                     "indexing or CUDA built-ins; only assignments of expressions are translated")
    m = _STATEMENT.fullmatch(stmt)
    if not m:
        raise UnsupportedKernelError(f"statement {stmt!r} is not an assignment of an expression")
    return m.groups()


def _check_out_shapes(ins: Any, outs: Any) -> None:
    """Output arrays must have the broadcast shape of all arguments (CuPy does not broadcast outputs)."""
    arrays = [a for a in (*ins, *outs) if isinstance(a, ndarray)]
    if not any(isinstance(o, ndarray) for o in outs):
        return
    try:
        shape = numpy.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with shapes {[a.shape for a in arrays]}") from None
    if any(isinstance(o, ndarray) and o.shape != shape for o in outs):
        raise ValueError(f"Out shape is mismatched: the arguments broadcast to {shape}")


class ElementwiseKernel:
    """``cupy.ElementwiseKernel`` for bodies made of assignments of simple C expressions."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False, return_tuple: bool = False,
                 **kwargs: Any) -> None:
        if preamble.strip():
            raise UnsupportedKernelError(f"ElementwiseKernel {name!r}: a preamble (C helper functions) cannot be "
                                         "translated; write the helpers as Python functions over arrays")
        self.in_params, self.out_params = _parse_params(in_params), _parse_params(out_params)
        self.nin, self.nout, self.nargs = len(self.in_params), len(self.out_params), 0
        self.nargs = self.nin + self.nout
        self.name, self.operation, self.return_tuple = check_kernel_name(name), operation, return_tuple
        self.no_return = no_return
        body = strip_comments(operation)
        self._stmts = [_parse_statement(name, st.strip()) for st in body.split(";") if st.strip()]
        self._uses_index = re.search(r"\bi\b", body) is not None  # CuPy's element index ``i``
        # One translation per argument type signature, shared by every thread (CuPy's compiled-kernel memo).
        self._elementwise_kernel_memo: dict[tuple[Any, ...], dict[str, numpy.dtype]] = {}

    def __call__(self, *args: Any, size: Any = None, block_size: Any = None,
                 **kwargs: Any) -> Optional[KernelResult]:
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name!r}")
        types: dict[str, numpy.dtype] = {}
        env = _bind(self.in_params, args[: self.nin], types)
        outs = list(args[self.nin:])
        _check_out_shapes(args[: self.nin], outs)
        for (tp, _), o in zip(self.out_params, outs):
            if isinstance(o, ndarray) and _dtype_name(tp) is None:
                types.setdefault(tp, o._dtype)
        key = tuple(a._dtype if isinstance(a, ndarray) else type(a) for a in args)
        types = self._elementwise_kernel_memo.setdefault(key, types)
        env.update({name: o for (_, name), o in zip(self.out_params, outs)})
        shape = self._indices(env, [*args[: self.nin], *outs], size)
        ev = _Evaluator(env, types)
        for stmt in self._stmts:
            self._exec(ev, stmt, env, types)
        results = self._collect(env, outs, types, shape)
        return None if self.no_return else results

    def _indices(self, env: dict[str, Any], args: list[Any], size: Any) -> tuple[int, ...]:
        """The shape the kernel runs over (the arrays' broadcast shape, else ``(size,)``) and CuPy's loop variables
        on it: ``_ind.size()`` and, when the body uses it, ``i`` (each element's C-order index, a ``ptrdiff_t``)."""
        from ascend_compat.cupy._creation import arange

        shapes = [a.shape for a in args if isinstance(a, ndarray)]
        shape = numpy.broadcast_shapes(*shapes) if shapes else (() if size is None else (int(size),))
        n = int(numpy.prod(shape, dtype=numpy.int64))
        env["_ind_size"] = n
        if self._uses_index and "i" not in env:
            env["i"] = arange(n, dtype=numpy.int64).reshape(shape)
        return tuple(shape)

    def _exec(self, ev: _Evaluator, stmt: tuple[Any, ...], env: dict[str, Any],
              types: dict[str, numpy.dtype]) -> None:
        decl, target, op, expr = stmt
        value = ev.run(expr)
        if op != "=":
            value = ev.run(f"{target} {op[0]} ({expr})") if target in env else value
        if decl:
            dt = _dtype_name(decl) or types.get(decl)
            value = asarray(value).astype(dt) if dt is not None else value
        env[target] = value

    def _collect(self, env: dict[str, Any], outs: list[Any], types: dict[str, numpy.dtype],
                 shape: tuple[int, ...]) -> KernelResult:
        results: list[ndarray] = []
        for i, (tp, name) in enumerate(self.out_params):
            val = env.get(name)
            if val is None:
                raise UnsupportedKernelError(f"output {name!r} is never assigned in {self.name!r}")
            dt = _dtype_name(tp) or types.get(tp) or asarray(val)._dtype
            if i < len(outs) and isinstance(outs[i], ndarray):
                outs[i][...] = val
                results.append(outs[i])
            else:
                v = asarray(val).astype(dt, copy=False)
                results.append(v if v.shape == shape else _wrap(v._t.expand(shape).clone(), v._dtype))
        return results[0] if len(results) == 1 and not self.return_tuple else tuple(results)


def _raw(api: str) -> type:
    class _Raw:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise UnsupportedKernelError(
                f"cupy.{api} compiles CUDA C++ source, which cannot run on Ascend NPUs: rewrite the kernel with "
                "array operations (or ElementwiseKernel with a simple expression), or as an Ascend C / Triton "
                "kernel (see `ascend-compat scaffold`)")
    _Raw.__name__ = _Raw.__qualname__ = api
    return _Raw


RawKernel = _raw("RawKernel")
RawModule = _raw("RawModule")


def fuse(*args: Any, **kwargs: Any) -> Any:
    """``cupy.fuse``: the function runs as written (array operations), without kernel fusion."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


# Reduction kernels build on the translator above; the names stay importable from here.
from ascend_compat.cupy._kernels_reduction import ReductionKernel, create_reduction_func  # noqa: E402

__all__ = ["ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel", "UnsupportedKernelError",
           "create_reduction_func", "fuse"]
