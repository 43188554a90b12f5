"""``port`` on input that tricked it (issue 17 item 6) and the conventions around it (file modes, JSON keys,
exit codes)."""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

import pytest

from ascend_compat.migrate.port import PortSuccess, port_source, write_atomic
from tests.hostile._cli import cli

ENV_CODE = '''import os, subprocess
import torch
a = os.environ["CUDA_VISIBLE_DEVICES"]
b = os.getenv("CUDA_VISIBLE_DEVICES", "0")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
os.putenv("CUDA_VISIBLE_DEVICES", "1")
env = os.environ.copy()
env["CUDA_VISIBLE_DEVICES"] = "0"
subprocess.run(["x"], env=env)
subprocess.run(["x"], env={**os.environ, "CUDA_VISIBLE_DEVICES": "1"})
f = os.environ.get("CUDA_VISIBLE_DEVICES_FILE")
msg = "set CUDA_VISIBLE_DEVICES to pick a GPU"
table = {}
table["CUDA_VISIBLE_DEVICES"] = 1
line = f"CUDA_VISIBLE_DEVICES={a} python x.py"
def doc():
    """Reads CUDA_VISIBLE_DEVICES."""
    return "CUDA_VISIBLE_DEVICES"
'''


def _port(text: str) -> str:
    result = port_source("t.py", text)
    assert isinstance(result, PortSuccess), result
    ast.parse(result.text)
    return result.text


def test_only_environment_keys_are_renamed() -> None:
    out = _port(ENV_CODE).splitlines()
    renamed = [i for i, (a, b) in enumerate(zip(ENV_CODE.splitlines(), out)) if a != b]
    assert renamed == [2, 3, 4, 5, 7, 9]  # os.environ[], getenv, setdefault, putenv, env copy, env= dict
    assert all("ASCEND_RT_VISIBLE_DEVICES" in out[i] and "CUDA_VISIBLE" not in out[i] for i in renamed)
    for kept in ("CUDA_VISIBLE_DEVICES_FILE", "set CUDA_VISIBLE_DEVICES to", 'table["CUDA_VISIBLE_DEVICES"]',
                 'f"CUDA_VISIBLE_DEVICES={a}', "Reads CUDA_VISIBLE_DEVICES.", 'return "CUDA_VISIBLE_DEVICES"'):
        assert any(kept in ln for ln in out), kept


def test_torch_npu_is_never_imported_only_for_type_checkers() -> None:
    text = ("from typing import TYPE_CHECKING\nimport os\n\nif TYPE_CHECKING:\n    import torch\n\n\n"
            "def f(x):\n    return x.to('cuda')\n")
    tree = ast.parse(_port(text))
    top = [n for n in tree.body if isinstance(n, ast.Import) and n.names[0].name == "torch_npu"]
    assert len(top) == 1  # a module-level statement that runs, after the other imports
    guarded = tree.body[3]
    assert isinstance(guarded, ast.If) and [a.name for n in guarded.body for a in n.names] == ["torch"]
    # A runtime import of torch later in the file is where torch_npu goes (lazily, like torch).
    lazy = text + "\ndef g():\n    import torch\n    return torch.ones(1).cuda()\n"
    out = _port(lazy)
    assert "    import torch\n    import torch_npu" in out and out.count("import torch_npu") == 1


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_line_endings_are_kept(nl: str) -> None:
    # A stray CRLF in an LF file (inside a string) must not make the inserted line CRLF, and vice versa.
    other = "\r\n" if nl == "\n" else "\n"
    text = nl.join(["import torch", f's = """a{other}b"""', "x = torch.ones(1).cuda()", ""])
    out = _port(text)
    assert "import torch_npu" in out
    body = out.replace(f"a{other}b", "ab")
    if nl == "\n":
        assert "\r" not in body
    else:
        assert body.count("\n") == body.count("\r\n") and "\r\r" not in body


def test_a_symlinked_file_stays_a_symlink_and_one_leaving_the_tree_is_refused(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (tree / "real.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    (tree / "link.py").symlink_to("real.py")
    (outside / "ext.py").write_text("import torch\ny = torch.ones(1).cuda()\n")
    (tree / "ext_link.py").symlink_to(outside / "ext.py")
    r = cli("port", str(tree), "--no-git", "--write", "--json")
    assert r.returncode == 0, r.stderr
    files = {os.path.basename(f["path"]): f for f in json.loads(r.stdout)["files"]}
    assert (tree / "link.py").is_symlink() and os.readlink(tree / "link.py") == "real.py"
    assert ".npu()" in (tree / "real.py").read_text()
    assert [f["status"] for f in files.values()].count("changed") == 1  # one file, reached twice
    assert "outside" in files["ext_link.py"]["reason"] and (tree / "ext_link.py").is_symlink()
    assert ".cuda()" in (outside / "ext.py").read_text()  # never written through the link


def test_new_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "new.md"), "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
    existing = tmp_path / "exec.py"
    existing.write_text("a\n")
    existing.chmod(0o751)
    write_atomic(str(existing), "b\n")
    assert stat.S_IMODE(existing.stat().st_mode) == 0o751 and existing.read_text() == "b\n"


def test_report_files_are_not_private(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    r = cli("report", str(tmp_path / "proj"), "--no-git", "--output", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    (report,) = (tmp_path / "out").glob("CodeReview_Results_*.md")
    assert stat.S_IMODE(report.stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_port_json_names_the_rule_as_documented(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    r = cli("port", str(tmp_path / "t.py"), "--json")
    change = json.loads(r.stdout)["files"][0]["changes"][-1]
    assert change["rule"] == "AC101" and change["file"] == str(tmp_path / "t.py")
    assert change["code"] == "AC101"  # kept for older readers


@pytest.mark.parametrize("command", ["check", "port", "report"])
def test_a_missing_path_is_a_usage_error(command: str, tmp_path: Path) -> None:
    r = cli(command, str(tmp_path / "nonexistent_dir"), cwd=tmp_path)
    assert r.returncode == 2 and "no such file or directory" in r.stderr and "Traceback" not in r.stderr
