"""``ascend-compat error CODE... [--json]``: what a CANN / ACL / aclnn / HCCL / torch_npu error code means."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import TYPE_CHECKING, Optional

from ascend_compat._style import paint

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers
    from ascend_compat.doctor.error_codes import CodeDescription, ExplanationDict

EXIT_UNKNOWN = 1  # a code that is not in the table (its family is still printed)
EXIT_USAGE = 2  # an argument that is not an error code at all

_FIELDS = (("meaning", "meaning"), ("cause", "cause"), ("fix", "fix"), ("torch_npu", "torch_npu"),
           ("template", "message"), ("meaning_zh", "meaning (zh)"), ("source", "source"))


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("error", help="explain CANN/ACL/aclnn/HCCL/torch_npu error codes (507035, EZ9999, ERR00100)")
    p.add_argument("codes", nargs="+", metavar="CODE",
                   help="numeric code, E-code, ERR code, or constant name (ACL_ERROR_RT_DEVICE_OOM)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def format_explanation(exp: ExplanationDict, color: bool, indent: str = "  ") -> list[str]:
    """The indented field lines of one known code."""
    lines = []
    for key, label in _FIELDS:
        value = exp.get(key)
        if not value:
            continue
        head = f"{indent}{label + ':':<14}"
        wrapped = textwrap.wrap(str(value), width=110, initial_indent=head, subsequent_indent=" " * len(head))
        lines.extend(wrapped or [head])
    return lines


def format_header(code: str, exp: Optional[ExplanationDict], family: Optional[str], component: Optional[str],
                  color: bool) -> str:
    if exp is None:
        return f"{paint(code, 'unknown_code', color)}  unknown code [{family or 'no known family'}" + \
            (f", {component}]" if component else "]")
    name = f"  {exp['name']}" if exp.get("name") else ""
    return f"{paint(code, 'bold', color)}{name}  [{exp['family']}, {exp['component']}]"


def _shown(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def render(items: list[CodeDescription], color: bool) -> str:
    """The explanation of each code (inputs that are not codes are left to :func:`render_invalid`)."""
    from ascend_compat.doctor import errors

    out: list[str] = []
    for item in items:
        if not item["is_code"]:
            continue
        if item["explanation"] is None:
            out.append(format_header(item["code"], None, item["family"], item["component"], color))
            if item["family"]:
                head = f"  family (from its {'range' if item['code'].isdigit() else 'prefix'}): "
                out.extend(textwrap.wrap(errors.families()[item["family"]], width=110, initial_indent=head,
                                         subsequent_indent="    "))
            out.append("  not in ascend-compat's table: read the CANN message printed with it and search the CANN "
                       "documentation")
        else:
            exp = item["explanation"]
            out.append(format_header(item["code"], exp, item["family"], item["component"], color))
            out.extend(format_explanation(exp, color))
        out.append("")
    return "\n".join(out).rstrip() + "\n" if out else ""


def render_invalid(items: list[CodeDescription], color: bool) -> str:
    """One usage-error line per input that is not an error code (for standard error)."""
    return "".join(
        f"ascend-compat error: {paint(_shown(item['input']), 'error', color)}: not an error code (expected e.g. "
        "507035, 161002, EZ9999, ERR00100, 7 for an HCCL result, or ACL_ERROR_RT_DEVICE_OOM)\n"
        for item in items if not item["is_code"])


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.doctor import errors

    items = [errors.describe(code) for code in args.codes]
    if args.json:
        doc = {"schema_version": errors.SCHEMA_VERSION, "codes": items,
               "unknown": [i["code"] for i in items if i["is_code"] and not i["known"]],
               "invalid": [i["input"] for i in items if not i["is_code"]]}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(render(items, use_color(sys.stdout)))
        sys.stderr.write(render_invalid(items, use_color(sys.stderr)))  # usage errors go to stderr
    if any(not i["is_code"] for i in items):
        return EXIT_USAGE
    return EXIT_UNKNOWN if any(not i["known"] for i in items) else 0
