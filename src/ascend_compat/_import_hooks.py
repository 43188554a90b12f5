"""The package's one ``sys.meta_path`` finder: post-import callbacks and module providers.

Everything ascend-compat does at import time goes through :data:`FINDER`, which sits first on ``sys.meta_path``
while anything is registered and leaves it (by identity) when the last registration goes, so that undoing every
registration leaves ``sys.meta_path`` exactly as it was. What it serves:

- **post-import callbacks**: ``when_imported("torch", callback)`` calls ``callback(module)`` at once if the module is
  already imported, otherwise just after its import finishes (auto-activation waits for torch this way, and library
  patches for their library);
- **module providers**: :func:`provide` serves top-level names (and their submodules) from a provider object, made
  by a factory that may be a ``"package.module:function"`` path, imported at the first question about those names.
  Mode ``"replace"`` answers before every other finder (the simulated ``torch_npu``, the flash_attn drop-in,
  ``install_as_cupy``); ``"fallback"`` answers a top-level name only when no other finder finds a module of that
  name (the shim's ``import cupy``: an installed CuPy is never shadowed), and its submodules only while the
  provider ``owns(name, sys.modules[name])``. A provider object has ``find_spec(fullname, path, target)``, and
  optionally ``owns``, ``distribution()`` (``(version, summary)`` for ``importlib.metadata``, with
  ``metadata=True``) and ``forget()`` (drops its modules from ``sys.modules`` when the registration is withdrawn).

Standard library only, and cheap to import: ``importlib.metadata`` loads on the first metadata question.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

if TYPE_CHECKING:  # runtime aliases cost typing subscriptions on activate()'s path
    from importlib.machinery import ModuleSpec

    from ascend_compat.cuda_shim.ledger import Ledger

    Callback = Callable[[ModuleType], None]
    Factory = Union[str, Callable[[], Any]]

__all__ = ["FINDER", "Provision", "cancel", "pending", "provide", "provides", "provisions", "suspended",
           "when_imported", "withdraw"]

MODES = ("replace", "fallback")
_LOCK = threading.RLock()
_HOOKS: dict[str, list[Callback]] = {}
_PROVISIONS: list[Provision] = []  # replace ones first, newest first; then fallback ones, oldest first
_SERVED: dict[str, tuple[Provision, ...]] = {}  # rebuilt on every change, so find_spec reads it without the lock
_SUSPENDED: dict[str, int] = {}


class Provision:
    """One registration of :func:`provide` (the handle :func:`withdraw` takes)."""

    __slots__ = ("_provider", "factory", "label", "metadata", "mode", "names")

    def __init__(self, names: tuple[str, ...], factory: Factory, mode: str, metadata: bool, label: str) -> None:
        self.names, self.factory, self.mode, self.metadata, self.label = names, factory, mode, metadata, label
        self._provider: Any = None

    def provider(self) -> Any:
        """The provider object, made on first use (no lock: two threads racing here make two equal providers)."""
        if self._provider is None:
            factory = self.factory
            if isinstance(factory, str):
                import importlib

                module, _, name = factory.partition(":")
                factory = getattr(importlib.import_module(module), name)
            self._provider = factory()  # type: ignore[operator]
        return self._provider

    def __repr__(self) -> str:
        return f"Provision({self.names!r}, {self.mode!r}, {self.label!r})"


class _CallbackLoader:
    """Delegates to the real loader, then runs the callbacks registered for the module."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: ModuleSpec) -> Optional[ModuleType]:
        return self.inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        # Put the real loader back first, so that reloads and introspection see the module's own loader.
        module.__loader__ = self.inner
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.inner.exec_module(module)
        with _LOCK:
            callbacks = _HOOKS.pop(self.name, [])
            _drop_finder_when_idle()
        module = sys.modules.get(self.name, module)  # a loader may put another module there (an alias)
        for callback in callbacks:
            callback(module)

    def __getattr__(self, item: str) -> object:  # get_resource_reader, is_package, ...
        return getattr(self.inner, item)


class ImportFinder:
    """The finder: serves provided names and wraps the loader of awaited modules; everything else is not its own."""

    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[ModuleSpec]:
        served = _SERVED.get(fullname.partition(".")[0])
        hooked = fullname in _HOOKS
        if served is None and not hooked:  # every other import pays these two lookups
            return None
        busy: set[str] = self._busy.__dict__.setdefault("names", set())
        if fullname in busy:  # asked again while answering (another finder asked the import system)
            return None
        busy.add(fullname)
        try:
            spec = _serve(self, served, fullname, path, target) if served else None
            if spec is None and hooked:
                spec = _find_elsewhere(self, fullname, path, target)
        finally:
            busy.discard(fullname)
        if hooked and spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _CallbackLoader(spec.loader, fullname)  # type: ignore[assignment]  # a loader by protocol
        return spec

    def find_distributions(self, context: Any = None) -> list[Any]:
        """Package metadata for the provided names registered with ``metadata=True``."""
        name = getattr(context, "name", None)
        wanted = None if name is None else name.replace("-", "_").replace(".", "_").lower()
        found = []
        for provision in list(_PROVISIONS):
            dist = provision.names[0]
            if provision.metadata and wanted in (None, dist):
                info = provision.provider().distribution()
                if info is not None:
                    found.append(_fake_distribution(dist, *info))
        return found

    def invalidate_caches(self) -> None:
        """Nothing cached."""


def _serve(
    finder: ImportFinder, served: tuple[Provision, ...], fullname: str, path: Optional[Sequence[str]],
    target: Optional[ModuleType],
) -> Optional[ModuleSpec]:
    top = fullname.partition(".")[0]
    if top in _SUSPENDED:
        return None
    for provision in served:
        if provision.mode == "fallback":
            if top == fullname and (top in sys.modules or _found_elsewhere(finder, top)):
                return None  # a real module of that name exists: never shadow it
            if top != fullname and not _owns(provision, top):
                continue  # a submodule of a real package: its own finders answer
        spec: Optional[ModuleSpec] = provision.provider().find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _owns(provision: Provision, top: str) -> bool:
    owns = getattr(provision.provider(), "owns", None)
    return owns is not None and bool(owns(top, sys.modules.get(top)))


def _others(finder: ImportFinder) -> Iterator[Any]:
    for other in list(sys.meta_path):
        if other is not finder and hasattr(other, "find_spec"):
            yield other


def _find_elsewhere(
    finder: ImportFinder, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType]
) -> Optional[ModuleSpec]:
    for other in _others(finder):
        spec: Optional[ModuleSpec] = other.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _found_elsewhere(finder: ImportFinder, name: str) -> bool:
    for other in _others(finder):
        try:
            if other.find_spec(name, None) is not None:
                return True
        except Exception:  # a broken third-party finder must not break the import; the import system retries it
            continue
    return False


_DIST_CLASS: Any = None


def _fake_distribution(name: str, version: str, summary: str) -> Any:
    """An ``importlib.metadata.Distribution`` of ``name`` with no files and no entry points."""
    global _DIST_CLASS
    if _DIST_CLASS is None:
        import importlib.metadata

        class _Distribution(importlib.metadata.Distribution):
            def __init__(self, name: str, version: str, summary: str) -> None:
                self._meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
                self._top = name + "\n"

            def read_text(self, filename: str) -> Optional[str]:
                return {"METADATA": self._meta, "top_level.txt": self._top}.get(filename)

            def locate_file(self, path: Any) -> Any:
                return path

        _DIST_CLASS = _Distribution
    return _DIST_CLASS(name, version, summary)


FINDER = ImportFinder()


def _ensure_finder() -> None:
    # Called with the lock held.
    if not any(f is FINDER for f in sys.meta_path):
        sys.meta_path.insert(0, FINDER)


def _drop_finder_when_idle() -> None:
    # Called with the lock held. Every copy goes (by identity), also one that someone moved.
    if not _HOOKS and not _PROVISIONS and any(f is FINDER for f in sys.meta_path):
        sys.meta_path[:] = [f for f in sys.meta_path if f is not FINDER]


# -- post-import callbacks -------------------------------------------------------------------------------------------


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` now if ``name`` is imported, else right after it is."""
    with _LOCK:
        module = sys.modules.get(name)
        if module is None:
            _HOOKS.setdefault(name, []).append(callback)
            _ensure_finder()
            return
    callback(module)


def cancel(name: str, callback: Callback) -> None:
    """Forget a callback that has not run yet (deactivation before the library was imported); with nothing left
    registered, the finder leaves ``sys.meta_path`` (deactivation leaves it as it was)."""
    with _LOCK:
        callbacks = _HOOKS.get(name)
        if callbacks is not None:
            callbacks[:] = [c for c in callbacks if c is not callback]
            if not callbacks:
                del _HOOKS[name]
        _drop_finder_when_idle()


def pending() -> dict[str, int]:
    """Modules still awaited, with their number of callbacks (for ``info`` and tests)."""
    with _LOCK:
        return {k: len(v) for k, v in _HOOKS.items()}


# -- module providers ------------------------------------------------------------------------------------------------


def provide(
    names: Union[str, Iterable[str]], factory: Factory, mode: str = "replace", *, ledger: Optional[Ledger] = None,
    metadata: bool = False, label: str = "",
) -> Provision:
    """Serve the top-level ``names`` (and their submodules) from the provider ``factory()`` makes; returns the
    registration, for :func:`withdraw`. With ``ledger``, the registration is one of its records (restoring the
    ledger withdraws it)."""
    tops = (names,) if isinstance(names, str) else tuple(names)
    if not tops or not all(isinstance(n, str) and n.isidentifier() for n in tops):
        raise ValueError(f"provide() takes top-level module names, not {names!r}")
    if mode not in MODES:
        raise ValueError(f"provide() mode must be one of {MODES}, not {mode!r}")
    if not (callable(factory) or (isinstance(factory, str) and ":" in factory)):
        raise TypeError(f"provide() takes a callable or a 'package.module:function' factory, not {factory!r}")
    provision = Provision(tops, factory, mode, metadata, label or f"import {'/'.join(tops)}")
    if ledger is None:
        _add(provision)
    else:
        ledger.call(lambda: _add(provision), lambda: withdraw(provision), provision.label)
    return provision


def _add(provision: Provision) -> None:
    with _LOCK:
        if provision.mode == "replace":
            _PROVISIONS.insert(0, provision)
        else:
            _PROVISIONS.append(provision)
        _reindex()
        _ensure_finder()


def _reindex() -> None:
    global _SERVED
    served: dict[str, tuple[Provision, ...]] = {}
    for provision in _PROVISIONS:
        for name in provision.names:
            served[name] = (*served.get(name, ()), provision)
    _SERVED = served


def withdraw(provision: Provision) -> None:
    """Undo :func:`provide` (harmless when it is not registered): the names are no longer served, the provider
    forgets the modules it gave, and with nothing left registered the finder leaves ``sys.meta_path``."""
    with _LOCK:
        if not any(p is provision for p in _PROVISIONS):
            return
        _PROVISIONS[:] = [p for p in _PROVISIONS if p is not provision]
        _reindex()
        _drop_finder_when_idle()
    # Without a provider made, nothing was served, unless a module of the name was put in sys.modules directly.
    if provision._provider is not None or any(name in sys.modules for name in provision.names):
        forget = getattr(provision.provider(), "forget", None)
        if forget is not None:
            forget()


def provides(name: str) -> bool:
    """True while the top-level ``name`` is served by a provider."""
    return name in _SERVED


def provisions() -> list[tuple[str, str]]:
    """``(name, mode)`` of every provided top-level name, in the order they are asked (for ``info`` and tests)."""
    with _LOCK:
        return [(name, p.mode) for p in _PROVISIONS for name in p.names]


class suspended:  # noqa: N801 (used as a function: ``with suspended(names):``)
    """Within the block, the providers of ``names`` answer nothing (to import a real module of that name)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)

    def __enter__(self) -> None:
        with _LOCK:
            for name in self.names:
                _SUSPENDED[name] = _SUSPENDED.get(name, 0) + 1

    def __exit__(self, *exc: object) -> None:
        with _LOCK:
            for name in self.names:
                left = _SUSPENDED.get(name, 1) - 1
                if left:
                    _SUSPENDED[name] = left
                else:
                    _SUSPENDED.pop(name, None)
