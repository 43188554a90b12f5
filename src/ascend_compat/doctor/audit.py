"""The op audit: run a model once, list every aten operator it used and what the NPU does with each.

``audit(model, *inputs)`` records the operators under a ``TorchDispatchMode`` (with their call counts and the
dtypes of their tensors) and classifies each as:

* ``native``: the published torch_npu support list marks the matching torch API supported (or the op is a view
  or metadata op with no device kernel);
* ``falls back``: the simulator is configured to treat the op as unsupported, or the published list marks the
  matching torch API unsupported (torch_npu then runs it on the CPU, or rejects it);
* ``dtype unsupported``: the op is supported, but one of its dtypes is not on the chip (bfloat16 on 310P;
  float64 where the simulator's float64 policy is ``error``);
* ``unknown``: no torch API name maps to the op, or the lists do not mention it.

Mapping aten names to the lists' torch API names (``torch.X``, ``torch.Tensor.X``, ``torch.nn.functional.X``,
``torch.linalg/special/fft.X``): the op's base name, without a leading ``_`` or trailing in-place ``_``, is looked
up under those prefixes, after a table of known renames (``_softmax`` is ``softmax``, ``native_layer_norm`` is
``layer_norm``, ``convolution`` is ``conv{1,2,3}d`` or ``conv_transpose{1,2,3}d`` by its weight and flags,
``*_backward`` ops take their forward's status). Limits: the lists are per torch API, not per aten overload or
dtype, so ``native`` means "the API is listed as supported", not "every overload has an NPU kernel"; ops reached
only through decompositions the lists do not name stay ``unknown``; only the ops of this one run are seen
(other branches, shapes and dtypes may use others).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypedDict

from ascend_compat._style import paint

__all__ = ["STATUSES", "AuditReport", "OpRecorder", "OpUse", "api_candidates", "audit", "classify"]

SCHEMA_VERSION = 1
#: Statuses, in the order reports list them.
STATUSES = ("falls_back", "dtype_unsupported", "unknown", "native")
LABELS = {"native": "native", "falls_back": "falls back", "dtype_unsupported": "dtype unsupported",
          "unknown": "unknown"}

# aten base name -> torch API names the published lists use (renames only; same-named ops need no entry).
_RENAMES: dict[str, tuple[str, ...]] = {
    "_softmax": ("torch.nn.functional.softmax",),
    "_log_softmax": ("torch.nn.functional.log_softmax",),
    "_to_copy": ("torch.Tensor.to",),
    "_unsafe_view": ("torch.Tensor.view",),
    "_reshape_alias": ("torch.Tensor.reshape",),
    "native_layer_norm": ("torch.nn.functional.layer_norm",),
    "native_group_norm": ("torch.nn.functional.group_norm",),
    "native_batch_norm": ("torch.nn.functional.batch_norm",),
    "_native_batch_norm_legit": ("torch.nn.functional.batch_norm",),
    "_native_batch_norm_legit_no_training": ("torch.nn.functional.batch_norm",),
    "_native_batch_norm_legit_functional": ("torch.nn.functional.batch_norm",),
    "native_dropout": ("torch.nn.functional.dropout",),
    "nll_loss_forward": ("torch.nn.functional.nll_loss",),
    "nll_loss2d_forward": ("torch.nn.functional.nll_loss",),
    "max_pool2d_with_indices": ("torch.nn.functional.max_pool2d",),
    "max_pool3d_with_indices": ("torch.nn.functional.max_pool3d",),
    "_adaptive_avg_pool2d": ("torch.nn.functional.adaptive_avg_pool2d",),
    "_adaptive_avg_pool3d": ("torch.nn.functional.adaptive_avg_pool3d",),
    "_scaled_dot_product_flash_attention": ("torch.nn.functional.scaled_dot_product_attention",),
    "_scaled_dot_product_flash_attention_for_cpu": ("torch.nn.functional.scaled_dot_product_attention",),
    "_scaled_dot_product_efficient_attention": ("torch.nn.functional.scaled_dot_product_attention",),
    "_scaled_dot_product_fused_attention_overrideable": ("torch.nn.functional.scaled_dot_product_attention",),
    "_scaled_dot_product_attention_math": ("torch.nn.functional.scaled_dot_product_attention",),
    "threshold_backward": ("torch.nn.functional.relu", "torch.nn.functional.threshold"),
    "_softmax_backward_data": ("torch.nn.functional.softmax",),
    "_log_softmax_backward_data": ("torch.nn.functional.log_softmax",),
    "embedding_dense_backward": ("torch.nn.functional.embedding",),
    "index": ("torch.Tensor.__getitem__", "torch.index_select"),
    "index_put": ("torch.Tensor.index_put",),
    "slice": ("torch.Tensor.__getitem__",),
    "_safe_softmax": ("torch.nn.functional.softmax",),
    "constant_pad_nd": ("torch.nn.functional.pad",),
    "scalar_tensor": ("torch.tensor",),  # what torch makes for Python scalars mixed with tensors
    "_unsafe_index": ("torch.Tensor.__getitem__", "torch.index_select"),
}
# View and metadata ops: no device kernel runs, so any backend has them.
_VIEW_OPS = frozenset(
    "view _unsafe_view _reshape_alias as_strided t transpose permute expand unsqueeze squeeze slice select detach "
    "alias lift_fresh split split_with_sizes unbind narrow diagonal view_as_real view_as_complex unfold_copy "
    "_local_scalar_dense sym_size sym_stride sym_numel sym_storage_offset".split()
)
# Casts and copies move data between dtypes/devices: a float64 source or destination is not float64 compute.
_COPY_OPS = frozenset("_to_copy copy_ _copy_from _copy_from_and_resize clone lift_fresh".split())
_PREFIXES = (("linalg_", "torch.linalg."), ("special_", "torch.special."), ("fft_", "torch.fft."))


def _base(op: str) -> str:
    return op.partition("::")[2].split(".", 1)[0] if "::" in op else op.split(".", 1)[0]


def _forward_of(base: str) -> Optional[str]:
    if base in ("threshold_backward", "_softmax_backward_data", "_log_softmax_backward_data",
                "embedding_dense_backward"):
        return None  # in the rename table already
    for marker in ("_backward_data", "_backward_input", "_backward_weight", "_backward"):
        if marker in base:
            return base.split(marker, 1)[0]
    return None


def api_candidates(op: str, hints: Iterable[str] = ()) -> tuple[tuple[str, ...], Optional[str]]:
    """The torch API names that ``op`` (``"aten::addmm"``) may be listed under, and the forward op's base name
    when ``op`` is a backward op (which takes its forward's status)."""
    ns = op.partition("::")[0] if "::" in op else "aten"
    if ns != "aten":
        return tuple(hints), None
    base = _base(op)
    forward = _forward_of(base)
    if forward is not None:
        base = forward
    names: list[str] = list(hints)
    names.extend(_RENAMES.get(base, ()))
    stems = [base]
    if base.endswith("_") and not base.endswith("__"):
        stems.append(base[:-1])  # in-place variant: add_ is listed as torch.Tensor.add_, sometimes only as add
    if base.startswith("_") and not base.startswith("__"):
        stems.append(base[1:])
    for stem in stems:
        for prefix, module in _PREFIXES:
            if stem.startswith(prefix):
                names.append(module + stem[len(prefix):])
        names.extend((f"torch.{stem}", f"torch.Tensor.{stem}", f"torch.nn.functional.{stem}"))
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return tuple(seen), forward


@dataclass(frozen=True)
class OpUse:
    """One aten operator the run used."""

    op: str  # "aten::addmm" / "aten::add.Tensor"
    count: int
    dtypes: tuple[str, ...]
    status: str  # one of STATUSES
    apis: tuple[str, ...]  # the listed torch APIs the status comes from (empty when none is listed)
    basis: str  # why, in words

    def to_dict(self) -> OpUseDict:
        return {"op": self.op, "count": self.count, "dtypes": list(self.dtypes), "status": self.status,
                "apis": list(self.apis), "basis": self.basis}


class OpUseDict(TypedDict):
    """:meth:`OpUse.to_dict`."""

    op: str
    count: int
    dtypes: list[str]
    status: str
    apis: list[str]
    basis: str


@dataclass(frozen=True)
class AuditReport:
    """Every operator of one run, worst status first, then most called."""

    ops: tuple[OpUse, ...]
    line: str
    chip: Optional[str]
    device_types: tuple[str, ...]

    def by_status(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for o in self.ops:
            out[o.status] += 1
        return out

    def get(self, op: str) -> Optional[OpUse]:
        """The entry for ``op`` (``"aten::nonzero"``; a base name matches its only/first overload)."""
        for o in self.ops:
            if o.op == op:
                return o
        for o in self.ops:
            if _base(o.op) == _base(op):
                return o
        return None

    def to_dict(self) -> AuditDict:
        from ascend_compat.migrate import apidb

        return {
            "schema_version": SCHEMA_VERSION,
            "torch_npu_line": self.line,
            "chip": self.chip,
            "device_types": list(self.device_types),
            "lists_source": apidb.source(),
            "summary": self.by_status(),
            "ops": [o.to_dict() for o in self.ops],
        }

    def format(self, color: bool = False) -> str:
        chip = f", chip {self.chip}" if self.chip else ""
        lines = [f"ascend-compat audit: {len(self.ops)} operators (torch_npu {self.line} lists{chip}; "
                 f"ran on {', '.join(self.device_types) or 'no device'})"]
        width = max((len(o.op) for o in self.ops), default=10)
        for o in self.ops:
            label = LABELS[o.status]
            if color:
                label = paint(f"{label:<17}", o.status)
            lines.append(f"  {o.op:<{width}}  {o.count:>6}  {label:<17}  {','.join(o.dtypes) or '-'}  {o.basis}")
        counts = self.by_status()
        lines.append("  " + ", ".join(f"{counts[s]} {LABELS[s]}" for s in STATUSES))
        return "\n".join(lines)


class AuditDict(TypedDict):
    """:meth:`AuditReport.to_dict`, the ``audit --json`` report."""

    schema_version: int
    torch_npu_line: str
    chip: Optional[str]
    device_types: list[str]
    lists_source: str
    summary: dict[str, int]
    ops: list[OpUseDict]


class OpRecorder:
    """A dispatch mode (use ``with OpRecorder() as r:``) counting each aten op with its dtypes and devices."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.dtypes: dict[str, set[str]] = {}
        self.hints: dict[str, set[str]] = {}
        self.device_types: set[str] = set()
        self.errors: dict[str, str] = {}  # op -> the first error it raised
        self._mode: Any = None

    def __enter__(self) -> OpRecorder:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        rec = self
        tensor_type, dtype_type = torch.Tensor, torch.dtype

        class _Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                name = func.name()
                # Recorded before the call: an op that fails (bf16 on 310P) is the one the report must show.
                rec.counts[name] = rec.counts.get(name, 0) + 1
                seen = rec.dtypes.setdefault(name, set())
                for leaf in tree_leaves((args, kwargs)):
                    if isinstance(leaf, tensor_type):
                        seen.add(str(leaf.dtype).replace("torch.", ""))
                        rec.device_types.add(leaf.device.type)
                    elif isinstance(leaf, dtype_type):  # dtype= of casts and factories
                        seen.add(str(leaf).replace("torch.", ""))
                if func._schema.name in ("aten::convolution", "aten::_convolution", "aten::convolution_backward"):
                    rec.hints.setdefault(name, set()).add(_conv_api(args))
                try:
                    out = func(*args, **kwargs)
                except Exception as exc:
                    rec.errors.setdefault(name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
                    raise
                for leaf in tree_leaves(out):
                    if isinstance(leaf, tensor_type):
                        seen.add(str(leaf.dtype).replace("torch.", ""))
                        rec.device_types.add(leaf.device.type)
                return out

        self._mode = _Recorder()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)


def _conv_api(args: Any) -> str:
    """conv1d/2d/3d or conv_transpose1d/2d/3d, from the weight's rank and the ``transposed`` flag."""
    weight = args[1] if len(args) > 1 else None
    dims = max(1, min(3, weight.dim() - 2)) if weight is not None and hasattr(weight, "dim") else 2
    transposed = bool(args[6]) if len(args) > 6 and isinstance(args[6], bool) else False
    return f"torch.nn.functional.conv{'_transpose' if transposed else ''}{dims}d"


def _sim_state() -> tuple[Optional[str], tuple[str, ...], str]:
    sim = sys.modules.get("ascend_compat.simulate")
    if sim is not None and sim.is_installed():
        cfg = sim.config()
        return cfg.chip, tuple(o if "::" in o else f"aten::{o}" for o in cfg.unsupported_ops), cfg.float64
    return None, (), "allow"


def classify(
    op: str,
    dtypes: Iterable[str] = (),
    line: Optional[str] = None,
    chip: Optional[str] = None,
    unsupported_ops: Iterable[str] = (),
    float64: str = "allow",
    hints: Iterable[str] = (),
) -> tuple[str, tuple[str, ...], str]:
    """(status, listed APIs, basis) for one op; see the module docstring for the rules."""
    from ascend_compat.cuda_shim.dtype_policy import device_dtype_support
    from ascend_compat.migrate import apidb

    line = apidb.normalize_line(line) if line else apidb.DEFAULT_LINE
    unsupported = {o if "::" in o else f"aten::{o}" for o in unsupported_ops}
    if op in unsupported or f"aten::{_base(op)}" in unsupported:
        return "falls_back", (), "configured unsupported in the simulator (runs on the CPU)"
    candidates, forward = api_candidates(op, hints)
    listed = [(api, apidb.status(api, line)) for api in candidates]
    listed = [(api, st) for api, st in listed if st != "unknown"]
    via = f" (backward of {forward})" if forward else ""
    bad = [api for api, st in listed if st == "unsupported"]
    if bad:
        return "falls_back", tuple(bad), f"{bad[0]} listed unsupported on torch_npu {line}{via}"
    base = _base(op)
    dtypes = tuple(dtypes)
    if base not in _VIEW_OPS:
        support = device_dtype_support("npu", chip)
        for dt in dtypes:
            sup = support.get(dt)
            if sup is None or (dt == "float64" and base in _COPY_OPS):
                continue  # a float64 cast or copy is no float64 compute
            if sup.status == "unsupported" or (dt == "float64" and float64 == "error"):
                return "dtype_unsupported", tuple(api for api, _ in listed), f"{dt}: {sup.note}"
    good = [api for api, st in listed if st == "supported"]
    note = ""
    if "float64" in dtypes and base not in _VIEW_OPS and base not in _COPY_OPS:
        note = "; float64 is limited on the NPU (AI CPU)"
    if good:
        return "native", tuple(good), f"{good[0]} listed supported{via}{note}"
    if base in _VIEW_OPS:
        return "native", (), "view/metadata op (no device kernel)"
    tried = ", ".join(candidates[:3]) if candidates else "no torch API name"
    return "unknown", (), f"not in the torch_npu {line} lists (looked for {tried}){note}"


def _report(rec: OpRecorder, line: Optional[str], chip: Optional[str],
            unsupported_ops: Optional[Iterable[str]]) -> AuditReport:
    from ascend_compat.migrate import apidb
    from ascend_compat.simulate import _state

    sim_chip, sim_ops, float64 = _sim_state()
    chip = chip or sim_chip
    if chip is not None and chip not in _state.chip_profiles():
        raise ValueError(f"unknown chip {chip!r}; known: {', '.join(sorted(_state.chip_profiles()))}")
    ops = tuple(unsupported_ops) if unsupported_ops is not None else sim_ops
    line = apidb.normalize_line(line) if line else apidb.DEFAULT_LINE
    uses = []
    for op, n in rec.counts.items():
        dts = tuple(sorted(rec.dtypes.get(op, ())))
        status, apis, basis = classify(op, dts, line, chip, ops, float64, sorted(rec.hints.get(op, ())))
        if op in rec.errors:
            basis += f"; raised {rec.errors[op]}"
        uses.append(OpUse(op, n, dts, status, apis, basis))
    order = {s: i for i, s in enumerate(STATUSES)}
    uses.sort(key=lambda u: (order[u.status], -u.count, u.op))
    return AuditReport(tuple(uses), line, chip, tuple(sorted(rec.device_types)))


def audit(
    fn_or_model: Callable[..., Any],
    *inputs: Any,
    line: Optional[str] = None,
    chip: Optional[str] = None,
    unsupported_ops: Optional[Iterable[str]] = None,
    backward: bool = False,
    kwargs: Optional[dict[str, Any]] = None,
) -> AuditReport:
    """Run ``fn_or_model(*inputs, **kwargs)`` once and classify every aten op it used.

    Args:
        line: torch_npu line whose published lists to use (``2.1``, ``2.6``, ``2.7``, ``2.8``; default newest).
        chip: chip profile for dtype limits (``910B``, ``910B4``, ``310P``); default the running simulator's.
        unsupported_ops: ops to treat as falling back; default the running simulator's configuration.
        backward: also run ``backward()`` on the output (a tensor, or an object with ``.loss``), summed to a
            scalar, inside the recording.
    """
    if chip is not None:
        from ascend_compat.simulate import _state

        if chip not in _state.chip_profiles():  # fail before running the model, not after
            raise ValueError(f"unknown chip {chip!r}; known: {', '.join(sorted(_state.chip_profiles()))}")
    with OpRecorder() as rec:
        out = fn_or_model(*inputs, **(kwargs or {}))
        if backward:
            target = getattr(out, "loss", None)
            if target is None:
                target = out[0] if isinstance(out, (tuple, list)) else out
            target.sum().backward()
    return _report(rec, line, chip, unsupported_ops)


def report_from_recorder(rec: OpRecorder, line: Optional[str] = None, chip: Optional[str] = None,
                         unsupported_ops: Optional[Iterable[str]] = None) -> AuditReport:
    """Classify what an :class:`OpRecorder` saw (the CLI records a whole script this way)."""
    return _report(rec, line, chip, unsupported_ops)
