"""Load a user's model factory named on the command line (``verify model``, ``bench model --factory``)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import stat
import sys
from typing import Any, Callable, Optional


def exec_registered(name: str, module: Any, loader: Any) -> None:
    """Run a user's file as the module ``name``, in ``sys.modules`` while it runs and after (as python registers a
    script as ``__main__``): ``@dataclass`` looks its class's module up there, and failed without it
    (``'NoneType' object has no attribute '__dict__'`` under ``from __future__ import annotations``). Taken out
    again when the file raises."""
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise


def load_callable(spec: str) -> Callable[..., Any]:
    """``path/to/script.py:name`` or ``package.module:name`` (``name`` may be dotted) -> the callable.

    A script is loaded from its file with its directory first on ``sys.path`` (its own imports of neighbours work);
    a module is imported with the working directory importable, as ``python -m`` does. Raises ValueError saying
    what is wrong.
    """
    source, sep, name = spec.rpartition(":")
    if not sep or not source or not name:
        raise ValueError(f"{spec!r}: expected SCRIPT_OR_MODULE:FACTORY (e.g. model.py:make_model)")
    if source.endswith(".py") or os.path.sep in source or os.path.isfile(source):
        path = os.path.abspath(source)
        problem = python_file_problem(path)
        if problem is not None:
            raise ValueError(f"{source}: {problem}")
        sys.path.insert(0, os.path.dirname(path))
        module_spec = importlib.util.spec_from_file_location("_ascend_compat_factory", path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"{source}: cannot be loaded as a Python file")
        obj: Any = importlib.util.module_from_spec(module_spec)
        exec_registered(module_spec.name, obj, module_spec.loader)
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            obj = importlib.import_module(source)
        except ImportError as exc:
            raise ValueError(f"{source}: cannot import ({exc})") from exc
    for part in name.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{source} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"{source}:{name} is not callable")
    return obj  # type: ignore[no-any-return]


def python_file_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be loaded as a Python file ("no such file", "a directory, not a Python file",
    "cannot read: Permission denied"...), or None. A FIFO is never opened: that would wait for a writer."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return "no such file"
    if not stat.S_ISREG(mode):
        from ascend_compat._atomic import file_kind

        kind = file_kind(mode, "not a regular file")
        return f"{kind}, not a Python file"
    try:
        open(path, "rb").close()
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    return None


def takes_an_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called with one positional argument (a batch size), so one factory serves both
    ``verify model`` (called with none) and ``bench model`` (called with the batch size when it takes it)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: assume the documented bench form
        return True
    try:
        sig.bind(0)
    except TypeError:
        return False
    return True
