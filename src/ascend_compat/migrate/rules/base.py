"""What every scanner rule family is made of: rules declared by keyword, and the visitor class that finds them.

A family is one visitor class (TorchFix's shape) with its rules in ``RULES``; each rule states what it finds, what
to do instead on the NPU, whether the runtime shim handles it and ``port`` fixes it, how hard the manual work is,
and the source the advice rests on. A family may only report its own codes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from ascend_compat.migrate.model import Edit, Rule

if TYPE_CHECKING:
    from ascend_compat.migrate.rules.pycontext import CudaRef, PyContext


@dataclass(frozen=True)
class RuleDef(Rule):
    """A :class:`~ascend_compat.migrate.model.Rule` with the reference its advice rests on (declare by keyword)."""

    source: str = ""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.source:
            raise ValueError(f"rule {self.code}: say which source its advice rests on")


class RuleFamily:
    """Base of the rule families of every language: the rules and the check that a family reports only them."""

    #: One line on what the family looks at.
    TITLE: ClassVar[str] = ""
    RULES: ClassVar[tuple[RuleDef, ...]] = ()
    #: Codes another family declares that this one also reports (where one construct is found two ways).
    ALSO_REPORTS: ClassVar[frozenset[str]] = frozenset()
    _CODES: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._CODES = frozenset(r.code for r in cls.RULES) | cls.ALSO_REPORTS

    @classmethod
    def codes(cls) -> frozenset[str]:
        """The codes this family declares."""
        return frozenset(r.code for r in cls.RULES)

    def check_code(self, code: str) -> None:
        if code not in self._CODES:
            raise ValueError(f"{type(self).__name__} reported {code}, which is not one of its rules")


#: The hooks of :class:`PyRuleFamily`; a family takes part in a hook only when it overrides it.
PY_HOOKS = (
    "begin", "visit_call", "visit_attribute", "visit_def", "visit_dict", "visit_subscript", "visit_assign",
    "visit_compare", "visit_string", "visit_joinedstr", "on_torch", "on_torch_cuda", "on_module", "finish",
)


class PyRuleFamily(RuleFamily):
    """A family of Python rules: the visitor methods the one tree walk calls (``pyscan``).

    ``visit_*`` hooks see every node of their type (``visit_attribute``: attributes that do not resolve to an
    import, and on plain names only those in ``PLAIN_ATTRS``). Hooks that return a bool *claim* the node: the
    families are asked in the registry's order and the first that returns True reports it (so one string or one
    qualified name is one finding). ``on_torch`` sees ``torch.*`` names outside ``torch.cuda``, ``on_torch_cuda``
    the ``torch.cuda`` names, ``on_module`` names of other modules; ``call`` is the call when the name is called.
    """

    #: Attribute names worth a ``visit_attribute`` call on a plain variable (``x.is_cuda``): the walk skips others.
    PLAIN_ATTRS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, ctx: PyContext) -> None:
        self.ctx = ctx

    @classmethod
    def hooks(cls) -> frozenset[str]:
        """The hooks this family overrides."""
        return frozenset(h for h in PY_HOOKS if getattr(cls, h) is not getattr(PyRuleFamily, h))

    def add(self, code: str, node: ast.AST, message: str, api: str = "", edits: tuple[Edit, ...] = (),
            alternative: Optional[str] = None, level: Optional[str] = None, coupled: bool = False) -> None:
        """Report one of this family's rules at ``node`` (see :meth:`PyContext.add`)."""
        self.check_code(code)
        self.ctx.add(code, node, message, api, edits, alternative, level, coupled)

    # -- hooks (no-ops here) ---------------------------------------------------------------------------------
    def begin(self) -> None:
        """Before the walk, once the imports are read."""

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        """A call; ``q`` is the qualified name of the callee (None: not an import), ``fname`` its last name."""

    def visit_attribute(self, node: ast.Attribute) -> None:
        """An attribute that does not resolve to an import (``x.is_cuda``, ``props.warp_size``)."""

    def visit_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A function definition (its decorators)."""

    def visit_dict(self, node: ast.Dict) -> None:
        """A dict display."""

    def visit_subscript(self, node: ast.Subscript) -> None:
        """A subscript (``table["cuda"]``, ``os.environ[KEY]``)."""

    def visit_assign(self, node: ast.Assign) -> None:
        """An assignment statement."""

    def visit_compare(self, node: ast.Compare) -> None:
        """A comparison (its operands are visited after it)."""

    def visit_string(self, node: ast.Constant, value: str, marked: Optional[str]) -> bool:
        """A string constant that is code (not a docstring); ``marked`` is the rule code a parent chose for it."""
        return False

    def visit_joinedstr(self, node: ast.JoinedStr) -> bool:
        """An f-string (its interpolated expressions are walked afterwards)."""
        return False

    def on_torch(self, q: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        """A ``torch.*`` name outside ``torch.cuda``."""
        return False

    def on_torch_cuda(self, ref: CudaRef, node: ast.AST, call: Optional[ast.Call]) -> bool:
        """A ``torch.cuda`` name."""
        return False

    def on_module(self, q: str, head: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        """A name of a module other than torch (``head`` is the top-level module)."""
        return False

    def finish(self) -> None:
        """After the walk: settle what needed the whole file."""
