"""The one manifest of generated files (``_manifest``) that ``report``'s adaptation folder and ``scaffold`` share:
what it reads from whatever a crash or a person left, which entries it calls the user's, and what the two
writers do with a list they cannot trust."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ascend_compat import _manifest
from ascend_compat.kernel_helper import default_spec, scaffold
from ascend_compat.kernel_helper.writer import MARKER as SCAFFOLD_MARKER

FIXTURE = Path(__file__).parent / "migrate" / "fixtures_report" / "kernelpkg"
KERNEL = "kernels/scale_kernel/op_kernel/scale_kernel.cpp"


def test_a_written_manifest_reads_back_and_leaves_nothing_else(tmp_path: Path) -> None:
    files = {"b/c.txt": _manifest.sha256(b"c"), "a.txt": _manifest.sha256(b"a")}
    _manifest.write(str(tmp_path / "m.json"), "ascend-compat test", files)
    got = _manifest.read(str(tmp_path / "m.json"))
    assert got.state == "listed" and dict(got.files) == files
    assert os.listdir(tmp_path) == ["m.json"]  # no temporary file beside it


@pytest.mark.parametrize(("text", "state"), [
    (None, "missing"),
    ("written by ascend-compat 0.1.0\n", "unlisted"),  # the adaptation marker before it listed its files
    ("", "corrupt"),  # a write torn by a power loss
    ('{"generator": "ascend-compat 0.2", "files": {"a.txt": "ab', "corrupt"),
    ('{"generator": "x"}', "corrupt"),
    ('{"files": {"a.txt": 3}}', "corrupt"),
    ('{"files": ["a.txt"]}', "corrupt"),
    ('{"files": {"../outside.txt": "00"}}', "corrupt"),  # a path outside the folder is never trusted
    ('{"files": {"/etc/passwd": "00"}}', "corrupt"),
    ("[" * 100000, "corrupt"),
    ("written by ascend-compat 0.1.0\nand more\n", "corrupt"),
], ids=["missing", "legacy", "empty", "truncated", "no-list", "bad-digest", "list", "dotdot", "absolute", "deep",
        "legacy-and-more"])
def test_reading_tolerates_what_a_crash_or_a_person_leaves(tmp_path: Path, text: str | None, state: str) -> None:
    path = tmp_path / "m.json"
    if text is not None:
        path.write_text(text)
    got = _manifest.read(str(path))
    assert got.state == state and (state == "listed" or not got.files)


def test_markers_written_by_the_previous_version_are_read(tmp_path: Path) -> None:
    # Byte for byte what the previous scaffold (indent 2) and report (indent 1, sorted keys) wrote.
    scaffold_form = json.dumps({"generator": "ascend-compat scaffold", "files": {"op_kernel/x.cpp": "aa"}}, indent=2)
    report_form = json.dumps({"generator": "ascend-compat 0.9", "files": {"npu_compat.py": "bb"}}, indent=1,
                             sort_keys=True)
    for text, files in ((scaffold_form, {"op_kernel/x.cpp": "aa"}), (report_form, {"npu_compat.py": "bb"})):
        (tmp_path / "m").write_text(text + "\n")
        assert _manifest.read(str(tmp_path / "m")) == _manifest.Manifest("listed", files)


def test_the_users_entries_are_what_was_added_edited_or_is_not_a_file(tmp_path: Path) -> None:
    listed = {}
    for name in ("same.txt", "edited.txt", "linked.txt", "gone.txt", "sub/locked.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(f"generated {name}\n")
        listed[name] = _manifest.sha256(f"generated {name}\n".encode())
    (tmp_path / "edited.txt").write_text("my edit\n")
    (tmp_path / "linked.txt").unlink()
    (tmp_path / "linked.txt").symlink_to("same.txt")  # the same bytes, but a link is the user's
    (tmp_path / "gone.txt").unlink()  # removed: not the user's, it is generated again
    (tmp_path / "added.txt").write_text("notes\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "MARK").write_text("{}")
    mine = [rel for rel, _ in _manifest.user_entries(str(tmp_path), listed, skip=["MARK"])]
    assert mine == ["added.txt", "edited.txt", "empty", "linked.txt"]
    assert _manifest.is_edited(str(tmp_path / "edited.txt"), listed["edited.txt"])
    assert not _manifest.is_edited(str(tmp_path / "gone.txt"), listed["gone.txt"])
    assert not _manifest.is_edited(str(tmp_path / "same.txt"), listed["same.txt"])


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    from ascend_compat.migrate.scan import check

    repo = tmp_path_factory.mktemp("manifest") / "kernelpkg"
    shutil.copytree(FIXTURE, repo)
    return repo, check([str(repo)], jobs=1, use_git=False)


def test_a_damaged_adaptation_marker_no_longer_costs_the_users_edits(scanned: tuple[Path, object],
                                                                     tmp_path: Path) -> None:
    # The bug the two writers disagreed on: scaffold refused a damaged marker, report read it as a folder from
    # before the file list and regenerated every generated file, so a ported kernel body was overwritten and the
    # old folder deleted. Now a damaged list keeps every file that differs from the new generation.
    from ascend_compat.migrate.adaptation import MARKER, write_adaptation
    from ascend_compat.migrate.project import analyze

    repo, result = scanned
    folder = tmp_path / "ascend_adaptation"
    write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    edited = (folder / KERNEL).read_text() + "// the kernel body I ported\n"
    (folder / KERNEL).write_text(edited)
    (folder / MARKER).write_text("")  # torn: written without fsync, then a power loss
    ad = write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    assert (folder / KERNEL).read_text() == edited and ad.kept == [KERNEL]  # unchanged files are not "kept"
    assert _manifest.read(str(folder / MARKER)).state == "listed"
    again = write_adaptation(result, analyze(result), str(repo), str(folder))  # type: ignore[arg-type]
    assert (folder / KERNEL).read_text() == edited and again.kept == [KERNEL]  # and the edit stays the user's


def test_scaffold_says_a_damaged_marker_is_damaged_and_changes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "op"
    scaffold(default_spec("my_op"), target)
    (target / SCAFFOLD_MARKER).write_text('{"files": {"../../etc/passwd": "00"}}')
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match=f"its {SCAFFOLD_MARKER} is damaged"):
        scaffold(default_spec("my_op", compute="mul"), target, force=True)
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["op"]
