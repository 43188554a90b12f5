"""Every environment variable the package honours: one typed accessor each, with its default and what it does.

``settings.SIMULATE.get()`` reads ``ASCEND_COMPAT_SIMULATE`` now (never cached: the runner and tests change the
environment at run time) and returns the parsed value, the default when the variable is unset or empty, or raises
:class:`SettingError` naming the variable and the values it accepts. ``get(environ)`` reads another mapping (a
child process's environment, a test's).

Two groups: the package's own ``ASCEND_COMPAT_*`` variables, and variables of other tools it also reads (``ours``
False: NO_COLOR, LOCAL_WORLD_SIZE, the Hugging Face cache, ...); those are returned as the tools define them. The
README's table of variables is :func:`markdown_table` (a test keeps the two identical). The doctor is not listed:
it *diagnoses* the user's environment (ASCEND_RT_VISIBLE_DEVICES, HCCL_CONNECT_TIMEOUT, ...) through its probe.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from ascend_compat._value import FieldValue

T = TypeVar("T")

if TYPE_CHECKING:
    from typing import Generic as _Generic
else:

    class _Generic:
        """At run time ``Setting[int]`` is ``Setting``: a ``typing.Generic`` base costs ~0.15 ms at import, and
        ``activate()`` imports this module."""

        __slots__ = ()

        def __class_getitem__(cls, item):
            return cls

__all__ = ["ALL", "Setting", "SettingError", "by_variable", "cache_root", "markdown_table"]


class SettingError(ValueError):
    """An environment variable has a value the package cannot use (the message names it and what it accepts)."""


class Setting(FieldValue, _Generic[T]):
    """One environment variable: its name, default (when unset or empty), the values it takes, and what it does.

    Immutable, compared and printed as the frozen dataclass it was; a plain class because building a dataclass
    costs about a millisecond at import, and ``activate()`` reads settings (see :mod:`ascend_compat._value`).
    """

    _FIELDS = ("name", "default", "values", "doc", "parse", "ours")
    __slots__ = _FIELDS
    name: str
    default: T
    values: str
    doc: str
    parse: Callable[[str], T]
    ours: bool

    def __init__(self, name: str, default: T, values: str, doc: str, parse: Callable[[str], T],
                 ours: bool = True) -> None:  # fmt: skip
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "default", default)
        set_(self, "values", values)
        set_(self, "doc", doc)
        set_(self, "parse", parse)
        set_(self, "ours", ours)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __hash__(self) -> int:
        return hash(self.name)

    def raw(self, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
        """The variable's text, or None when it is unset."""
        return (os.environ if environ is None else environ).get(self.name)

    def is_set(self, environ: Optional[Mapping[str, str]] = None) -> bool:
        """Whether the variable is set to something other than blanks."""
        return bool((self.raw(environ) or "").strip())

    def get(self, environ: Optional[Mapping[str, str]] = None) -> T:
        """The parsed value (the default when unset or blank); :class:`SettingError` on a value it cannot use."""
        text = self.raw(environ)
        if text is None or not text.strip():
            return self.default
        try:
            return self.parse(text.strip())
        except ValueError as exc:
            raise SettingError(f"{self.name}={text!r}: {exc} (expected {self.values})") from None


# -- parsers (raise ValueError with a short reason) -------------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _flag(text: str) -> bool:
    low = text.lower()
    if low in _TRUE or low in _FALSE:
        return low in _TRUE
    raise ValueError("not a yes/no value")


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.lower()
        if low not in allowed:
            raise ValueError("not one of the accepted values")
        return low

    return parse


def _text(text: str) -> str:
    return text


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError("not a whole number of at least 1")
    return int(text)


def _capability(text: str) -> tuple[int, int]:
    major, dot, minor = text.partition(".")
    if not (major.isdigit() and dot and minor.isdigit()):
        raise ValueError("not MAJOR.MINOR")
    return int(major), int(minor)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(text: str) -> int:
    low = text.lower().removesuffix("ib").removesuffix("b").strip()
    scale = _UNITS.get(low[-1:], 1)
    number = low[:-1] if low[-1:] in _UNITS else low
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise ValueError("not a size") from None
    if value <= 0:
        raise ValueError("not a positive size")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise ValueError("not a positive number of seconds")
    return value


def _level(text: str) -> str:
    up = text.upper()
    if up not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ValueError("not a logging level")
    return up


# -- the package's own variables --------------------------------------------------------------------------------------

AUTO_ACTIVATE = Setting("ASCEND_COMPAT_AUTO_ACTIVATE", False, "1/0, true/false, yes/no, on/off",
                        "Activate the shim as soon as torch is imported (`ascend-compat run` sets it).", _flag)
NO_PATCH = Setting("ASCEND_COMPAT_NO_PATCH", False, "1/0, true/false, yes/no, on/off",
                   "Activation does nothing: no patch is applied and every status says why.", _flag)
BACKEND: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_BACKEND", None, "a backend name (`npu`, `cpu`, ...)",
    "Target this backend instead of the first available one.", _text)
CUDA_AVAILABLE = Setting("ASCEND_COMPAT_CUDA_AVAILABLE", "auto", "`auto`, `true`, `false`",
                         "What `torch.cuda.is_available()` answers under the shim.", _choice("auto", "true", "false"))
CUDA_CAPABILITY = Setting("ASCEND_COMPAT_CUDA_CAPABILITY", (8, 0), "MAJOR.MINOR, e.g. `8.0`",
                          "What `torch.cuda.get_device_capability()` answers.", _capability)
LOG_LEVEL: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_LOG_LEVEL", None, "`DEBUG`, `INFO`, `WARNING`, `ERROR`, `CRITICAL`",
    "Log level of the shim; `DEBUG` logs every CUDA-to-device translation.", _level)
DTYPE_POLICY: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_DTYPE_POLICY", None, "`keep`, `warn`, `substitute`",
    "What to do with dtypes the device lacks (default: keep).", _choice("keep", "warn", "substitute"))
COMPILE_BACKEND: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_COMPILE_BACKEND", None, "a registered torch.compile backend",
    "The torch.compile backend `get_compile_backend()` returns.", _text)
FLASH_ATTN = Setting("ASCEND_COMPAT_FLASH_ATTN", True, "1/0, true/false, yes/no, on/off",
                     "Provide the `flash_attn` drop-in on the NPU (0 turns it off).", _flag)
FALLBACK_TIMING: Setting[Optional[bool]] = Setting(
    "ASCEND_COMPAT_FALLBACK_TIMING", None, "1/0, true/false, yes/no, on/off",
    "Time CPU fallbacks in the fallback monitor (default: only on the simulator with unsupported ops).", _flag)
CACHE_DIR: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_CACHE_DIR", None, "a directory",
    "Where build and entry-point caches go (default `$XDG_CACHE_HOME/ascend_compat`).", _text)
SIMULATE: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_SIMULATE", None, "`npu`", "Run on the simulated NPU.", _choice("npu"))
SIM_DEVICES: Setting[Optional[int]] = Setting(
    "ASCEND_COMPAT_SIM_DEVICES", None, "a whole number >= 1",
    "Simulated device count (default: `LOCAL_WORLD_SIZE`, or the deepspeed launcher's `LOCAL_SIZE`, else 1).",
    _count)
SIM_CHIP = Setting("ASCEND_COMPAT_SIM_CHIP", "910B", "a chip of `simulate/chips.json` (`910B`, `910B4`, `310P`)",
                   "The simulated chip's profile.", _text)
SIM_FLOAT64 = Setting("ASCEND_COMPAT_SIM_FLOAT64", "allow", "`allow`, `warn`, `error`",
                      "What the simulator does with float64 computation on the npu.", _choice("allow", "warn", "error"))
SIM_UNSUPPORTED_OPS: Setting[tuple[str, ...]] = Setting(
    "ASCEND_COMPAT_SIM_UNSUPPORTED_OPS", (), "comma-separated op names (`aten::nonzero,...`)",
    "Ops the simulator runs through the CPU fallback, with torch_npu's warning.", _names)
SIM_MEMORY_LIMIT: Setting[Optional[int]] = Setting(
    "ASCEND_COMPAT_SIM_MEMORY_LIMIT", None, "bytes, or a size such as `2GiB`, `512M`",
    "Simulated device memory; past it allocations raise `torch.OutOfMemoryError`.", _bytes)
CUPY_FLOAT64: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_CUPY_FLOAT64", None, "`native`, `error`, `downcast-warn`",
    "What `ascend_compat.cupy` does with float64 arrays on a device without full float64 (default: by chip).",
    _choice("native", "error", "downcast-warn"))
SCAN_FILE_BYTES = Setting(
    "ASCEND_COMPAT_SCAN_FILE_BYTES", 2 * 1024 * 1024, "bytes, or a size such as `4MiB`",
    "Largest Python or C/C++ file `check`, `report` and `port` analyse; a larger one is skipped with a reason.",
    _bytes)
SCAN_FILE_MEMORY = Setting(
    "ASCEND_COMPAT_SCAN_FILE_MEMORY", 256 * 1024 * 1024, "bytes, or a size such as `1GiB`",
    "Memory one Python file's analysis may be predicted to need; past it the file is skipped with a reason.", _bytes)
SCAN_FILE_SECONDS = Setting(
    "ASCEND_COMPAT_SCAN_FILE_SECONDS", 20.0, "seconds (CPU time), e.g. `60`",
    "Time one file's analysis may take; past it the file is skipped with a reason.", _seconds)
REPORT_TEST_LOG: Setting[Optional[str]] = Setting(
    "ASCEND_COMPAT_TEST_LOG", None, "a file path (set by `report --verify` for the test run it starts)",
    "Where the pytest plugin of `report --verify` appends each test's outcome as it finishes; not for users to set.",
    str)

# -- other tools' variables the package reads --------------------------------------------------------------------------

NO_COLOR: Setting[Optional[str]] = Setting(
    "NO_COLOR", None, "anything (https://no-color.org)", "Set to a non-empty value: the CLI prints no ANSI colour.",
    _text, ours=False)
LOCAL_WORLD_SIZE: Setting[Optional[int]] = Setting(
    "LOCAL_WORLD_SIZE", None, "a whole number >= 1 (set by torchrun)",
    "Processes on this node: the CPU backend's and the simulator's device count.", _count, ours=False)
LOCAL_SIZE: Setting[Optional[int]] = Setting(
    "LOCAL_SIZE", None, "a whole number >= 1 (set by the deepspeed launcher)",
    "Processes on this node under the deepspeed launcher, read when `LOCAL_WORLD_SIZE` is unset.", _count,
    ours=False)
CUDA_VISIBLE_DEVICES: Setting[Optional[str]] = Setting(
    "CUDA_VISIBLE_DEVICES", None, "comma-separated device ids",
    "Copied to the backend's own variable (`ASCEND_RT_VISIBLE_DEVICES`) when that is unset.", _text, ours=False)
XDG_CACHE_HOME: Setting[Optional[str]] = Setting(
    "XDG_CACHE_HOME", None, "a directory", "Base of the caches (default `~/.cache`).", _text, ours=False)
HF_HUB_CACHE: Setting[Optional[str]] = Setting(
    "HF_HUB_CACHE", None, "a directory", "Hugging Face hub cache `vllm check` reads, as huggingface_hub does.", _text,
    ours=False)
HUGGINGFACE_HUB_CACHE: Setting[Optional[str]] = Setting(
    "HUGGINGFACE_HUB_CACHE", None, "a directory", "Older name of `HF_HUB_CACHE`.", _text, ours=False)
HF_HOME: Setting[Optional[str]] = Setting(
    "HF_HOME", None, "a directory", "Hugging Face home; the hub cache is `$HF_HOME/hub` when neither above is set.",
    _text, ours=False)
HF_HUB_OFFLINE: Setting[Optional[str]] = Setting(
    "HF_HUB_OFFLINE", None, "1/true/yes", "`vllm check` looks at the local cache only.", _text, ours=False)
TRANSFORMERS_OFFLINE: Setting[Optional[str]] = Setting(
    "TRANSFORMERS_OFFLINE", None, "1/true/yes", "Same as `HF_HUB_OFFLINE`.", _text, ours=False)
ASCEND_HOME_PATH: Setting[Optional[str]] = Setting(
    "ASCEND_HOME_PATH", None, "the CANN toolkit directory (set by CANN's set_env.sh)",
    "Where the CANN toolkit is, for the DeepSpeed patch and the Triton report.", _text, ours=False)
ASCEND_TOOLKIT_HOME: Setting[Optional[str]] = Setting(
    "ASCEND_TOOLKIT_HOME", None, "the CANN toolkit directory (set by CANN's set_env.sh)",
    "Also a sign of an NPU machine for the Triton report.", _text, ours=False)
CXX: Setting[Optional[str]] = Setting(
    "CXX", None, "a C++ compiler command", "Compiler for the simulator's extension and compile helpers.", _text,
    ours=False)
CUPY_SEED: Setting[Optional[int]] = Setting(
    "CUPY_SEED", None, "a whole number", "Seed of `ascend_compat.cupy.random`'s global RandomState, as in CuPy.",
    int, ours=False)
VLLM_PLUGINS: Setting[Optional[str]] = Setting(
    "VLLM_PLUGINS", None, "comma-separated plugin names",
    "vLLM's plugin allow-list; `vllm check` reports when it leaves out `ascend`.", _text, ours=False)


def local_processes() -> Optional[int]:
    """The processes on this node a launcher started: torchrun's ``LOCAL_WORLD_SIZE``, else the deepspeed
    launcher's ``LOCAL_SIZE``; None outside a launcher."""
    return LOCAL_WORLD_SIZE.get() or LOCAL_SIZE.get()

#: Every variable, the package's own first (the README's order).
ALL: tuple[Setting[Any], ...] = (
    AUTO_ACTIVATE, NO_PATCH, BACKEND, CUDA_AVAILABLE, CUDA_CAPABILITY, LOG_LEVEL, DTYPE_POLICY, COMPILE_BACKEND,
    FLASH_ATTN, FALLBACK_TIMING, CACHE_DIR, SIMULATE, SIM_DEVICES, SIM_CHIP, SIM_FLOAT64, SIM_UNSUPPORTED_OPS,
    SIM_MEMORY_LIMIT, CUPY_FLOAT64, SCAN_FILE_BYTES, SCAN_FILE_MEMORY, SCAN_FILE_SECONDS,
    REPORT_TEST_LOG,
    NO_COLOR, LOCAL_WORLD_SIZE, LOCAL_SIZE, CUDA_VISIBLE_DEVICES, XDG_CACHE_HOME, HF_HUB_CACHE,
    HUGGINGFACE_HUB_CACHE, HF_HOME, HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, CXX,
    CUPY_SEED, VLLM_PLUGINS,
)

_BY_VARIABLE = {s.name: s for s in ALL}


def by_variable(variable: str) -> Setting[Any]:
    """The setting read from the environment variable ``variable`` (KeyError: the package does not read it)."""
    return _BY_VARIABLE[variable]


def cache_root() -> str:
    """The directory of ascend-compat's caches: ``$ASCEND_COMPAT_CACHE_DIR``, else ``$XDG_CACHE_HOME/ascend_compat``
    (``~/.cache/ascend_compat``)."""
    from ascend_compat import _cache_root  # the one rule (activation reads it without importing this module)

    return _cache_root()


def _shown(value: Any) -> str:
    if value is None or value == ():
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ".".join(str(v) for v in value)
    return str(value)


def markdown_table() -> str:
    """The README's table of every variable: name, values, default, what it does."""
    lines = ["| Variable | Values | Default | What it does |", "|---|---|---|---|"]
    for s in ALL:
        doc = s.doc if s.ours else f"(read, not ours) {s.doc}"
        lines.append(f"| `{s.name}` | {s.values} | {_shown(s.default)} | {doc} |")
    return "\n".join(lines)
