"""Autocast really casts on the npu; training, checkpoints, deepcopy and pinned DataLoaders work."""

from __future__ import annotations

import copy

import pytest


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_autocast_casts_matmul_low_and_softmax_fp32(sim, dtype_name):
    torch = sim
    dtype = getattr(torch, dtype_name)
    a, b = torch.randn(8, 8, device="npu"), torch.randn(8, 8, device="npu")
    lin = torch.nn.Linear(8, 4).npu()
    with torch.autocast("npu", dtype=dtype):
        mm = a @ b
        out = lin(a)
        sm = torch.softmax(mm, dim=-1)
        loss = torch.nn.functional.cross_entropy(out, torch.zeros(8, dtype=torch.long, device="npu"))
        added = a + b  # not in any list: stays as is
    assert mm.dtype == dtype and out.dtype == dtype
    assert sm.dtype == torch.float32 and loss.dtype == torch.float32
    assert added.dtype == torch.float32
    assert torch.allclose(mm.float().cpu(), (a @ b).cpu(), atol=0.1, rtol=0.02)
    with torch.npu.amp.autocast(dtype=dtype):
        assert (a @ b).dtype == dtype
    with torch.autocast("npu", enabled=False):
        assert (a @ b).dtype == torch.float32


def test_gradscaler_training_step_decreases_loss(sim):
    torch = sim
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 1)).npu()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.npu.amp.GradScaler()
    x, y = torch.randn(64, 16, device="npu"), torch.randn(64, 1, device="npu")
    losses = []
    for _ in range(20):
        opt.zero_grad()
        with torch.autocast("npu", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert scaler.get_scale() > 0
    assert all(p.grad.device.type == "npu" for p in model.parameters())


def test_sgd_training_matches_cpu_exactly(sim):
    torch = sim
    torch.manual_seed(1)
    cpu_model = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.Tanh(), torch.nn.Linear(20, 3))
    npu_model = copy.deepcopy(cpu_model).npu()
    x, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
    for model, dev in ((cpu_model, "cpu"), (npu_model, "npu")):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(5):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x.to(dev)), y.to(dev)).backward()
            opt.step()
    for p_cpu, p_npu in zip(cpu_model.parameters(), npu_model.parameters()):
        assert torch.equal(p_cpu, p_npu.cpu())


def test_save_load_map_location_and_deepcopy(sim, tmp_path):
    torch = sim
    model = torch.nn.Linear(4, 2).npu()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "step": 3}, path)
    loaded = torch.load(path)  # default weights_only
    assert loaded["model"]["weight"].device == torch.device("npu", 0)
    on_cpu = torch.load(path, map_location="cpu")
    assert on_cpu["model"]["weight"].device.type == "cpu"
    on_npu1 = torch.load(path, map_location="npu:1")
    assert on_npu1["model"]["weight"].device == torch.device("npu", 1)
    via_dict = torch.load(path, map_location={"npu:0": "npu:1"})
    assert via_dict["model"]["bias"].device == torch.device("npu", 1)
    assert torch.equal(on_cpu["model"]["weight"], model.weight.detach().cpu())
    clone = copy.deepcopy(model)
    assert clone.weight.device.type == "npu"
    assert clone.weight.data_ptr() != model.weight.data_ptr()
    assert torch.equal(clone.weight.cpu(), model.weight.cpu())


def test_dataloader_pin_memory_non_blocking(sim):
    torch = sim
    ds = torch.utils.data.TensorDataset(torch.arange(20.0).reshape(10, 2), torch.arange(10))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True)
    seen = 0
    for xb, yb in loader:
        assert xb.is_pinned() and yb.is_pinned()
        xd = xb.to("npu", non_blocking=True)
        assert xd.is_npu and torch.equal(xd.cpu(), xb)
        seen += len(yb)
    assert seen == 10


def test_optimizer_built_before_moving_the_model_still_trains_it(sim):
    # The common CUDA idiom: optimizer on the CPU model, then .to(device). Like torch_npu (and CUDA), moving keeps
    # the Parameter objects (param.data is swapped), so the optimizer updates the model that runs on the npu.
    torch = sim
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    weight = model.weight
    model.to("npu")
    assert model.weight is weight and model.weight.device.type == "npu"
    x = torch.randn(16, 4, device="npu")
    y = x.sum(-1, keepdim=True)
    losses = []
    for _ in range(3):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[2] < losses[0], losses
