"""``ascend-compat vllm [--model DIR_OR_CONFIG_JSON] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("vllm", help="vLLM on Ascend readiness: the vllm / vllm-ascend pair, torch_npu, the platform "
                       "plugin, the attention backend and a model's quantization")
    p.add_argument("--model", metavar="DIR_OR_CONFIG_JSON",
                   help="a model directory (with config.json), its config.json or a .gguf file: check its "
                   "quantization against vllm-ascend")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from ascend_compat.cli._common import use_color
    from ascend_compat.ecosystem import vllm

    try:
        report = vllm.readiness(args.model)
    except vllm.ModelError as exc:
        print(f"ascend-compat vllm: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else vllm.render(report, use_color(sys.stdout)))
    return vllm.exit_code(report)
