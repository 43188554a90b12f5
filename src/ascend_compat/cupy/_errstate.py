"""CuPy's ``cupyx.errstate`` / ``cupyx.seterr`` / ``cupyx.geterr``: per-thread error modes.

Only ``linalg`` changes behaviour, as in CuPy (elementwise floating-point errors are not trapped on devices).
This module's linear algebra already raises ``LinAlgError`` where NumPy does (a singular ``inv``/``solve``, a
non-positive-definite ``cholesky``) whatever the mode, rather than returning NaNs silently; ``linalg='raise'``
also fails the cases NumPy and CuPy's default let pass (``solve`` of a singular matrix with an empty right-hand
side). With ``import cupy`` resolving to ``ascend_compat.cupy``, ``import cupyx`` gives them as ``cupyx.errstate``
(:mod:`ascend_compat.cupy._cupyx`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Optional

_FP_MODES = ("ignore", "warn", "raise", "call", "print", "log")
_LINALG_MODES = ("ignore", "raise")
_DEFAULTS = {"divide": None, "over": None, "under": None, "invalid": None, "linalg": "ignore"}
_local = threading.local()


def _state() -> dict[str, Any]:
    st = getattr(_local, "state", None)
    if st is None:
        st = _local.state = dict(_DEFAULTS)
    return st


def geterr() -> dict[str, Any]:
    """The current modes: ``divide``, ``over``, ``under``, ``invalid`` and ``linalg``."""
    return dict(_state())


def seterr(*, divide: Optional[str] = None, over: Optional[str] = None, under: Optional[str] = None,
           invalid: Optional[str] = None, linalg: Optional[str] = None) -> dict[str, Any]:
    """Set modes (None leaves one unchanged); returns the previous modes."""
    new = {"divide": divide, "over": over, "under": under, "invalid": invalid}
    for name, mode in new.items():
        if mode is not None and mode not in _FP_MODES:
            raise ValueError(f"invalid {name} mode {mode!r}: expected one of {_FP_MODES}")
    if linalg is not None and linalg not in _LINALG_MODES:
        raise ValueError(f"invalid linalg mode {linalg!r}: expected one of {_LINALG_MODES}")
    old = geterr()
    st = _state()
    st.update({k: v for k, v in new.items() if v is not None})
    if linalg is not None:
        st["linalg"] = linalg
    return old


@contextlib.contextmanager
def errstate(*, divide: Optional[str] = None, over: Optional[str] = None, under: Optional[str] = None,
             invalid: Optional[str] = None, linalg: Optional[str] = None) -> Iterator[None]:
    """Modes for the ``with`` block, restored afterwards."""
    old = seterr(divide=divide, over=over, under=under, invalid=invalid, linalg=linalg)
    try:
        yield
    finally:
        _state().clear()
        _state().update(old)


def get_config_linalg() -> str:
    """The current ``linalg`` mode (``'ignore'`` or ``'raise'``)."""
    return str(_state()["linalg"])


__all__ = ["errstate", "get_config_linalg", "geterr", "seterr"]
