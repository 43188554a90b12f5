"""``torch.compile`` on the simulated npu: the default (Inductor) backend runs graphs on npu tensors with aot_eager.

On Ascend, ``torch.compile`` reaches the NPU through torchair (its own dynamo backend). Inductor has no code
generator for the simulated device and fails to lower its graphs (``LoweringException``), so a graph whose
inputs live on the npu is compiled with ``aot_eager`` instead: dynamo's capture and AOTAutograd's joint graph
(forward and backward) still run, the ops run eagerly on the npu. A one-line notice says so, once per process.
Graphs on other devices still go to Inductor. ``backend=`` named by the script is never changed.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

NOTICE = (
    "ascend-compat: torch.compile on the simulated npu uses the 'aot_eager' backend (Inductor has no npu code "
    "generator; on Ascend hardware torch.compile goes through torchair)"
)
_STATE = {"noticed": False}


def _on_npu(value: Any) -> bool:
    device = getattr(value, "device", None)
    return getattr(device, "type", None) == "npu"


def graph_uses_npu(model: Any, inputs: Any) -> bool:
    """True when an example input or a value recorded in the FX graph lives on the npu."""
    if any(_on_npu(x) for x in inputs or ()):
        return True
    graph = getattr(model, "graph", None)
    for node in getattr(graph, "nodes", ()):
        value = node.meta.get("example_value", node.meta.get("val"))
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(_on_npu(v) for v in values):
            return True
    return False


def install(torch: Any) -> None:
    """Route npu graphs of the default ``torch.compile`` backend to aot_eager (idempotent)."""
    wrapper = torch._TorchCompileInductorWrapper
    original: Callable[..., Any] = wrapper.__call__
    if getattr(original, "_ascend_compat", False):
        return

    def __call__(self: Any, model_: Any, inputs_: Any, **kwargs: Any) -> Any:  # noqa: N807 - the dunder itself
        if not graph_uses_npu(model_, inputs_):
            return original(self, model_, inputs_, **kwargs)
        if not _STATE["noticed"]:
            _STATE["noticed"] = True
            print(NOTICE, file=sys.stderr, flush=True)
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend("aot_eager")(model_, inputs_)

    __call__._ascend_compat = True  # type: ignore[attr-defined]
    wrapper.__call__ = __call__
