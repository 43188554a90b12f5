"""The KV-cache bookkeeping of ``flash_attn_with_kvcache``: the cache's layout (contiguous or paged), how many keys
each batch row holds, writing new keys/values in place, gathering each row's keys, and the key mask. Everything
stays on the device: no host synchronisation.
"""

from __future__ import annotations

from typing import Optional, Union

import torch

from ascend_compat.ecosystem.flash_attn._ops import _band_masked, _check, _rotate


def cache_layout(
    fn: str, b: int, k_cache: torch.Tensor, block_table: Optional[torch.Tensor], cache_leftpad: Optional[torch.Tensor]
) -> tuple[int, int]:
    """(page size, 0 when the cache is not paged; key slots per batch row), after checking ``block_table`` and
    ``cache_leftpad``."""
    if block_table is not None:
        if block_table.dim() != 2 or block_table.shape[0] != b:
            raise ValueError(f"{fn}: block_table must be (batch, max_blocks), got {tuple(block_table.shape)}")
        page = k_cache.shape[1]
        capacity = block_table.shape[1] * page
    else:
        page = 0
        capacity = k_cache.shape[1]
    if cache_leftpad is not None:
        if block_table is not None:  # flash-attn 2.8 refuses the pair too ("We don't support Paged KV and leftpad_k")
            raise NotImplementedError(f"{fn}: cache_leftpad with a paged block_table is unsupported, as in flash-attn")
        if not isinstance(cache_leftpad, torch.Tensor) or cache_leftpad.shape != (b,):
            is_tensor = isinstance(cache_leftpad, torch.Tensor)
            got = tuple(cache_leftpad.shape) if is_tensor else type(cache_leftpad).__name__
            raise ValueError(f"{fn}: cache_leftpad must be a (batch,) = ({b},) integer tensor, got {got}")
        if cache_leftpad.dtype.is_floating_point or cache_leftpad.dtype.is_complex:
            raise TypeError(f"{fn}: cache_leftpad must hold integers (int32 in flash-attn), got {cache_leftpad.dtype}")
    return page, capacity


def cache_lengths(
    fn: str, cache_seqlens: Optional[Union[int, torch.Tensor]], appending: bool, b: int, capacity: int,
    dev: torch.device,
) -> torch.Tensor:
    """Keys already in the cache per batch row, as (B,) int64 on the device (the whole cache when not given)."""
    if cache_seqlens is None:
        if appending:
            raise ValueError(f"{fn}: cache_seqlens is needed to append k/v (where in the cache they go)")
        return torch.full((b,), capacity, dtype=torch.int64, device=dev)
    if isinstance(cache_seqlens, int):
        return torch.full((b,), cache_seqlens, dtype=torch.int64, device=dev)
    return cache_seqlens.to(device=dev, dtype=torch.int64)


def append_new(
    fn: str,
    q: torch.Tensor,
    k: Optional[torch.Tensor],
    v: Optional[torch.Tensor],
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    lens: torch.Tensor,
    rows: torch.Tensor,
    block_table: Optional[torch.Tensor],
    page: int,
    rotary_cos: Optional[torch.Tensor],
    rotary_sin: Optional[torch.Tensor],
    rotary_interleaved: bool,
) -> int:
    """Write the new ``k``/``v`` into the cache at slots ``lens[b]`` onwards (rotating k first when rotary tables are
    given); returns how many tokens were appended."""
    if k is None or v is None:
        raise ValueError(f"{fn}: k and v must be given together")
    _check(q, k, v, 4, fn)
    s_new = k.shape[1]
    pos = lens.view(-1, 1) + torch.arange(s_new, device=q.device).view(1, -1)  # (B, S_new)
    if rotary_cos is not None:
        k = _rotate(k, rotary_cos[pos], rotary_sin[pos], rotary_interleaved)  # type: ignore[index]
    if block_table is not None:
        blk = block_table.to(torch.int64).gather(1, pos // page)
        k_cache[blk, pos % page] = k
        v_cache[blk, pos % page] = v
    else:
        k_cache[rows.view(-1, 1), pos] = k
        v_cache[rows.view(-1, 1), pos] = v
    return s_new


def gather_cache(
    k_cache: torch.Tensor, v_cache: torch.Tensor, rows: torch.Tensor, block_table: Optional[torch.Tensor],
    capacity: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each batch row's keys and values, (B, capacity, H_k, D), from a contiguous or a paged cache."""
    if block_table is None:
        return k_cache[rows], v_cache[rows]
    bt = block_table.to(torch.int64)
    b = block_table.shape[0]
    keys = k_cache[bt].reshape(b, capacity, *k_cache.shape[2:])
    values = v_cache[bt].reshape(b, capacity, *v_cache.shape[2:])
    return keys, values


def kv_mask(
    qpos: torch.Tensor, kpos: torch.Tensor, anchor: torch.Tensor, left: int, right: int, total: torch.Tensor,
    cache_leftpad: Optional[torch.Tensor],
) -> torch.Tensor:
    """True where a query must not see a key: outside the band, past the keys in use, or before the row's left pad."""
    masked = _band_masked(qpos, kpos, anchor, left, right) | (kpos.view(1, 1, 1, -1) >= total.view(-1, 1, 1, 1))
    if cache_leftpad is not None:
        masked |= kpos.view(1, 1, 1, -1) < cache_leftpad.to(device=kpos.device, dtype=torch.int64).view(-1, 1, 1, 1)
    return masked
