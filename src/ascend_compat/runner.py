"""Run a script or module the way ``python`` does, after preparing the process (simulation, shim)."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from typing import Optional


def _prepare() -> None:
    if os.environ.get("ASCEND_COMPAT_SIMULATE"):
        from ascend_compat import simulate

        simulate.install_from_env()


def run_target(script: Optional[str], module: Optional[str], args: list[str]) -> int:
    """Run ``script`` (a path) or ``module`` with ``args`` as ``sys.argv[1:]``; return the exit code.

    Behaves like the interpreter: ``__name__ == "__main__"``, ``__file__`` set, the script's directory first on
    ``sys.path``, ``SystemExit`` codes honoured and uncaught exceptions printed with exit code 1.
    """
    _prepare()
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    try:
        if module is not None:
            sys.argv = [module, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            assert script is not None
            if not os.path.exists(script):
                print(f"ascend-compat run: can't open file {script!r}: No such file", file=sys.stderr)
                return 2
            sys.argv = [script, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        etype, value, tb = sys.exc_info()
        # Drop our own frames so the traceback starts at the user's code.
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb)
        return 1
    finally:
        sys.argv = old_argv
        if old_path0 is not None and sys.path and sys.path[0] != old_path0:
            sys.path.pop(0)
    return 0
