"""compare(): same weights and inputs on cpu and the simulated npu; the first diverging module is named."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from ascend_compat.verify.model import SCHEMA_VERSION, compare, flatten, render


def _mlp(torch, act):
    model = torch.nn.Sequential(OrderedDict(
        fc1=torch.nn.Linear(8, 16), act=act, fc2=torch.nn.Linear(16, 16), relu=torch.nn.ReLU(),
        out=torch.nn.Linear(16, 4)))  # fmt: skip
    return model, torch.randn(4, 8)


def _status(report):
    return {r.name: r.ok for r in report.layers}


def test_a_layer_that_computes_differently_on_the_npu_is_the_first_divergence(sim):
    torch = sim

    class TanhOffOnNpu(torch.nn.Module):
        def forward(self, x):
            y = torch.tanh(x)
            return y + 1e-2 if x.device.type == "npu" else y  # the injected fault

    report = compare(lambda: _mlp(torch, TanhOffOnNpu()), target="npu")
    assert report.target == "npu" and report.reference == "cpu" and report.simulated
    assert [r.name for r in report.layers] == ["fc1", "act", "fc2", "relu", "out", "(model)"]  # run order, root last
    assert _status(report) == {"fc1": True, "act": False, "fc2": False, "relu": False, "out": False,
                               "(model)": False}
    first = report.first_divergence
    assert first.name == "act" and first.module_type == "TanhOffOnNpu" and first.inputs_ok is True
    max_abs, max_rel, cosine = first.worst()
    assert abs(max_abs - 1e-2) < 1e-6 and max_rel > 0 and cosine < 1.0
    assert not report.ok and not all(d.ok for d in report.outputs)
    text = render(report)
    assert "FIRST DIVERGENCE: act (TanhOffOnNpu)" in text and "verdict: DIVERGED" in text


def test_a_clean_model_matches_forward_and_backward(sim):
    torch = sim
    report = compare(lambda: _mlp(torch, torch.nn.GELU()), target="npu", backward=True)
    assert report.ok and report.first_divergence is None and report.first_backward_divergence is None
    assert len(report.layers) == 6 and all(r.ok for r in report.layers)
    assert {d.path for d in report.param_grads} == {f"{m}.{p}" for m in ("fc1", "fc2", "out")
                                                     for p in ("weight", "bias")}  # fmt: skip
    assert next(r.name for r in report.grads) == "out"  # backward execution order: the last module first
    assert "verdict: MATCH" in render(report)


def test_same_weights_on_both_devices_and_deterministic_seeding(sim):
    torch = sim
    built = []

    def factory():
        model, x = _mlp(torch, torch.nn.ReLU())
        built.append(model.fc1.weight.detach().clone())
        return model, x

    assert compare(factory, target="npu").ok
    assert compare(factory, target="npu").ok
    assert len(built) == 2 and torch.equal(built[0], built[1])  # built once per compare, under the seed


def test_a_gradient_fault_is_found_in_backward_order(sim):
    torch = sim

    class ScaleGradOnNpu(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.npu = x.device.type == "npu"
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad * 1.5 if ctx.npu else grad

    class Faulty(torch.nn.Module):
        def forward(self, x):
            return ScaleGradOnNpu.apply(x)

    report = compare(lambda: _mlp(torch, Faulty()), target="npu", backward=True)
    assert report.first_divergence is None  # the forward pass agrees
    # The gradient reaching fc1's output passed through the faulty backward: it is the first to differ.
    assert report.first_backward_divergence.name == "fc1"
    assert {r.name: r.ok for r in report.grads}["fc2"] is True
    assert not report.ok and not next(d for d in report.param_grads if d.path == "fc1.weight").ok


def test_a_difference_arising_between_modules_is_flagged(sim):
    torch = sim

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            if h.device.type == "npu":
                h = h * 1.1  # in the parent's own code, not in a submodule
            return self.b(h)

    report = compare(lambda: (Net(), torch.randn(3, 4)), target="npu")
    first = report.first_divergence
    assert first.name == "b" and first.inputs_ok is False
    assert "inputs already differed" in render(report)


@pytest.mark.slow
def test_gpt2_tiny_matches_and_its_model_output_is_compared(sim):
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000)
    report = compare(lambda: transformers.GPT2LMHeadModel(config), target="npu")  # input_ids made from config
    assert report.ok, render(report)
    assert [d.path for d in report.outputs] == ["logits"]  # ModelOutput field; the KV cache object is left out
    names = [r.name for r in report.layers]
    assert names.index("transformer.h.0.mlp.act") < names.index("transformer.h.0.mlp") < names.index("lm_head")
    assert report.to_dict()["schema_version"] == SCHEMA_VERSION


@pytest.mark.slow
def test_gpt2_tiny_with_one_npu_kernel_in_lower_precision_names_that_layer(sim, npu_kernel):
    transformers = pytest.importorskip("transformers")
    torch = sim
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, activation_function="gelu")

    def gelu_in_bf16(x, approximate="none"):  # aten::gelu on the npu only: computes in bfloat16
        return torch.nn.functional.gelu(x.cpu().to(torch.bfloat16), approximate=approximate).to(x.dtype).to(x.device)

    with npu_kernel("gelu", gelu_in_bf16):
        report = compare(lambda: transformers.GPT2LMHeadModel(config), target="npu")
    status = _status(report)
    assert report.first_divergence.name == "transformer.h.0.mlp.act"
    assert report.first_divergence.module_type == "GELUActivation"
    assert status["transformer.h.0.mlp.c_fc"] is True and status["transformer.h.0.attn"] is True
    later = [n for n in ("transformer.h.0.mlp.c_proj", "transformer.h.0", "transformer.h.1.mlp.act", "lm_head")]
    assert not any(status[n] for n in later)  # later layers diverge too, but are not reported first
    assert not report.ok
    data = report.to_dict()
    assert data["first_divergence"]["name"] == "transformer.h.0.mlp.act" and data["ok"] is False


def test_flatten_walks_model_outputs_dicts_and_tuples(sim):
    transformers = pytest.importorskip("transformers")
    torch = sim
    out = transformers.modeling_outputs.CausalLMOutput(logits=torch.zeros(1), loss=None)
    assert [p for p, _ in flatten(out)] == ["logits"]
    assert [p for p, _ in flatten((torch.zeros(1), {"a": torch.zeros(1), "b": [None, torch.zeros(1)]}))] == [
        "[0]", "[1].a", "[1].b[1]"]


def test_missing_inputs_and_bad_factories_are_clear_errors(sim):
    torch = sim
    with pytest.raises(ValueError, match="no inputs"):
        compare(lambda: torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"nn\.Module"):
        compare(lambda: 42, inputs=torch.zeros(2))


def test_a_difference_in_the_models_own_forward_is_named_as_the_model(sim):
    torch = sim

    class OwnCode(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            return y + 1 if y.device.type == "npu" else y  # no submodule: the root's own code differs

    report = compare(lambda: (OwnCode(), torch.randn(2, 4)), target="npu")
    assert _status(report) == {"fc": True, "(model)": False}
    assert report.first_divergence.name == "(model)" and report.first_divergence.module_type == "OwnCode"


def test_the_report_types_are_one_set_of_classes_wherever_imported_from():
    # model.py re-exports the report's types from model_report.py; the package resolves them lazily.
    import ascend_compat.verify as verify
    from ascend_compat.verify import model, model_report

    assert verify.ComparisonReport is model.ComparisonReport is model_report.ComparisonReport
    assert model.LayerResult is model_report.LayerResult and model.render is model_report.render
    assert model.SCHEMA_VERSION == model_report.SCHEMA_VERSION == 1
    assert set(model_report.__all__) - {"Phase"} <= set(model.__all__)
