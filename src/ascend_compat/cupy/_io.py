"""File and text I/O of device arrays (``save``/``load``/``savez``/``savetxt``, ``ndarray.dump``) and array
formatting (``array_repr``, ``array_str``, ``array2string``, ``binary_repr``, ``base_repr``).

Everything goes through a host copy and NumPy's own formats, so files written here are plain ``.npy``/``.npz``/
text files that NumPy (and CuPy) read, and the other way round.
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy

from ascend_compat.cupy._core import asarray, ndarray


def _host(a: Any) -> Any:
    return a.get() if isinstance(a, ndarray) else numpy.asarray(a)


class NpzFile:
    """The arrays of an ``.npz`` file, moved to the device as they are read (``with`` closes the file)."""

    def __init__(self, npz: Any) -> None:
        self.npz = npz

    def __enter__(self) -> NpzFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getitem__(self, key: str) -> ndarray:
        return asarray(self.npz[key])

    def __contains__(self, key: str) -> bool:
        return key in self.npz

    def __iter__(self) -> Any:
        return iter(self.npz)

    def __len__(self) -> int:
        return len(self.npz)

    def keys(self) -> Any:
        return self.npz.keys()

    @property
    def files(self) -> list[str]:
        return list(self.npz.files)

    def close(self) -> None:
        self.npz.close()


def load(file: Any, mmap_mode: Any = None, allow_pickle: bool = False) -> Any:
    """An array (on the current device) or an :class:`NpzFile` from a ``.npy``/``.npz``/pickle file."""
    obj = numpy.load(file, mmap_mode=mmap_mode, allow_pickle=allow_pickle)
    if isinstance(obj, numpy.lib.npyio.NpzFile):
        return NpzFile(obj)
    if isinstance(obj, numpy.ndarray) and obj.dtype.kind not in "OSUV":
        return asarray(obj)
    return obj


def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """Write ``arr`` to a ``.npy`` file (NumPy's format)."""
    numpy.save(file, _host(arr), allow_pickle=allow_pickle)


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    """Write several arrays to an uncompressed ``.npz`` file."""
    numpy.savez(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file: Any, *args: Any, **kwds: Any) -> None:
    """Write several arrays to a compressed ``.npz`` file."""
    numpy.savez_compressed(file, *[_host(a) for a in args], **{k: _host(v) for k, v in kwds.items()})


def savetxt(fname: Any, X: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N803 (NumPy's name)
    """Write a 1-D or 2-D array to a text file (``numpy.savetxt``'s arguments)."""
    numpy.savetxt(fname, _host(X), *args, **kwargs)


def array_repr(arr: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None) -> str:
    """The string ``repr`` gives for the array (``array([...])``, with the dtype where NumPy shows it)."""
    return numpy.array_repr(_host(arr), max_line_width, precision, suppress_small)


def array_str(arr: Any, max_line_width: Any = None, precision: Any = None, suppress_small: Any = None) -> str:
    """The string ``str`` gives for the array."""
    return numpy.array_str(_host(arr), max_line_width, precision, suppress_small)


def array2string(a: Any, *args: Any, **kwargs: Any) -> str:
    """The array's data as text (``numpy.array2string``'s arguments)."""
    return numpy.array2string(_host(a), *args, **kwargs)


def binary_repr(num, width=None):  # type: ignore[no-untyped-def]  # unannotated: NumPy's exact signature
    """The binary representation of an integer (two's complement for negatives when ``width`` is given)."""
    return numpy.binary_repr(num, width)


def base_repr(number, base=2, padding=0):  # type: ignore[no-untyped-def]  # unannotated: NumPy's exact signature
    """The representation of an integer in ``base`` (2 to 36), left-padded with ``padding`` zeros."""
    return numpy.base_repr(number, base, padding)


def _dump(self: ndarray, file: Any) -> None:
    """Pickle the array (as a host NumPy array, readable without this package) to ``file`` (a path or file)."""
    if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
        with open(file, "wb") as f:
            pickle.dump(self.get(), f, protocol=2)
    else:
        pickle.dump(self.get(), file, protocol=2)


def _dumps(self: ndarray) -> bytes:
    """The pickle of the array (as a host NumPy array)."""
    return pickle.dumps(self.get(), protocol=2)


ndarray.dump = _dump  # type: ignore[attr-defined]
ndarray.dumps = _dumps  # type: ignore[attr-defined]

__all__ = ["array2string", "array_repr", "array_str", "base_repr", "binary_repr", "load", "save", "savetxt",
           "savez", "savez_compressed"]
