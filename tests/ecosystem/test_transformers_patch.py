"""``from ascend_compat.ecosystem import transformers_patch; transformers_patch.apply()``, as the README shows it."""

from __future__ import annotations

import pytest

from tests._forkserver import run_code

pytest.importorskip("transformers")
SIM = {"ASCEND_COMPAT_SIMULATE": "npu"}
WINDOW = "transformers.npu-flash-attention-window"
CPU = "transformers.cpu-flash-attention-fallback"


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


@pytest.mark.slow
def test_readme_form_applies_now_idempotently_and_flash_attention_2_loads_on_npu(tmp_path):
    out = _ok(
        run_code(
            f"""
            import inspect, sys, torch
            import ascend_compat
            ascend_compat.activate()

            from ascend_compat.ecosystem import transformers_patch
            from ascend_compat.cuda_shim import _LEDGER
            assert "transformers.integrations.npu_flash_attention" not in sys.modules
            states = transformers_patch.apply()
            assert states[{WINDOW!r}] == "applied", states
            assert states[{CPU!r}].startswith("not needed"), states
            import transformers.integrations.npu_flash_attention as npu_fa
            assert "window_size" in inspect.signature(npu_fa.npu_flash_attn_func).parameters
            patched, entries = npu_fa.npu_flash_attn_func, len(_LEDGER)
            assert transformers_patch.apply() == states  # idempotent: nothing applied twice
            assert npu_fa.npu_flash_attn_func is patched and len(_LEDGER) == entries
            assert transformers_patch.status() == states

            from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
            cfg = LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                              num_attention_heads=4, num_key_value_heads=2)
            LlamaForCausalLM(cfg).save_pretrained({str(tmp_path / "m")!r})
            model = AutoModelForCausalLM.from_pretrained(
                {str(tmp_path / "m")!r}, attn_implementation="flash_attention_2", device_map="auto",
                dtype=torch.float16)
            assert model.device.type == "npu" and model.config._attn_implementation == "flash_attention_2"
            logits = model(torch.randint(0, 100, (2, 9)).cuda()).logits
            assert logits.device.type == "npu" and torch.isfinite(logits).all()
            ascend_compat.deactivate()
            assert npu_fa.npu_flash_attn_func is not patched
            assert "window_size" not in inspect.signature(npu_fa.npu_flash_attn_func).parameters
            print("APPLIED-OK")
            """,
            env=SIM,
        )
    )
    assert "APPLIED-OK" in out


@pytest.mark.slow
def test_apply_activates_the_shim_when_needed_cpu_fallback():
    out = _ok(
        run_code(
            f"""
            import warnings, torch
            from ascend_compat import cuda_shim
            from ascend_compat.ecosystem import transformers_patch
            assert transformers_patch.status() == {{{WINDOW!r}: "inactive", {CPU!r}: "inactive"}}
            states = transformers_patch.apply()
            assert cuda_shim.is_activated() and states[{CPU!r}] == "applied", states
            assert transformers_patch.apply() == states
            from transformers import LlamaConfig, LlamaForCausalLM
            cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, num_key_value_heads=1)
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                model = LlamaForCausalLM._from_config(cfg, attn_implementation="flash_attention_2")
            assert model.config._attn_implementation == "sdpa"
            cuda_shim.deactivate()  # one reference: apply() activated once
            assert not cuda_shim.is_activated()
            print("CPU-OK")
            """,
            env={"ASCEND_COMPAT_BACKEND": "cpu"},
        )
    )
    assert "CPU-OK" in out


def test_apply_with_activation_a_noop_patches_nothing_and_says_why():
    out = _ok(
        run_code(
            """
            from ascend_compat import cuda_shim
            from ascend_compat.ecosystem import transformers_patch
            states = transformers_patch.apply()
            assert all(s.startswith("inactive: ASCEND_COMPAT_NO_PATCH") for s in states.values()), states
            assert transformers_patch.apply() == states and not cuda_shim.is_activated()
            import sys
            assert "transformers.modeling_utils" not in sys.modules
            print("NOOP-OK")
            """,
            env={"ASCEND_COMPAT_NO_PATCH": "1"},
        )
    )
    assert "NOOP-OK" in out
