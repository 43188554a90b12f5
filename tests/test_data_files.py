"""Every JSON data file of the package: declared once in ``_data.DATA_FILES``, loadable, shaped as the project's
convention says (a schema version, and a ``source`` on every record that states a fact, or one for the whole file).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from ascend_compat import _data

PACKAGE_ROOT = Path(str(resources.files("ascend_compat")))


def _json_files_on_disk() -> set[str]:
    return {p.relative_to(PACKAGE_ROOT.parent).as_posix() for p in PACKAGE_ROOT.rglob("*.json")}


def test_every_json_file_in_the_package_is_declared() -> None:
    declared = {spec.where for spec in _data.DATA_FILES.values()}
    assert _json_files_on_disk() - declared == set(), "declare new data files in ascend_compat/_data.py"
    assert declared - _json_files_on_disk() == set(), "a declared data file is missing"


@pytest.mark.parametrize("name", sorted(_data.DATA_FILES))
def test_data_file_shape(name: str) -> None:
    spec = _data.DATA_FILES[name]
    data = _data.load(name)
    assert data is _data.load(name)  # read once, then cached
    version = data.get("schema_version", data.get("schema"))
    assert isinstance(version, int) and version >= 1, f"{spec.where}: needs an integer schema_version"
    if not spec.records:
        assert isinstance(data.get("source"), str) and data["source"].strip(), (
            f"{spec.where}: declares no records, so the file itself needs a source")
    for path in spec.records:
        found = list(_data.records(data, path))
        assert found, f"{spec.where}: {path} names no records (moved or renamed?)"
        for where, record in found:
            assert isinstance(record, dict), f"{spec.where}: {where} is not an object"
            source = record.get("source")
            assert isinstance(source, str) and source.strip(), f"{spec.where}: {where} has no source"


def test_records_paths() -> None:
    data = {"a": [{"source": "x"}, {"b": {"c": 1}}], "d": {"e": {"f": 2}}}
    assert list(_data.records(data, "a.*")) == [("a[0]", {"source": "x"}), ("a[1]", {"b": {"c": 1}})]
    assert list(_data.records(data, "d.*.f")) == [("d.e.f", 2)]
    assert list(_data.records(data, "missing.*")) == []


def test_load_names_the_file_on_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KeyError, match="no data file named 'nope'"):
        _data.load("nope")
    bad = _data.DataFile("broken", "ascend_compat", "broken.json")
    monkeypatch.setitem(_data.DATA_FILES, "broken", bad)
    monkeypatch.setattr(_data.DataFile, "read_text", lambda self: "[1, 2]")
    _data.load.cache_clear()
    try:
        with pytest.raises(_data.DataError, match=r"ascend_compat/broken.json: the top level must be a JSON object"):
            _data.load("broken")
        monkeypatch.setattr(_data.DataFile, "read_text", lambda self: "{oops")
        with pytest.raises(_data.DataError, match=r"ascend_compat/broken.json: not valid JSON"):
            _data.load("broken")
    finally:
        _data.load.cache_clear()


def test_loaded_equals_the_file_text() -> None:
    for name, spec in _data.DATA_FILES.items():
        assert _data.load(name) == json.loads((PACKAGE_ROOT.parent / spec.where).read_text("utf-8")), name
