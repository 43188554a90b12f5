"""Code run in child interpreters: an identity snapshot of everything the shim may change, and a fault ledger."""

from __future__ import annotations

#: ``snapshot()`` (every namespace the shim patches, by identity; sys.meta_path, os.environ, copyreg, atexit, the
#: SIGINT handler, waiting import hooks and provided modules, the TorchScript builtin table) and ``diff(a, b)``
#: (what differs).
SNAPSHOT = r'''
import atexit, copyreg, os, signal, sys
import torch, torch.nn, torch.utils.data, torch.distributed as dist
from torch.distributed import distributed_c10d, device_mesh
from torch.jit import _builtins
from ascend_compat import _import_hooks, cuda_shim
from ascend_compat.cuda_shim import devices

def _namespaces():
    c = torch.cuda
    spaces = [torch, torch.Tensor, torch.nn.Module, c, c.amp, c.random, c.memory, c.nvtx, c.graphs, dist,
              distributed_c10d, device_mesh, device_mesh.DeviceMesh, torch.utils.data.DataLoader,
              torch.amp.autocast_mode.autocast, torch.amp.GradScaler, torch.nn.parallel.DistributedDataParallel,
              devices.TARGET, getattr(torch, "accelerator", None)]
    acc = getattr(torch, "accelerator", None)
    if acc is not None and isinstance(getattr(acc, "device_index", None), type):
        spaces.append(acc.device_index)
    return [s for s in spaces if s is not None]

def _fields(ns):
    slots = () if hasattr(ns, "__dict__") else type(ns).__slots__  # devices.TARGET has slots
    return {s: getattr(ns, s) for s in slots} if slots else dict(vars(ns))

def snapshot():
    out = {f"ns{i}": _fields(ns) for i, ns in enumerate(_namespaces())}
    out["copyreg"] = dict(copyreg.dispatch_table)
    out["jit"] = dict(_builtins._get_builtin_table())
    out["meta_path"] = dict(enumerate(sys.meta_path))
    out["environ"] = {k: sys.intern(v) for k, v in os.environ.items()}
    out["misc"] = {"sigint": signal.getsignal(signal.SIGINT), "atexit": atexit._ncallbacks(),
                   "hooks": tuple(sorted(_import_hooks.pending().items())), "ledger": len(cuda_shim._LEDGER),
                   "provisions": tuple(_import_hooks.provisions()),
                   "depth": cuda_shim._DEPTH}
    return out

def diff(a, b):
    bad = []
    for space in a:
        x, y = a[space], b[space]
        for k in set(x) | set(y):
            if k not in x or k not in y or (x[k] is not y[k] and not (space in ("environ", "misc") and x[k] == y[k])):
                bad.append(f"{space}:{k}")
    return sorted(bad)
'''

#: ``FaultLedger(fail_at, exc)``: raises ``exc`` at its ``fail_at``-th step (0-based; every record, change, done
#: and undo step counts); ``steps`` counts them.
FAULT_LEDGER = r'''
from ascend_compat.cuda_shim.ledger import Ledger

class FaultLedger(Ledger):
    def __init__(self, fail_at=None, exc=KeyboardInterrupt, stages=("record", "change", "done")):
        super().__init__()
        self.fail_at, self.exc, self.stages, self.steps = fail_at, exc, stages, 0

    def _step(self, stage, label):
        if stage not in self.stages:
            return
        n, self.steps = self.steps, self.steps + 1
        if n == self.fail_at:
            raise self.exc(f"injected at step {n} ({stage} {label})")
'''
