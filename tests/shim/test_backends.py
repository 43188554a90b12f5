"""Declarative backends: one detection order, overrides, third-party registration."""

from __future__ import annotations

import pytest

from ascend_compat import backends


def test_builtin_backends_are_data():
    npu = backends.get_backend("npu")
    assert (npu.device_type, npu.adapter_module, npu.collective_backend, npu.visible_devices_env) == (
        "npu",
        "torch_npu",
        "hccl",
        "ASCEND_RT_VISIBLE_DEVICES",
    )
    names = [b.name for b in backends.all_backends()]
    assert names[0] == "npu" and names[-1] == "cpu"
    assert {"mlu", "musa", "xpu", "mps"} <= set(names)
    with pytest.raises(ValueError, match="unknown backend"):
        backends.get_backend("tpu")


def test_override_and_registration(monkeypatch):
    class FakeBackend(backends.Backend):
        name = "fake"
        device_type = "cpu"
        collective_backend = "gloo"

    backends.register(FakeBackend)
    try:
        names = [b.name for b in backends.all_backends()]
        assert names.index("fake") == names.index("cpu") - 1
        monkeypatch.setenv("ASCEND_COMPAT_BACKEND", "fake")
        found = backends.detect()
        assert found.backend is FakeBackend and "requested" in found.reason
    finally:
        backends.DETECTION_ORDER.remove(FakeBackend)
        backends._REGISTRY.pop("fake")
