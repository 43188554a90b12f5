"""NumPy's broadcasting errors (``ValueError``, NumPy's wording) for ufuncs, ``where``, assignment and ``copyto``,
checked on the shapes before torch runs, so users never see torch's "The size of tensor a (3) must match ..."."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numpy

Shape = tuple[int, ...]


def shape_text(shape: Iterable[int]) -> str:
    """``(2,3)``, ``(4,)``, ``()``: a shape as NumPy's messages print it."""
    return str(tuple(int(n) for n in shape)).replace(" ", "")


def operand_shape(x: Any) -> Shape:
    """The shape an operand broadcasts with: an array's, a sequence's, ``()`` for a scalar."""
    shape = getattr(x, "shape", None)
    if shape is not None:
        return tuple(shape)
    return tuple(numpy.shape(x)) if isinstance(x, (list, tuple)) else ()


def broadcast_pair(s1: Shape, s2: Shape) -> Optional[Shape]:
    """The broadcast of two shapes (None when they do not broadcast); on the ufuncs' fast path, where
    ``torch.broadcast_shapes`` is slow Python."""
    if s1 == s2:
        return s1
    n = max(len(s1), len(s2))
    a, b = (1,) * (n - len(s1)) + tuple(s1), (1,) * (n - len(s2)) + tuple(s2)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast(shapes: Sequence[Shape]) -> Optional[Shape]:
    """The broadcast of ``shapes``; None when they do not broadcast together."""
    out: Shape = ()
    for s in shapes:
        both = broadcast_pair(out, tuple(s))
        if both is None:
            return None
        out = both
    return out


def operands_error(shapes: Sequence[Shape]) -> ValueError:
    text = " ".join(shape_text(s) for s in shapes)
    return ValueError(f"operands could not be broadcast together with shapes {text}")


def check_operands(inputs: Sequence[Any], outs: Sequence[Any] = (), where: Any = True) -> Shape:
    """The broadcast shape of ``inputs`` (and of the ``where=`` mask); NumPy's ``ValueError`` when the inputs, the
    ``out=`` arrays and the mask do not broadcast together, or an output is smaller than the broadcast shape."""
    in_shapes = [operand_shape(x) for x in inputs]
    out_shapes = [operand_shape(o) for o in outs if o is not None]
    mask = [] if where is True else [operand_shape(where)]
    if broadcast(in_shapes + out_shapes + mask) is None:
        raise operands_error(in_shapes + out_shapes + mask)
    shape = broadcast(in_shapes + mask) or ()  # (never None: a subset of shapes that broadcast together)
    for o in out_shapes:
        if o != shape:
            raise ValueError(f"non-broadcastable output operand with shape {shape_text(o)} doesn't match the "
                             f"broadcast shape {shape_text(shape)}")
    return shape


def failure(inputs: Sequence[Any], outs: Sequence[Any] = (), where: Any = True) -> Optional[ValueError]:
    """``check_operands``' error, or None: for a call that failed, to tell whether broadcasting was why."""
    try:
        check_operands(inputs, outs, where)
    except ValueError as err:
        return err
    return None


def input_into_error(src: Iterable[int], dst: Iterable[int]) -> ValueError:
    """Assignment's error (``a[...] = b``, ``copyto``)."""
    return ValueError(f"could not broadcast input array from shape {shape_text(src)} into shape {shape_text(dst)}")


__all__ = ["broadcast", "broadcast_pair", "check_operands", "failure", "input_into_error", "operand_shape",
           "operands_error", "shape_text"]
