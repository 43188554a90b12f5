"""torch.compile helpers: backend choice from what is really registered, and bucketing that bounds recompiles."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

import pytest

from ascend_compat.cuda_shim.compile_helpers import (
    ShapeBucketer,
    available_backends,
    describe_compile_backend,
    get_compile_backend,
    suggest_buckets,
)
from tests.conftest import ROOT, _clean_env, run_python

torch = pytest.importorskip("torch")

LENGTHS = [3, 5, 7, 9, 12, 16, 17, 30, 31]  # 9 distinct lengths, 3 buckets
BUCKETS = [8, 16, 32]


def _masked_sum(x, mask):
    return (x * mask.to(x.dtype)).sum(-1)


def _count_compiles(fn, inputs):
    """Compile ``fn`` with dynamic=False and a CompileCounter backend; return (frame_count, outputs)."""
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, dynamic=False)
    with torch._dynamo.config.patch(recompile_limit=64):
        outputs = [compiled(*args) for args in inputs]
    torch._dynamo.reset()
    return counter.frame_count, outputs


def test_without_bucketing_every_length_recompiles():
    inputs = [(torch.randn(2, n), torch.ones(2, n)) for n in LENGTHS]
    frames, _ = _count_compiles(_masked_sum, inputs)
    assert frames == len(set(LENGTHS))


def test_bucketing_bounds_recompiles_and_keeps_results():
    bucketer = ShapeBucketer(BUCKETS)
    xs = [torch.randn(2, n) for n in LENGTHS]
    padded = [bucketer.pad_with_mask(x) for x in xs]
    frames, outputs = _count_compiles(_masked_sum, padded)
    used = {bucketer.bucket_for(n) for n in LENGTHS}
    assert frames == len(used) == 3
    for x, out in zip(xs, outputs):
        torch.testing.assert_close(out, x.sum(-1))
    stats = bucketer.stats()
    assert stats["calls"] == len(LENGTHS)
    assert stats["per_bucket"] == {"8": 3, "16": 3, "32": 3}
    assert stats["distinct_input_lengths"] == 9
    assert stats["shapes_avoided"] == 9 - 3


def test_dynamo_counters_agree_with_bucket_count():
    from torch._dynamo.utils import counters

    bucketer = ShapeBucketer(BUCKETS)
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(_masked_sum, backend="eager", dynamic=False)
    for n in LENGTHS:
        compiled(*bucketer.pad_with_mask(torch.randn(1, n)))
    assert counters["stats"]["unique_graphs"] == 3
    torch._dynamo.reset()


def test_pad_unpad_round_trip_on_a_middle_dim():
    bucketer = ShapeBucketer([4, 8], dim=1, pad_value=-1.0)
    x = torch.randn(2, 5, 3)
    padded, mask = bucketer.pad_with_mask(x)
    assert padded.shape == (2, 8, 3) and mask.shape == (2, 8) and mask.dtype == torch.bool
    assert torch.equal(padded[:, :5], x) and bool((padded[:, 5:] == -1).all())
    assert mask[:, :5].all() and not mask[:, 5:].any()
    torch.testing.assert_close(bucketer.unpad(padded, mask), x)
    torch.testing.assert_close(bucketer.unpad(padded, 5), x)


def test_exact_bucket_is_not_copied_and_existing_mask_is_extended():
    bucketer = ShapeBucketer([4, 8], mask_dtype=torch.long)
    x = torch.arange(8).reshape(1, 8)
    padded, mask = bucketer.pad_with_mask(x)
    assert padded is x and mask.dtype == torch.long and int(mask.sum()) == 8
    ids = torch.tensor([[5, 6, 7], [0, 8, 9]])
    attn = torch.tensor([[1, 1, 1], [0, 1, 1]])  # a left-padded row stays as it was
    padded, mask = bucketer.pad_with_mask(ids, attention_mask=attn)
    assert mask.tolist() == [[1, 1, 1, 0], [0, 1, 1, 0]]
    assert bucketer.unpad(padded, mask).tolist() == ids.tolist()


def test_pad_returns_the_padded_tensor_for_the_model_as_in_the_readme():
    # The README / seed form: `padded_input = bucketer.pad(input_tensor, dim=1)`, fed straight into the model.
    bucketer = ShapeBucketer(buckets=[128, 256, 512, 1024, 2048])
    input_tensor = torch.randn(2, 200, 16)
    padded_input = bucketer.pad(input_tensor, dim=1)
    assert isinstance(padded_input, torch.Tensor) and padded_input.shape == (2, 256, 16)
    assert torch.equal(padded_input[:, :200], input_tensor) and not padded_input[:, 200:].any()
    model = torch.nn.Linear(16, 4)
    assert model(padded_input).shape == (2, 256, 4)
    assert bucketer.dim == -1  # the call's dim does not change the bucketer's
    assert bucketer.pad(torch.zeros(3, 100)).shape == (3, 128)
    with_mask, mask = bucketer.pad_with_mask(input_tensor, dim=1)
    assert torch.equal(with_mask, padded_input) and mask.shape == (2, 256) and int(mask.sum()) == 400
    assert bucketer.stats()["calls"] == 3
    with pytest.raises(TypeError):
        bucketer.pad(input_tensor, torch.ones(2, 200))  # no positional mask: pad_with_mask takes one
    with pytest.raises(ValueError, match="out of range"):
        bucketer.pad(input_tensor, dim=3)


def test_overflow_policies():
    with pytest.raises(ValueError, match="larger than the largest bucket"):
        ShapeBucketer([4, 8]).pad(torch.zeros(1, 9))
    bucketer = ShapeBucketer([4, 8], overflow="multiple")
    padded, _ = bucketer.pad_with_mask(torch.zeros(1, 9))
    assert padded.shape[-1] == 16
    assert bucketer.stats()["overflows"] == 1


def test_suggested_buckets_cover_every_length():
    lengths = [3, 5, 7, 9, 12, 16, 17, 30, 31, 100]
    buckets = suggest_buckets(lengths, count=3, multiple=8)
    assert buckets == sorted(buckets) and len(buckets) <= 3
    assert all(b % 8 == 0 for b in buckets) and buckets[-1] >= max(lengths)
    bucketer = ShapeBucketer(buckets)
    for n in lengths:
        bucketer.pad(torch.zeros(1, n))
    assert bucketer.stats()["distinct_padded_lengths"] <= 3
    assert suggest_buckets([5, 5, 5]) == [8]
    with pytest.raises(ValueError, match="no lengths"):
        suggest_buckets([])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"buckets": []}, "at least one"),
        ({"buckets": [0, 8]}, "positive integers"),
        ({"buckets": [8, 8]}, "distinct"),
        ({"buckets": [8], "overflow": "truncate"}, "overflow"),
    ],
)
def test_invalid_configuration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ShapeBucketer(**kwargs)


def test_bad_inputs_get_clear_errors():
    bucketer = ShapeBucketer([8], dim=2)
    with pytest.raises(ValueError, match="out of range"):
        bucketer.pad(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="0-dimensional"):
        bucketer.pad(torch.tensor(1.0))
    with pytest.raises(ValueError, match="does not match"):
        ShapeBucketer([8]).pad_with_mask(torch.zeros(2, 3), attention_mask=torch.ones(2, 4))


def test_pad_keeps_tensors_on_the_simulated_npu(sim):
    bucketer = ShapeBucketer([16])
    x = torch.randn(2, 10, device="npu:1")
    padded, mask = bucketer.pad_with_mask(x)
    assert padded.device == x.device and mask.device == x.device
    torch.testing.assert_close(bucketer.unpad(padded, mask).cpu(), x.cpu())


def test_cpu_backend_choice_follows_the_compiler():
    name, reason = describe_compile_backend(device_type="cpu")
    expected = "inductor" if shutil.which("g++") or shutil.which("clang++") or shutil.which("c++") else "eager"
    assert name == expected and reason
    assert name in available_backends()


def test_npu_without_registered_backend_falls_back_to_eager():
    assert "npu" not in available_backends()
    name, reason = describe_compile_backend(device_type="npu")
    assert name == "eager" and "npu" in reason
    assert get_compile_backend(device_type="npu") == "eager"


def test_requested_backend_must_be_registered():
    assert describe_compile_backend("eager") == ("eager", "requested")
    assert get_compile_backend("eager") == "eager"
    with pytest.raises(ValueError, match="not registered"):
        get_compile_backend("no_such_backend")


@pytest.mark.slow
def test_npu_backend_is_chosen_once_torch_npu_registers_it(tmp_path):
    # What torch_npu does at import: register an 'npu' dynamo backend; torchair decides whether it is a graph one.
    (tmp_path / "torchair").mkdir()
    (tmp_path / "torchair" / "__init__.py").write_text("")
    code = f"""
        import sys, torch
        from ascend_compat import simulate
        simulate.install(device_count=1)
        from torch._dynamo import register_backend
        from ascend_compat.cuda_shim.compile_helpers import describe_compile_backend, get_compile_backend
        calls = []
        def npu_backend(gm, example_inputs):
            calls.append(len(example_inputs))
            return gm.forward
        register_backend(npu_backend, "npu")
        print(get_compile_backend())
        sys.path.insert(0, {str(tmp_path)!r})
        name, reason = describe_compile_backend()
        print(name, "torchair" in reason)
        f = torch.compile(lambda x: x * 2 + 1, backend=get_compile_backend(), dynamic=False)
        out = f(torch.ones(3, device="npu"))
        print(out.device.type, out.tolist(), len(calls))
        from ascend_compat.cuda_shim.compile_helpers import compile_report
        print(compile_report()["npu_backends"])
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:4] == ["eager", "npu True", "npu [3.0, 3.0, 3.0] 1", "['npu']"]


def test_cli_compile_json():
    env = {**_clean_env(), "ASCEND_COMPAT_SIMULATE": "npu"}
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "compile", "--json"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and data["device"] == "npu"
    assert data["backend"] == "eager" and data["backend"] in data["available_backends"] and data["advice"]
    assert data["npu_backends"] == [] and "no 'npu' backend" in data["reason"]


def test_cli_compile_unknown_backend_fails(capsys, monkeypatch):
    from ascend_compat.cli import compile as compile_cmd

    monkeypatch.setenv("NO_COLOR", "1")
    rc = compile_cmd.main(argparse.Namespace(backend="no_such_backend", json=False))
    out = capsys.readouterr().out
    assert rc == 1 and "not registered" in out and "\033[" not in out
