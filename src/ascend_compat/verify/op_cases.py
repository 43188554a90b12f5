"""The ops of the op-level parity suite (:func:`build_suite`): what each draws as inputs, how it runs on the
device, and its float64 golden. Running them is :mod:`ascend_compat.verify.ops`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    import torch

__all__ = ["Inputs", "OpCase", "build_suite"]

#: An op's named input tensors (a string reference: torch stays an optional import).
Inputs = dict[str, "torch.Tensor"]


@dataclass(frozen=True)
class OpCase:
    """One op of the suite.

    ``make`` draws float32/int64 CPU inputs from a generator; ``run`` computes on whatever device and dtype the
    inputs are in; ``golden`` (default: ``run``) computes the reference from float64 CPU inputs; ``devices``
    limits the case to those device types (torch_npu's fused ops); ``check`` returns a reason to skip, or None.
    """

    name: str
    group: str
    make: Callable[[torch.Generator], Inputs]
    run: Callable[[Inputs], torch.Tensor]
    golden: Optional[Callable[[Inputs], torch.Tensor]] = None
    devices: tuple[str, ...] = ()
    check: Optional[Callable[[], Optional[str]]] = None


def _randn(gen: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    import torch

    return torch.randn(*shape, generator=gen) * scale


def _fused(name: str) -> Callable[[], Optional[str]]:
    def check() -> Optional[str]:
        try:
            import torch_npu  # type: ignore[import-not-found]
        except ImportError:
            return "torch_npu is not importable"
        return None if hasattr(torch_npu, name) else f"torch_npu has no {name}"

    return check


def _has_rms_norm() -> Optional[str]:
    from torch.nn import functional

    return None if hasattr(functional, "rms_norm") else "torch.nn.functional.rms_norm needs torch >= 2.4"


def _rms_ref(i: Inputs) -> torch.Tensor:
    x, w = i["x"], i["w"]
    return x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w


def _attention_ref(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    import torch

    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s, t = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(s, t, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def _sdpa(i: Inputs) -> torch.Tensor:
    from torch.nn import functional

    return functional.scaled_dot_product_attention(i["q"], i["k"], i["v"], is_causal=True)


def _npu_fa(i: Inputs) -> torch.Tensor:
    import torch
    import torch_npu  # type: ignore[import-not-found]

    q, k, v = i["q"], i["k"], i["v"]
    s = q.shape[2]
    # sparse_mode 0 with an explicit (S, S) mask, True = masked: the causal form every torch_npu line accepts.
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    return torch_npu.npu_fusion_attention(
        q, k, v, q.shape[1], "BNSD", atten_mask=mask, scale=1.0 / math.sqrt(q.shape[-1]), sparse_mode=0
    )[0]


def _opt_inputs(gen: torch.Generator) -> Inputs:
    import torch

    # Gradients bounded away from zero: Adam's eps (1e-8) is 0 in float16, and a gradient that squares to zero
    # would make both sides divide 0 by 0 (a real fp16 hazard, but not what this case measures). Parameters
    # away from zero too: a step that cancels a parameter to ~0 leaves the rounding of its O(1) intermediates
    # in the small-value regime, which would measure the dtype, not the optimizer kernel.
    g, p = _randn(gen, 32, 32), _randn(gen, 32, 32)
    return {"p": torch.sign(p) * (0.5 + p.abs()), "g": torch.sign(g) * (0.1 + g.abs())}


def _optimizer_step(kind: str) -> Callable[[Inputs], torch.Tensor]:
    def run(i: Inputs) -> torch.Tensor:
        import torch

        p = torch.nn.Parameter(i["p"].clone())
        opt = (
            torch.optim.AdamW([p], lr=1e-2, weight_decay=1e-2, foreach=False)
            if kind == "adamw"
            else torch.optim.SGD([p], lr=1e-2, momentum=0.9, weight_decay=1e-2, foreach=False)
        )
        # Two steps: the second one reads the state (moments, momentum) that the first one wrote. Each step
        # rounds the parameter twice in low precision, which is why more steps would outgrow the dtype's rtol.
        for step in range(2):
            p.grad = i["g"] * (1.0 + 0.5 * step)
            opt.step()
        return p.detach()

    return run


def build_suite() -> list[OpCase]:
    """Every case of the suite, in report order."""
    import torch
    from torch.nn import functional as F  # noqa: N812  (torch's own convention)

    def idx(gen: torch.Generator, high: int, *shape: int) -> torch.Tensor:
        return torch.randint(0, high, shape, generator=gen)

    def scatter_inputs(g: torch.Generator) -> Inputs:
        return {"base": _randn(g, 16, 32), "src": _randn(g, 64, 32), "index": idx(g, 16, 64, 32)}

    return [
        OpCase("matmul", "matmul", lambda g: {"a": _randn(g, 64, 96, scale=96**-0.5), "b": _randn(g, 96, 48)},
               lambda i: i["a"] @ i["b"]),
        OpCase("bmm", "matmul", lambda g: {"a": _randn(g, 4, 32, 64, scale=0.125), "b": _randn(g, 4, 64, 32)},
               lambda i: torch.bmm(i["a"], i["b"])),
        OpCase("linear", "matmul",
               lambda g: {"x": _randn(g, 16, 128), "w": _randn(g, 64, 128, scale=128**-0.5), "b": _randn(g, 64)},
               lambda i: F.linear(i["x"], i["w"], i["b"])),
        OpCase("conv1d", "conv",
               lambda g: {"x": _randn(g, 2, 8, 64), "w": _randn(g, 16, 8, 3, scale=24**-0.5), "b": _randn(g, 16)},
               lambda i: F.conv1d(i["x"], i["w"], i["b"], padding=1)),
        OpCase("conv2d", "conv",
               lambda g: {"x": _randn(g, 2, 4, 16, 16), "w": _randn(g, 8, 4, 3, 3, scale=36**-0.5),
                          "b": _randn(g, 8)},
               lambda i: F.conv2d(i["x"], i["w"], i["b"], padding=1)),
        OpCase("softmax", "softmax", lambda g: {"x": _randn(g, 32, 256, scale=2.0)},
               lambda i: F.softmax(i["x"], dim=-1) * i["x"].shape[-1]),  # x N: O(1) values
        OpCase("log_softmax", "softmax", lambda g: {"x": _randn(g, 32, 256, scale=2.0)},
               lambda i: F.log_softmax(i["x"], dim=-1)),
        OpCase("layer_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0) + 1.0, "w": _randn(g, 256),
                                                "b": _randn(g, 256)},
               lambda i: F.layer_norm(i["x"], (i["x"].shape[-1],), i["w"], i["b"], 1e-5)),
        OpCase("rms_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0), "w": _randn(g, 256)},
               lambda i: F.rms_norm(i["x"], (i["x"].shape[-1],), i["w"], 1e-6), golden=_rms_ref,
               check=_has_rms_norm),
        OpCase("npu_rms_norm", "norm", lambda g: {"x": _randn(g, 32, 256, scale=3.0), "w": _randn(g, 256)},
               lambda i: __import__("torch_npu").npu_rms_norm(i["x"], i["w"], 1e-6)[0], golden=_rms_ref,
               devices=("npu",), check=_fused("npu_rms_norm")),
        OpCase("gelu", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)}, lambda i: F.gelu(i["x"])),
        OpCase("gelu_tanh", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)},
               lambda i: F.gelu(i["x"], approximate="tanh")),
        OpCase("silu", "activation", lambda g: {"x": _randn(g, 64, 128, scale=3.0)}, lambda i: F.silu(i["x"])),
        OpCase("sum", "reduction", lambda g: {"x": _randn(g, 16, 1024)},
               lambda i: i["x"].sum(-1) / 32.0),  # / sqrt(N): O(1)
        OpCase("mean", "reduction", lambda g: {"x": _randn(g, 16, 1024) + 0.5}, lambda i: i["x"].mean(-1)),
        OpCase("var", "reduction", lambda g: {"x": _randn(g, 16, 1024) + 4.0}, lambda i: i["x"].var(-1)),
        OpCase("max", "reduction", lambda g: {"x": _randn(g, 16, 1024)}, lambda i: i["x"].amax(-1)),
        OpCase("cumsum", "reduction", lambda g: {"x": _randn(g, 8, 256, scale=1 / 16)},
               lambda i: i["x"].cumsum(-1)),
        OpCase("index_select", "indexing", lambda g: {"x": _randn(g, 64, 32), "index": idx(g, 64, 48)},
               lambda i: i["x"].index_select(0, i["index"])),
        OpCase("gather", "indexing", lambda g: {"x": _randn(g, 32, 64), "index": idx(g, 64, 32, 16)},
               lambda i: i["x"].gather(1, i["index"])),
        OpCase("scatter_add", "indexing", scatter_inputs,
               lambda i: i["base"].scatter_add(0, i["index"], i["src"]) / 2.0),
        OpCase("embedding", "indexing", lambda g: {"w": _randn(g, 100, 32), "ids": idx(g, 100, 4, 16)},
               lambda i: F.embedding(i["ids"], i["w"])),
        OpCase("sdpa", "attention",
               lambda g: {"q": _randn(g, 2, 4, 32, 16), "k": _randn(g, 2, 4, 32, 16), "v": _randn(g, 2, 4, 32, 16)},
               _sdpa, golden=lambda i: _attention_ref(i["q"], i["k"], i["v"], True)),
        OpCase("npu_fusion_attention", "attention",
               lambda g: {"q": _randn(g, 2, 4, 32, 16), "k": _randn(g, 2, 4, 32, 16), "v": _randn(g, 2, 4, 32, 16)},
               _npu_fa, golden=lambda i: _attention_ref(i["q"], i["k"], i["v"], True), devices=("npu",),
               check=_fused("npu_fusion_attention")),
        OpCase("adamw_step", "optimizer", _opt_inputs, _optimizer_step("adamw")),
        OpCase("sgd_step", "optimizer", _opt_inputs, _optimizer_step("sgd")),
    ]  # fmt: skip
