"""Fused scaling ops for the kernelpkg fixture."""

__version__ = "0.1"
