"""End-to-end model throughput and latency, shim on versus shim off, on the same device.

Shim on: the CUDA spelling users write (``model.cuda()``, inputs ``.cuda()``), then forward (or a training step)
with the shim active, so every factory, ``.to`` and device call inside the model goes through it. Shim off: the
same model placed natively on the target. Both sides start from the same weights and alternate in rounds.

A factory (``--factory module:fn`` or ``script.py:fn``) is called as ``fn(batch_size)``, or as ``fn()`` when it
takes no argument (as ``verify model`` calls it; the batch is then the inputs' leading dimension), and returns
``(model, inputs)``: ``inputs`` a tensor, a tuple of tensors (positional arguments) or a dict (keyword arguments),
built on the CPU.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, Optional

from ascend_compat._factories import takes_an_argument
from ascend_compat.bench._common import (
    SCHEMA_VERSION,
    BenchError,
    Progress,
    Threads,
    activate_or_fail,
    backend_name,
    prepare,
    require_inactive_shim,
    resolve_threads,
    torch_threads,
)
from ascend_compat.bench._timing import latency_summary, synchronizer

DEFAULT_FACTORY = "ascend_compat.bench.model:gpt2_tiny"


def gpt2_tiny(batch_size: int, seq_len: int = 32) -> tuple[Any, dict[str, Any]]:
    """A 2-layer, 64-wide GPT-2 built from a config (no download), with a batch of random token ids."""
    import torch

    try:
        import transformers
    except ImportError:
        raise BenchError("the default model needs transformers (pip install transformers), or pass --factory") from None
    vocab = 1024
    config = transformers.GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        vocab_size=vocab,
        n_positions=max(64, seq_len),
        bos_token_id=vocab - 1,
        eos_token_id=vocab - 1,
    )
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # said outright: transformers warns when it has to guess
    ids = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=torch.Generator().manual_seed(1))
    return model, {"input_ids": ids, "labels": ids}


def load_factory(spec: str) -> Callable[..., Any]:
    """``package.module:fn`` or ``path/to/script.py:fn`` to the function (see :mod:`ascend_compat._factories`)."""
    from ascend_compat._factories import load_callable

    try:
        return load_callable(spec)
    except ValueError as exc:
        raise BenchError(f"--factory {exc}") from None


def _tensors(obj: Any) -> Any:
    """The tensors of ``inputs`` (a tensor, a tuple/list or a dict), in order."""
    import torch

    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from _tensors(v)


def _move(obj: Any, fn: Callable[[Any], Any]) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: _move(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(v, fn) for v in obj)
    return obj


def _call(model: Any, inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (list, tuple)):
        return model(*inputs)
    return model(inputs)


def _loss(out: Any) -> Any:
    """The model's own loss when it returns one (``.loss`` / ``["loss"]``), else the mean of its first tensor."""
    import torch

    loss = getattr(out, "loss", None)
    if loss is None and isinstance(out, dict):
        loss = out.get("loss")
    if loss is not None:
        return loss
    if isinstance(out, (list, tuple)) and out:
        out = out[0]
    if isinstance(out, torch.Tensor):
        return out.float().mean()
    if hasattr(out, "to_tuple"):
        return _loss(out.to_tuple())
    raise BenchError(f"cannot derive a loss from the model's output ({type(out).__name__}) for --train")


def _placed_on(model: Any, inputs: Any, device_type: str) -> bool:
    import torch

    params = all(p.device.type == device_type for p in model.parameters())
    tensors: list[Any] = []

    def collect(t: Any) -> Any:
        tensors.append(t)
        return t

    _move(inputs, collect)
    return params and all(t.device.type == device_type for t in tensors if isinstance(t, torch.Tensor))


#: A model and its inputs on one device.
_Placed = tuple[Any, Any]


def _build(torch: Any, factory: Optional[str], batch: int, seq_len: int) -> tuple[Any, Any, int]:
    """(model, inputs, samples per step) from ``--factory`` (or the default tiny GPT-2)."""
    if factory is None:
        base, inputs = gpt2_tiny(batch, seq_len)
        return base, inputs, batch
    try:
        fn = load_factory(factory)
        sized = takes_an_argument(fn)
        made = fn(batch) if sized else fn()
    except BenchError:
        raise
    except Exception as exc:
        raise BenchError(f"--factory {factory!r} failed: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module)):
        raise BenchError(f"--factory {factory!r} must return (torch.nn.Module, inputs)")
    base, inputs = made
    if not sized:  # the factory chose its inputs: samples per step are their leading dimension
        first = next((t for t in _tensors(inputs)), None)
        batch = int(first.shape[0]) if first is not None and first.dim() > 0 else 1
    return base, inputs, batch


def _place(base: Any, inputs: Any, backend: Optional[str]) -> tuple[str, Optional[str], _Placed, _Placed]:
    """(target, backend name, (model, inputs) placed with ``.cuda()`` under the shim, the same placed natively)."""
    from ascend_compat import cuda_shim

    target = activate_or_fail(backend)
    chosen = backend_name()
    try:
        # The CUDA spelling, shim on: what an unported script does.
        on_model = copy.deepcopy(base).cuda()
        on_inputs = _move(inputs, lambda t: t.cuda())
    except Exception as exc:
        raise BenchError(f"placing the model with .cuda() failed: {type(exc).__name__}: {exc}") from exc
    finally:
        cuda_shim.deactivate()
    try:
        off_model = copy.deepcopy(base).to(target)
        off_inputs = _move(inputs, lambda t: t.to(target))
    except Exception as exc:
        raise BenchError(f"placing the model on {target!r} failed: {type(exc).__name__}: {exc}") from exc
    if not _placed_on(on_model, on_inputs, target):
        raise BenchError(f"with the shim on, model.cuda() did not land on {target!r}")
    return target, chosen, (on_model, on_inputs), (off_model, off_inputs)


def _stepper(torch: Any, model: Any, inp: Any, train: bool) -> Callable[[], Any]:
    """One forward pass (no grad, eval mode) or one AdamW training step of ``model`` on ``inp``."""
    if not train:
        model.eval()

        def forward() -> Any:
            with torch.no_grad():
                return _call(model, inp)

        return forward
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train_step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = _loss(_call(model, inp))
        loss.backward()
        opt.step()
        return loss

    return train_step


def _measure(sides: dict[str, Callable[[], Any]], sync: Callable[[], Any], *, warmup: int, per_round: list[int],
             backend: Optional[str], progress: Progress) -> dict[str, list[float]]:
    """Seconds per step of each side, warm-up first, then rounds alternating off and on (the shim on for "on")."""
    from ascend_compat import cuda_shim

    samples: dict[str, list[float]] = {"off": [], "on": []}
    total = 2 * (warmup + sum(per_round))
    done = 0

    def run_side(side: str, n: int, keep: bool) -> None:
        nonlocal done
        fn = sides[side]
        if side == "on":
            cuda_shim.activate(backend)
        try:
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                sync()
                if keep:
                    samples[side].append(time.perf_counter() - t0)
                done += 1
                if progress is not None:
                    progress(done, total)
        finally:
            if side == "on":
                cuda_shim.deactivate()

    try:
        for side in ("off", "on"):
            run_side(side, warmup, keep=False)
        for n in per_round:  # alternate, so that load on a shared machine hits both sides
            run_side("off", n, keep=True)
            run_side("on", n, keep=True)
    except BenchError:
        raise
    except Exception as exc:
        raise BenchError(f"the model failed to run: {type(exc).__name__}: {exc}") from exc
    finally:
        while cuda_shim.is_activated():
            cuda_shim.deactivate()
    return samples


def run(
    *,
    factory: Optional[str] = None,
    batch: int = 4,
    seq_len: int = 32,
    steps: int = 50,
    warmup: int = 3,
    rounds: int = 4,
    train: bool = False,
    threads: Threads = "auto",
    simulate: Optional[str] = None,
    backend: Optional[str] = None,
    progress: Progress = None,
) -> dict[str, Any]:
    """Forward (or training-step) latency and samples/s, shim on and off; the report (``kind: "model"``)."""
    if batch < 1 or steps < 1 or warmup < 0 or rounds < 1:
        raise BenchError("--batch and --steps must be at least 1, --warmup at least 0")
    torch = prepare(simulate)
    require_inactive_shim()
    from ascend_compat.bench import fingerprint

    n_threads, threads_rule = resolve_threads(threads)
    with torch_threads(n_threads):
        base, inputs, batch = _build(torch, factory, batch, seq_len)
        target, chosen, on, off = _place(base, inputs, backend)
        sides = {"off": _stepper(torch, *off, train), "on": _stepper(torch, *on, train)}
        per_round = [steps // rounds + (1 if r < steps % rounds else 0) for r in range(rounds)]
        per_round = [n for n in per_round if n > 0]
        samples = _measure(sides, synchronizer(torch, target), warmup=warmup, per_round=per_round, backend=backend,
                           progress=progress)
        results: dict[str, Any] = {}
        for side in ("off", "on"):
            busy = sum(samples[side])
            results[side] = {
                "latency_ms": latency_summary([s * 1e3 for s in samples[side]]),
                "samples_per_s": batch * len(samples[side]) / busy if busy > 0 else None,
            }
        shim_off, shim_on = results["off"], results["on"]
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "model",
            "fingerprint": fingerprint.collect(chosen, target),
            "settings": {
                "factory": factory or DEFAULT_FACTORY,
                "mode": "train" if train else "forward",
                "batch": batch,
                "seq_len": seq_len if factory is None else None,
                "steps": steps,
                "warmup": warmup,
                "rounds": len(per_round),
                "simulate": simulate,
                "backend": chosen,
                "target": target,
                "parameters": sum(p.numel() for p in base.parameters()),
                "threads": torch.get_num_threads(),
                "threads_rule": threads_rule,
            },
            "shim_off": shim_off,
            "shim_on": shim_on,
            "latency_ratio_p50": shim_on["latency_ms"]["p50"] / shim_off["latency_ms"]["p50"]
            if shim_off["latency_ms"]["p50"]
            else None,
            "throughput_ratio": (
                shim_on["samples_per_s"] / shim_off["samples_per_s"]
                if shim_on["samples_per_s"] and shim_off["samples_per_s"] else None
            ),
            "failed": 0,
        }
