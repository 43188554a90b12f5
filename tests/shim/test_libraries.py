"""Real libraries and real launchers under the shim: torchrun DDP, accelerate, transformers, `info`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, _clean_env, run_python


def _torchrun(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**_clean_env(), "OMP_NUM_THREADS": "1", **(env or {})}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=full, cwd=str(ROOT))


@pytest.mark.slow
@pytest.mark.parametrize("simulate", [True, False])
def test_unchanged_nccl_ddp_script_under_torchrun(simulate):
    sim = ["--simulate", "npu"] if simulate else []
    proc = _torchrun(["-m", "ascend_compat", "run", *sim, "examples/ddp_cuda.py"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    backend, dev = ("hccl", "npu") if simulate else ("gloo", "cpu")
    for rank in (0, 1):
        expected_dev = f"{dev}:{rank}" if simulate else dev
        assert f"rank {rank}: backend {backend}, device {expected_dev}," in proc.stdout, proc.stdout


@pytest.mark.slow
def test_accelerate_picks_npu_and_hccl_under_torchrun(tmp_path):
    worker = tmp_path / "acc.py"
    worker.write_text(
        "import torch\n"
        "from accelerate import Accelerator\n"
        "acc = Accelerator()\n"
        "t = acc.reduce(torch.ones(2, device=acc.device) * (acc.process_index + 1), reduction='sum')\n"
        "print(f'rank {acc.process_index} device {acc.device} backend {acc.state.backend} '\n"
        "      f'type {acc.distributed_type} sum {t.tolist()}')\n"
    )
    proc = _torchrun(["-m", "ascend_compat", "run", "--simulate", "npu", str(worker)])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "rank 0 device npu:0 backend hccl type DistributedType.MULTI_NPU sum [3.0, 3.0]" in proc.stdout
    assert "rank 1 device npu:1 backend hccl" in proc.stdout


def test_transformers_gpt2_cuda_code_on_simulated_npu():
    out = run_python(
        """
        import torch, transformers, ascend_compat
        ascend_compat.activate()
        torch.manual_seed(0)
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=500, n_positions=64)
        model = transformers.GPT2LMHeadModel(cfg).cuda()
        assert model.device.type == "npu"
        ids = torch.randint(0, 500, (2, 10)).cuda()
        gen = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=5, do_sample=False,
                             pad_token_id=0)
        assert gen.shape == (2, 15) and gen.device.type == "npu"
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < losses[0], losses
        print("OK")
        """,
        env={"ASCEND_COMPAT_SIMULATE": "npu"},
    )
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("simulate", [True, False])
def test_info_json(simulate):
    env = {**_clean_env(), **({"ASCEND_COMPAT_SIMULATE": "npu"} if simulate else {})}
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "info", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1
    assert data["chosen"] == ("npu" if simulate else "cpu")
    npu = next(b for b in data["backends"] if b["name"] == "npu")
    assert npu["collective_backend"] == "hccl" and npu["available"] is simulate
    assert data["versions"]["torch"].startswith("2.")
    assert (data["versions"]["torch_npu"] or "").endswith("+simulated") is simulate
    human = subprocess.run([sys.executable, "-m", "ascend_compat", "info"], capture_output=True, text=True, env=env)
    assert "chosen backend:" in human.stdout
