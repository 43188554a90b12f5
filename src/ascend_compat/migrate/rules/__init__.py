"""The scanner rules, one visitor class per rule family, and the registry that collects them.

Codes are stable: AC1xx device placement, AC2xx AMP, AC3xx distributed, AC4xx attention and custom kernels
(AC420-AC424: Triton kernels against triton-ascend's restrictions), AC5xx flags, probes, graphs, profiling and
compilation (AC508: quantization methods), AC6xx C/C++/CUDA (``cxx_*``), AC7xx dependencies (``deps.py``) and AC8xx
torch API support on the NPU.

A new rule goes into the family that looks at the same code (or a new family module listed below); its fixtures
go to ``tests/migrate/fixtures/rules/<language>/<code>_*`` and the rule test collects them.
"""

from __future__ import annotations

from ascend_compat.migrate.model import register_rules
from ascend_compat.migrate.rules.base import PY_HOOKS, PyRuleFamily, RuleDef, RuleFamily
from ascend_compat.migrate.rules.cxx_rules import CXX_FAMILIES, CxxRuleFamily
from ascend_compat.migrate.rules.py_amp import AmpRules
from ascend_compat.migrate.rules.py_api_support import ApiSupportRules
from ascend_compat.migrate.rules.py_attention import AttentionRules
from ascend_compat.migrate.rules.py_device import DevicePlacementRules
from ascend_compat.migrate.rules.py_device_strings import DeviceStringRules
from ascend_compat.migrate.rules.py_distributed import DistributedRules
from ascend_compat.migrate.rules.py_environment import VisibleDevicesRules
from ascend_compat.migrate.rules.py_flags import CudaFlagRules
from ascend_compat.migrate.rules.py_kernels import CustomKernelRules
from ascend_compat.migrate.rules.py_profiling import NvidiaToolRules
from ascend_compat.migrate.rules.py_quantization import QuantizationRules
from ascend_compat.migrate.rules.py_torch_cuda import TorchCudaRules
from ascend_compat.migrate.rules.py_triton import TritonAscendRules

#: The Python families in the order they are asked to claim a node (a string, a qualified name): AMP's device
#: strings before plain device strings, and the catch-alls last (TorchCudaRules for torch.cuda names,
#: ApiSupportRules for other torch names).
PY_FAMILIES: tuple[type[PyRuleFamily], ...] = (
    AmpRules, DevicePlacementRules, DeviceStringRules, DistributedRules, VisibleDevicesRules, NvidiaToolRules,
    CudaFlagRules, CustomKernelRules, AttentionRules, QuantizationRules, TritonAscendRules, TorchCudaRules,
    ApiSupportRules,
)


def _collect(families: tuple[type[RuleFamily], ...]) -> tuple[RuleDef, ...]:
    owner: dict[str, str] = {}
    rules: list[RuleDef] = []
    for family in families:
        for rule in family.RULES:
            if rule.code in owner:
                raise ValueError(f"rule {rule.code} declared by {owner[rule.code]} and {family.__name__}")
            owner[rule.code] = family.__name__
            rules.append(rule)
    return tuple(rules)


PY_RULES: tuple[RuleDef, ...] = _collect(PY_FAMILIES)
CXX_RULES: tuple[RuleDef, ...] = _collect(CXX_FAMILIES)
register_rules(*PY_RULES, *CXX_RULES)


def family_of(code: str) -> type[RuleFamily]:
    """The family class that declares rule ``code`` (KeyError for a code no Python or C/C++ family declares)."""
    for family in (*PY_FAMILIES, *CXX_FAMILIES):
        if code in family.codes():
            return family
    raise KeyError(code)


__all__ = [
    "CXX_FAMILIES", "CXX_RULES", "PY_FAMILIES", "PY_HOOKS", "PY_RULES", "CxxRuleFamily", "PyRuleFamily", "RuleDef",
    "RuleFamily", "family_of",
]
