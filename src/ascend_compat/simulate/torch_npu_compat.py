"""Contents of the simulated ``torch_npu`` package (see ``_finder``).

Importing it installs the simulator (if not yet installed), as importing the real torch_npu registers the npu
device. It exposes the version, ``torch_npu.npu`` (the same object as ``torch.npu``) and the fused ops.
"""

from __future__ import annotations

from types import ModuleType


def populate(module: ModuleType) -> None:
    import torch

    from ascend_compat import simulate
    from ascend_compat.simulate import fused_ops

    simulate.install_from_env(default=True)
    npu: ModuleType = vars(torch)["npu"]  # set by the install above; torch's own types do not declare it
    if module.__name__ == "torch_npu.npu":
        module.__dict__.update({k: v for k, v in vars(npu).items() if not k.startswith("__")})
        return
    # Through __dict__: the module is filled in at run time, so these are not names a type checker knows.
    module.__dict__["__version__"] = simulate.TORCH_NPU_VERSION
    # A real torch_npu is a package on disk and libraries read its location (DeepSpeed's NPUOpBuilder takes
    # os.path.dirname(torch_npu.__file__) for its include/lib paths); point it at the file that defines this one.
    module.__file__ = __file__
    module.__dict__.update(npu=npu, simulated=True)
    for name in fused_ops.__all__:
        setattr(module, name, getattr(fused_ops, name))
