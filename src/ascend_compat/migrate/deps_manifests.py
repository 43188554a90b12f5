"""Dependency manifests other than requirements files: ``pyproject.toml`` (PEP 621, PEP 735, Poetry, uv, PDM),
``Pipfile``, ``setup.cfg``, conda ``environment*.yml`` and ``setup.py``'s ``setup(...)`` arguments, each
requirement located at its first character."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator
from typing import Any, Callable, Optional

from ascend_compat.migrate.deps_requirements import (
    CUDA_INDEX,
    NAME,
    Req,
    finding,
    judge,
    requirement_line,
    strip_comment,
)
from ascend_compat.migrate.model import Finding


def toml_loader() -> Optional[Callable[[str], Any]]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
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
    return requirement_line(spec, path, line, col)


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
            f = judge(Req(name, extras, spec, url), path, line, col, len(name))
            if f is not None:
                out.append(f)
                break  # one finding per dependency, however many alternative constraints it lists
    return out


#: An index root of CUDA wheels written as a TOML value ([[tool.uv.index]], [[tool.poetry.source]], [[source]]).
_CUDA_INDEX_VALUE = re.compile(r"https?://" + CUDA_INDEX.pattern + r"/?(?=[\"'])")


def _toml_index_findings(path: str, text: str) -> list[Finding]:
    out = []
    for i, raw in enumerate(text.splitlines(), 1):
        if raw.lstrip().startswith("#"):
            continue
        m = _CUDA_INDEX_VALUE.search(raw)
        if m is not None:
            out.append(finding("AC705", path, i, m.start() + 1, m.end() - m.start(),
                                f"package index of PyTorch's CUDA wheels ({m.group(0)})", "index-url",
                                "PyTorch's CPU index (https://download.pytorch.org/whl/cpu) for torch, then torch_npu"))
    return out


def scan_pyproject(path: str, text: str, data: dict) -> list[Finding]:
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


def scan_pipfile(path: str, text: str, data: dict) -> list[Finding]:
    loc = _Locator(text)
    out = []
    for table in ("packages", "dev-packages"):
        out += _table_findings(path, loc, table, _dict(data.get(table)))
    return out + _toml_index_findings(path, text)


# -- setup.cfg, conda environments, setup.py --------------------------------------------------------------------------

_CFG_KEYS = frozenset({"install_requires", "setup_requires", "tests_require"})


def scan_setup_cfg(path: str, text: str) -> list[Finding]:
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
            f = requirement_line(strip_comment(value), path, line, col)
            if f is not None:
                out.append(f)
    return out


def _conda_requirement(item: str) -> tuple[Optional[Req], str, int]:
    """(requirement, build string, offset of the name) of a conda match spec such as
    ``pytorch::pytorch=2.1.0=py3.10_cuda11.8_cudnn8.7.0_0`` or ``transformers>=4.30``."""
    offset = item.rfind("::") + 2 if "::" in item else 0  # channel prefix
    m = NAME.match(item, offset)
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
    return Req(m.group(0), (), version.strip(), ""), build, offset


def scan_environment(path: str, text: str) -> list[Finding]:
    """``dependencies:`` of a conda environment file, with its ``- pip:`` list, parsed line by line."""
    out = []
    in_deps = pip = False
    deps_indent = -1
    for i, raw in enumerate(text.splitlines(), 1):
        line = strip_comment(raw).rstrip()
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
                f = judge(req, path, i, pos + offset + 1, len(item) - offset, conda_build=build)
                if f is not None:
                    out.append(f)
        elif pip:
            f = requirement_line(item, path, i, pos + 1)
            if f is not None:
                out.append(f)
    return out


_SETUP_KEYWORDS = frozenset({"install_requires", "extras_require", "setup_requires", "tests_require"})


def string_nodes(node: ast.AST, assigned: dict[str, ast.AST], seen: frozenset[str]) -> Iterator[ast.Constant]:
    """String literals a ``setup()`` argument is built from: lists, tuples, dict values, ``+`` and names bound to
    such literals at module level."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for elt in node.elts:
            yield from string_nodes(elt, assigned, seen)
    elif isinstance(node, ast.Dict):
        for value in node.values:
            yield from string_nodes(value, assigned, seen)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from string_nodes(node.left, assigned, seen)
        yield from string_nodes(node.right, assigned, seen)
    elif isinstance(node, ast.Name) and node.id in assigned and node.id not in seen:
        yield from string_nodes(assigned[node.id], assigned, seen | {node.id})


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
            for const in string_nodes(kw.value, assigned, frozenset()):
                if id(const) in done or const.lineno > len(lines):
                    continue
                done.add(id(const))
                src = lines[const.lineno - 1]
                # col_offset counts UTF-8 bytes; findings count characters.
                start = len(src.encode("utf-8")[: const.col_offset].decode("utf-8", "replace"))
                value = const.value if isinstance(const.value, str) else ""
                first = value.splitlines()[0] if value else ""
                j = src.find(first, start) if first else -1
                f = requirement_line(first, path, const.lineno, (j if j >= 0 else start) + 1)
                if f is not None:
                    out.append(f)
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


__all__ = ["scan_environment", "scan_pipfile", "scan_pyproject", "scan_setup_cfg", "scan_setup_py", "string_nodes",
           "toml_loader"]
