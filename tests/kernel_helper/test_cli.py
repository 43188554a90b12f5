"""``ascend-compat scaffold`` as users run it: a process per command (forked from a warm interpreter,
tests/_forkserver.py), and a real interpreter for what it imports."""

from __future__ import annotations

import json
import subprocess
import sys

from ascend_compat.kernel_helper.writer import MARKER
from tests._forkserver import cli
from tests.conftest import ROOT, _clean_env


def _run(*args, cwd):
    return cli("scaffold", *args, cwd=cwd, env={**_clean_env(), "NO_COLOR": "1", "PYTHONPATH": str(ROOT)})


def test_scaffold_creates_reruns_and_refuses(tmp_path):
    proc = _run("row_sum", "--pattern", "reduction", "--dtype", "float16", "--dtype", "float32", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema_version"] == 1 and report["ok"] and report["op_type"] == "RowSum"
    project = tmp_path / "row_sum"
    written = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert written == sorted([*report["files"], MARKER])  # the marker lets a later --force replace it
    assert json.loads((project / "spec.json").read_text())["inputs"][0]["dtypes"] == ["float16", "float32"]

    again = _run("row_sum", "--pattern", "reduction", cwd=tmp_path)
    assert again.returncode == 1 and "--force" in again.stderr and "\033[" not in again.stderr
    forced = _run("row_sum", "--pattern", "reduction", "--compute", "max", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "ReduceMax" in (project / "op_kernel" / "row_sum.cpp").read_text()


def test_scaffold_reports_every_spec_problem(tmp_path):
    proc = _run("../evil", "--output", str(tmp_path / "x"), cwd=tmp_path)
    assert proc.returncode == 2 and "not a valid name" in proc.stderr
    proc = _run("my_op", "--tile-length", "100", "--dtype", "int8", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    errors = json.loads(proc.stdout)["errors"]
    assert any("no int8 form" in e for e in errors)
    assert list(tmp_path.iterdir()) == []


def test_scaffold_from_a_spec_file(tmp_path):
    spec = {"pattern": "elementwise", "compute": "scale", "attrs": [{"name": "alpha", "type": "float", "default": 2.5}],
            "tile_length": 1024, "soc_versions": ["ascend910b", "ascend310p"]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = _run("scaler", "--spec", str(tmp_path / "spec.json"), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    host = (tmp_path / "out" / "op_host" / "scaler.cpp").read_text()
    assert 'AddConfig("ascend310p")' in host and ".Float(2.5)" in host and "TILE_LENGTH = 1024" in host
    (tmp_path / "bad.json").write_text("[1]")
    proc = _run("scaler", "--spec", str(tmp_path / "bad.json"), "-o", str(tmp_path / "out2"), cwd=tmp_path)
    assert proc.returncode == 2 and "JSON object" in proc.stderr


def test_scaffold_does_not_import_torch(tmp_path):
    code = (
        "import argparse, sys\n"
        "from ascend_compat.cli import scaffold\n"
        "parser = argparse.ArgumentParser()\n"
        "scaffold.add_parser(parser.add_subparsers())\n"
        f"args = parser.parse_args(['scaffold', 'my_op', '-o', {str(tmp_path / 'p')!r}])\n"
        "rc = args.func(args)\n"
        "print(rc, 'torch' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-2:] == ["0", "False"]
