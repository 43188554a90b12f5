"""Operands that do not broadcast raise ``ValueError`` with NumPy's message (not torch's "The size of tensor a (3)
must match ..."), by every elementwise path: ufuncs and operators, in-place operators, ``out=``/``where=``,
``where``, ``clip``, ``isclose``, ``copyto``, assignment (basic, negative-step, advanced, boolean), ``putmask``,
``select`` and the broadcast helpers; on the CPU and the simulated NPU."""

from __future__ import annotations

from typing import Any, Callable

import numpy
import pytest

import ascend_compat.cupy as cp
from tests.cupy._xp import dev  # noqa: F401 (fixture)


def _ones(xp: Any, shape: Any, dtype: str = "float32") -> Any:
    return xp.ones(shape, dtype=dtype)


def _iadd(xp: Any) -> None:
    a = _ones(xp, (2, 3))
    a += _ones(xp, (4,))


def _iadd_grow(xp: Any) -> None:
    a = _ones(xp, (3,))
    a *= _ones(xp, (2, 3))


def _setitem(key: Any, value_shape: Any, view: Callable[[Any], Any] = lambda a: a) -> Callable[[Any], None]:
    def run(xp: Any) -> None:
        a = view(_ones(xp, (2, 3)))
        a[key] = _ones(xp, value_shape)
    return run


def _setitem_mask(xp: Any) -> None:
    a = _ones(xp, (2, 3))
    a[a > 0] = _ones(xp, (4,))


def _setitem_fancy(xp: Any) -> None:
    a = _ones(xp, (2, 3))
    a[xp.asarray([0, 1])] = _ones(xp, (4,))


CASES: dict[str, Callable[[Any], Any]] = {
    "add": lambda xp: xp.add(_ones(xp, (2, 3)), _ones(xp, (4,))),
    "a - b complex": lambda xp: _ones(xp, (2, 3), "complex64") - _ones(xp, (4,), "complex64"),
    "a < b uint64": lambda xp: _ones(xp, (2, 3), "uint64") < _ones(xp, (4,), "uint64"),
    "arctan2": lambda xp: xp.arctan2(_ones(xp, (2, 1, 3)), _ones(xp, (5, 2))),
    "a += b": _iadd,
    "a *= b (a too small)": _iadd_grow,
    "add(out=)": lambda xp: xp.add(_ones(xp, (2, 3)), _ones(xp, (3,)), out=_ones(xp, (4,))),
    "add(out= too small)": lambda xp: xp.add(_ones(xp, (2, 3)), _ones(xp, (3,)), out=_ones(xp, (3,))),
    "add(scalar, out=)": lambda xp: xp.add(_ones(xp, (2, 3)), 1, out=_ones(xp, (4,))),
    "negative(out=)": lambda xp: xp.negative(_ones(xp, (2, 3)), out=_ones(xp, (4,))),
    "cos(out= too small)": lambda xp: xp.cos(_ones(xp, (2, 3)), out=_ones(xp, (1, 3))),
    "add(where=)": lambda xp: xp.add(_ones(xp, (2, 3)), 1, out=_ones(xp, (2, 3)), where=_ones(xp, (4,), "bool")),
    "add.outer(out=)": lambda xp: xp.add.outer(_ones(xp, (2,)), _ones(xp, (3,)), out=_ones(xp, (4,))),
    "where": lambda xp: xp.where(_ones(xp, (2, 3), "bool"), _ones(xp, (4,)), _ones(xp, (2, 3))),
    "where(scalar)": lambda xp: xp.where(_ones(xp, (4,), "bool"), _ones(xp, (2, 3)), 0.0),
    "clip": lambda xp: xp.clip(_ones(xp, (2, 3)), _ones(xp, (4,)), 3),
    "isclose": lambda xp: xp.isclose(_ones(xp, (2, 3)), _ones(xp, (4,))),
    "copyto": lambda xp: xp.copyto(_ones(xp, (2, 3)), _ones(xp, (1, 1, 4))),
    "copyto(where=)": lambda xp: xp.copyto(_ones(xp, (2, 3)), _ones(xp, (3,)), where=_ones(xp, (4,), "bool")),
    "a[...] = b": _setitem(Ellipsis, (4,)),
    "a[:] = b": _setitem(slice(None), (2, 4)),
    "a[0] = b": _setitem(0, (4,)),
    "a[:, ::-1] = b": _setitem((slice(None), slice(None, None, -1)), (4,)),
    "a[::-1][...] = b": _setitem(Ellipsis, (4,), lambda a: a[::-1]),
    "a[...] = b (b bigger)": _setitem(Ellipsis, (2, 3, 3)),
    "a[int array] = b": _setitem_fancy,
    "a[mask] = b": _setitem_mask,
    "a[row mask] = b": lambda xp: _setitem(xp.asarray([True, False]), (4,))(xp),
    "putmask": lambda xp: xp.putmask(_ones(xp, (2, 3)), _ones(xp, (4,), "bool"), _ones(xp, (2,))),
    "select": lambda xp: xp.select([_ones(xp, (2, 3), "bool")], [_ones(xp, (4,))]),
    "broadcast_arrays": lambda xp: xp.broadcast_arrays(_ones(xp, 3), _ones(xp, (2, 3)), _ones(xp, (4, 1, 2))),
    "broadcast_to": lambda xp: xp.broadcast_to(_ones(xp, (2, 3)), (4, 3)),
    "broadcast_to (fewer axes)": lambda xp: xp.broadcast_to(_ones(xp, (2, 3)), (3,)),
}


def _error(fn: Callable[[Any], Any], xp: Any) -> ValueError:
    with pytest.raises(ValueError) as info:
        fn(xp)
    return info.value


@pytest.mark.parametrize("name", list(CASES))
def test_broadcast_errors_are_numpys(dev: str, name: str) -> None:  # noqa: F811
    want = str(_error(CASES[name], numpy)).rstrip()
    got = str(_error(CASES[name], cp))
    assert "tensor" not in got
    assert got == want.removeprefix("NumPy ")  # (NumPy names itself in the boolean-mask message)


def test_putmask_takes_a_mask_of_the_same_size(dev: str) -> None:  # noqa: F811
    # NumPy's rule (the size, not the shape, must match): no broadcasting error for a flat mask of the same size.
    host = numpy.arange(6.0).reshape(2, 3)
    a = cp.asarray(host)
    numpy.putmask(host, numpy.arange(6) % 2 == 0, numpy.array([-1.0, -2.0]))
    cp.putmask(a, cp.arange(6) % 2 == 0, cp.asarray([-1.0, -2.0]))
    numpy.testing.assert_array_equal(a.get(), host)
