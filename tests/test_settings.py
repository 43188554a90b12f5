"""settings.py: every environment variable the package reads, typed, documented in the README, errors named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ascend_compat import settings

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ascend_compat"


def test_readme_table_is_generated_from_settings() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"<!-- settings-table:start -->\n(.*?)\n<!-- settings-table:end -->", readme, re.S)
    assert block, "README.md lost its settings table markers"
    assert block.group(1) == settings.markdown_table(), "regenerate the table with settings.markdown_table()"


def test_every_ascend_compat_variable_in_src_is_declared() -> None:
    declared = {s.name for s in settings.ALL}
    attrs = {name: value.name for name, value in vars(settings).items() if isinstance(value, settings.Setting)}
    used: set[str] = set()
    for path in SRC.rglob("*.py"):
        if path.name == "settings.py" and path.parent == SRC:
            continue
        text = path.read_text("utf-8")
        used |= set(re.findall(r"\bASCEND_COMPAT_[A-Z0-9_]*[A-Z0-9]\b", text))
        used |= {attrs[a] for a in re.findall(r"\bsettings\.([A-Z][A-Z0-9_]*)\b", text) if a in attrs}
    used.discard("ASCEND_COMPAT_SIM_")  # the prefix, tested for "any simulator variable set"
    assert used - declared == set(), "declare new variables in ascend_compat/settings.py"
    ours = {s.name for s in settings.ALL if s.ours}
    assert ours - used == set(), "a declared variable is no longer read anywhere"
    assert set(attrs.values()) == declared, "every Setting of the module is listed in settings.ALL"


def test_names_are_unique_and_documented() -> None:
    names = [s.name for s in settings.ALL]
    assert len(names) == len(set(names))
    for s in settings.ALL:
        assert s.doc.strip() and s.values.strip(), s.name
        assert s.ours == s.name.startswith("ASCEND_COMPAT_"), s.name


@pytest.mark.parametrize(("setting", "text", "value"), [
    (settings.AUTO_ACTIVATE, "1", True), (settings.AUTO_ACTIVATE, "No", False), (settings.AUTO_ACTIVATE, "", False),
    (settings.FLASH_ATTN, None, True), (settings.FLASH_ATTN, "0", False),
    (settings.FALLBACK_TIMING, None, None), (settings.FALLBACK_TIMING, "on", True),
    (settings.CUDA_AVAILABLE, " TRUE ", "true"), (settings.CUDA_CAPABILITY, "9.0", (9, 0)),
    (settings.CUDA_CAPABILITY, None, (8, 0)), (settings.LOG_LEVEL, "debug", "DEBUG"),
    (settings.DTYPE_POLICY, "Warn", "warn"), (settings.SIMULATE, "npu", "npu"), (settings.SIMULATE, "  ", None),
    (settings.SIM_DEVICES, "4", 4), (settings.SIM_UNSUPPORTED_OPS, "aten::nonzero, aten::sort,", (
        "aten::nonzero", "aten::sort")), (settings.SIM_MEMORY_LIMIT, "2GiB", 2 << 30),
    (settings.SIM_MEMORY_LIMIT, "512M", 512 << 20), (settings.SIM_MEMORY_LIMIT, "1000", 1000),
    (settings.SIM_FLOAT64, None, "allow"), (settings.LOCAL_WORLD_SIZE, "8", 8),
])
def test_values_parse(setting: settings.Setting[object], text: str | None, value: object) -> None:
    environ = {} if text is None else {setting.name: text}
    assert setting.get(environ) == value


@pytest.mark.parametrize(("setting", "text"), [
    (settings.AUTO_ACTIVATE, "maybe"), (settings.CUDA_AVAILABLE, "sometimes"), (settings.CUDA_CAPABILITY, "8"),
    (settings.LOG_LEVEL, "loud"), (settings.DTYPE_POLICY, "cast"), (settings.SIMULATE, "gpu"),
    (settings.SIM_DEVICES, "0"), (settings.SIM_DEVICES, "two"), (settings.SIM_MEMORY_LIMIT, "lots"),
    (settings.SIM_MEMORY_LIMIT, "-1G"), (settings.SIM_FLOAT64, "deny"),
])
def test_bad_values_name_the_variable(setting: settings.Setting[object], text: str) -> None:
    with pytest.raises(settings.SettingError) as info:
        setting.get({setting.name: text})
    message = str(info.value)
    assert message.startswith(f"{setting.name}={text!r}: ") and setting.values in message


def test_reads_the_process_environment_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASCEND_COMPAT_SIMULATE", raising=False)
    assert settings.SIMULATE.get() is None and not settings.SIMULATE.is_set()
    monkeypatch.setenv("ASCEND_COMPAT_SIMULATE", "NPU")
    assert settings.SIMULATE.get() == "npu" and settings.SIMULATE.is_set()


def test_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ASCEND_COMPAT_CACHE_DIR", str(tmp_path / "mine"))
    assert settings.cache_root() == str(tmp_path / "mine")
    monkeypatch.delenv("ASCEND_COMPAT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert settings.cache_root() == str(tmp_path / "ascend_compat")
