"""The C/C++/CUDA rule families: the base class and the registry's list of them.

A family handles tree-sitter node kinds: ``KINDS`` maps ``(kind, named)`` to the name of its method, which gets
the node and the tree cursor and returns whether the walk should descend into the node. Each kind belongs to one
family. The walk, positions and the once-per-place dedupe are ``migrate/cxx.py``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Optional

from ascend_compat.migrate.rules.base import RuleFamily

if TYPE_CHECKING:
    from ascend_compat.migrate.cxx import CxxFile


class CxxRuleFamily(RuleFamily):
    """A family of C/C++/CUDA rules (see the module docstring)."""

    KINDS: ClassVar[dict[tuple[str, bool], str]] = {}

    def __init__(self, scan: CxxFile) -> None:
        self.scan = scan
        self.g = scan.g
        self.t = scan.t

    def add(self, code: str, node: Any, api: str, message: str, alternative: str, level: Optional[str] = None,
            key: Any = None) -> None:
        """Report one of this family's rules at ``node`` (once per place, or per ``key``)."""
        self.check_code(code)
        self.scan.add(code, node, api, message, alternative, level, key)


def _families() -> tuple[type[CxxRuleFamily], ...]:
    from ascend_compat.migrate.rules.cxx_api import CudaApiRules
    from ascend_compat.migrate.rules.cxx_kernels import CudaKernelRules

    return (CudaApiRules, CudaKernelRules)


#: The C/C++/CUDA families.
CXX_FAMILIES: tuple[type[CxxRuleFamily], ...] = _families()
