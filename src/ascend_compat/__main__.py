"""``python -m ascend_compat``: the same as the ``ascend-compat`` command."""

from __future__ import annotations

import sys

from ascend_compat.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
