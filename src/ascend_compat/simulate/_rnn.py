"""Fused LSTM/GRU cells on the simulated NPU.

For CUDA, XPU and PrivateUse1 tensors ATen's ``LSTM``/``GRU`` (and the ``*Cell`` modules) call the fused cell ops
``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``, which have CUDA kernels only: on the simulated device the
CPU fallback has nothing to run and every LSTM or GRU failed. These kernels compute the same cells from ordinary
ops (CUDA's fused formulation: the biases are added to the precomputed gates), registered for the ``npu`` both
below autograd (inference) and at its autograd key, so autograd differentiates the decomposition. torch_npu has
its own LSTM/GRU kernels; the results here equal the CPU's to float rounding, not bit for bit.
"""

from __future__ import annotations

from typing import Any, Optional

_LIBRARY: Any = None  # kept alive: the registrations last as long as the library object


def _gates(torch: Any, ig: Any, hg: Any, ib: Optional[Any], hb: Optional[Any]) -> tuple[Any, Any]:
    if ib is not None:
        ig = ig + ib
    if hb is not None:
        hg = hg + hb
    return ig, hg


def register(torch: Any) -> None:
    """Register the fused cells for ``npu`` (once per process)."""
    global _LIBRARY
    if _LIBRARY is not None:
        return

    def lstm_cell(ig: Any, hg: Any, cx: Any, ib: Optional[Any] = None, hb: Optional[Any] = None) -> Any:
        ig, hg = _gates(torch, ig, hg, ib, hb)
        i, f, g, o = (ig + hg).chunk(4, 1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        cy = f * cx + i * g
        hy = o * cy.tanh()
        return hy, cy, torch.cat([i, f, g, o], 1)

    def gru_cell(ig: Any, hg: Any, hx: Any, ib: Optional[Any] = None, hb: Optional[Any] = None) -> Any:
        ig, hg = _gates(torch, ig, hg, ib, hb)
        ir, iz, in_ = ig.chunk(3, 1)
        hr, hz, hn = hg.chunk(3, 1)
        r = (ir + hr).sigmoid()
        z = (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        hy = n + z * (hx - n)
        return hy, torch.cat([r, z, n, hx, hn], 1)

    lib = torch.library.Library("aten", "IMPL")
    for key in ("PrivateUse1", "AutogradPrivateUse1"):
        lib.impl("_thnn_fused_lstm_cell", lstm_cell, key)
        lib.impl("_thnn_fused_gru_cell", gru_cell, key)
    _LIBRARY = lib
