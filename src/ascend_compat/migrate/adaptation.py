"""The adaptation folder the report lists in section 4: written next to the report, never over the
repository's files.

Contents: ``npu_compat.py`` (device selection and the repository's extension modules), ``ported/`` (``port``'s
rewrite of every file it changes), ``verify_npu.py`` (the checks of ``report --verify``, on the simulated NPU
where there is none), ``requirements-npu.txt`` and ``kernels/<name>/`` (an Ascend C operator project from
``kernel_helper`` for each kernel that needs one). The folder is built aside and renamed into place; a folder
of that name that ascend-compat did not write is refused. Files get the user's umask, not 0600.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

from ascend_compat import __version__
from ascend_compat.migrate import deps
from ascend_compat.migrate.model import RULES, ScanResult
from ascend_compat.migrate.project import Analysis
from ascend_compat.migrate.report_deps import collect
from ascend_compat.migrate.report_precision import op_groups

MARKER = ".ascend-compat-adaptation"
FOLDER = "ascend_adaptation"


class AdaptationError(ValueError):
    """The adaptation folder cannot be written where asked."""


@dataclass
class Adaptation:
    folder: str
    files: list[dict] = field(default_factory=list)  # {"path", "function", "status"}
    ported: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"folder": self.folder, "files": self.files, "ported": self.ported}


def _umask() -> int:
    from ascend_compat.migrate.atomic import _umask as umask

    return umask()


def write_text(path: str, text: str) -> None:
    """Atomically write ``text`` to ``path``; a new file gets the user's umask (``migrate.atomic``)."""
    from ascend_compat.migrate.atomic import write_atomic

    write_atomic(path, text)


def _compat_module(analysis: Analysis, name: str) -> str:
    exts = {e.name: [u.id for u in analysis.effort.units if u.kind in ("extension", "extension_replaced")
                  and f"`{e.name}`" in u.label]
            for e in analysis.inventory.extensions}
    table = "".join(f"    {n!r}: {', '.join(ids) or 'no unit'!r},\n" for n, ids in sorted(exts.items()))
    return f'''"""Device selection for {name} on Ascend NPUs (written by ascend-compat {__version__}).

Import it where the code picks its device: ``from npu_compat import get_device, to_device``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The repository's compiled extensions and the report unit that ports each one.
EXTENSIONS = {{
{table}}}


def is_npu_available() -> bool:
    try:
        import torch
        import torch_npu  # noqa: F401  (registers the npu device)
    except ImportError:
        return False
    return bool(torch.npu.is_available())


def get_device() -> str:
    """"npu" when an NPU is usable, else "cuda" when a GPU is, else "cpu"."""
    if is_npu_available():
        return "npu"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def to_device(obj: Any) -> Any:
    """Move a tensor or module to the device :func:`get_device` picks."""
    return obj.to(get_device())


def load_extension(name: str) -> Any:
    """Import one of the repository's compiled extensions, saying which report unit ports it when it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unit = EXTENSIONS.get(name, "no unit")
        raise ImportError(f"{{name}} is not built for this device; see the review report, {{unit}}") from exc
'''


def _verify_script(root_rel: str, packages: list[str], groups: list[str]) -> str:
    return f'''"""Verification of the NPU adaptation (written by ascend-compat {__version__}).

Imports every module of the repository, checks the precision of the operators it uses and of the models it
builds against the CPU, and runs its tests on the NPU, or on the simulated NPU when this machine has none;
prints the results as JSON. Usage: python verify_npu.py [--budget SECONDS]
"""

import argparse
import json
import os
import sys

from ascend_compat.migrate.report_verify import run_verification

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, {root_rel!r}))
PACKAGES = {sorted(packages)!r}
OP_GROUPS = {groups!r}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=600.0, help="seconds for imports and tests together")
    parser.add_argument("--model", help="module:factory to compare on the NPU and the CPU (ascend-compat verify)")
    args = parser.parse_args()
    results = run_verification(ROOT, PACKAGES, args.budget, args.model, op_groups=OP_GROUPS)
    print(json.dumps(results, indent=2, ensure_ascii=False))
    imports, tests = results["imports"], results["tests"]
    failed = len(imports["modules"]) - imports["passed"] + tests.get("failed", 0) + tests.get("errors", 0)
    sys.exit(1 if failed else 0)
'''


def _requirements(analysis: Analysis, result: ScanResult, rel: Callable[[str], str]) -> str:
    lines = [f"# NPU requirements written by ascend-compat {__version__} from the repository's dependencies.",
             "# torch: the CPU build of the exact version your torch_npu release pins; then torch_npu.",
             "torch", "torch_npu"]
    for d in collect(result, analysis.project, rel):
        if d.name in ("torch", "torch-npu"):
            continue
        info = deps.lookup(d.name)
        spec = ",".join(sorted(d.specs))
        if info is None or info.status == "works" or (info.status == "native_npu" and not info.min_version):
            lines.append(f"{d.name}{spec}")
        elif info.status == "native_npu":
            lines.append(f"{d.name}>={info.min_version}")
        elif info.npu_package:
            lines.append(f"{info.npu_package}  # replaces {d.name}")
        else:
            lines.append(f"# {d.name}: not installed on the NPU ({info.status}): {info.alternative}")
    return "\n".join(lines) + "\n"


def _scaffolds(analysis: Analysis, staging: str, out: Adaptation) -> None:
    from ascend_compat.kernel_helper.spec import SpecError, default_spec
    from ascend_compat.kernel_helper.writer import scaffold

    for u in analysis.effort.units:
        if u.kind not in ("kernel", "kernel_complex") or "`" not in u.label:
            continue
        raw = u.label.split("`")[1]
        name = re.sub(r"\W+", "_", raw).strip("_").lower() or "kernel"
        if name[0].isdigit() or os.path.exists(os.path.join(staging, "kernels", name)):
            continue
        try:
            res = scaffold(default_spec(name), os.path.join(staging, "kernels", name))
        except (SpecError, ValueError, OSError) as exc:
            out.files.append({"path": f"kernels/{name}/", "function": f"Ascend C scaffold for `{raw}` ({u.id})",
                              "status": f"❌ not generated: {exc}"})
            continue
        out.files.append({"path": f"kernels/{name}/", "function": f"Ascend C operator project for kernel `{raw}` "
                          f"({u.id}; {len(res.files)} files, elementwise starting point)",
                          "status": "✅ generated; kernel body to port"})


def _ported(root: str, staging: str, out: Adaptation) -> None:
    from ascend_compat.migrate.port import PortSuccess, port_paths

    for r in port_paths([root]):
        if isinstance(r, PortSuccess) and r.changes:
            rel = os.path.relpath(os.path.abspath(r.path), root).replace(os.sep, "/")
            if rel.startswith(".."):
                continue
            write_text(os.path.join(staging, "ported", rel), r.text)
            out.ported.append(rel)
            n = sum(c.code in RULES for c in r.changes)  # the added `import torch_npu` is not a rewrite
            extra = " and `import torch_npu`" if n < len(r.changes) else ""
            out.files.append({"path": f"ported/{rel}", "function": f"{rel} with {n} mechanical rewrite(s) by "
                              f"`ascend-compat port`{extra}", "status": "✅ adapted"})


def write_adaptation(result: ScanResult, analysis: Analysis, root: str, folder: str) -> Adaptation:
    """Write the adaptation folder ``folder`` for the project at ``root``; see the module docstring."""
    root, folder = os.path.abspath(root), os.path.abspath(folder)
    if os.path.exists(folder) and not os.path.isfile(os.path.join(folder, MARKER)):
        raise AdaptationError(f"{folder} exists and was not written by ascend-compat: not touching it "
                              "(choose another --adapt-dir)")
    parent = os.path.dirname(folder)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.tmp-", dir=parent)
    out = Adaptation(folder)

    def rel(path: str) -> str:
        return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")

    try:
        name = os.path.basename(root)
        write_text(os.path.join(staging, MARKER), f"written by ascend-compat {__version__}\n")
        write_text(os.path.join(staging, "npu_compat.py"), _compat_module(analysis, name))
        out.files.append({"path": "npu_compat.py", "function": "device detection (npu/cuda/cpu) and loading of "
                          "the repository's compiled extensions", "status": "✅ generated"})
        _ported(root, staging, out)
        write_text(os.path.join(staging, "verify_npu.py"),
                   _verify_script(os.path.relpath(root, folder), sorted(analysis.project.packages),
                                  op_groups(result.api_inventory)))
        out.files.append({"path": "verify_npu.py", "status": "✅ generated",
                          "function": "verification: imports every module, compares operators and buildable models "
                          "with the CPU, runs the tests on the NPU (simulated off-NPU)"})
        write_text(os.path.join(staging, "requirements-npu.txt"), _requirements(analysis, result, rel))
        out.files.append({"path": "requirements-npu.txt", "function": "the dependencies for the NPU environment",
                          "status": "✅ generated"})
        _scaffolds(analysis, staging, out)
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp made it 0700
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


__all__ = ["FOLDER", "MARKER", "Adaptation", "AdaptationError", "write_adaptation", "write_text"]
