"""Dependencies and their status on Ascend: requirements files, ``pyproject.toml``, ``setup.cfg``, ``Pipfile``,
conda environments, ``setup.py`` and imports, each known package mapped to what to do about it on the NPU.

Data: ``data/dependencies.json`` (one entry per package, with the public place each fact comes from). Rules AC7xx;
none is fixable (``port`` does not rewrite manifests). Every finding points at the requirement's first character.

The work is split by input: ``deps_table`` (the data, lookups, rules), ``deps_requirements`` (one requirement,
requirements files) and ``deps_manifests`` (TOML, setup.cfg, conda, setup.py); this module is their public face
and picks the reader for a file.
"""

from __future__ import annotations

import os

from ascend_compat.migrate.deps_manifests import (
    scan_environment,
    scan_pipfile,
    scan_pyproject,
    scan_setup_cfg,
    scan_setup_py,
    string_nodes,
    toml_loader,
)
from ascend_compat.migrate.deps_requirements import Req, judge, parse_requirement, scan_requirements
from ascend_compat.migrate.deps_table import (
    DEP_RULES,
    STATUSES,
    DepInfo,
    all_dependencies,
    import_finding,
    lookup,
    lookup_import,
    normalize,
)
from ascend_compat.migrate.model import FileFailed, FileResult, FileScanned, FileSkipped

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
        loads = toml_loader()
        if loads is None:
            return FileSkipped(path, "deps", "reading TOML needs Python 3.11+ or the tomli package")
        try:
            data = loads(text)
        except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
            return FileFailed(path, "deps", f"invalid TOML: {exc}", nlines)
        findings = scan_pipfile(path, text, data) if name == "pipfile" else scan_pyproject(path, text, data)
    elif name == "setup.cfg":
        findings = scan_setup_cfg(path, text)
    elif name.endswith((".yml", ".yaml")):
        findings = scan_environment(path, text)
    else:
        findings = scan_requirements(path, text)
    unique = {(f.line, f.col, f.code): f for f in findings}
    return FileScanned(path, "deps", nlines, [unique[k] for k in sorted(unique)])


__all__ = ["DEP_RULES", "MANIFEST_NAMES", "STATUSES", "DepInfo", "Req", "all_dependencies", "import_finding",
           "is_manifest", "judge", "lookup", "lookup_import", "normalize", "parse_requirement", "scan_manifest",
           "scan_setup_py", "string_nodes"]
