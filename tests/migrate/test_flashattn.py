"""flash_attn imports against ascend-compat's drop-in: reported as covered, rewritten by ``port --mode native``."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

from ascend_compat.ecosystem import flash_attn_provider
from ascend_compat.migrate import flashattn
from ascend_compat.migrate.port import PortSkip, PortSuccess, port_source
from ascend_compat.migrate.pyscan import scan_python


def _codes(text: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in scan_python("f.py", text).findings]


def test_modules_read_from_the_sources_are_the_ones_the_import_hook_serves() -> None:
    served = {"flash_attn", *(f"flash_attn.{s}" for s in flash_attn_provider.SUBMODULES)}
    assert set(flashattn.drop_in_modules()) == served


def test_every_name_port_may_write_exists_in_the_drop_in() -> None:
    for module, names in flashattn.drop_in_modules().items():
        mod = importlib.import_module(flashattn.DROP_IN + module[len("flash_attn"):])
        for name in names:
            assert hasattr(mod, name) or importlib.util.find_spec(f"{mod.__name__}.{name}"), (module, name)
    assert "flash_attn_varlen_func" in flashattn.drop_in_modules()["flash_attn"]
    assert {"pad_input", "unpad_input"} <= flashattn.drop_in_modules()["flash_attn.bert_padding"]


def test_ported_imports_bind_what_the_originals_bound() -> None:
    original = (
        "import flash_attn.bert_padding\n"
        "import flash_attn.flash_attn_interface\n"
        "import flash_attn as fa, json\n"
        "import flash_attn.layers.rotary as rot\n"
        "from flash_attn import flash_attn_func as attn, __version__\n"
        "from flash_attn.layers import rotary\n"
        "from flash_attn.layers.rotary import apply_rotary_emb\n"
    )
    r = port_source("f.py", original, "native")
    assert isinstance(r, PortSuccess) and {c.code for c in r.changes} == {"AC703"}
    assert "import torch_npu" not in r.text  # the drop-in imports what it needs itself
    ns: dict = {}
    exec(compile(r.text, "f.py", "exec"), ns)  # flash-attn itself is not installed here: only the drop-in imports
    drop_in = importlib.import_module(flashattn.DROP_IN)
    assert ns["flash_attn"] is drop_in and ns["fa"] is drop_in and ns["json"] is importlib.import_module("json")
    padding = importlib.import_module(f"{flashattn.DROP_IN}.bert_padding")
    assert ns["flash_attn"].bert_padding.pad_input is padding.pad_input
    assert ns["flash_attn"].flash_attn_interface.flash_attn_func is drop_in.flash_attn_func is ns["attn"]
    assert ns["rot"] is ns["rotary"] and ns["apply_rotary_emb"] is ns["rot"].apply_rotary_emb
    assert ns["__version__"] == drop_in.__version__
    assert port_source("f.py", r.text, "native").__class__ is PortSkip  # idempotent: nothing left to rewrite


@pytest.mark.parametrize("line,why", [
    ("from flash_attn.modules.mha import MHA", "no `flash_attn.modules.mha`"),
    ("import flash_attn.ops.triton.layer_norm", "no `flash_attn.ops.triton.layer_norm`"),
    ("from flash_attn.flash_attn_interface import _flash_attn_forward", "no `flash_attn.flash_attn_interface._flash"),
    ("from flash_attn import *", "star import"),
])
def test_what_the_drop_in_lacks_is_reported_and_kept(line: str, why: str) -> None:
    text = f"{line}\n"
    (f,) = scan_python("f.py", text).findings
    assert f.code == "AC702" and why in f.message and not f.is_fixable and f.alternative
    assert isinstance(port_source("f.py", text, "native"), PortSkip)


def test_covered_imports_are_one_note_per_file_with_every_rewrite() -> None:
    text = "import torch\nfrom flash_attn import flash_attn_func\nfrom flash_attn.bert_padding import pad_input\n"
    (f,) = [x for x in scan_python("f.py", text).findings]
    assert (f.line, f.code, f.effective_level) == (2, "AC703", "note") and len(f.edits) == 2 and f.is_fixable
    assert f.rule.shim_handles and f.effort_days == 0.0


def test_unusual_spellings_are_reported_without_a_rewrite() -> None:
    text = "import flash_attn, \\\n    json\nfrom  flash_attn import flash_attn_func\n"
    r = port_source("f.py", text, "native")
    assert isinstance(r, PortSuccess)
    rewritten = "from  ascend_compat.ecosystem.flash_attn import flash_attn_func\n"
    assert r.text == "import flash_attn, \\\n    json\n" + rewritten
    assert _codes(r.text) == [(1, "AC703")]  # the continued line stays as it was, still reported


def test_relative_and_lookalike_imports_are_not_flash_attn() -> None:
    assert _codes("from .flash_attn import attend\nimport flash_attn_triton\nfrom mypkg.flash_attn import x\n") == []


def test_rewritten_imports_bind_exactly_the_names_the_originals_bound() -> None:
    # An extra binding (say `ascend_compat`) in a function makes that name local there: UnboundLocalError at its
    # earlier uses of the global.
    def bound(path: Path) -> list[list[str]]:
        tree = ast.parse(path.read_text())
        return [sorted({a.asname or a.name.split(".")[0] for a in node.names})
                for node in ast.walk(tree) if isinstance(node, ast.Import)]

    fixtures = Path(__file__).parent / "fixtures" / "port"
    assert bound(fixtures / "flash_attn_imports.in.py") == bound(fixtures / "flash_attn_imports.out.py")


def test_covered_imports_port_cannot_rewrite_are_left_for_a_person() -> None:
    text = (Path(__file__).parent / "fixtures" / "python" / "flash_attn_spelling.py").read_text()
    result = port_source("f.py", text, "native")
    assert isinstance(result, PortSuccess)
    assert "from ascend_compat.ecosystem.flash_attn import flash_attn_func" in result.text
    assert "import flash_attn.bert_padding \\" in result.text and "from flash_attn . bert_padding" in result.text
    assert [(f.line, f.code) for f in result.unfixed] == [(2, "AC703"), (5, "AC703")]
    shim = port_source("f.py", text, "shim")  # the shim serves those imports as they are
    assert not [f for f in shim.unfixed if f.code == "AC703"]
