"""``flash_attn.layers``: only ``rotary`` is provided by the ascend-compat drop-in."""
