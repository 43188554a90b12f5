"""Entry point of ``ascend-compat`` / ``cuda-morph`` / ``python -m ascend_compat``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional

from ascend_compat import __version__

# One small module per command under ascend_compat.cli, each with add_parser(sub) and a main; the order is the
# order of `--help`. `run` is dispatched before argparse (it takes the rest of the line verbatim).
COMMANDS = (
    "run", "info", "check", "port", "report", "vllm", "quant", "doctor", "error", "explain", "audit", "verify",
    "bench", "compile", "scaffold", "superopt",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ascend-compat",
        description="Run CUDA-assuming PyTorch code on Ascend NPUs, and measure the migration.",
    )
    parser.add_argument("--version", action="version", version=f"ascend-compat {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        importlib.import_module(f"ascend_compat.cli.{command}").add_parser(sub)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    launcher = _launcher_local_rank(argv)
    if launcher:  # deepspeed --module ascend_compat run ...: the rank goes to the script, as it would unshimmed
        from ascend_compat.cli import run as run_cmd

        return run_cmd.main(argv[2:], script_args=[launcher])
    if argv and argv[0] == "run":
        from ascend_compat.cli import run as run_cmd

        return run_cmd.main(argv[1:])
    if argv and argv[0] == "verify":
        from ascend_compat.cli import verify

        argv = verify.shorthand(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a short output still sits in the buffer: a closed reader must show up here, not at exit
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise  # another pipe or socket (a user's factory, a child process): theirs to report
        # The reader went away (`ascend-compat check | head`): stop quietly, with the status of a tool killed by
        # SIGPIPE; stdout goes to /dev/null so the interpreter's last flush has nowhere to fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _launcher_local_rank(argv: list[str]) -> Optional[str]:
    """``--local_rank=N`` (or ``--local-rank=N``) before ``run``: the deepspeed launcher (and the old
    ``torch.distributed.launch``) started ``python -m ascend_compat`` as the training module and put the rank right
    after the module's name, where a script launched directly gets it first among its arguments."""
    if len(argv) >= 2 and argv[1] == "run" and argv[0].startswith(("--local_rank=", "--local-rank=")):
        return argv[0]
    return None


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe or socket whose reader has closed (poll reports an error on it)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll (not POSIX), or stdout is not a real file
        return True  # as before: the BrokenPipeError is most likely ours


#: Exit status when stdout's reader closed early: 128 + SIGPIPE, what a shell reports for ``cat`` in ``cat | head``.
EXIT_BROKEN_PIPE = 141
