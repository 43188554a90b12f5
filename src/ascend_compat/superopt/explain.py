"""The text of ``OptimizedGraph.explain()``: candidates considered, rewrites, verification, why this plan won."""

from __future__ import annotations

from typing import Any

MODES = {"interpret": "kernels run by Triton's CPU interpreter (no device that compiles them here)",
         "compiled": "kernels compiled by Triton for the device", "torch": "the plan runs as torch ops"}


def _mb(x: float) -> str:
    return f"{x / 1e6:.2f} MB"


def explain(r: dict[str, Any]) -> str:
    s, cost, eager = r["search"], r["cost"], r.get("eager") or {}
    ok_variants = sum(1 for v in s["variants"] if v["equivalent"])
    lines = [
        f"Superoptimized for {r['target']} (backend {r['backend']!r}; {MODES.get(r['mode'], r['mode'])}); "
        f"cache {r.get('cache', 'n/a')}",
        f"Search: {len(s['variants'])} algebraic variant(s) ({ok_variants} equal to the input graph over the finite "
        f"field), {s['partitions']} fusion partition(s), {s['candidates']} candidate(s) in {s['seconds']:.2f} s "
        f"(+{s['verify_seconds']:.2f} s verification)",
        f"Chosen: {r['plan']}; rewrites: {', '.join(r['rewrites']) or 'none'}",
        f"  why: {r['choice']}: {cost['time_us']:.1f} us modelled vs {eager.get('time_us', 0):.1f} us for torch eager",
    ]
    if eager:
        ratio = cost["dram_bytes"] / eager["dram_bytes"] if eager.get("dram_bytes") else 0
        lines.append(f"  memory traffic: {_mb(cost['dram_bytes'])} vs {_mb(eager['dram_bytes'])} eager ({ratio:.2f}x); "
                     f"kernels {cost['kernels']} vs {eager['kernels']}")
    lines += [f"Verification: finite field: {r['verification']['finite_field']}",
              *[f"  schedule: {x}" for x in r["verification"].get("schedules", [])],
              f"  numeric: {r['verification']['numeric']}", "Candidates (best first):"]
    for k, c in enumerate(s["top"], 1):
        lines.append(f"  {k}. {c['plan']} [{', '.join(c['rewrites']) or 'no rewrite'}] {c['time_us']:.1f} us, "
                     f"{_mb(c['dram_bytes'])}: {c['status']}")
        lines += [f"     proof {p}" for p in c.get("proofs", [])]
    for v in s["variants"]:
        if not v["equivalent"]:
            lines.append(f"  variant {v['rewrites']} discarded: {v['reason']}")
    for plan, why in s["failed"]:
        lines.append(f"Discarded: {plan}: {why}")
    for why, n in sorted(s["rejected"].items(), key=lambda x: -x[1])[:5]:
        lines.append(f"Partitions not emitted ({n}): {why}")
    for k in r["kernels"]:
        lines.append(f"Kernel {k['name']}: tiles {k['tiles']}, {_mb(k['cost']['dram_bytes'])} modelled")
    return "\n".join(lines)
