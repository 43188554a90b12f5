"""``ascend-compat compile [--backend NAME] [--json]``: the torch.compile backend for this device, and why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ascend_compat.cli._common import use_color

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("compile", help="which torch.compile backend fits the detected device, and dynamic-shape advice")
    p.add_argument("--backend", help="check this backend name instead of choosing one")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cuda_shim.compile_helpers import compile_report

    data = compile_report(args.backend)
    if args.json:
        print(json.dumps(data, indent=2))
        return 1 if data["error"] else 0
    bold, red, reset = ("\033[1m", "\033[31m", "\033[0m") if use_color(sys.stdout) else ("", "", "")
    print(f"{bold}torch.compile on this machine{reset} (torch {data['torch']})")
    print(f"  device:   {data['device']} ({data['detection']})")
    if data["error"]:
        print(f"  {red}error:{reset}    {data['error']}")
    else:
        print(f"  backend:  {bold}{data['backend']}{reset}")
        print(f"  why:      {data['reason']}")
        print(f"  use:      torch.compile(model, backend={data['backend']!r}, dynamic=False)")
    print(f"  torchair: {'found' if data['torchair'] else 'not found'}; torch_npu graph backends registered: "
          f"{', '.join(data['npu_backends']) or 'none'}")
    print(f"  registered backends: {', '.join(data['available_backends'])}")
    print(f"{bold}Dynamic shapes{reset}")
    for line in data["advice"]:
        print(f"  - {line}")
    return 1 if data["error"] else 0
