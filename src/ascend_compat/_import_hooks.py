"""Run code right after a module is imported, via a ``sys.meta_path`` finder (find_spec API).

``when_imported("torch", callback)`` calls ``callback(module)`` at once if the module is already imported,
otherwise just after its import finishes (the finder is in ``sys.meta_path`` only while a callback waits). The
shim uses it so that auto-activation waits for torch (and then loads the backend's adapter, e.g. torch_npu,
before anything touches ``torch.cuda``); library patches use it to apply only when their library is imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:  # a runtime alias costs a typing subscription on activate()'s path
    Callback = Callable[[ModuleType], None]

_LOCK = threading.RLock()
_HOOKS: dict[str, list[Callback]] = {}


class _CallbackLoader(importlib.abc.Loader):
    """Delegates to the real loader, then runs the callbacks registered for the module."""

    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # Put the real loader back first, so that reloads and introspection see the module's own loader.
        module.__loader__ = self.inner
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        with _LOCK:
            callbacks = _HOOKS.pop(self.name, [])
            _drop_finder_when_idle()
        for callback in callbacks:
            callback(module)

    def __getattr__(self, item: str) -> object:  # get_resource_reader, is_package, ...
        return getattr(self.inner, item)


class PostImportFinder(importlib.abc.MetaPathFinder):
    """Wraps the loader of hooked modules; finds nothing itself."""

    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in _HOOKS or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname
        try:
            spec = importlib.util.find_spec(fullname) if path is None else _find_with(fullname, path, target)
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _CallbackLoader(spec.loader, fullname)
        return spec


def _find_with(
    fullname: str, path: Sequence[str], target: Optional[ModuleType]
) -> Optional[importlib.machinery.ModuleSpec]:
    for finder in sys.meta_path:
        if isinstance(finder, PostImportFinder) or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


_FINDER = PostImportFinder()


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` now if ``name`` is imported, else right after it is."""
    with _LOCK:
        module = sys.modules.get(name)
        if module is None:
            _HOOKS.setdefault(name, []).append(callback)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    callback(module)


def cancel(name: str, callback: Callback) -> None:
    """Forget a callback that has not run yet (deactivation before the library was imported); with nothing left
    to wait for, the finder leaves ``sys.meta_path`` (deactivation leaves it as it was)."""
    with _LOCK:
        callbacks = _HOOKS.get(name)
        if callbacks is not None:
            callbacks[:] = [c for c in callbacks if c is not callback]
            if not callbacks:
                del _HOOKS[name]
        _drop_finder_when_idle()


def _drop_finder_when_idle() -> None:
    # Called with the lock held. Every copy goes (by identity), also one that someone moved.
    if not _HOOKS and _FINDER in sys.meta_path:
        sys.meta_path[:] = [f for f in sys.meta_path if f is not _FINDER]


def pending() -> dict[str, int]:
    """Modules still awaited, with their number of callbacks (for ``info`` and tests)."""
    with _LOCK:
        return {k: len(v) for k, v in _HOOKS.items()}
