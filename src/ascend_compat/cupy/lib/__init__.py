"""``cupy.lib``: ``stride_tricks`` (``as_strided``, ``sliding_window_view``)."""

from ascend_compat.cupy.lib import stride_tricks

__all__ = ["stride_tricks"]
