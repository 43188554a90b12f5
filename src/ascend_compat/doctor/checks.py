"""The doctor's checks, in report order, and :func:`run_checks` that runs them.

Each check is a function of :class:`~ascend_compat.doctor.facts.Facts` returning a
:class:`~ascend_compat.doctor.result.Check` (never raising). The doctor is split by concern:

* ``probe``: every outside input (filesystem root, environment, commands, library loading), injectable by tests;
* ``facts``: what is installed, looked up once per run; ``npu_smi``: the ``npu-smi info`` parser;
* ``matrix``: queries on the torch_npu / torch / CANN version matrix; ``versions``: version parsing;
* ``checks_python``, ``checks_cann``, ``checks_device``, ``checks_env``: the checks, by family;
* ``environment``: the block for bug reports.

Nothing here imports torch or torch_npu (their versions come from package metadata), so the doctor works where they
are broken. The names below stay importable from here as they always were.
"""

from __future__ import annotations

from typing import Callable, Optional

from ascend_compat.doctor.checks_cann import (
    check_cann_kernels,
    check_cann_nnal,
    check_cann_toolkit,
    check_set_env,
    check_torch_npu_cann,
)
from ascend_compat.doctor.checks_device import (
    HBM_BUSY_FRACTION,
    LIBRARIES,
    check_driver,
    check_firmware,
    check_libraries,
    check_npu_smi,
)
from ascend_compat.doctor.checks_env import (
    DISK_ERROR_BYTES,
    DISK_WARN_BYTES,
    HCCL_CONNECT_TIMEOUT_RANGE,
    HCCL_RANK_TABLE_MIN_TIMEOUT,
    check_disk_cache,
    check_hccl_timeout,
    check_visible_devices,
)
from ascend_compat.doctor.checks_python import check_python, check_torch, check_torch_npu
from ascend_compat.doctor.environment import env_block, environment
from ascend_compat.doctor.facts import ASCEND, Facts, Toolkit
from ascend_compat.doctor.matrix import (
    MatrixRow,
    load_matrix,
    matrix_rows,
    python_for_torch,
    rows_for_torch,
    rows_for_torch_npu,
)
from ascend_compat.doctor.npu_smi import NpuChip, NpuSmiReport, parse_npu_smi_info
from ascend_compat.doctor.probe import LIBRARY_LOAD_TIMEOUT, Probe, _load_libraries, _run
from ascend_compat.doctor.result import STATUSES, Check

__all__ = [
    "ASCEND", "CHECKS", "DISK_ERROR_BYTES", "DISK_WARN_BYTES", "HBM_BUSY_FRACTION", "HCCL_CONNECT_TIMEOUT_RANGE",
    "HCCL_RANK_TABLE_MIN_TIMEOUT", "LIBRARIES", "LIBRARY_LOAD_TIMEOUT", "STATUSES", "Check", "Facts", "MatrixRow",
    "NpuChip", "NpuSmiReport", "Probe", "Toolkit", "_load_libraries", "_run", "check_cann_kernels",
    "check_cann_nnal", "check_cann_toolkit", "check_disk_cache", "check_driver", "check_firmware",
    "check_hccl_timeout", "check_libraries", "check_npu_smi", "check_python", "check_set_env", "check_torch",
    "check_torch_npu", "check_torch_npu_cann", "check_visible_devices", "env_block", "environment", "load_matrix",
    "matrix_rows", "parse_npu_smi_info", "python_for_torch", "rows_for_torch", "rows_for_torch_npu", "run_checks",
]

#: (check, needs --full). The order is the report's order.
CHECKS: tuple[tuple[Callable[[Facts], Check], bool], ...] = (
    (check_python, False),
    (check_torch, False),
    (check_torch_npu, False),
    (check_cann_toolkit, False),
    (check_cann_kernels, False),
    (check_cann_nnal, False),
    (check_torch_npu_cann, False),
    (check_driver, False),
    (check_firmware, False),
    (check_set_env, False),
    (check_libraries, True),
    (check_npu_smi, True),
    (check_visible_devices, False),
    (check_hccl_timeout, False),
    (check_disk_cache, False),
)


def run_checks(probe: Optional[Probe] = None, full: bool = False) -> list[Check]:
    """Run every check (the slow ones only with ``full``); one failing check never stops the others."""
    facts = Facts(probe or Probe())
    out = []
    for check, slow in CHECKS:
        name = check.__name__[len("check_"):]
        if slow and not full:
            continue
        try:
            out.append(check(facts))
        except Exception as exc:  # a bug or an odd machine must not hide the other findings
            out.append(Check(name, name, "error", f"the check itself failed: {type(exc).__name__}: {exc}",
                             "An internal error of ascend-compat doctor.", "Please report it with the block below."))
    return out
