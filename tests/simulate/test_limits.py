"""Simulated limits and install rules; each case runs in its own interpreter (one install per process)."""

from __future__ import annotations

from tests.conftest import run_python


def _ok(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_310p_has_no_bf16():
    proc = _ok(
        run_python(
            """
            import torch, pytest
            from ascend_compat import simulate
            simulate.install(chip="310P")
            assert not torch.npu.is_bf16_supported()
            assert torch.npu.get_amp_supported_dtype() == [torch.float16]
            assert torch.npu.get_device_name() == "Ascend310P3"
            for make in (lambda: torch.zeros(2, dtype=torch.bfloat16, device="npu"),
                         lambda: torch.ones(2).to("npu", dtype=torch.bfloat16),
                         lambda: torch.ones(2, device="npu").bfloat16()):
                with pytest.raises(RuntimeError, match="bfloat16 is not supported on Ascend310P3"):
                    make()
            assert torch.zeros(2, dtype=torch.float16, device="npu").dtype == torch.float16
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_float64_policy_warn_and_error():
    proc = _ok(
        run_python(
            """
            import warnings, torch, pytest
            from ascend_compat import simulate
            simulate.install(float64="warn")
            x = torch.ones(3, dtype=torch.float64, device="npu")
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                y = x * 2
                y = x * 3  # warned once per op
            msgs = [str(m.message) for m in w if "float64" in str(m.message)]
            assert len(msgs) == 1 and "aten::mul.Tensor" in msgs[0], msgs
            simulate.configure(float64="error")
            with pytest.raises(RuntimeError, match="float64 is not supported by the NPU operator aten::add"):
                x + 1
            simulate.configure(float64="allow")
            assert (x + 1).sum().item() == 6.0
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_unsupported_ops_fall_back_with_torch_npu_warning_counters_and_hook():
    proc = _ok(
        run_python(
            """
            import warnings, torch
            from ascend_compat import simulate
            simulate.install(unsupported_ops=["aten::nonzero", "cumsum"])
            seen = []
            unsubscribe = simulate.on_fallback(seen.append)
            x = torch.tensor([0.0, 1.0, 2.0], device="npu")
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                nz = x.nonzero()
                x.nonzero()
                c = x.cumsum(0)
            texts = [str(m.message) for m in w]
            assert any(t.startswith("CAUTION: The operator 'aten::nonzero' is not currently supported on the NPU "
                                    "backend and will fall back to run on the CPU") for t in texts), texts
            assert sum("aten::nonzero" in t for t in texts) == 1, texts
            assert nz.device.type == "npu" and nz.flatten().tolist() == [1, 2]
            assert c.cpu().tolist() == [0.0, 1.0, 3.0]
            counts = simulate.fallback_counts()
            assert counts["aten::nonzero"] == 2, counts
            assert any(k.startswith("aten::cumsum") for k in counts), counts
            assert seen.count("aten::nonzero") == 2
            unsubscribe()
            x.nonzero()
            assert seen.count("aten::nonzero") == 2
            simulate.reset_fallback_counts()
            assert simulate.fallback_counts() == {}
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_memory_limit_raises_out_of_memory():
    proc = _ok(
        run_python(
            """
            import torch, pytest
            from ascend_compat import simulate
            simulate.install(memory_limit=1 << 20)
            a = torch.empty(128 * 1024, device="npu")  # 512 KiB
            with pytest.raises(torch.OutOfMemoryError, match="NPU out of memory. Tried to allocate"):
                torch.empty(128 * 1024, device="npu") * 2  # the product does not fit
            assert torch.npu.memory_stats()["num_ooms"] >= 1
            del a
            torch.empty(200 * 1024, device="npu")
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_install_is_idempotent_and_refuses_a_different_shape():
    proc = _ok(
        run_python(
            """
            import pytest
            from ascend_compat import simulate
            first = simulate.install(device_count=2)
            assert simulate.install(device_count=2) == first and simulate.is_installed()
            with pytest.raises(simulate.SimulationError, match="already installed with device_count=2"):
                simulate.install(device_count=4)
            with pytest.raises(ValueError, match="unknown chip"):
                simulate.install(chip="H100")
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_refuses_when_a_real_torch_npu_is_importable(tmp_path):
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise SystemExit('must not be imported')\n")
    proc = run_python(
        """
        from ascend_compat import simulate
        try:
            simulate.install()
        except simulate.SimulationError as e:
            print("REFUSED:", e)
        """,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED: a real torch_npu is importable" in proc.stdout


def test_environment_variables_configure_install():
    proc = _ok(
        run_python(
            """
            import torch
            from ascend_compat import simulate
            cfg = simulate.install_from_env()
            assert cfg.device_count == 3 and cfg.chip == "910B4" and cfg.memory_limit == 2 << 30, cfg
            assert torch.npu.device_count() == 3
            assert torch.npu.mem_get_info(2)[0] == 2 << 30
            print("OK")
            """,
            env={
                "ASCEND_COMPAT_SIMULATE": "npu",
                "ASCEND_COMPAT_SIM_DEVICES": "3",
                "ASCEND_COMPAT_SIM_CHIP": "910B4",
                "ASCEND_COMPAT_SIM_MEMORY_LIMIT": "2GiB",
            },
        )
    )
    assert "OK" in proc.stdout


def test_import_torch_npu_installs_the_simulator():
    proc = _ok(
        run_python(
            """
            import importlib.util, sys
            from ascend_compat import simulate
            assert importlib.util.find_spec("torch_npu") is None  # nothing before install
            simulate.install()
            import torch, torch_npu
            assert torch.ones(1, device="npu").is_npu and torch_npu.__version__.endswith("+simulated")
            print("OK")
            """
        )
    )
    assert "OK" in proc.stdout


def test_refuses_torch_older_than_minimum():
    proc = _ok(
        run_python(
            """
            import torch
            from ascend_compat import simulate
            torch.__version__ = "2.11.0+cu130"
            try:
                simulate.install()
            except simulate.SimulationError as e:
                print("REFUSED:", e)
            """
        )
    )
    assert "REFUSED: the simulated NPU needs torch >= 2.13 (running 2.11.0+cu130)" in proc.stdout


def test_installing_after_the_first_backward_pass_still_trains_on_the_npu():
    # autograd sized its device threads before the npu existed; the simulator runs npu backward work on the
    # calling thread, so a late install() still gives working backward passes.
    proc = run_python(
        """
        import torch
        torch.ones(2, requires_grad=True).sum().backward()
        from ascend_compat import simulate
        simulate.install()
        x = torch.ones(3, device="npu", requires_grad=True)
        (x * 2).sum().backward()
        print("grad", x.grad.device, x.grad.tolist())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "grad npu:0 [2.0, 2.0, 2.0]" in proc.stdout


def test_auto_activation_and_run_simulate_install_once(tmp_path):
    # ASCEND_COMPAT_AUTO_ACTIVATE=1 activates (and installs the simulator) when install() itself imports torch;
    # the outer install() must then find it installed instead of registering the npu a second time.
    import subprocess
    import sys

    from tests.conftest import _clean_env

    script = tmp_path / "s.py"
    script.write_text("import torch\nprint(torch.ones(2).cuda().device)\n")
    env = dict(_clean_env(), ASCEND_COMPAT_AUTO_ACTIVATE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "ascend_compat", "run", "--simulate", "npu", str(script)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "npu:0"
