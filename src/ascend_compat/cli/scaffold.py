"""``ascend-compat scaffold NAME --pattern elementwise|reduction|matmul [--output DIR] [--dtype ...] [--force]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ascend_compat.cli._common import use_color

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("scaffold", help="generate a custom Ascend C operator project (kernel, tiling, torch binding)")
    p.add_argument("name", help="operator name, e.g. add_custom (snake_case; the OpType becomes AddCustom)")
    p.add_argument("--pattern", choices=["elementwise", "reduction", "matmul"], default="elementwise")
    p.add_argument("--compute", help="what it computes (elementwise: add, mul, relu, scale...; reduction: sum, max)")
    p.add_argument("--dtype", action="append", help="element type(s), e.g. float16 or float16,float32 (repeatable)")
    p.add_argument(
        "--tile-length", type=int, help="elements per unified-buffer tile (rows per output tile for reductions)"
    )
    p.add_argument("--soc", action="append", help="target SoC(s) for the op definition (default ascend910b)")
    p.add_argument("--spec", help="a JSON spec file (OpSpec fields); NAME and the options above override it")
    p.add_argument("--output", "-o", help="project directory to create (default: ./NAME)")
    p.add_argument("--force", action="store_true", help="replace an existing directory")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


_MAX_SPEC_BYTES = 1024 * 1024
_MAX_DEPTH = 32  # a spec is at most a few levels deep (spec -> inputs -> tensor -> dtypes)


def _depth(text: str) -> int:
    """How deeply the brackets of a JSON text nest (strings skipped), without parsing it."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _read_spec(path: str) -> Any:
    """The spec file's JSON; a SpecError for anything else (unreadable, not a regular file, too big or deep)."""
    from ascend_compat.kernel_helper import SpecError
    from ascend_compat.migrate.scan import Unreadable, read_bytes

    data = read_bytes(path, _MAX_SPEC_BYTES)
    if isinstance(data, Unreadable):
        raise SpecError([f"cannot read spec {path}: {data.reason}"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError([f"cannot read spec {path}: not UTF-8 ({exc})"]) from None
    if _depth(text) > _MAX_DEPTH:
        raise SpecError([f"{path}: JSON nested more than {_MAX_DEPTH} levels deep; a spec is a flat object"])
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SpecError([f"cannot read spec {path}: {exc}"]) from None


def _build_spec(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from ascend_compat.kernel_helper import OpSpec, SpecError, default_spec

    dtype_list = [d.strip() for value in (args.dtype or []) for d in value.split(",") if d.strip()]
    if args.spec:
        data = _read_spec(args.spec)
        if not isinstance(data, dict):
            raise SpecError([f"{args.spec}: a spec must be a JSON object"])
        data["name"] = args.name
        spec = OpSpec.from_dict(data)
        if dtype_list:
            spec = replace(
                spec,
                inputs=tuple(replace(t, dtypes=tuple(dtype_list)) for t in spec.inputs),
                outputs=tuple(
                    replace(t, dtypes=tuple("float32" for _ in dtype_list) if spec.pattern == "matmul"
                            else tuple(dtype_list))
                    for t in spec.outputs
                ),
            )
    else:
        spec = default_spec(args.name, args.pattern, compute=args.compute, dtype=dtype_list or None)
    if args.tile_length is not None:
        spec = replace(spec, tile_length=args.tile_length)
    if args.soc:
        spec = replace(spec, soc_versions=tuple(s.strip() for v in args.soc for s in v.split(",") if s.strip()))
    return spec


def _cli_words(message: str) -> str:
    """The writer's message as the command line says it: ``--force``, not the Python API's ``force=True``."""
    return message.replace("--force (force=True)", "--force")


def main(args: argparse.Namespace) -> int:
    from ascend_compat.kernel_helper import SpecError, scaffold
    from ascend_compat.kernel_helper.spec import snake_name

    red, green, reset = ("\033[31m", "\033[32m", "\033[0m") if use_color(sys.stderr) else ("", "", "")
    try:
        spec = _build_spec(args)
        spec.validate()
        output = args.output or snake_name(spec.name)
        result = scaffold(spec, output, force=args.force)
    except (SpecError, FileExistsError, OSError) as exc:
        if args.json:
            problems = exc.problems if isinstance(exc, SpecError) else [_cli_words(str(exc))]
            print(json.dumps({"schema_version": 1, "ok": False, "errors": problems}, indent=2))
        else:
            print(f"{red}ascend-compat scaffold:{reset} {_cli_words(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, SpecError) else 1
    if args.json:
        print(json.dumps({
            "schema_version": 1,
            "ok": True,
            "path": str(result.path),
            "op_type": spec.op_type,
            "pattern": spec.pattern,
            "compute": spec.compute,
            "replaced": result.replaced,
            "files": list(result.files),
        }, indent=2))
        return 0
    print(f"{green}created{reset} {result.path} ({spec.op_type}: {spec.pattern}, {spec.compute})")
    for rel in result.files:
        print(f"  {rel}")
    print("next: see README.md there (bash build.sh on a machine with CANN, then build torch_binding)")
    return 0
