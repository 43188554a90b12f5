"""``ascend-compat port PATH... [--mode native|shim] [--write | --output DIR] [--json]``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Optional, Union

if TYPE_CHECKING:
    from ascend_compat.cli._common import Subparsers
    from ascend_compat.migrate.model import Change

EXIT_FAILED = 3


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser("port", help="rewrite CUDA code for the NPU (shows a diff; --write to apply)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files and directories (git-aware)")
    p.add_argument("--mode", choices=("native", "shim"), default="native",
                   help="native: rewrite to NPU code where mechanical; shim: insert ascend_compat.activate()")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--write", action="store_true", help="rewrite the files in place (atomically)")
    out.add_argument("--output", metavar="DIR", help="write adapted copies under DIR, leave the originals")
    p.add_argument("--json", action="store_true", help="the change list as JSON instead of a diff")
    p.add_argument("--torch-npu", default=None, metavar="LINE", help="torch_npu line (see check)")
    p.add_argument("--no-git", action="store_true", help="walk directories instead of asking git")
    p.set_defaults(func=main)


def _target(path: str, roots: list[str], out_dir: str) -> str:
    """Where the adapted copy of ``path`` goes: its path relative to the root it was found under."""
    apath = os.path.abspath(path)
    for root in roots:
        aroot = os.path.abspath(root)
        base = aroot if os.path.isdir(aroot) else os.path.dirname(aroot)
        if apath == aroot or apath.startswith(base + os.sep):
            return os.path.join(out_dir, os.path.relpath(apath, base))
    return os.path.join(out_dir, os.path.basename(path))


def _changed_since_read(path: str, original: str) -> Optional[str]:
    """Why ``path`` must not be rewritten: removed or edited since port read it (writing would bring it back, or
    lose the edit); None when it is as read (a file that cannot be read is left to the write to report)."""
    try:
        with open(path, "rb") as fh:
            now = fh.read()
    except FileNotFoundError:
        return "it was removed while port ran: not brought back"
    except OSError:
        return None
    return None if now == original.encode("utf-8") else "it changed while port ran: run port again"


def _change(c: Change) -> dict[str, Union[str, int]]:
    """One change as JSON: ``rule`` as the README documents it (``code`` and ``path`` kept for older readers)."""
    return {"file": c.path, "line": c.line, "before": c.before, "after": c.after, "rule": c.code,
            "path": c.path, "code": c.code}


def main(args: argparse.Namespace) -> int:
    from ascend_compat.migrate import apidb
    from ascend_compat.migrate.port import PortFailure, PortSkip, PortSuccess, port_paths, write_atomic
    from ascend_compat.settings import SettingError

    try:
        line = apidb.normalize_line(args.torch_npu) if args.torch_npu else apidb.DEFAULT_LINE
    except ValueError as exc:
        print(f"ascend-compat port: {exc}", file=sys.stderr)
        return 2
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:
        print(f"ascend-compat port: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        results = port_paths(args.paths, args.mode, line, use_git=not args.no_git)
    except SettingError as exc:  # a bad ASCEND_COMPAT_SCAN_FILE_* budget, read before any file
        print(f"ascend-compat port: {exc}", file=sys.stderr)
        return 2
    if args.output:  # copies over their own originals (--output naming the input) are no copies: refuse
        clash = [r.path for r in results if isinstance(r, PortSuccess)
                 and os.path.realpath(_target(r.path, args.paths, args.output)) == os.path.realpath(r.path)]
        if clash:
            more = f" and {len(clash) - 1} more" if len(clash) > 1 else ""
            print(f"ascend-compat port: --output {args.output} would overwrite the original {clash[0]}{more}: "
                  "give a directory outside the ported files (or --write to rewrite them)", file=sys.stderr)
            return 2
    written: list[str] = []
    unwritten: set[str] = set()
    for r in results:
        if isinstance(r, PortSuccess) and (args.write or args.output):
            dest = r.path if args.write else _target(r.path, args.paths, args.output)
            why = _changed_since_read(r.path, r.original) if args.write else None
            try:  # a read-only file, a full disk: said, and the other files still written (each one atomically)
                if why is None:
                    write_atomic(dest, r.text, like=None if args.write else r.path)
            except OSError as exc:
                why = exc.strerror or str(exc)
            if why is not None:
                print(f"ascend-compat port: cannot write {dest}: {why}", file=sys.stderr)
                unwritten.add(r.path)
                continue
            written.append(dest)
    changed = [r for r in results if isinstance(r, PortSuccess) and r.path not in unwritten]
    failed = [r for r in results if isinstance(r, PortFailure)]
    if args.json:
        data = {
            "schema_version": 1,
            "mode": args.mode,
            "written": written,
            "files": [
                {"path": r.path, "status": "changed", "changes": [_change(c) for c in r.changes],
                 "needs_review": [f.to_dict() for f in r.unfixed]} if isinstance(r, PortSuccess)
                else {"path": r.path, "status": "failed", "error": r.error} if isinstance(r, PortFailure)
                else {"path": r.path, "status": "unchanged", "reason": r.reason,
                      "needs_review": [f.to_dict() for f in r.unfixed]}
                for r in results
            ],
        }
        print(json.dumps(data, indent=2))
    else:
        if not (args.write or args.output):
            for r in changed:
                sys.stdout.write(r.diff())
        for r in failed:
            print(f"{r.path}: not ported: {r.error}", file=sys.stderr)
        review = sum(len(r.unfixed) for r in results if isinstance(r, (PortSuccess, PortSkip)))
        unread = sum(isinstance(r, PortSkip) and r.unread for r in results)  # FIFOs in a folder: said, not failed
        action = "rewrote" if args.write else (f"wrote copies to {args.output} of" if args.output else "would change")
        print(f"{action} {len(changed)} file(s), {sum(len(r.changes) for r in changed)} change(s); "
              f"{len(failed)} failed; " + (f"{len(unwritten)} not written (above); " if unwritten else "") +
              (f"{unread} skipped unread (not regular files or over a budget; --json says why); " if unread else "") +
              f"{review} finding(s) need a person (see `ascend-compat check`)", file=sys.stderr)
    return EXIT_FAILED if failed or unwritten else 0
