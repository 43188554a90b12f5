"""Simulated NPU overhead versus the same work on the CPU (run by hand; figures go in notes, not tests).

    python benchmarks/bench_simulator.py [--reps 20] [--min-ms 1000] [--min-calls 8] [--threads N] [--load N]
        [--control cpu|npu|none] [--host-blas on|off] [--malloc-reuse] [--quick] [--json]

Both sides run the same code in one process. A repetition runs both sides back to back, alternating chunk by
chunk (a chunk: calls lasting about 1 ms on a quiet machine, or one call of a longer step; CPU then npu, npu then
CPU, ...), until each side has run the same number of calls, at least ``--min-calls`` of them and for at least
``--min-ms`` (one scheduler hiccup then costs a few percent, not 2x; a 110 ms step still gets several interleaved
calls per side). The repetition's ratio is the npu's total wall time over the CPU's: nothing is dropped or smoothed.
Each case reports every repetition's ratio, their median, the worst and the best, the ratio of the total times,
every repetition's ratio in process CPU time (``time.process_time``: what the work cost, whatever else the machine
ran meanwhile), their median and worst, and the minor page faults per call of each side. The goal (training steps
within 1.1x in every repetition) is judged in wall time and in CPU time.

A/A control (``--control``, default ``cpu``): two copies of the same step on the same device, measured exactly like
the CPU/npu pair and interleaved with it repetition by repetition (A/B first, then A/A first, ...). Its worst
repetition is the noise floor of the "worst repetition" statistic on this machine under this load: when it is
above 1.1, the machine alone breaks the goal at this repetition length, and the run says so.

Repetition length (measured on a shared 2-core machine, load average 2-8 from other jobs): with 50 ms per side the
A/A control's worst repetition was 1.06-1.36 without ``--load`` and 1.13-2.56 with ``--load 2``, too coarse to judge
1.1x; with 1 s per side 1.02-1.52 without and 1.08-1.25 with ``--load 2``. Hence the default of at least 1 s and 8
calls per side per repetition; a run whose control is above 1.1 cannot judge the goal, and says so.

Run time: about reps x 2 pairs (A/B and A/A) x 2 sides x max(min-ms, min-calls x one call): with the defaults,
``--quick`` takes about 4-10 minutes on a 2-core machine (a GPT-2 tiny step takes 50-300 ms there, more under
load); ``--min-ms 50 --control none`` about 10 times less, for a first look.

``--load N`` runs N busy-looping processes for the duration (stopped at the end), a reproducible loaded machine.
Optimizers use the same implementation on both sides (``foreach=False``, the CPU default): on ``npu`` torch
would otherwise pick the multi-tensor path and the comparison would measure that choice.

Not like-for-like by default, and reported as such: the simulated device caches freed host blocks (as torch_npu's
and CUDA's caching allocators do) while the CPU side's glibc malloc maps fresh pages for every large block, so the
CPU pays page faults the npu does not (GPT-2 tiny: 2,000-16,000 per step, the CPU's step 1.1-1.7x the npu's; with
both sides reusing memory and torch's BLAS on both, the two steps cost the same CPU time). ``--malloc-reuse``
makes glibc keep freed memory for reuse (``mallopt``) so that both sides reuse memory. ``--host-blas off`` runs the
npu's large products on torch's kernel (as the CPU's) instead of NumPy's OpenBLAS (``simulate.configure``).

Goal (issue 15): every repetition of the training steps within 1.1x of the CPU.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

Make = Callable[[str], Callable[[], object]]
Totals = dict[str, float]  # wall and process CPU seconds, minor page faults
GOAL = 1.1
FAULT_US = 2.5  # one minor page fault, with the zeroing of its page (measured on the 2-core AMD EPYC host)
GPT2_CASES = ("gpt2-tiny forward (2x32)", "gpt2-tiny train step (2x32)")

try:
    import resource

    def _faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

except ImportError:  # Windows: no page-fault counter

    def _faults() -> int:
        return 0


def _sample(fn: Callable[[], object], calls: int) -> tuple[float, float, int]:
    """Wall seconds, process CPU seconds and minor page faults of ``calls`` calls of ``fn``."""
    f0, w0, c0 = _faults(), time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return time.perf_counter() - w0, time.process_time() - c0, _faults() - f0


def _calls_for(fn: Callable[[], object], seconds: float) -> tuple[int, float]:
    """Calls that take at least ``seconds``, and one call's time: the fastest of a few short timings (load only
    slows calls down)."""
    calls = 1
    while True:
        wall = _sample(fn, calls)[0]
        if wall >= 2e-3:  # long enough for the clock; take the fastest of three such timings
            best = min([wall] + [_sample(fn, calls)[0] for _ in range(2)]) / calls
            return max(1, math.ceil(seconds / best)), best
        calls *= 4


def _rep(a: Callable[[], object], b: Callable[[], object], chunk: int, chunks: int) -> tuple[Totals, Totals]:
    """One repetition of a pair: ``chunks`` chunks of ``chunk`` calls per side, a then b, b then a, ..."""
    totals = ({"wall": 0.0, "cpu": 0.0, "faults": 0.0}, {"wall": 0.0, "cpu": 0.0, "faults": 0.0})
    for i in range(chunks):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            wall, cpu_s, faults = _sample((a, b)[side], chunk)
            totals[side]["wall"] += wall
            totals[side]["cpu"] += cpu_s
            totals[side]["faults"] += faults
    return totals


def _summary(first: list[Totals], second: list[Totals]) -> dict[str, object]:
    """Per-repetition ratios second / first and their summary (nothing dropped), and each repetition's wall
    milliseconds per side (which side a bad repetition came from)."""
    ratios = [s["wall"] / f["wall"] for f, s in zip(first, second)]
    cpu_ratios = [s["cpu"] / f["cpu"] for f, s in zip(first, second) if f["cpu"] > 0]
    return {
        "ratio": round(statistics.median(ratios), 3),
        "worst_rep_ratio": round(max(ratios), 3),
        "best_rep_ratio": round(min(ratios), 3),
        "reps_above_goal": sum(r > GOAL for r in ratios),
        "total_ratio": round(sum(s["wall"] for s in second) / sum(f["wall"] for f in first), 3),
        "cpu_time_ratio": round(statistics.median(cpu_ratios), 3) if cpu_ratios else None,
        "worst_rep_cpu_time_ratio": round(max(cpu_ratios), 3) if cpu_ratios else None,
        "rep_cpu_time_ratios": [round(r, 3) for r in cpu_ratios],
        "rep_ratios": [round(r, 3) for r in ratios],
        "rep_ms": [[round(f["wall"] * 1e3, 2), round(s["wall"] * 1e3, 2)] for f, s in zip(first, second)],
    }


def measure(make: Make, reps: int, min_ms: float, min_calls: int = 1, control: str = "cpu") -> dict[str, object]:
    """Interleaved CPU/npu work of ``make(device)()`` (and an A/A control pair on ``control``, unless "none"):
    per-repetition ratios npu/CPU and their summary, with the control's under ``"control"``.

    A repetition alternates the two sides chunk by chunk until each side has run at least ``min_calls`` calls
    and for at least ``min_ms``; its ratio is the npu's total time over the CPU's. Fine interleaving puts both
    sides under the same load: a spike longer than a chunk hits both.
    """
    pairs = {"ab": (make("cpu"), make("npu"))}
    if control != "none":
        pairs["aa"] = (make(control), make(control))
    fns = [fn for pair in pairs.values() for fn in pair]
    for _ in range(3):  # warm up every side (allocator caches, lazy inits)
        for fn in fns:
            fn()
    chunk = max(_calls_for(fn, 1e-3)[0] for fn in fns)
    by_time, one_call = _calls_for(pairs["ab"][0], min_ms / 1e3)
    chunks = max(2, math.ceil(max(by_time, min_calls) / chunk))
    chunks += chunks % 2  # an even count: each side goes first equally often
    results: dict[str, tuple[list[Totals], list[Totals]]] = {name: ([], []) for name in pairs}
    start = time.perf_counter()
    for r in range(reps):
        for name in list(pairs) if r % 2 == 0 else list(pairs)[::-1]:  # A/B and A/A take turns going first
            first, second = _rep(*pairs[name], chunk, chunks)
            results[name][0].append(first)
            results[name][1].append(second)
    calls = chunk * chunks
    cpu, npu = results["ab"]

    def faults_per_call(side: list[Totals]) -> float:
        return round(sum(t["faults"] for t in side) / (calls * reps), 1)

    row: dict[str, object] = {
        "calls_per_rep_per_side": calls,
        "cpu_us": round(statistics.median(t["wall"] for t in cpu) / calls * 1e6, 2),
        "npu_us": round(statistics.median(t["wall"] for t in npu) / calls * 1e6, 2),
        "cpu_faults_per_call": faults_per_call(cpu),
        "npu_faults_per_call": faults_per_call(npu),
        "quiet_call_us": round(one_call * 1e6, 1),  # the CPU side's fastest call, as sized
        "run_s": round(time.perf_counter() - start, 1),
        **_summary(cpu, npu),
    }
    if "aa" in results:
        first, second = results["aa"]
        row["control"] = {"device": control, **_summary(first, second),
                          "faults_per_call": [faults_per_call(first), faults_per_call(second)]}
    return row


def _ops_cases(torch: object) -> list[tuple[str, Make]]:
    cases: list[tuple[str, Make]] = []
    for n in (16, 128, 512):

        def add(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a + b

        def mm(dev: str, n: int = n) -> Callable[[], object]:
            a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)  # type: ignore[attr-defined]
            return lambda: a @ b

        cases.append((f"add {n}x{n}", add))
        cases.append((f"matmul {n}x{n}", mm))
    return cases


def _mlp_step(torch: object) -> Make:
    nn = torch.nn  # type: ignore[attr-defined]
    torch.manual_seed(0)  # type: ignore[attr-defined]
    base = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def make(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)  # type: ignore[attr-defined]
        x = torch.randn(64, 256, device=dev)  # type: ignore[attr-defined]
        y = torch.randint(0, 10, (64,), device=dev)  # type: ignore[attr-defined]

        def step() -> object:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    return make


def _gpt2_cases(torch: object) -> list[tuple[str, Make]]:
    import transformers

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2)
    torch.manual_seed(0)  # type: ignore[attr-defined]
    base = transformers.GPT2LMHeadModel(config)

    def forward(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev).eval()
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)  # type: ignore[attr-defined]

        def run() -> object:
            with torch.no_grad():  # type: ignore[attr-defined]
                return model(ids).logits

        return run

    def train(dev: str) -> Callable[[], object]:
        model = copy.deepcopy(base).to(dev).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)  # type: ignore[attr-defined]
        ids = torch.randint(0, config.vocab_size, (2, 32), device=dev)  # type: ignore[attr-defined]

        def run() -> object:
            opt.zero_grad()
            loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            return loss

        return run

    return list(zip(GPT2_CASES, (forward, train)))


def _busy_loops(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that spin until stopped: a loaded machine that another run can reproduce."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _malloc_reuse() -> None:
    """Make glibc keep freed memory for reuse: no fresh mmap per large block (the CPU side then reuses memory as
    the simulated device's block cache does)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        raise SystemExit("bench_simulator: --malloc-reuse needs glibc's mallopt (Linux)") from None
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (mallopt(m_mmap_threshold, 32 << 20) and mallopt(m_trim_threshold, 1 << 30)):  # 32 MiB: glibc's maximum
        raise SystemExit("bench_simulator: mallopt refused the thresholds")


def _notes(rows: list[dict[str, object]], blas: str) -> list[str]:
    """What makes this run's comparison not like-for-like, or unable to judge the goal."""
    notes = []
    for r in rows:
        cpu_f, npu_f = float(r["cpu_faults_per_call"]), float(r["npu_faults_per_call"])  # type: ignore[arg-type]
        # The usual reason the npu side beats the CPU on the same host (GPT-2 tiny: 0.6x): measured, not assumed.
        # A fault and the zeroing of its page cost about 2.5 us here (GPT-2 tiny: ~9,400 faults, ~25 ms a step).
        share = (cpu_f - npu_f) * FAULT_US / float(r["quiet_call_us"])  # type: ignore[arg-type]
        if share > 0.02:
            notes.append(f"{r['case']}: the CPU side takes {cpu_f:g} page faults per call, the npu {npu_f:g} (about "
                         f"{share:.0%} of the CPU's step): the simulated device reuses freed blocks (a caching "
                         "allocator, as torch_npu's) where glibc maps fresh pages; not like-for-like "
                         "(--malloc-reuse makes both sides reuse memory)")
        control = r.get("control")
        if isinstance(control, dict) and "train" in str(r["case"]) and control["worst_rep_ratio"] > GOAL:
            notes.append(f"{r['case']}: the A/A control's worst repetition is {control['worst_rep_ratio']} > {GOAL}: "
                         "this machine's noise alone exceeds the goal at this repetition length")
        products = int(r.get("host_blas_products", 0))  # type: ignore[call-overload]
        if blas and products:
            notes.append(f"{r['case']}: {products} of the npu's matrix products ran on {blas}, the CPU's on torch's "
                         "kernel (--host-blas off: torch's on both sides)")
    return notes


def _print_row(r: dict[str, object]) -> None:
    control = r.get("control") or {}
    aa = f"{control['worst_rep_ratio']:>6}" if isinstance(control, dict) and control else f"{'-':>6}"
    print(f"{r['case']:28} {r['cpu_us']:>11} {r['npu_us']:>11} {r['ratio']:>6} {r['worst_rep_ratio']:>6} "
          f"{r['best_rep_ratio']:>6} {r['total_ratio']:>6} {r['cpu_time_ratio']!s:>6} {aa} "
          f"{r['cpu_faults_per_call']:>7}/{r['npu_faults_per_call']}", flush=True)
    print(f"{'':28} npu/cpu reps ({r['calls_per_rep_per_side']} calls/side, {r['run_s']} s): "
          + " ".join(f"{x:.2f}" for x in r["rep_ratios"]), flush=True)  # type: ignore[attr-defined]
    print(f"{'':28} the same in CPU time (worst {r['worst_rep_cpu_time_ratio']}): "
          + " ".join(f"{x:.2f}" for x in r["rep_cpu_time_ratios"]), flush=True)  # type: ignore[attr-defined]
    if isinstance(control, dict) and control:
        print(f"{'':28} A/A {control['device']} reps (median {control['ratio']}, cpu-t {control['cpu_time_ratio']}): "
              + " ".join(f"{x:.2f}" for x in control["rep_ratios"]), flush=True)


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=20, help="repetitions (default 20)")
    parser.add_argument("--min-ms", type=float, default=1000.0,
                        help="least time per side per repetition (default 1000 ms; see 'Repetition length')")
    parser.add_argument("--min-calls", type=int, default=8,
                        help="least calls per side per repetition (default 8; a 110 ms step: ~1 s per side per rep)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own choice)")
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes to run meanwhile (default 0)")
    parser.add_argument("--control", choices=("cpu", "npu", "none"), default="cpu",
                        help="device of the A/A control pair (default cpu; none: no control, half the run time)")
    parser.add_argument("--host-blas", choices=("on", "off"), default="on",
                        help="the npu's large products on NumPy's OpenBLAS (on, the simulator's default) or torch's")
    parser.add_argument("--malloc-reuse", action="store_true",
                        help="glibc keeps freed memory for reuse (both sides then reuse memory; glibc only)")
    parser.add_argument("--quick", action="store_true", help="only the training steps")
    parser.add_argument("--case", default="", help="only the cases whose name contains this text (e.g. mlp)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.reps < 1 or args.min_ms <= 0 or args.min_calls < 1 or args.threads < 0 or args.load < 0:
        parser.error("--reps and --min-calls must be >= 1, --min-ms > 0, --threads and --load >= 0")
    return args


def main() -> None:
    args = _parse()
    if args.malloc_reuse:
        _malloc_reuse()
    from ascend_compat import simulate

    simulate.install()
    simulate.configure(host_blas=args.host_blas == "on")
    import torch

    from ascend_compat.simulate import _host_blas, _state

    ext = _state.ext()

    blas = _host_blas.describe() if args.host_blas == "on" and _host_blas.find() is not None else ""
    if args.threads:
        torch.set_num_threads(args.threads)
    cases = [] if args.quick else _ops_cases(torch)
    cases.append(("mlp train step (64x256)", _mlp_step(torch)))
    if any(args.case in name for name in GPT2_CASES):  # transformers is imported only when needed
        cases += _gpt2_cases(torch)
    cases = [c for c in cases if (not args.quick or "train" in c[0]) and args.case in c[0]]
    if not cases:
        raise SystemExit(f"bench_simulator: no case matches --case {args.case!r}")
    if not args.json:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.reps} reps of >= "
              f"{args.min_ms:g} ms and >= {args.min_calls} calls per side, {args.load} busy process(es), A/A control: "
              f"{args.control}, host BLAS {args.host_blas}, malloc reuse {'on' if args.malloc_reuse else 'off'}")
        print(f"{'case':28} {'cpu us':>11} {'npu us':>11} {'median':>6} {'worst':>6} {'best':>6} {'total':>6} "
              f"{'cpu-t':>6} {'A/A-w':>6} {'faults/call':>11}  (npu/cpu per rep; cpu-t: process CPU time; "
              "A/A-w: worst rep of the A/A control; faults: cpu/npu)")
    rows = []
    load = _busy_loops(args.load)
    try:
        for name, make in cases:
            products = ext.host_blas_products()
            rows.append({"case": name, **measure(make, args.reps, args.min_ms, args.min_calls, args.control)})
            rows[-1]["host_blas_products"] = ext.host_blas_products() - products
            if not args.json:
                _print_row(rows[-1])
    finally:
        for proc in load:
            proc.kill()
            proc.wait()
    train = [r for r in rows if "train" in str(r["case"])]
    goal = all(float(r["worst_rep_ratio"]) <= GOAL for r in train)  # type: ignore[arg-type]
    # The same judged in process CPU time: what the simulator's work costs, whatever else the machine runs (a busy
    # machine preempts both sides, which the wall clock counts and the A/A control shows).
    goal_cpu = all(r["worst_rep_cpu_time_ratio"] is not None and float(r["worst_rep_cpu_time_ratio"]) <= GOAL  # type: ignore[arg-type]
                   for r in train)
    notes = _notes(rows, blas)
    if args.json:
        print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "reps": args.reps,
                          "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
                          "min_ms": args.min_ms, "min_calls": args.min_calls, "load": args.load,
                          "control": args.control, "host_blas": args.host_blas, "malloc_reuse": args.malloc_reuse,
                          "rows": rows, "goal_train_step_within_1.1x_every_rep": goal,
                          "goal_in_cpu_time": goal_cpu, "notes": notes}, indent=2))
        return
    for note in notes:
        print(f"note: {note}")
    print(f"goal (train steps within {GOAL}x in every rep): {'met' if goal else 'NOT met'}; in CPU time: "
          f"{'met' if goal_cpu else 'NOT met'}")


if __name__ == "__main__":
    main()
