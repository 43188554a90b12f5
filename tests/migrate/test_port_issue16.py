"""Issue 16: scripts ported with ``port --mode native`` run on the simulated NPU (legacy tensor types,
``torch.load`` without ``map_location``, a class's own ``is_cuda`` attribute)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from ascend_compat.migrate.port import PortFailure, PortSuccess, port_source
from tests._forkserver import run_code  # a fresh process with torch already imported

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.is_cuda = torch.cuda.is_available()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x):
            if self.is_cuda:
                x = x.type(torch.cuda.HalfTensor).float()
            elif not self.is_cuda:
                raise RuntimeError("the device flag was only half renamed")
            return self.lin(x)


    model = Model().cuda()
    torch.save(model.state_dict(), sys.argv[1])
    state = torch.load(sys.argv[1])
    assert isinstance(torch.zeros(2).cuda().half(), torch.cuda.HalfTensor)
    model.load_state_dict(state)
    out = model(torch.ones(3, 4).cuda())
    print("OK", out.device, next(iter(state.values())).device)
    """
)


def _native(text: str) -> str:
    r = port_source("train.py", text, "native")
    assert not isinstance(r, PortFailure), r
    return r.text if isinstance(r, PortSuccess) else text  # PortSkip: nothing to rewrite


def test_ported_script_runs_on_the_simulated_npu(tmp_path: Path) -> None:
    ported = _native(SCRIPT)
    assert "torch.npu.HalfTensor" in ported and 'torch.load(sys.argv[1], map_location="npu")' in ported
    assert "self.is_cuda" in ported and "self.is_npu" not in ported  # the class's own attribute: untouched
    script = tmp_path / "train.py"
    script.write_text(ported)
    proc = run_code(
        f"""
        import runpy, sys
        from ascend_compat import simulate
        simulate.install()
        sys.argv = ["train.py", {str(tmp_path / "ckpt.pt")!r}]
        runpy.run_path({str(script)!r}, run_name="__main__")
        """
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "OK npu:0 npu:0" in proc.stdout


def test_is_cuda_is_never_half_renamed() -> None:
    text = textwrap.dedent(
        """
        import torch

        class A:
            def __init__(self):
                self.is_cuda, self.n = True, 1

            def f(self, t):
                return self.is_cuda and t.is_cuda

        def g(t):
            return t.is_cuda
        """
    )
    out = _native(text)
    ast.parse(out)
    assert "is_npu" not in out  # the file writes an ``is_cuda`` attribute: every read stays as written
    plain = _native("import torch\n\ndef g(t):\n    return t.is_cuda\n")
    assert "t.is_npu" in plain


def test_torch_load_map_location_rules() -> None:
    out = _native(
        "import torch\n"
        "a = torch.load('p')\n"
        "b = torch.load('p', map_location='cpu')\n"
        "c = torch.load('p', 'cpu')\n"
        "d = torch.load('p', **kw)\n"
        "e = torch.load(f='p', weights_only=True)\n"
    )
    assert "a = torch.load('p', map_location=\"npu\")" in out
    assert "b = torch.load('p', map_location='cpu')" in out and "c = torch.load('p', 'cpu')" in out
    assert "d = torch.load('p', **kw)" in out
    assert "e = torch.load(f='p', weights_only=True, map_location=\"npu\")" in out


DEFAULT_TYPE_SCRIPT = textwrap.dedent(
    """
    import torch
    torch.set_default_tensor_type(torch.cuda.HalfTensor)
    w = torch.Tensor(4, 3)  # fairscale's layers build their weights this way (Llama's reference code)
    x = torch.zeros(2, 4)
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    y = torch.ones(1)
    z = torch.zeros(1).type("torch.cuda.HalfTensor")
    print("OK", w.device, w.dtype, x.device, x.dtype, y.type(), z.type())
    """
)


def test_a_legacy_default_tensor_type_is_ported_and_runs_natively(tmp_path: Path) -> None:
    """torch_npu takes its own legacy types as the default tensor type (type object or name): port renames both
    forms, and the ported script keeps torch.Tensor(sizes) and the factories on the device."""
    ported = _native(DEFAULT_TYPE_SCRIPT)
    assert "torch.set_default_tensor_type(torch.npu.HalfTensor)" in ported
    assert 'torch.set_default_tensor_type("torch.npu.FloatTensor")' in ported and "torch.cuda" not in ported
    script = tmp_path / "llama_like.py"
    script.write_text(ported)
    proc = run_code(
        f"""
        import runpy, warnings
        warnings.simplefilter("ignore")
        from ascend_compat import simulate
        simulate.install()
        runpy.run_path({str(script)!r}, run_name="__main__")
        """
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert ("OK npu:0 torch.float16 npu:0 torch.float16 torch.npu.FloatTensor torch.npu.HalfTensor"
            in proc.stdout), proc.stdout
