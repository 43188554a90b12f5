"""torch_npu accepts its legacy types as torch's default tensor type (its own test-suite sets
``torch.set_default_tensor_type(torch.npu.FloatTensor)`` and checks that factories build on the npu); what
``port --mode native`` turns ``set_default_tensor_type(torch.cuda.HalfTensor)`` into relies on it."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture
def restore_default_type(sim):
    torch = sim
    yield torch
    torch.set_default_tensor_type(torch.FloatTensor)
    torch.set_default_dtype(torch.float32)


def test_npu_half_default_type_builds_factories_and_legacy_ctor_on_npu(restore_default_type):
    torch = restore_default_type
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.set_default_tensor_type(torch.npu.HalfTensor)
    assert any("deprecated" in str(w.message) for w in caught)
    z = torch.zeros(2, 3)
    assert (z.device.type, z.dtype) == ("npu", torch.float16)
    weight = torch.Tensor(4, 5)  # fairscale's layers build their weights this way
    assert (weight.device.type, weight.dtype, tuple(weight.shape)) == ("npu", torch.float16, (4, 5))
    assert torch.Tensor([1, 2]).type() == "torch.npu.HalfTensor"
    linear = torch.nn.Linear(3, 3)
    assert linear.weight.device.type == "npu" and linear.weight.dtype == torch.float16
    torch.npu.set_device(1)
    assert torch.zeros(1).device == torch.device("npu", 1)  # the current device at each call


def test_string_form_and_back_to_cpu(restore_default_type):
    torch = restore_default_type
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_default_tensor_type("torch.npu.FloatTensor")
        assert torch.ones(1).type() == "torch.npu.FloatTensor"
        torch.set_default_tensor_type("torch.FloatTensor")
    assert torch.ones(1).device.type == "cpu" and torch.Tensor(2).device.type == "cpu"


def test_non_floating_npu_type_is_refused_in_torchs_words(restore_default_type):
    torch = restore_default_type
    with pytest.raises(TypeError, match="only floating-point types"):
        torch.set_default_tensor_type(torch.npu.IntTensor)
    assert torch.zeros(1).device.type == "cpu"


def test_constructor_hook_only_while_an_npu_type_is_the_default(restore_default_type):
    torch = restore_default_type
    assert "__new__" not in torch.Tensor.__dict__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_default_tensor_type(torch.npu.FloatTensor)
        assert "__new__" in torch.Tensor.__dict__
        torch.set_default_tensor_type(torch.FloatTensor)
    assert "__new__" not in torch.Tensor.__dict__
