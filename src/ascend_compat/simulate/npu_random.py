"""``torch.npu.random``: the RNG functions under their submodule name, as torch_npu has them
(transformers' Trainer saves ``torch.npu.random.get_rng_state()`` in checkpoints)."""

from __future__ import annotations

from ascend_compat.simulate.npu_module import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]
