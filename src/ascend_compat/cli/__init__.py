"""Command-line interface: one small module per command; the work lives in the library."""
