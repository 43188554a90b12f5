"""Real transformers / accelerate code and the flash_attn drop-in under the shim, each in a fresh process (forked from
a warm interpreter that has imported torch and the package's CLI, tests/_forkserver.py)."""

from __future__ import annotations

import pytest

from tests._forkserver import run_code

pytest.importorskip("transformers")
SIM = {"ASCEND_COMPAT_SIMULATE": "npu"}


def _ok(proc) -> str:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


@pytest.mark.slow
def test_import_flash_attn_gives_the_drop_in_and_deactivation_removes_it():
    out = _ok(
        run_code(
            """
            import importlib.metadata, sys
            import ascend_compat
            ascend_compat.activate()
            import flash_attn
            from flash_attn import flash_attn_func, flash_attn_varlen_func, flash_attn_with_kvcache
            from flash_attn.bert_padding import pad_input, unpad_input, index_first_axis
            from flash_attn.flash_attn_interface import flash_attn_qkvpacked_func
            from flash_attn.layers.rotary import apply_rotary_emb
            assert importlib.metadata.version("flash_attn") == flash_attn.__version__
            assert importlib.util.find_spec("flash_attn") is not None
            from transformers.utils import is_flash_attn_2_available
            assert is_flash_attn_2_available()
            for bad in ("flash_attn.ops.triton.layer_norm", "flash_attn.modules.mha", "flash_attn.losses"):
                try:
                    __import__(bad)
                except ImportError:
                    pass
                else:
                    raise AssertionError(bad + " imported")
            try:
                flash_attn.flash_attn_triton_func
            except AttributeError:
                pass
            else:
                raise AssertionError("unknown name resolved")
            ascend_compat.deactivate()
            # The drop-in and the import hooks are gone; the package's one finder stays, serving only the
            # simulator's torch_npu (installed for the process).
            from ascend_compat import _import_hooks
            ours = [f for f in sys.meta_path if type(f).__module__.startswith("ascend_compat.")]
            assert ours == [_import_hooks.FINDER], ours
            assert _import_hooks.provisions() == [("torch_npu", "replace")], _import_hooks.provisions()
            assert _import_hooks.pending() == {}, _import_hooks.pending()
            assert not any(n == "flash_attn" or n.startswith("flash_attn.") for n in sys.modules)
            try:
                import flash_attn
            except ImportError:
                print("GONE")
            """,
            env=SIM,
        )
    )
    assert "GONE" in out


@pytest.mark.slow
def test_cpu_fallback_has_no_flash_attn_and_transformers_uses_sdpa_with_one_warning():
    out = _ok(
        run_code(
            """
            import warnings, torch, ascend_compat
            assert ascend_compat.activate() == "cpu"
            try:
                import flash_attn
            except ImportError:
                print("NO-FLASH-ATTN")
            from transformers import LlamaConfig, LlamaForCausalLM
            cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, num_key_value_heads=1)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.manual_seed(0)
                fa = LlamaForCausalLM._from_config(cfg, attn_implementation="flash_attention_2").cuda()
                fa2 = LlamaForCausalLM._from_config(cfg, attn_implementation="flash_attention_2")
            ours = [w for w in caught if "ascend-compat" in str(w.message)]
            assert len(ours) == 1 and "sdpa" in str(ours[0].message), [str(w.message) for w in caught]
            assert fa.config._attn_implementation == "sdpa"
            torch.manual_seed(0)
            eager = LlamaForCausalLM._from_config(cfg, attn_implementation="eager")
            ids = torch.randint(0, 64, (2, 7))
            assert torch.allclose(fa(ids).logits, eager(ids).logits, atol=1e-5)
            print("SDPA-OK")
            """,
            env={"ASCEND_COMPAT_BACKEND": "cpu"},
        )
    )
    assert "NO-FLASH-ATTN" in out and "SDPA-OK" in out


@pytest.mark.slow
def test_llama_qwen2_mistral_attention_implementations_match_eager_on_npu():
    out = _ok(
        run_code(
            """
            import torch, ascend_compat
            ascend_compat.activate()
            from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                                      Qwen2Config, Qwen2ForCausalLM)
            small = dict(vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
            cases = [
                ("llama", LlamaForCausalLM, LlamaConfig(**small)),
                ("qwen2", Qwen2ForCausalLM, Qwen2Config(**small)),
                ("mistral-window4", MistralForCausalLM, MistralConfig(sliding_window=4, **small)),
            ]
            ids = torch.randint(0, 100, (2, 12)).cuda()
            mask = torch.ones_like(ids)
            mask[1, :5] = 0  # left padding: transformers unpads and takes the varlen path
            for name, cls, cfg in cases:
                logits = {}
                for impl in ("eager", "sdpa", "flash_attention_2"):
                    torch.manual_seed(0)
                    model = cls._from_config(cfg, attn_implementation=impl, dtype=torch.float16).cuda()
                    assert model.device.type == "npu" and model.config._attn_implementation == impl
                    logits[impl] = model(ids, attention_mask=mask).logits.float().cpu()
                    if impl == "flash_attention_2":  # training through the fused op's backward
                        loss = model(ids, attention_mask=mask, labels=ids).loss
                        loss.backward()
                        assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
                keep = mask.bool().cpu()
                for impl in ("sdpa", "flash_attention_2"):
                    err = (logits[impl] - logits["eager"])[keep].abs().max().item()
                    assert err < 5e-3, (name, impl, err)
                print(name, "OK")
            from ascend_compat.ecosystem import patching
            assert patching.status()["transformers.npu-flash-attention-window"] == "applied"
            """,
            env=SIM,
        )
    )
    assert out.count("OK") == 3


@pytest.mark.slow
def test_device_map_auto_trainer_and_backend_map_pick_npu(tmp_path):
    out = _ok(
        run_code(
            f"""
            import torch, torch.distributed as dist, ascend_compat
            ascend_compat.activate()
            from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
            assert dist.Backend.default_device_backend_map["npu"] == "hccl"
            cfg = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, num_key_value_heads=1)
            LlamaForCausalLM(cfg).save_pretrained({str(tmp_path / "m")!r})
            placed = LlamaForCausalLM.from_pretrained({str(tmp_path / "m")!r}, device_map="auto")
            assert {{p.device.type for p in placed.parameters()}} == {{"npu"}}, placed.device
            args = TrainingArguments(output_dir={str(tmp_path / "out")!r}, per_device_train_batch_size=2,
                                     max_steps=3, save_steps=3, report_to=[], bf16=True, logging_steps=1)
            assert args.device.type == "npu", args.device

            class Data(torch.utils.data.Dataset):
                def __len__(self):
                    return 8
                def __getitem__(self, i):
                    x = torch.arange(8) + i
                    return {{"input_ids": x, "labels": x}}

            trainer = Trainer(model=LlamaForCausalLM(cfg), args=args, train_dataset=Data())
            result = trainer.train()
            assert result.global_step == 3 and trainer.model.device.type == "npu"
            print("TRAINER-OK")
            """,
            env=SIM,
        )
    )
    assert "TRAINER-OK" in out


@pytest.mark.slow
def test_accelerate_mixed_precision_on_npu():
    out = _ok(
        run_code(
            """
            import torch, ascend_compat
            ascend_compat.activate()
            from accelerate import Accelerator
            from accelerate.state import AcceleratorState
            for mp, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                acc = Accelerator(mixed_precision=mp)
                assert acc.device.type == "npu", acc.device
                torch.manual_seed(0)
                model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).cuda()
                seen = []
                model[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
                opt = torch.optim.SGD(model.parameters(), lr=0.05)
                model, opt = acc.prepare(model, opt)
                x = torch.randn(64, 8).cuda()
                y = x.sum(-1, keepdim=True)
                losses = []
                for _ in range(6):  # fp16's GradScaler skips the first steps (overflow at scale 65536), as on CUDA
                    loss = torch.nn.functional.mse_loss(model(x).float(), y)
                    acc.backward(loss)
                    opt.step()
                    opt.zero_grad()
                    losses.append(loss.item())
                assert set(seen) == {dtype}, seen  # autocast really ran in the low precision on the npu
                assert losses[-1] < losses[0], losses
                print(mp, "OK")
                AcceleratorState._reset_state(True)
            """,
            env=SIM,
        )
    )
    assert "bf16 OK" in out and "fp16 OK" in out


def test_deactivation_restores_library_objects_and_cancels_waiting_patches():
    out = _ok(
        run_code(
            """
            import sys, ascend_compat
            from ascend_compat.ecosystem import patching
            # Activated and deactivated before transformers is imported: nothing may patch it later.
            ascend_compat.activate()
            assert "waiting" in patching.status()["transformers.npu-flash-attention-window"]
            ascend_compat.deactivate()
            import transformers.integrations.npu_flash_attention as npu_fa
            from ascend_compat import _import_hooks
            assert "transformers.integrations.npu_flash_attention" not in _import_hooks.pending()
            original = npu_fa.npu_flash_attn_func, npu_fa.npu_flash_attn_varlen_func
            # Activated after the import: the patch applies at once, and deactivation puts the originals back.
            ascend_compat.activate()
            assert npu_fa.npu_flash_attn_func is not original[0]
            import inspect
            assert "window_size" in inspect.signature(npu_fa.npu_flash_attn_func).parameters
            ascend_compat.deactivate()
            assert (npu_fa.npu_flash_attn_func, npu_fa.npu_flash_attn_varlen_func) == original
            print("RESTORED")
            """,
            env=SIM,
        )
    )
    assert "RESTORED" in out


def test_a_failing_library_patch_is_rolled_back_and_the_import_still_works():
    out = _ok(
        run_code(
            """
            import ascend_compat
            from ascend_compat.ecosystem import patching

            def half_then_fail(ledger, module, backend):
                ledger.setattr(module, "JSONDecodeError", None)
                raise RuntimeError("boom")

            patching.register(patching.LibraryPatch(
                name="test.fails", library="json", module="json", why="test", how="test", tested=(),
                upstream="none", apply=half_then_fail, when=lambda backend: None))
            ascend_compat.activate()
            import json
            assert json.JSONDecodeError is not None  # the half-applied change was rolled back
            assert patching.status()["test.fails"].startswith("failed: RuntimeError: boom")
            ascend_compat.deactivate()
            print("ROLLED-BACK")
            """,
            env={"ASCEND_COMPAT_BACKEND": "cpu"},
        )
    )
    assert "ROLLED-BACK" in out


def test_every_library_patch_documents_itself():
    from ascend_compat.ecosystem import patching

    patching._load_builtin()
    assert patching.PATCHES
    for p in patching.PATCHES:
        assert p.why and p.how and p.tested and p.upstream, p.name
        assert p.name.startswith(p.library.replace("-", "_") + "."), p.name
        assert p.module.split(".")[0] == p.library.replace("-", "_"), p.name


def test_info_json_lists_libraries_native_support_and_patches():
    import json

    from tests._forkserver import cli
    from tests.conftest import ROOT, _clean_env

    proc = cli("info", "--json", env={**_clean_env(), **SIM}, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {r["library"]: r for r in json.loads(proc.stdout)["libraries"]}
    assert any("flash_attention_2" in n for n in rows["transformers"]["native"])
    assert "hccl" in " ".join(rows["accelerate"]["native"])
    names = {p["name"] for p in rows["transformers"]["patches"]}
    assert names == {"transformers.npu-flash-attention-window", "transformers.cpu-flash-attention-fallback"}
    assert all(p["why"] and p["tested"] for p in rows["transformers"]["patches"])
    assert rows["flash_attn"]["version"] is None  # the real package is not installed here
