"""``check`` over whole trees: robustness (every bad file is a value, the scan goes on), discovery, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ascend_compat.migrate.model import FileFailed, FileScanned, FileSkipped
from ascend_compat.migrate.scan import check
from tests._forkserver import cli as forked_cli

CUDA_CODE = "import torch\nx = torch.ones(2).cuda()\n"


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``ascend-compat ARGS`` in a process of its own (forked from a warm interpreter), NO_COLOR unset."""
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full_env.update(env or {})
    return forked_cli(*args, cwd=cwd, env=full_env, timeout=300)


@pytest.fixture()
def messy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "good.py").write_text(CUDA_CODE)
    (root / "pkg" / "py2.py").write_text('print "hello"\n')
    (root / "pkg" / "latin1.py").write_bytes(b"# no coding cookie\nname = '\xe9t\xe9'\n")
    (root / "pkg" / "declared.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\nx.cuda()\n")
    (root / "pkg" / "blob.py").write_bytes(b"\x00\x01\x02binary\x00")
    (root / "pkg" / "huge.py").write_text("x = 1\n" * 2_000_000)  # 12 MB > the 8 MiB limit
    (root / "pkg" / "loop").symlink_to(root / "pkg", target_is_directory=True)
    (root / "third_party").mkdir()
    (root / "third_party" / "vendored.py").write_text(CUDA_CODE)
    locked = root / "pkg" / "locked.py"
    locked.write_text(CUDA_CODE)
    locked.chmod(0)
    yield root
    locked.chmod(0o644)


def test_every_bad_file_is_a_result_and_the_scan_goes_on(messy_tree: Path) -> None:
    result = check([str(messy_tree)], jobs=1, use_git=False)
    by_name = {os.path.basename(f.path): f for f in result.files}
    assert isinstance(by_name["good.py"], FileScanned) and by_name["good.py"].findings
    assert isinstance(by_name["py2.py"], FileFailed) and "syntax error" in by_name["py2.py"].error
    assert isinstance(by_name["latin1.py"], FileFailed) and "decode" in by_name["latin1.py"].error
    assert isinstance(by_name["declared.py"], FileScanned)  # PEP 263 cookie honoured
    assert [f.code for f in by_name["declared.py"].findings] == ["AC101"]
    assert isinstance(by_name["blob.py"], FileSkipped) and by_name["blob.py"].reason == "binary file"
    assert isinstance(by_name["huge.py"], FileSkipped) and "larger than" in by_name["huge.py"].reason
    if os.geteuid() != 0:  # root reads anything
        assert isinstance(by_name["locked.py"], FileFailed) and "cannot read" in by_name["locked.py"].error
    assert "vendored.py" not in by_name  # vendored tree skipped
    # The symlink loop is followed once, never forever: each real file appears at most twice (via the link).
    assert sum(os.path.basename(f.path) == "good.py" for f in result.files) <= 2


def test_parallel_and_serial_scans_agree(messy_tree: Path) -> None:
    for i in range(60):  # enough files to use worker processes
        (messy_tree / "pkg" / f"m{i}.py").write_text(CUDA_CODE if i % 2 else "import os\n")
    serial = check([str(messy_tree)], jobs=1, use_git=False).to_dict()
    parallel = check([str(messy_tree)], jobs=2, use_git=False).to_dict()
    serial.pop("elapsed_s"), parallel.pop("elapsed_s")
    assert serial == parallel


def test_git_ignored_files_are_skipped(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("generated/\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "gen.py").write_text(CUDA_CODE)
    (tmp_path / "train.py").write_text(CUDA_CODE)
    paths = [os.path.basename(f.path) for f in check([str(tmp_path)], jobs=1).files]
    assert paths == ["train.py"]


def test_cli_exit_codes_and_formats(tmp_path: Path) -> None:
    dist = 'import torch.distributed as dist\ndist.init_process_group("nccl")\n'
    (tmp_path / "train.py").write_text(CUDA_CODE + dist)
    r = cli("check", str(tmp_path), "--format", "json")
    assert r.returncode == 1, r.stderr  # AC301 is an error
    data = json.loads(r.stdout)
    assert data["schema_version"] == 1
    codes = sorted(f["code"] for f in data["files"][0]["findings"])
    assert codes == ["AC101", "AC301"]
    assert cli("check", str(tmp_path), "--fail-on", "never").returncode == 0
    assert cli("check", str(tmp_path), "--ignore", "AC3", "--fail-on", "error").returncode == 0
    assert cli("check", str(tmp_path), "--ignore", "AC3", "--fail-on", "warning").returncode == 1
    sarif = json.loads(cli("check", str(tmp_path), "--format", "sarif").stdout)
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    cuda = next(r for r in results if r["ruleId"] == "AC101")
    (fix,) = cuda["fixes"]  # port's edit, as a SARIF replacement
    (replacement,) = fix["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"]["text"] == "npu"
    (tmp_path / "old.py").write_text('print "x"\n')
    r = cli("check", str(tmp_path), "--fail-on", "never")
    assert r.returncode == 3 and "old.py" in r.stdout


def test_cli_text_respects_no_color(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_CODE)
    r = cli("check", str(tmp_path / "t.py"), env={"NO_COLOR": "1"})
    assert "\x1b[" not in r.stdout and "AC101" in r.stdout


def test_unknown_torch_npu_line_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(CUDA_CODE)
    r = cli("check", str(tmp_path), "--torch-npu", "1.0")
    assert r.returncode == 2 and "torch_npu" in r.stderr.lower()


def test_missing_path_is_reported(tmp_path: Path) -> None:
    result = check([str(tmp_path / "nope.py")], jobs=1)
    assert isinstance(result.files[0], FileFailed) and "cannot read" in result.files[0].error


def test_report_command_writes_the_dated_report(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(CUDA_CODE)
    (tmp_path / "proj" / "requirements.txt").write_text("flash-attn\ntorch==2.1.0+cu121\n")
    out = tmp_path / "reports"
    r = cli("report", str(tmp_path / "proj"), "--output", str(out), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    (report,) = [p for p in out.iterdir() if p.is_file()]  # beside it: the adaptation folder (issue 21)
    assert report.name.startswith("CodeReview_Results_") and report.suffix == ".md"
    assert data["report"] == str(report)
    text = report.read_text()
    head = "\n".join(text.splitlines()[:25])
    assert "flash-attn" in text and "AC101" in text
    assert str(data["summary"]["findings"]) in head  # the totals are on the first screen
    assert any(c["code"] == "AC101" for c in data["changes"])


def test_mixed_tree_reports_every_language_in_one_result(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(CUDA_CODE)
    (tmp_path / "kernel.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 0.f; }\n"
                                        "void run(float* d) { cudaMalloc(&d, 4); k<<<1, 32>>>(d); }\n")
    (tmp_path / "requirements.txt").write_text("flash-attn\n")
    data = check([str(tmp_path)], jobs=1).to_dict()  # the parent process knows every rule it reports
    langs = {f["language"]: sorted({x["code"] for x in f["findings"]}) for f in data["files"]}
    assert langs["python"] == ["AC101"]
    assert {"AC601", "AC609", "AC610"} <= set(langs["cxx"])
    assert langs["deps"] == ["AC703"]  # flash-attn: covered by the drop-in


@pytest.mark.parametrize("how", ["check-file", "check-dir-link", "report"])
def test_an_output_naming_a_scanned_source_is_refused(tmp_path: Path, how: str) -> None:
    # `-o train.py` used to replace the source with the report (exit 0): the user's code was gone.
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(CUDA_CODE)
    (tmp_path / "alias.py").symlink_to(repo / "train.py")
    if how == "check-file":
        r = cli("check", str(repo / "train.py"), "-o", str(repo / "train.py"))
    elif how == "check-dir-link":
        r = cli("check", str(repo), "-o", str(tmp_path / "alias.py"))
    else:
        r = cli("report", str(repo), "-o", str(repo / "train.py"), "--no-adapt", "--allow-incomplete")
    assert r.returncode == 2 and "a file this" in r.stderr and "scanned: not replacing it" in r.stderr, r.stderr
    assert (repo / "train.py").read_text() == CUDA_CODE and os.listdir(repo) == ["train.py"]
    again = cli("check", str(repo), "-o", str(repo / "findings.json"), "--json")  # a new file in the tree is fine
    assert again.returncode in (0, 1) and (repo / "findings.json").is_file(), again.stderr
    rerun = cli("check", str(repo), "-o", str(repo / "findings.json"), "--json")  # and so is writing it again
    assert rerun.returncode in (0, 1) and "not replacing" not in rerun.stderr, rerun.stderr


def test_a_report_rerun_says_which_of_your_files_it_kept(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(CUDA_CODE)
    out = tmp_path / "review.md"
    first = cli("report", str(tmp_path / "proj"), "-o", str(out), "--allow-incomplete")
    assert first.returncode in (0, 3) and "kept your files" not in first.stdout, first.stderr
    (tmp_path / "ascend_adaptation" / "NOTES.md").write_text("my porting notes\n")
    again = cli("report", str(tmp_path / "proj"), "-o", str(out), "--allow-incomplete")
    assert again.returncode in (0, 3), again.stderr
    assert "kept your files in" in again.stdout and "NOTES.md" in again.stdout
    assert "Kept from the previous folder" in out.read_text() and "`NOTES.md`" in out.read_text()
    assert (tmp_path / "ascend_adaptation" / "NOTES.md").read_text() == "my porting notes\n"
