"""A new user's CUDA scripts against the ecosystem layer, each in a real ``ascend-compat run --simulate npu``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import _clean_env

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")

ADD_KERNEL = """
import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

x = torch.randn(1000, device="cuda"); y = torch.randn(1000, device="cuda"); out = torch.empty_like(x)
"""


def _run(tmp_path: Path, script: str, *args: str, drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``ascend-compat run --simulate npu SCRIPT ARGS`` in a real subprocess (``drop``: variables to unset)."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script))
    env = {k: v for k, v in _clean_env().items() if k not in drop}
    return subprocess.run([sys.executable, "-m", "ascend_compat", "run", "--simulate", "npu", str(path), *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def _community_triton() -> bool:
    from ascend_compat.ecosystem import triton

    return triton.detect(npu=True)["status"] == "community"


@needs_triton
def test_a_triton_launch_on_the_npu_with_the_community_build_says_what_to_install(tmp_path: Path) -> None:
    # The community wheel's CUDA driver claimed the (shimmed) device and failed with "libcuda.so cannot found!".
    if not _community_triton():
        pytest.skip("the installed triton is not the community build")
    proc = _run(tmp_path, ADD_KERNEL + "add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)\n")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: "), proc.stderr[-2000:]
    assert "cannot compile or launch Triton kernels on the NPU" in last
    assert "pip install triton-ascend" in last
    assert "libcuda" not in last


@needs_triton
def test_a_triton_launch_on_cpu_fallback_says_there_is_no_cpu_backend(tmp_path: Path) -> None:
    # On CPU fallback the shim answers torch.cuda.is_available() True too, and the launch failed the same way.
    if not _community_triton():
        pytest.skip("the installed triton is not the community build")
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(ADD_KERNEL) + "add_kernel[(4,)](x, y, out, 1000, BLOCK=256)\n")
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "run", str(path)], capture_output=True, text=True,
                          env=_clean_env(), timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: Triton kernels cannot run on ascend-compat's CPU fallback: "), last
    assert "no CPU backend" in last and "libcuda" not in last


@needs_triton
def test_the_triton_driver_is_the_ascend_backend_when_it_is_there(tmp_path: Path) -> None:
    # With an Ascend backend installed (a stand-in here), the NPU target picks it even though the CUDA driver
    # also claims to be active under the shim (torch.cuda.is_available() is True there): before, "2 active
    # drivers ... There should only be one". Deactivation restores triton's own function.
    proc = _run(tmp_path, """
        import sys, types
        import torch, triton
        import triton.backends as tb

        d = sys.modules["triton.runtime.driver"]

        class AscendDriver:
            @staticmethod
            def is_active():
                return True

        tb.backends["ascend"] = types.SimpleNamespace(driver=AscendDriver, compiler=None)
        print("picked", type(d.DriverConfig().active).__name__)
        import ascend_compat
        ascend_compat.deactivate()
        print("restored", not hasattr(d._create_driver, "__wrapped__"))
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "picked AscendDriver"
    assert lines[1] == "restored True"


def test_deepspeed_cpu_offload_without_cann_names_ascend_home_path(tmp_path: Path) -> None:
    # ZeRO-Offload builds DeepSpeed's cpu_adam op, which on the NPU compiles against CANN. With ASCEND_HOME_PATH
    # unset, the deepspeed.npu-cann-path-unset patch left the builder's CANN path None, and the build failed with
    # "TypeError: expected str, bytes or os.PathLike object, not NoneType" (unpatched DeepSpeed at least said
    # KeyError: 'ASCEND_HOME_PATH'). Deactivation restores DeepSpeed's methods.
    pytest.importorskip("deepspeed")
    proc = _run(tmp_path, """
        import torch, ascend_compat
        from deepspeed.ops.adam import DeepSpeedCPUAdam
        from deepspeed.ops.op_builder.npu.builder import NPUOpBuilder
        try:
            DeepSpeedCPUAdam(torch.nn.Linear(4, 1).parameters())
        except RuntimeError as exc:
            print(exc)  # DeepSpeed's own
            print(f"{type(exc.__cause__).__name__}: {exc.__cause__}")
        ascend_compat.deactivate()
        names = ("include_paths", "cxx_args", "extra_ldflags", "installed_cann_path")
        print("restored", not any(hasattr(NPUOpBuilder.__dict__[n], "__wrapped__") for n in names))
    """, drop=("ASCEND_HOME_PATH",))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-3:] == [  # after DeepSpeed's "ascend_cann is missing" lines
        "DeepSpeedCPUAdam requires the cpu_adam op, which failed to build/load.",
        "RuntimeError: DeepSpeed's NPU op cpu_adam is compiled against the CANN toolkit, and ASCEND_HOME_PATH is not "
        "set: source CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) before starting",
        "restored True",
    ], proc.stdout + proc.stderr[-3000:]


def test_vllm_report_without_vllm_keeps_the_hardware_limit_and_the_alternative(tmp_path: Path) -> None:
    # A DeepSeek-style FP8 checkpoint, vllm-ascend not installed: the report said only "vllm-ascend >=0.21.0rc1 serves
    # it", leaving out that those releases serve FP8 on the Ascend 950 alone, and what to do on Atlas A2/A3.
    from ascend_compat._dist import version_of

    if version_of("vllm-ascend") is not None:
        pytest.skip("vllm-ascend is installed here (the report judges against its release)")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}))
    proc = subprocess.run([sys.executable, "-m", "ascend_compat", "vllm", "--model", str(model), "--json"],
                          capture_output=True, text=True, env=_clean_env(), timeout=120)
    assert proc.returncode == 1, proc.stderr
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "quantization")
    assert check["status"] == "warn"
    assert check["note"].startswith("vllm-ascend >=0.21.0rc1 serves it; Ascend 950 (A5) only: "), check
    assert check["fix"].startswith("on Atlas A2/A3: convert the FP8 checkpoint to BF16"), check
