"""Dependencies and their status on Ascend: requirements files, ``pyproject.toml``, ``setup.cfg``, ``Pipfile``,
conda environments, ``setup.py`` and imports, each known package mapped to what to do about it on the NPU.

Data: ``data/dependencies.json`` (one entry per package, with the public place each fact comes from). Rules AC7xx;
none is fixable (``port`` does not rewrite manifests). Every finding points at the requirement's first character.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Optional

from ascend_compat.migrate import flashattn
from ascend_compat.migrate.model import FileFailed, FileResult, FileScanned, FileSkipped, Finding, Rule, register_rules

try:  # packaging parses PEP 508 exactly; the small fallback below only needs names, extras and pins.
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised only where packaging is absent
    Requirement = None  # type: ignore[assignment,misc]

STATUSES = ("works", "native_npu", "alternative", "shim", "unsupported")

_R = Rule
DEP_RULES = (
    _R("AC701", "dependency-cuda-only", "dependency", "error", "CUDA-only dependency with no Ascend counterpart",
       "rewrite the code that uses it (see the finding's alternative)", False, False, "hard", 3.0, "deps"),
    _R("AC702", "dependency-alternative", "dependency", "warning", "dependency with an Ascend replacement",
       "switch to the replacement the finding names", False, False, "medium", 1.0, "deps"),
    _R("AC703", "dependency-shim", "dependency", "note", "dependency covered by ascend-compat's drop-in",
       "keep the code; ascend-compat provides the module on the NPU", True, False, "easy", 0.1, "deps"),
    _R("AC704", "dependency-npu-version", "dependency", "warning",
       "dependency needs an NPU-capable version, an NPU build or a companion package",
       "install the version/build the finding names", False, False, "easy", 0.5, "deps"),
    _R("AC705", "torch-cuda-build", "dependency", "warning",
       "PyTorch pinned to a CUDA build (torch_npu needs the CPU build of the exact torch version it pins)",
       "the CPU build of the torch version your torch_npu release pins (x86: `+cpu` from the CPU index), "
       "plus torch_npu", False, False, "trivial", 0.1, "deps"),
    _R("AC706", "cuda-runtime-package", "dependency", "warning", "NVIDIA CUDA runtime or library package",
       "remove it: the CANN toolkit on the host is the NPU runtime", False, False, "trivial", 0.05, "deps"),
)
register_rules(*DEP_RULES)

_STATUS_CODE = {"unsupported": "AC701", "alternative": "AC702", "shim": "AC703"}
#: Distributions whose CUDA builds torch_npu cannot sit on (torch pins them in lockstep).
_TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
_CUDA_LOCAL = re.compile(r"(?:\+|%2[Bb])cu\d+")
#: PyTorch's per-CUDA-version wheel indexes (download.pytorch.org/whl/cu121, .../whl/nightly/cu124, ...).
_CUDA_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?cu\d+")
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_FALLBACK = re.compile(
    r"(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[(?P<extras>[^\]]*)\])?\s*"
    r"(?:(?P<spec>\(?[<>=!~][^;@]*?)|@\s*(?P<url>\S+))?\s*(?:;.*)?$"
)
_INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links")
_EDITABLE_OPTIONS = ("-e", "--editable")


# -- data -------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DepInfo:
    """One package (or family of CUDA wheels) and what to do about it on Ascend."""

    name: str  # PEP 503 normalized, or "prefix*" for a family matched by prefixes
    imports: tuple[str, ...]
    status: str  # one of STATUSES
    alternative: str
    difficulty: str
    effort_days: float
    note: str
    source: str
    aliases: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    min_version: str = ""  # first release that supports the NPU (native_npu)
    npu_setup: str = ""  # the NPU-specific build or companion package it needs (native_npu)
    cuda_runtime: bool = False
    cuda_torch: bool = False
    cuda_extras: tuple[str, ...] = ()
    extras_as: str = ""  # the entry that describes this package installed with one of cuda_extras
    npu_package: str = ""  # the pip requirement that replaces it on the NPU (requirements-npu.txt)

    @property
    def label(self) -> str:
        return self.name.rstrip("*")


@dataclass(frozen=True)
class _Table:
    entries: tuple[DepInfo, ...]
    by_name: dict[str, DepInfo]
    by_import: dict[str, DepInfo]
    prefixes: tuple[tuple[str, DepInfo], ...]  # longest first


_TUPLE_FIELDS = ("imports", "aliases", "prefixes", "cuda_extras")


@lru_cache(maxsize=1)
def _table() -> _Table:
    text = (resources.files("ascend_compat.migrate") / "data" / "dependencies.json").read_text("utf-8")
    entries = []
    for raw in json.loads(text)["packages"]:
        fields = {k: tuple(v) if k in _TUPLE_FIELDS else v for k, v in raw.items()}
        fields["effort_days"] = float(fields["effort_days"])
        entries.append(DepInfo(**fields))
    by_name: dict[str, DepInfo] = {}
    by_import: dict[str, DepInfo] = {}
    prefixes: list[tuple[str, DepInfo]] = []
    for info in entries:
        for n in (info.name, *info.aliases):
            if not n.endswith("*"):
                by_name[n] = info
        by_import.update(dict.fromkeys(info.imports, info))
        prefixes.extend((p, info) for p in info.prefixes)
    prefixes.sort(key=lambda p: -len(p[0]))
    return _Table(tuple(entries), by_name, by_import, tuple(prefixes))


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name (``Flash_Attn`` → ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def all_dependencies() -> tuple[DepInfo, ...]:
    """Every entry of the data file, in its order."""
    return _table().entries


def lookup(name: str) -> Optional[DepInfo]:
    """The entry of a distribution name: exact name or alias first, then the longest matching family prefix."""
    table = _table()
    norm = normalize(name)
    info = table.by_name.get(norm)
    if info is not None:
        return info
    for prefix, pinfo in table.prefixes:
        if norm.startswith(prefix):
            return pinfo
    return None


def lookup_import(module: str) -> Optional[DepInfo]:
    """The entry of an imported module: its longest dotted prefix that an entry lists (``nvidia.dali.fn`` →
    nvidia-dali, ``numba.cuda`` → numba-cuda, ``flash_attn.bert_padding`` → flash-attn)."""
    by_import = _table().by_import
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        info = by_import.get(".".join(parts[:i]))
        if info is not None:
            return info
    return None


def import_finding(path: str, module: str, line: int, col: int) -> Optional[Finding]:
    """The finding for an import of ``module`` (dotted or top-level; 1-based position), or None when the package is
    fine on the NPU. ``api`` is the entry's name, so a caller can keep one finding per package per file."""
    info = lookup_import(module)
    if info is None:
        return None
    if info.status == "shim" and flashattn.is_flash_attn(module) and module not in flashattn.drop_in_modules():
        return Finding("AC702", path, line, col, f"`import {module}` ({info.name}): ascend-compat's drop-in has no "
                       f"`{module}`", api=info.name, alternative=flashattn.UNCOVERED_ALTERNATIVE, fixable=False)
    if info.cuda_runtime:
        code = "AC706"
    else:
        code = _STATUS_CODE.get(info.status, "")
    if not code:
        return None  # works / native_npu: the manifest, not each import, says which version is needed
    return Finding(code, path, line, col, f"`import {module}` ({info.name}): {info.note}", api=info.name,
                   alternative=info.alternative or None, fixable=False)


# -- requirements -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Req:
    name: str
    extras: tuple[str, ...]
    specifier: str
    url: str


def _parse_requirement(text: str) -> Optional[_Req]:
    """Name, extras, version specifier and URL of a PEP 508 requirement; None when it names no package."""
    text = text.strip()
    if Requirement is not None:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            pass
        else:
            return _Req(req.name, tuple(sorted(req.extras)), str(req.specifier), req.url or "")
    # Fallback (no packaging, or a spec it rejects such as ``torch>=2.1+cu118``): strict enough that a line of prose
    # in a requirements directory is not taken for a package.
    m = _FALLBACK.match(text)
    if m is None:
        return None
    extras = tuple(sorted(e.strip().lower() for e in (m.group("extras") or "").split(",") if e.strip()))
    return _Req(m.group("name"), extras, (m.group("spec") or "").strip().strip("()"), m.group("url") or "")


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
    for clause in specifier.split(","):
        m = re.match(r"\s*(==|<=|<)\s*([\w.*+!-]+)", clause)
        if m and (_vtuple(m.group(2)) < low or (m.group(1) == "<" and _vtuple(m.group(2)) <= low)):
            return True
    return False


def _finding(code: str, path: str, line: int, col: int, width: int, message: str, api: str,
             alternative: Optional[str] = None) -> Finding:
    return Finding(code, path, line, col, message, api=api, end_line=line, end_col=col + max(width, 1),
                   alternative=alternative or None, fixable=False)


def _judge(req: _Req, path: str, line: int, col: int, width: int, conda_build: str = "") -> Optional[Finding]:
    """The finding for one requirement, or None (unknown package, or fine on the NPU as written)."""
    info = lookup(req.name)
    name = normalize(req.name)
    family = info.label if info is not None and not info.name.endswith("*") else name
    pin = f"{req.specifier} {req.url} {conda_build}"
    if family in _TORCH_FAMILY and (_CUDA_LOCAL.search(pin) or _CUDA_INDEX.search(req.url) or "cuda" in conda_build):
        return _finding("AC705", path, line, col, width,
                        f"{name} pinned to a CUDA build ({' '.join(pin.split())})", name)
    if info is None:
        return None
    cuda_extras = sorted({normalize(e) for e in req.extras} & set(info.cuda_extras))
    if cuda_extras and info.extras_as:
        as_info = lookup(info.extras_as.rstrip("*")) or info
        code = _code(as_info)
        if code:
            return _finding(code, path, line, col, width,
                            f"{name}[{','.join(cuda_extras)}] installs CUDA builds: {as_info.note}", name,
                            as_info.alternative)
    if info.cuda_torch:
        return _finding("AC705", path, line, col, width, f"{name}: {info.note}", name, info.alternative)
    code = _code(info)
    if code:
        return _finding(code, path, line, col, width, f"{name}: {info.note}", name, info.alternative)
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
    return _finding("AC704", path, line, col, width, f"{name}: {'; '.join(problems)}", name, info.alternative)


def _code(info: DepInfo) -> str:
    if info.cuda_runtime:
        return "AC706"
    return _STATUS_CODE.get(info.status, "")


def _index_finding(url: str, option: str, path: str, line: int, col: int, width: int) -> Optional[Finding]:
    if not _CUDA_INDEX.search(url):
        return None
    return _finding("AC705", path, line, col, width, f"`{option}` selects PyTorch's CUDA wheels ({url})", option,
                    "PyTorch's CPU index (https://download.pytorch.org/whl/cpu) for torch, then torch_npu")


_WHEEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9._]*)-(\d[^-/]*)(?:-[^-/]+){2,3}\.whl$")


def _url_requirement(url: str) -> Optional[_Req]:
    """A requirement given as a bare URL or path: named by ``#egg=`` or by its wheel file name."""
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", url)
    if egg:
        return _Req(egg.group(1), (), "", url)
    wheel = _WHEEL.search(url.split("#", 1)[0].split("?", 1)[0])
    if wheel:
        return _Req(wheel.group(1), (), "", url)
    return None


def _strip_comment(line: str) -> str:
    # pip: a comment starts at a `#` that begins the line or follows whitespace (URL fragments keep theirs).
    m = re.search(r"(^|\s)#", line)
    return line[: m.start()] if m else line


def _requirement_line(text: str, path: str, line: int, col: int) -> Optional[Finding]:
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
            return _judge(req, path, line, col, len(body)) if req is not None else None
        return None  # -r/-c name other files (scanned on their own); other options select nothing
    # Per-requirement options (--hash, --config-settings) follow the requirement.
    body = re.split(r"\s--?[A-Za-z]", body, maxsplit=1)[0].strip()
    if "://" in body.split("@", 1)[0] or body.startswith((".", "/", "~")):
        req = _url_requirement(body)
    else:
        req = _parse_requirement(body)
    if req is None:
        return None
    width = len(body.split(";", 1)[0].rstrip())
    return _judge(req, path, line, col, width)


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
        if raw.endswith("\\") and _strip_comment(raw) == raw:  # a comment never continues
            pending.append(raw[:-1])
            continue
        pending.append(raw)
        yield start, "".join(pending)
        pending = []
    if pending:
        yield start, "".join(pending)


def _scan_requirements(path: str, text: str) -> list[Finding]:
    out = []
    for line, logical in _logical_lines(text):
        f = _requirement_line(_strip_comment(logical), path, line, 1)
        if f is not None:
            out.append(f)
    return out


# -- pyproject.toml and Pipfile ---------------------------------------------------------------------------------------

def _toml_loader() -> Optional[Callable[[str], Any]]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return None
    return tomllib.loads


class _Locator:
    """Where strings and keys of a TOML file sit (1-based line and column), each occurrence handed out once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.used: set[int] = set()

    def position(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.starts, offset) - 1
        return row + 1, offset - self.starts[row] + 1

    def _commented(self, offset: int) -> bool:
        line_start = self.text.rfind("\n", 0, offset) + 1
        return self.text[line_start:offset].lstrip().startswith("#")

    def string(self, value: str) -> tuple[int, int]:
        """The first unused quoted occurrence of ``value`` outside comments ((1, 1) when not found)."""
        hits = []
        for quote in ('"', "'"):
            needle = f"{quote}{value}{quote}"
            i = self.text.find(needle)
            while i >= 0:
                if i + 1 not in self.used and not self._commented(i):
                    hits.append(i + 1)
                    break
                i = self.text.find(needle, i + 1)
        if not hits:  # written with escapes or as a multi-line string: settle for the bare text
            i = self.text.find(value)
            hits = [i] if i >= 0 else []
        if not hits:
            return 1, 1
        offset = min(hits)
        self.used.add(offset)
        return self.position(offset)

    def key(self, table: str, key: str) -> tuple[int, int]:
        """The ``key =`` line inside ``[table]`` (anywhere in the file when the table header is not written out)."""
        header = re.search(rf"^\s*\[\s*{re.escape(table)}\s*\]", self.text, re.M)
        start = header.end() if header else 0
        m = re.compile(rf"^[ \t]*[\"']?({re.escape(key)})[\"']?\s*=", re.M).search(self.text, start)
        if m is None:
            return (self.position(header.start()) if header else (1, 1))
        return self.position(m.start(1))


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _spec_finding(spec: str, path: str, loc: _Locator) -> Optional[Finding]:
    line, col = loc.string(spec)
    return _requirement_line(spec, path, line, col)


def _poetry_constraints(value: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    """(PEP 440 specifier, URL, extras) of a Poetry or Pipfile dependency value."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, str):
            item = {"version": item}
        if not isinstance(item, dict):
            continue
        version = str(item.get("version", "")).strip()
        if version in ("*", ""):
            version = ""
        elif version[0] in "^~" and version[1:2] != "=":
            version = ">=" + version[1:].strip()  # Poetry caret/tilde: the lower bound is what a floor check needs
        elif version[0].isdigit():
            version = "==" + version  # Poetry: a bare version is an exact pin
        url = str(item.get("url") or item.get("path") or item.get("file") or item.get("git") or "")
        extras = tuple(sorted(str(e).lower() for e in item.get("extras", []) if isinstance(e, str)))
        out.append((version, url, extras))
    return out


def _table_findings(path: str, loc: _Locator, table: str, deps: dict, skip: tuple[str, ...] = ()) -> list[Finding]:
    out = []
    for name, value in deps.items():
        if not isinstance(name, str) or name.lower() in skip:
            continue
        line, col = loc.key(table, name)
        for spec, url, extras in _poetry_constraints(value):
            f = _judge(_Req(name, extras, spec, url), path, line, col, len(name))
            if f is not None:
                out.append(f)
                break  # one finding per dependency, however many alternative constraints it lists
    return out


#: An index root of CUDA wheels written as a TOML value ([[tool.uv.index]], [[tool.poetry.source]], [[source]]).
_CUDA_INDEX_VALUE = re.compile(r"https?://" + _CUDA_INDEX.pattern + r"/?(?=[\"'])")


def _toml_index_findings(path: str, text: str) -> list[Finding]:
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("#"):
            continue
        m = _CUDA_INDEX_VALUE.search(raw)
        if m is not None:
            out.append(_finding("AC705", path, i, m.start() + 1, m.end() - m.start(),
                                f"package index of PyTorch's CUDA wheels ({m.group(0)})", "index-url",
                                "PyTorch's CPU index (https://download.pytorch.org/whl/cpu) for torch, then torch_npu"))
    return out


def _scan_pyproject(path: str, text: str, data: dict) -> list[Finding]:
    loc = _Locator(text)
    project = _dict(data.get("project"))
    tool = _dict(data.get("tool"))
    specs = _strings(_dict(data.get("build-system")).get("requires"))
    specs += _strings(project.get("dependencies"))
    for group in _dict(project.get("optional-dependencies")).values():
        specs += _strings(group)
    for group in _dict(data.get("dependency-groups")).values():  # PEP 735 (include-group tables are skipped)
        specs += _strings(group)
    specs += _strings(_dict(tool.get("uv")).get("dev-dependencies"))
    for group in _dict(_dict(tool.get("pdm")).get("dev-dependencies")).values():
        specs += _strings(group)
    out = [f for f in (_spec_finding(s, path, loc) for s in specs) if f is not None]
    poetry = _dict(tool.get("poetry"))
    tables = [("tool.poetry.dependencies", poetry.get("dependencies")),
              ("tool.poetry.dev-dependencies", poetry.get("dev-dependencies"))]
    for gname, group in _dict(poetry.get("group")).items():
        tables.append((f"tool.poetry.group.{gname}.dependencies", _dict(group).get("dependencies")))
    for table, deps in tables:
        out += _table_findings(path, loc, table, _dict(deps), skip=("python",))
    return out + _toml_index_findings(path, text)


def _scan_pipfile(path: str, text: str, data: dict) -> list[Finding]:
    loc = _Locator(text)
    out = []
    for table in ("packages", "dev-packages"):
        out += _table_findings(path, loc, table, _dict(data.get(table)))
    return out + _toml_index_findings(path, text)


# -- setup.cfg, conda environments, setup.py --------------------------------------------------------------------------

_CFG_KEYS = frozenset({"install_requires", "setup_requires", "tests_require"})


def _scan_setup_cfg(path: str, text: str) -> list[Finding]:
    """``[options] install_requires/setup_requires/tests_require`` and ``[options.extras_require]``, line by line
    (configparser loses line numbers)."""
    values: list[list[tuple[int, int, str]]] = []  # per wanted key: (line, column, text) of each value line
    section = ""
    wanted = False
    for i, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped[0] in "#;":
            continue  # configparser drops comment lines, inside multi-line values too
        if raw[0] in " \t":
            if wanted:
                values[-1].append((i, 1, raw))
            continue
        header = re.match(r"\[([^\]]+)\]", stripped)
        if header:
            section, wanted = header.group(1).strip().lower(), False
            continue
        m = re.match(r"([^=:]+?)\s*[=:]\s*", raw)
        key = m.group(1).strip().lower() if m else ""
        wanted = (section == "options" and key in _CFG_KEYS) or (section == "options.extras_require" and bool(key))
        if wanted and m is not None:
            values.append([(i, m.end() + 1, raw[m.end():])] if raw[m.end():].strip() else [])
    out = []
    for pieces in values:
        if len(pieces) == 1 and ";" in pieces[0][2]:
            # setuptools splits a one-line value at semicolons ("list-semi"); a multi-line one at line ends only.
            line, col, value = pieces[0]
            pieces = []
            for part in value.split(";"):
                pieces.append((line, col, part))
                col += len(part) + 1
        for line, col, value in pieces:
            if value.strip().startswith("file:"):
                continue
            f = _requirement_line(_strip_comment(value), path, line, col)
            if f is not None:
                out.append(f)
    return out


def _conda_requirement(item: str) -> tuple[Optional[_Req], str, int]:
    """(requirement, build string, offset of the name) of a conda match spec such as
    ``pytorch::pytorch=2.1.0=py3.10_cuda11.8_cudnn8.7.0_0`` or ``transformers>=4.30``."""
    offset = item.rfind("::") + 2 if "::" in item else 0  # channel prefix
    m = _NAME.match(item, offset)
    if m is None:
        return None, "", 0
    rest = item[m.end():].strip()
    version = build = ""
    if rest.startswith("["):  # name[version='>=2',build='*cuda*']
        v = re.search(r"version\s*=\s*['\"]?([^'\",\]]+)", rest)
        b = re.search(r"build\s*=\s*['\"]?([^'\",\]]+)", rest)
        version, build = (v.group(1) if v else ""), (b.group(1) if b else "")
    elif rest.startswith("=") and not rest.startswith("=="):
        pin, _, build = rest[1:].partition("=")
        version = "==" + (pin if pin.endswith("*") else pin + ".*")  # conda `=2.1` means 2.1.*
    elif rest:
        parts = rest.split()
        version = parts[0] if parts[0][0] in "<>=!~" else "==" + parts[0]
        build = parts[1] if len(parts) > 1 else ""
    return _Req(m.group(0), (), version.strip(), ""), build, offset


def _scan_environment(path: str, text: str) -> list[Finding]:
    """``dependencies:`` of a conda environment file, with its ``- pip:`` list, parsed line by line."""
    out = []
    in_deps = pip = False
    deps_indent = -1
    for i, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).rstrip()
        s = line.strip()
        if not s:
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and not s.startswith("-"):
            in_deps, pip, deps_indent = s.startswith("dependencies:"), False, -1
            continue
        if not in_deps or not s.startswith("-"):
            continue
        if deps_indent < 0:
            deps_indent = indent
        pos = indent + 1
        while pos < len(line) and line[pos] == " ":
            pos += 1
        item = line[pos:]
        if item[:1] in "'\"" and item.endswith(item[0]) and len(item) > 1:
            item, pos = item[1:-1], pos + 1
        if indent <= deps_indent:
            pip = item.startswith("pip:")
            if pip:
                continue
            req, build, offset = _conda_requirement(item)
            if req is not None:
                f = _judge(req, path, i, pos + offset + 1, len(item) - offset, conda_build=build)
                if f is not None:
                    out.append(f)
        elif pip:
            f = _requirement_line(item, path, i, pos + 1)
            if f is not None:
                out.append(f)
    return out


_SETUP_KEYWORDS = frozenset({"install_requires", "extras_require", "setup_requires", "tests_require"})


def _string_nodes(node: ast.AST, assigned: dict[str, ast.AST], seen: frozenset[str]) -> Iterator[ast.Constant]:
    """String literals a ``setup()`` argument is built from: lists, tuples, dict values, ``+`` and names bound to
    such literals at module level."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for elt in node.elts:
            yield from _string_nodes(elt, assigned, seen)
    elif isinstance(node, ast.Dict):
        for value in node.values:
            yield from _string_nodes(value, assigned, seen)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _string_nodes(node.left, assigned, seen)
        yield from _string_nodes(node.right, assigned, seen)
    elif isinstance(node, ast.Name) and node.id in assigned and node.id not in seen:
        yield from _string_nodes(assigned[node.id], assigned, seen | {node.id})


def scan_setup_py(path: str, text: str) -> list[Finding]:
    """Findings for the requirements a ``setup(...)`` call lists (install_requires, extras_require, setup_requires,
    tests_require) as literals or module-level names bound to literals; [] when the file does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            assigned[stmt.target.id] = stmt.value
    lines = text.splitlines()
    done: set[int] = set()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if fname != "setup":
            continue
        for kw in node.keywords:
            if kw.arg not in _SETUP_KEYWORDS:
                continue
            for const in _string_nodes(kw.value, assigned, frozenset()):
                if id(const) in done or const.lineno > len(lines):
                    continue
                done.add(id(const))
                src = lines[const.lineno - 1]
                # col_offset counts UTF-8 bytes; findings count characters.
                start = len(src.encode("utf-8")[: const.col_offset].decode("utf-8", "replace"))
                first = const.value.splitlines()[0] if const.value else ""
                j = src.find(first, start) if first else -1
                f = _requirement_line(first, path, const.lineno, (j if j >= 0 else start) + 1)
                if f is not None:
                    out.append(f)
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


# -- files ------------------------------------------------------------------------------------------------------------

#: Manifests recognised by exact (lower-cased) name; also requirements*.txt / *requirements*.in, constraints*.txt,
#: any .txt under a ``requirements/`` directory and environment*.yml / environment*.yaml.
MANIFEST_NAMES = frozenset({
    "requirements.txt", "constraints.txt", "pyproject.toml", "setup.cfg", "pipfile",
    "environment.yml", "environment.yaml",
})


def is_manifest(path: str) -> bool:
    """Whether ``path`` names a dependency manifest ``scan_manifest`` reads (``setup.py`` is Python: see
    :func:`scan_setup_py`)."""
    name = os.path.basename(path).lower()
    if name in MANIFEST_NAMES:
        return True
    stem, ext = os.path.splitext(name)
    if ext in (".txt", ".in"):
        if "requirements" in stem or stem.startswith("constraints"):
            return True
        return ext == ".txt" and os.path.basename(os.path.dirname(path)).lower() == "requirements"
    return ext in (".yml", ".yaml") and stem.startswith("environment")


def scan_manifest(path: str, text: str) -> FileResult:
    """Scan one manifest. An invalid TOML file is a ``FileFailed``; without a TOML parser it is a ``FileSkipped``."""
    name = os.path.basename(path).lower()
    nlines = len(text.splitlines())
    if name in ("pyproject.toml", "pipfile"):
        loads = _toml_loader()
        if loads is None:
            return FileSkipped(path, "deps", "reading TOML needs Python 3.11+ or the tomli package")
        try:
            data = loads(text)
        except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
            return FileFailed(path, "deps", f"invalid TOML: {exc}", nlines)
        findings = _scan_pipfile(path, text, data) if name == "pipfile" else _scan_pyproject(path, text, data)
    elif name == "setup.cfg":
        findings = _scan_setup_cfg(path, text)
    elif name.endswith((".yml", ".yaml")):
        findings = _scan_environment(path, text)
    else:
        findings = _scan_requirements(path, text)
    unique = {(f.line, f.col, f.code): f for f in findings}
    return FileScanned(path, "deps", nlines, [unique[k] for k in sorted(unique)])
