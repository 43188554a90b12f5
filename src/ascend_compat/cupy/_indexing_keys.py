"""Index keys: NumPy/CuPy index keys turned into torch ones (device index arrays, negative steps, empty boolean
masks, too many indices) and where NumPy places the advanced-index dimensions of a result when torch does not."""

from __future__ import annotations

from typing import Any, Optional

import numpy
import torch

from ascend_compat.cupy._core import asarray, ndarray

_BASIC = (int, slice, type(None), type(Ellipsis))


def _index_tensor(x: Any, device: torch.device) -> Any:
    if not isinstance(x, ndarray) and hasattr(x, "__cupy_get_ndarray__"):
        x = x.__cupy_get_ndarray__()
    elif isinstance(x, list) and any(isinstance(v, ndarray) or hasattr(v, "__cupy_get_ndarray__") for v in x):
        x = asarray(x)  # a list of device arrays is one (stacked) index array
    if isinstance(x, ndarray):
        if x._dtype.kind == "b":
            return x._t
        if x._dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        return x._t if x._t.dtype == torch.int64 else x._t.to(torch.int64)
    if isinstance(x, (list, numpy.ndarray)):
        arr = numpy.asarray(x)
        if arr.size == 0 and arr.dtype.kind == "f" and isinstance(x, list):  # [] is an empty integer index
            arr = arr.astype(numpy.int64)
        if arr.dtype.kind not in "iub":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        return torch.from_numpy(arr if arr.dtype.kind == "b" else arr.astype(numpy.int64)).to(device)
    if isinstance(x, numpy.integer):
        return int(x)
    if isinstance(x, (numpy.bool_, bool)):
        return bool(x)
    if isinstance(x, float) or isinstance(x, numpy.floating):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
                         "boolean arrays are valid indices")
    return x


def _prepare(t: torch.Tensor, key: Any) -> tuple[torch.Tensor, Any, Optional[bool]]:
    """The tensor (negative-step dimensions flipped) and a torch-compatible key; third: whether it is basic (None:
    basic with negative steps, which ``_core_flip`` indexes; the tensor and key are then unchanged)."""
    if not isinstance(key, tuple):
        key = (key,)
    basic = all(type(k) in _BASIC for k in key)
    if basic:  # None: negative steps, a negative-stride view (``_core_flip``)
        return t, key, None if any(type(k) is slice and k.step is not None and k.step < 0 for k in key) else True
    dev = t.device
    # device integer arrays wrap out-of-range entries, as CuPy's kernels do (no bounds check on the device)
    wraps = [isinstance(k, ndarray) and k._dtype.kind in "iu" for k in key]
    key = tuple(_index_tensor(k, dev) for k in key)
    if any(isinstance(k, torch.Tensor) and k.dtype == torch.bool and k.numel() == 0 for k in key):
        key = _empty_masks_as_ints(key, tuple(t.shape))
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(0 if isinstance(k, bool) else 1 if not isinstance(k, torch.Tensor) or k.dtype != torch.bool
               else k.dim() for k in key if k is not None and k is not Ellipsis)
    if used > t.dim():
        raise IndexError(f"too many indices for array: array is {t.dim()}-dimensional, but {used} were indexed")
    flips, out, dim = [], [], 0
    for pos, k in enumerate(key):
        if pos < len(wraps) and wraps[pos] and t.dim() > dim and t.shape[dim]:
            k = k % t.shape[dim]
        if k is Ellipsis:
            dim += t.dim() - used
        elif k is None or isinstance(k, bool):
            pass
        elif type(k) is slice and k.step is not None and k.step < 0:
            n = t.shape[dim]
            start, stop, step = k.indices(n)
            flips.append(dim)
            k = slice(n - 1 - start, n - 1 - stop if stop >= -1 else None, -step)
            dim += 1
        elif isinstance(k, torch.Tensor) and k.dtype == torch.bool:
            dim += k.dim()
        else:
            dim += 1
        out.append(k)
    if flips:
        t = t.flip(flips)
    return t, tuple(out), False


def _empty_masks_as_ints(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """NumPy reads an empty boolean index as empty integer indices, one per mask dimension (each mask dimension
    must be 0 or match the array's)."""
    out: list[Any] = []
    dim: Optional[int] = 0
    for k in key:
        is_mask = isinstance(k, torch.Tensor) and k.dtype == torch.bool
        if is_mask and k.numel() == 0:
            if dim is not None and any(n not in (0, shape[dim + i]) for i, n in enumerate(k.shape)
                                       if dim + i < len(shape)):
                raise IndexError(f"boolean index of shape {tuple(k.shape)} did not match the indexed array "
                                 f"of shape {shape} at axis {dim}")
            out.extend(torch.zeros(0, dtype=torch.int64, device=k.device) for _ in range(max(k.dim(), 1)))
        else:
            out.append(k)
        if k is Ellipsis:
            dim = None  # positions after an ellipsis are not checked here (torch checks them)
        elif dim is not None and k is not None and not isinstance(k, bool):
            dim += k.dim() if is_mask else 1
    return tuple(out)


def _adjacent(pos: list[int]) -> bool:
    return pos[-1] - pos[0] + 1 == len(pos)


def _advanced_block(ndim: int, key: tuple[Any, ...]) -> Optional[tuple[int, int, int]]:
    """(torch's position, NumPy's position, number of dimensions) of the advanced-index block of the result
    where the two differ: NumPy counts integers as advanced indices when arrays are present and keeps the block in
    place only when the advanced indices are next to each other in the key (an ellipsis between them separates
    them even when it stands for no dimension); torch looks at arrays only, after expanding the ellipsis."""
    if not any(isinstance(k, torch.Tensor) for k in key) or any(isinstance(k, bool) for k in key):
        return None
    used = sum(k.dim() if isinstance(k, torch.Tensor) and k.dtype == torch.bool else 1
               for k in key if k is not None and k is not Ellipsis)
    expanded: list[Any] = []
    for k in key:
        expanded.extend([slice(None)] * (ndim - used) if k is Ellipsis else [k])

    def dims_before(entries: Any) -> int:  # result dimensions made by ``entries`` (before the block)
        return sum(ndim - used if k is Ellipsis else 0 if type(k) is int else 1 for k in entries)

    tensors = [i for i, k in enumerate(expanded) if isinstance(k, torch.Tensor)]
    advanced = [i for i, k in enumerate(key) if isinstance(k, torch.Tensor) or type(k) is int]
    at_torch = dims_before(expanded[: tensors[0]]) if _adjacent(tensors) else 0
    at_numpy = dims_before(key[: advanced[0]]) if _adjacent(advanced) else 0
    if at_torch == at_numpy:
        return None
    shapes = [(1,) if k.dtype == torch.bool else tuple(k.shape) for k in key if isinstance(k, torch.Tensor)]
    return at_torch, at_numpy, len(torch.broadcast_shapes(*shapes))


def _move_block(r: torch.Tensor, src: int, dst: int, n: int) -> torch.Tensor:
    return r.movedim(tuple(range(src, src + n)), tuple(range(dst, dst + n)))
