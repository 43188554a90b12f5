"""One requirement judged against the dependency table (PEP 508 text, conda match specs and URLs alike), and
requirements files (``requirements*.txt``, ``constraints*.txt``, ``*.in``) line by line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

from ascend_compat.migrate.deps_table import lookup, normalize, status_code
from ascend_compat.migrate.model import Finding

try:  # packaging parses PEP 508 exactly; the small fallback below only needs names, extras and pins.
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised only where packaging is absent
    Requirement = None  # type: ignore[assignment,misc]

#: Distributions whose CUDA builds torch_npu cannot sit on (torch pins them in lockstep).
_TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
_CUDA_LOCAL = re.compile(r"(?:\+|%2[Bb])cu\d+")
#: PyTorch's per-CUDA-version wheel indexes (download.pytorch.org/whl/cu121, .../whl/nightly/cu124, ...).
CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?cu\d+")
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_FALLBACK = re.compile(
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?\s*"
    r"(?:(?P<spec>\(?[<>=!~][^;@]*?)|@\s*(?P<url>\S+))?\s*(?:;.*)?$"
)
_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
_EDITABLE_OPTIONS = ("-e", "--editable")


@dataclass(frozen=True)
class Req:
    name: str
    extras: tuple[str, ...]
    specifier: str
    url: str


def parse_requirement(text: str) -> Optional[Req]:
    """Name, extras, version specifier and URL of a PEP 508 requirement; None when it names no package."""
    text = text.strip()
    if Requirement is not None:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            pass
        else:
            return Req(req.name, tuple(sorted(req.extras)), str(req.specifier), req.url or "")
    # Fallback (no packaging, or a spec it rejects such as ``torch>=2.1+cu118``): strict enough that a line of prose
    # in a requirements directory is not taken for a package.
    m = _FALLBACK.match(text)
    if m is None:
        return None
    extras = tuple(sorted(e.strip().lower() for e in (m.group("extras") or "").split(",") if e.strip()))
    return Req(m.group("name"), extras, (m.group("spec") or "").strip().strip("()"), m.group("url") or "")


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+", 1)[0])[:4])


def _below_floor(specifier: str, floor: str) -> bool:
    """True when ``specifier`` admits no version at or above ``floor`` (the first release with NPU support)."""
    specifier = specifier.strip()
    if not specifier:
        return False
    if Requirement is not None:
        try:
            spec = SpecifierSet(specifier)
        except InvalidSpecifier:
            return False  # cannot tell; say nothing rather than guess
        floor_v = Version(floor)
        candidates = [floor_v, Version("999999")]
        for clause in spec:
            try:
                v = Version(clause.version.rstrip(".*"))
            except InvalidVersion:
                continue
            if v >= floor_v:
                candidates.append(v)
        return not any(spec.contains(c, prereleases=True) for c in candidates)
    # Without packaging only upper bounds are compared (numerically).
    low = _vtuple(floor)
    for part in specifier.split(","):
        m = re.match(r"\s*(==|<=|<)\s*([\w.*+!-]+)", part)
        if m and (_vtuple(m.group(2)) < low or (m.group(1) == "<" and _vtuple(m.group(2)) <= low)):
            return True
    return False


def finding(code: str, path: str, line: int, col: int, width: int, message: str, api: str,
             alternative: Optional[str] = None) -> Finding:
    return Finding(code, path, line, col, message, api=api, end_line=line, end_col=col + max(width, 1),
                   alternative=alternative or None, fixable=False)


def judge(req: Req, path: str, line: int, col: int, width: int, conda_build: str = "") -> Optional[Finding]:
    """The finding for one requirement, or None (unknown package, or fine on the NPU as written)."""
    info = lookup(req.name)
    name = normalize(req.name)
    family = info.label if info is not None and not info.name.endswith("*") else name
    pin = f"{req.specifier} {req.url} {conda_build}"
    if family in _TORCH_FAMILY and (_CUDA_LOCAL.search(pin) or CUDA_INDEX.search(req.url) or "cuda" in conda_build):
        return finding("AC705", path, line, col, width,
                        f"{name} pinned to a CUDA build ({' '.join(pin.split())})", name)
    if info is None:
        return None
    cuda_extras = sorted({normalize(e) for e in req.extras} & set(info.cuda_extras))
    if cuda_extras and info.extras_as:
        as_info = lookup(info.extras_as.rstrip("*")) or info
        code = status_code(as_info)
        if code:
            return finding(code, path, line, col, width,
                            f"{name}[{','.join(cuda_extras)}] installs CUDA builds: {as_info.note}", name,
                            as_info.alternative)
    if info.cuda_torch:
        return finding("AC705", path, line, col, width, f"{name}: {info.note}", name, info.alternative)
    code = status_code(info)
    if code:
        return finding(code, path, line, col, width, f"{name}: {info.note}", name, info.alternative)
    if info.status != "native_npu":
        return None
    problems = []
    if info.min_version and _below_floor(req.specifier, info.min_version):
        problems.append(f"`{req.specifier}` allows only releases older than {info.min_version}, the first that "
                        "supports the NPU")
    if info.npu_setup:
        problems.append(info.npu_setup)
    if not problems:
        return None
    return finding("AC704", path, line, col, width, f"{name}: {'; '.join(problems)}", name, info.alternative)


def _index_finding(url: str, option: str, path: str, line: int, col: int, width: int) -> Optional[Finding]:
    if not CUDA_INDEX.search(url):
        return None
    return finding("AC705", path, line, col, width, f"`{option}` selects PyTorch's CUDA wheels ({url})", option,
                    "PyTorch's CPU index (https://download.pytorch.org/whl/cpu) for torch, then torch_npu")


_WHEEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*)-(\d[^-/]*)(?:-[^-/]+){2,3}\.whl$")


def _url_requirement(url: str) -> Optional[Req]:
    """A requirement given as a bare URL or path: named by ``#egg=`` or by its wheel file name."""
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", url)
    if egg:
        return Req(egg.group(1), (), "", url)
    wheel = _WHEEL.search(url.split("#", 1)[0].split("?", 1)[0])
    if wheel:
        return Req(wheel.group(1), (), "", url)
    return None


def strip_comment(line: str) -> str:
    # pip: a comment starts at a `#` that begins the line or follows whitespace (URL fragments keep theirs).
    m = re.search(r"(^|\s)#", line)
    return line[: m.start()] if m else line


def requirement_line(text: str, path: str, line: int, col: int) -> Optional[Finding]:
    """One logical line of a requirements file (comment already removed); ``col`` is where ``text`` starts."""
    lead = len(text) - len(text.lstrip())
    body = text.strip()
    col += lead
    if not body:
        return None
    if body.startswith("-"):
        option, value = _split_option(body)
        if option in _INDEX_OPTIONS:
            return _index_finding(value, option, path, line, col, len(body))
        if option in _EDITABLE_OPTIONS:
            req = _url_requirement(value)
            return judge(req, path, line, col, len(body)) if req is not None else None
        return None  # -r/-c name other files (scanned on their own); other options select nothing
    # Per-requirement options (--hash, --config-settings) follow the requirement.
    body = re.split(r"\s--?[A-Za-z]", body, maxsplit=1)[0].strip()
    if "://" in body.split("@", 1)[0] or body.startswith((".", "/", "~")):
        req = _url_requirement(body)
    else:
        req = parse_requirement(body)
    if req is None:
        return None
    width = len(body.split(";", 1)[0].rstrip())
    return judge(req, path, line, col, width)


def _split_option(body: str) -> tuple[str, str]:
    """``--index-url=URL`` / ``--index-url URL`` / ``-iURL`` → (option, value)."""
    pattern = r"(--[A-Za-z-]+)\s*=?\s*(.*)$" if body.startswith("--") else r"(-[A-Za-z])\s*(.*)$"
    m = re.match(pattern, body)
    if m is None:
        return body, ""
    return m.group(1), m.group(2).strip().strip("'\"")


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each logical line: a trailing backslash joins the next line."""
    pending: list[str] = []
    start = 0
    for i, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = i
        if raw.endswith("\\") and strip_comment(raw) == raw:  # a comment never continues
            pending.append(raw[:-1])
            continue
        pending.append(raw)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def scan_requirements(path: str, text: str) -> list[Finding]:
    out = []
    for line, logical in _logical_lines(text):
        f = requirement_line(strip_comment(logical), path, line, 1)
        if f is not None:
            out.append(f)
    return out


__all__ = ["CUDA_INDEX", "NAME", "Req", "finding", "judge", "parse_requirement", "requirement_line",
           "scan_requirements", "strip_comment"]
