"""Version strings and version files of the Ascend stack: parse exactly, compare correctly.

Three version schemes meet on an Ascend machine:

* CANN and the NPU driver/firmware: ``8.0.RC1 < 8.0.RC2 < 8.0.0 < 8.1.RC1``; test builds ``8.0.T5`` come before the
  release candidates, ``.alphaNNN`` / ``.betaN`` / ``.bNNN`` builds before what they lead to, and a trailing number is
  a patch after it (``6.3.RC3.1``, ``24.1.rc2.2``, firmware ``7.7.0.1.231``). Case does not matter (the driver
  writes ``rc``, CANN writes ``RC``).
* Python packages (torch, torch_npu): PEP 440 (``2.7.1.post8``, ``2.1.0.rc1``, ``2.13.0+cpu``).
* CANN's info files: ``key=value`` lines (``version.info``, ``ascend_toolkit_install.info``) and, for NNAL,
  ``key : value`` lines.

Versions compare equal only when they are equal: ``8.0`` is not ``8.0.RC1`` and ``2.1`` is not ``2.1.0``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

__all__ = [
    "CannVersion",
    "PyVersion",
    "compatible_range",
    "info_get",
    "parse_info",
    "read_info",
]

_PRE_STAGE = {"alpha": 0, "beta": 1, "b": 1}
#: Ordering of the third component: test build < release candidate < release.
_STAGE_T, _STAGE_RC, _STAGE_RELEASE = 0, 1, 2
_FINAL = 9  # sorts after every pre-release stage


def _or_none(parse: Callable[[str], T], text: Optional[str]) -> Optional[T]:
    """``parse(text)``, or None for an empty text or one that does not parse."""
    if not text:
        return None
    try:
        return parse(text)
    except ValueError:
        return None


@dataclass(frozen=True, order=False)
class CannVersion:
    """A CANN / driver / firmware version such as ``8.0.RC2``, ``8.5.0``, ``24.1.rc2.2`` or ``7.7.0.1.231``."""

    text: str
    key: tuple

    @classmethod
    def parse(cls, text: str) -> CannVersion:
        """Parse ``text``; ValueError with the reason when it is not a CANN-style version."""
        raw = text.strip()
        tokens = re.split(r"[.\-]", raw)
        if len(tokens) < 3 or not all(tokens):
            raise ValueError(f"not a CANN version (need MAJOR.MINOR.X): {text!r}")
        if not (tokens[0].isdigit() and tokens[1].isdigit()):
            raise ValueError(f"not a CANN version (major and minor must be numbers): {text!r}")
        third = tokens[2].lower()
        if third.isdigit():
            stage, number = _STAGE_RELEASE, int(third)
        elif re.fullmatch(r"rc\d+", third):
            stage, number = _STAGE_RC, int(third[2:])
        elif re.fullmatch(r"t\d+", third):
            stage, number = _STAGE_T, int(third[1:])
        else:
            raise ValueError(f"not a CANN version (third part must be N, RCn or Tn): {text!r}")
        pre: tuple[int, int] = (_FINAL, 0)
        extra: list[int] = []
        for i, tok in enumerate(tokens[3:]):
            low = tok.lower()
            m = re.fullmatch(r"(alpha|beta|b)(\d+)", low)
            if m and i == len(tokens) - 4 and not extra:
                pre = (_PRE_STAGE[m.group(1)], int(m.group(2)))
            elif low.isdigit():
                extra.append(int(low))
            else:
                raise ValueError(f"not a CANN version (unexpected part {tok!r}): {text!r}")
        key = (int(tokens[0]), int(tokens[1]), stage, number, pre, tuple(extra))
        return cls(raw, key)

    @classmethod
    def try_parse(cls, text: Optional[str]) -> Optional[CannVersion]:
        """Like :meth:`parse`, None instead of an error."""
        return _or_none(cls.parse, text)

    @property
    def series(self) -> tuple[int, int]:
        """``(major, minor)``: 8.0.RC2 and 8.0.0 are both series (8, 0)."""
        return self.key[0], self.key[1]

    @property
    def is_prerelease(self) -> bool:
        """Test builds, alpha/beta builds (release candidates are public releases, not pre-releases here)."""
        return self.key[2] == _STAGE_T or self.key[4][0] != _FINAL

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CannVersion) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __lt__(self, other: CannVersion) -> bool:
        return self.key < other.key

    def __le__(self, other: CannVersion) -> bool:
        return self.key <= other.key

    def __gt__(self, other: CannVersion) -> bool:
        return self.key > other.key

    def __ge__(self, other: CannVersion) -> bool:
        return self.key >= other.key

    def __str__(self) -> str:
        return self.text


_PEP440 = re.compile(
    r"v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|alpha|b|beta|rc|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?(?:post|rev|r)[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


@dataclass(frozen=True, order=False)
class PyVersion:
    """A PEP 440 version of a Python package (enough of it for torch and torch_npu)."""

    text: str
    release: tuple[int, ...]
    key: tuple
    local: str

    @classmethod
    def parse(cls, text: str) -> PyVersion:
        raw = text.strip()
        m = _PEP440.fullmatch(raw)
        if not m:
            raise ValueError(f"not a PEP 440 version: {text!r}")
        release = tuple(int(p) for p in m.group("release").split("."))
        # Trailing zeros do not change a PEP 440 version (2.1 == 2.1.0) but we keep them out of the key only.
        norm = list(release)
        while len(norm) > 1 and norm[-1] == 0:
            norm.pop()
        pre = m.group("pre")
        pre_key = (_PRE_RANK[pre.lower()], int(m.group("pre_n") or 0)) if pre else (_FINAL, 0)
        post = m.group("post")
        post_key = int(post or 0) if post is not None else -1
        dev = m.group("dev")
        dev_key = int(dev or 0) if dev is not None else 1 << 30
        if dev is not None and pre is None and post is None:
            pre_key = (-1, 0)  # 2.1.0.dev1 comes before 2.1.0a1
        key = (tuple(norm), pre_key, post_key, dev_key)
        return cls(raw, release, key, (m.group("local") or "").lower())

    @classmethod
    def try_parse(cls, text: Optional[str]) -> Optional[PyVersion]:
        """Like :meth:`parse`, None instead of an error."""
        return _or_none(cls.parse, text)

    @property
    def public(self) -> str:
        """The version without its local part: ``2.13.0+cpu`` -> ``2.13.0``."""
        return self.text.split("+", 1)[0]

    @property
    def base(self) -> str:
        """The release number only: ``2.7.1.post8`` -> ``2.7.1``."""
        return ".".join(str(p) for p in self.release)

    @property
    def cuda_build(self) -> Optional[str]:
        """``cu121`` for ``2.3.1+cu121``; ``rocm6.0`` for ROCm builds; None otherwise."""
        local = self.local
        if re.fullmatch(r"cu\d+", local) or local.startswith("rocm"):
            return local
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PyVersion) and (self.key, self.local) == (other.key, other.local)

    def __hash__(self) -> int:
        return hash((self.key, self.local))

    def __lt__(self, other: PyVersion) -> bool:
        return (self.key, self.local) < (other.key, other.local)

    def __le__(self, other: PyVersion) -> bool:
        return (self.key, self.local) <= (other.key, other.local)

    def __gt__(self, other: PyVersion) -> bool:
        return (self.key, self.local) > (other.key, other.local)

    def __ge__(self, other: PyVersion) -> bool:
        return (self.key, self.local) >= (other.key, other.local)

    def __str__(self) -> str:
        return self.text


def parse_info(text: str) -> dict[str, str]:
    """The ``key=value`` (or NNAL's ``key : value``) lines of a CANN info file, in file order.

    Blank lines, ``#`` comments and lines without a separator are ignored; the first occurrence of a key wins (CANN
    files do not repeat keys; a hand-edited one that does is read as the installer wrote it). Keys keep their case:
    the driver writes ``Version=`` and ``Innerversion=``, the toolkit ``version=`` and ``innerversion=``.
    """
    out: dict[str, str] = {}
    for line in text.removeprefix("\ufeff").splitlines():  # a BOM from an editor must not hide the first key
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        eq, colon = line.find("="), line.find(":")
        if eq > 0 and (colon < 0 or eq < colon):
            key, value = line[:eq], line[eq + 1 :]
        elif colon > 0:
            key, value = line[:colon], line[colon + 1 :]
        else:
            continue
        key = key.strip()
        if key and key not in out:
            out[key] = value.strip()
    return out


def read_info(path: Path) -> Optional[dict[str, str]]:
    """:func:`parse_info` of the file at ``path`` (UTF-8, with or without a BOM); None when missing or unreadable."""
    try:
        return parse_info(Path(path).read_text(encoding="utf-8-sig", errors="replace"))
    except OSError:
        return None


def info_get(info: Optional[dict[str, str]], *keys: str) -> Optional[str]:
    """The first non-empty value among ``keys``, matched case-insensitively and in full (never by prefix)."""
    if not info:
        return None
    lowered = {k.lower(): v for k, v in info.items()}
    for key in keys:
        value = lowered.get(key.lower())
        if value:
            return value
    return None


def compatible_range(spec: Optional[str]) -> list[tuple[str, str]]:
    """Bracketed lists as in ``compatible_version_fw=[7.0.0,7.2.99]`` -> ``[("7.0.0", "7.2.99")]``.

    A bracket with one item (``[V100R001C15]``) gives ``(item, item)``.
    """
    if not spec:
        return []
    out = []
    for group in re.findall(r"\[([^\]]*)\]", spec):
        items = [s.strip() for s in group.split(",") if s.strip()]
        if len(items) == 1:
            out.append((items[0], items[0]))
        elif len(items) == 2:
            out.append((items[0], items[1]))
    return out
