"""Units of kernel work: compiled extensions and their kernels, Triton kernels, and kernels written in GPU tile
DSLs (TileLang, CuTe DSL).

A kernel is costed once however many extensions compile it; a dtype/layout specialization of a kernel costed in
full is a ``kernel_variant``; an extension whose every kernel goes to a torch_npu operator is retired, not rebuilt.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import Callable

from ascend_compat.migrate.effort_units import Builder, npu_operator, operator_unit, rel
from ascend_compat.migrate.extensions import Extension, Kernel
from ascend_compat.migrate.model import Finding, ScanResult

Claim = Callable[[list[Finding]], list[Finding]]

#: What makes a kernel hard to port, in words (the rule codes and API fragments ``extensions`` records).
_REASONS = {"AC607": "CUB/Thrust block primitives", "AC608": "CUDA libraries", "AC611": "inline PTX",
            "mma": "tensor-core MMA", "wmma": "tensor-core WMMA", "ldmatrix": "ldmatrix", "cp.async": "cp.async",
            "__shfl": "warp shuffles", "cub::": "CUB"}
_ASCEND_C = "an Ascend C kernel (`ascend-compat scaffold`)"
#: Name words that only specialize a kernel (dtype, version, group size, head dim): ignored when comparing names.
_SPECIAL = re.compile(r"^(float|half|double|bf16|fp16|fp32|fp64|fp8|bfloat16|float16|float32|int8|int4|uint8|real|"
                      r"complex|v\d+|dim\d+|g\d+|\d+)$")
#: Words that make a different kernel, not a variant: the backward of a forward is its own port.
_DIRECTION = frozenset({"fwd", "bwd", "forward", "backward", "grad", "bprop", "fprop", "dgrad", "wgrad", "backprop"})
_GENERIC = frozenset({"kernel", "cuda", "cu", "impl", "global", "device", "op"})


def _words(name: str) -> frozenset[str]:
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return frozenset(w for w in snake.split("_") if w and not _SPECIAL.match(w))


def variant_bases(kernels: list[Kernel]) -> dict[int, Kernel]:
    """For each kernel (by index) that specializes another of ``kernels``, that other: its words are a subset of
    this one's, the added words name no direction (fwd/bwd/grad) and it has a word besides ``kernel``/``cuda``.
    ``index_mul_2d_half`` and ``index_mul_2d_float_dim64`` are variants of ``index_mul_2d_float``;
    ``transducer_joint_tiled_forward`` of ``transducer_joint_forward``; a backward is never a forward's variant."""
    words = [_words(k.name) for k in kernels]
    bases: list[int] = []
    out: dict[int, Kernel] = {}
    for i in sorted(range(len(kernels)), key=lambda i: (len(words[i]), i)):
        for j in bases:
            if words[j] <= words[i] and not (words[i] - words[j]) & _DIRECTION and words[j] - _GENERIC:
                out[i] = kernels[j]
                break
        else:
            bases.append(i)
    return out


def kernel_units(b: Builder, kernels: list[Kernel], where: str, findings: list[Finding]) -> None:
    """Units for kernels not already costed: the torch_npu operator that does the job, a variant, or a port
    (plain or complex). ``findings`` go to the first unit."""
    fresh = [k for k in kernels if (k.path, k.line) not in b.kernels]
    if not fresh and kernels and findings:  # every kernel already costed: its unit takes the file's findings
        b.kernels[(kernels[0].path, kernels[0].line)].findings.extend(findings)
    bases = variant_bases(fresh)
    for i, k in enumerate(fresh):
        fs = findings if i == 0 else []
        op = npu_operator(k.name, k.path)
        if op is not None:  # a kernel outside any extension that torch_npu already implements
            unit = b.add(operator_unit(op), "kernels", f"kernel `{k.name}` ({where}): {op['what']}", fs,
                         [f"{k.path}:{k.line}"], op["torch_npu"])
        elif i in bases:
            unit = b.add("kernel_variant", "kernels", f"kernel `{k.name}` ({where}): a variant of "
                         f"`{bases[i].name}`, ported as one more case of its Ascend C kernel", fs,
                         [f"{k.path}:{k.line}"], f"the Ascend C port of `{bases[i].name}`")
        elif k.complex:
            uses = ", ".join(_REASONS.get(r, f"`{r}`") for r in k.reasons)
            unit = b.add("kernel_complex", "kernels", f"kernel `{k.name}` ({where}; uses {uses})", fs,
                         [f"{k.path}:{k.line}"], _ASCEND_C)
        else:
            unit = b.add("kernel", "kernels", f"kernel `{k.name}` ({where})", fs, [f"{k.path}:{k.line}"], _ASCEND_C)
        b.kernels[(k.path, k.line)] = unit


def extension_units(b: Builder, ext: Extension, findings: list[Finding]) -> None:
    """The extension's own unit (rebuilt, or retired when torch_npu operators take all its work), one unit per
    torch_npu operator its kernels and exports go to, and its remaining kernels and exports."""
    d = ext.decl
    if not ext.cuda and not findings:
        return  # a CPU extension builds unchanged on the NPU host
    shared = [k for k in ext.kernels if (k.path, k.line) in b.kernels]
    for k in shared:
        unit = b.kernels[(k.path, k.line)]
        if f"`{ext.name}`" not in unit.label:
            unit.label += f"; also compiled into `{ext.name}`"
    # Kernels (and exports) that one torch_npu operator replaces are one unit: forward, backward and the
    # variants of a fused RoPE are routed to the operator together.
    by_op: dict[str, list[str]] = defaultdict(list)
    entries: dict[str, dict] = {}
    plain: list[Kernel] = []
    for k in ext.kernels:
        if (k.path, k.line) in b.kernels:
            continue
        op = npu_operator(k.name, k.path)
        if op is None:
            plain.append(k)
            continue
        by_op[op["torch_npu"]].append(f"`{k.name}` ({k.path}:{k.line})")
        entries[op["torch_npu"]] = op
    extra = []
    for e in ext.exports:
        op = npu_operator(e.name)
        if op is not None:
            by_op[op["torch_npu"]].append(f"export `{e.name}` ({e.where()})")
            entries[op["torch_npu"]] = op
        else:
            extra.append(e)
    # Exports beyond the kernels have device code shared with other exports (functors of one kernel template).
    # Where no kernel is left to port, the exports bind kernels that operators or other extensions took over.
    ported = len(plain) + sum(1 for k in shared if b.kernels[(k.path, k.line)].family != "torch_npu_operator")
    lone = extra[ported:] if plain or not ext.kernels else []
    retired = bool(ext.kernels) and not plain
    summary = (f"{d.kind}, {len(ext.sources)} source file(s), {len(ext.exports)} export(s), {len(ext.kernels)} "
               f"kernel(s), {len(ext.call_sites)} Python use(s)")
    refs = [f"{d.path}:{d.line}"] + [s.where() for s in ext.call_sites]
    if retired:
        b.add("extension_replaced", "extensions", f"extension `{ext.name}` ({summary}): every kernel goes to a "
              "torch_npu operator or is ported with another extension, so the build entry is dropped", findings, refs,
              "the torch_npu operators of its kernels (section 3.1)")
    else:
        b.add("extension", "extensions", f"extension `{ext.name}` ({summary})", findings, refs,
              "rebuild with torch_npu (NpuExtension / OpPlugin registration)")
    kernel_units(b, plain, f"extension {ext.name}", [])
    # An operator already costed for kernels this extension shares takes the exports that bind them.
    done = {b.kernels[(k.path, k.line)].alternative: b.kernels[(k.path, k.line)] for k in shared}
    for op_name, items in sorted(by_op.items()):
        op_refs = [re.sub(r".*\((.*)\)$", r"\1", i) for i in items]
        if op_name in done and all(i.startswith("export ") for i in items):
            done[op_name].refs.extend(op_refs)
            continue
        unit = b.add(operator_unit(entries[op_name]), "kernels", f"{entries[op_name]['what']} in `{ext.name}`: "
                     f"{', '.join(items)}", [], op_refs, op_name)
        for k in ext.kernels:
            if f"`{k.name}` ({k.path}:{k.line})" in items:
                b.kernels[(k.path, k.line)] = unit
    for e in lone:
        b.add("export_without_kernel", "boundary", f"export `{ext.name}.{e.name}` (its device code is shared "
              "with other exports)", [], [e.where()], "an Ascend C operator per export")


def triton_units(b: Builder, result: ScanResult, claim: Claim) -> None:
    """One unit per @triton.jit kernel: a file's first launched kernel in full, the others as siblings, device
    functions with no launch as helpers."""
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        if (f.code.startswith("AC41") or f.code.startswith("AC42")) and f.code not in ("AC411", "AC412"):
            by_file[f.path].append(f)
    for path in sorted(by_file):
        fs = by_file[path]
        kernels = [f for f in fs if f.code == "AC410"]
        rest = claim([f for f in fs if f.code != "AC410"])
        launched = launched_names(path)
        first_costed = False
        for i, k in enumerate(kernels):
            m = re.search(r"`([^`]+)`", k.message)
            bare = m.group(1) if m else k.api
            kind = "triton_helper"
            if bare in launched:  # a file's first launched kernel carries the shared set-up; the others add less
                kind, first_costed = ("triton_kernel_sibling" if first_costed else "triton_kernel"), True
            what = "Triton device function (no grid launch found)" if kind == "triton_helper" else "Triton kernel"
            b.add(kind, "kernels", f"{what} `{bare}` ({os.path.basename(path)})",
                  claim([k]) + (rest if i == 0 else []), alternative="triton-ascend")


def _package_texts(path: str) -> list[str]:
    from ascend_compat.migrate.scan import read_source

    d = os.path.dirname(path)
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return []
    out = []
    for n in names:
        if n.endswith(".py"):
            data_, _ = read_source(os.path.join(d, n))
            out.append((data_ or b"").decode("utf-8", "replace"))
    return out


def launched_names(path: str) -> set[str]:
    """Names launched on a grid (``name[grid](...)``, ``wrap_triton(name)[grid](...)``) in the Python files of
    ``path``'s package directory."""
    out: set[str] = set()
    for text in _package_texts(path):
        out.update(re.findall(r"\b([A-Za-z_]\w*)\s*\[[^\]\n]*\]\s*\(", text))
        # torch.library.wrap_triton(kernel)[grid](...) launches ``kernel`` through torch.compile's path.
        out.update(re.findall(r"\bwrap_triton\s*\(\s*([A-Za-z_]\w*)\s*\)", text))
    return out


#: A GPU tile-DSL kernel: TileLang's ``@tilelang.jit`` (its ``@T.prim_func`` body is the same kernel) and the
#: CuTe DSL's ``@cute.kernel`` (its ``@cute.jit`` host function launches it).
_DSL = re.compile(r"^[ \t]*@[ \t]*(tilelang\.jit|cute\.kernel)\b")
_PRIM = re.compile(r"^[ \t]*@[ \t]*T\.prim_func\b")


def _owner_class(lines: list[str], i: int) -> str:
    """The class a decorated method at line ``i`` belongs to (CuTe DSL kernels are methods named ``kernel``)."""
    indent = len(lines[i]) - len(lines[i].lstrip())
    for ln in reversed(lines[:i]) if indent else ():
        m = re.match(r"([ \t]*)class\s+(\w+)", ln)
        if m and len(m.group(1)) < indent:
            return m.group(2)
    return ""


def dsl_kernels(text: str) -> list[tuple[int, str, str]]:
    """(line, DSL, function name) of each tile-DSL kernel in a Python source; bare ``@T.prim_func`` functions
    count only in a file with no ``@tilelang.jit``."""
    lines = text.splitlines()
    hits = [(i, m.group(1)) for i, ln in enumerate(lines) if (m := _DSL.match(ln))]
    if not any(d == "tilelang.jit" for _, d in hits):
        hits += [(i, "T.prim_func") for i, ln in enumerate(lines) if _PRIM.match(ln)]
    out = []
    for i, dsl in sorted(hits):
        name = next((m.group(1) for ln in lines[i:i + 40] if (m := re.match(r"\s*(?:async\s+)?def\s+(\w+)", ln))),
                    "?")
        owner = _owner_class(lines, i)
        name = f"{owner}.{name}" if owner else name
        out.append((i + 1, "CuTe DSL" if dsl == "cute.kernel" else "TileLang", name))
    return out


def dsl_units(b: Builder, result: ScanResult, claim: Claim, root: str) -> set[str]:
    """One unit per tile-DSL kernel (a file's further kernels as siblings); the dependency findings of those files
    (the DSL and its helper packages) go with the rewrite. Returns the dependencies seen there."""
    from ascend_compat.migrate.scan import read_source

    deps: dict[str, list[Finding]] = defaultdict(list)
    for f in result.findings:
        if f.category == "dependency" and f.path.endswith(".py"):
            deps[f.path].append(f)
    names: set[str] = set()
    seen: set[tuple[str, str]] = set()  # (directory, kernel): a varlen file's copy of a kernel is its sibling
    for path in sorted(deps):
        data_, _ = read_source(path)
        kernels = dsl_kernels((data_ or b"").decode("utf-8", "replace"))
        if not kernels:
            continue
        names.update(f.api or f.message for f in deps[path])
        fs = claim(deps[path])
        for i, (line, dsl, name) in enumerate(kernels):
            alt = "tilelang-ascend, triton-ascend or Ascend C" if dsl == "TileLang" else "triton-ascend or Ascend C"
            key = (os.path.dirname(path), name)
            sibling = i > 0 or key in seen
            seen.add(key)
            b.add("dsl_kernel_sibling" if sibling else "dsl_kernel", "kernels", f"{dsl} kernel `{name}` "
                  f"({os.path.basename(path)})", fs if i == 0 else [], [f"{rel(root, path)}:{line}"], alt)
    return names


__all__ = ["dsl_kernels", "dsl_units", "extension_units", "kernel_units", "launched_names", "triton_units",
           "variant_bases"]
