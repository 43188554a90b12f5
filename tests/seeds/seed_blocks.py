"""The code blocks of the seed READMEs, cut into snippets with stable ids.

A ``python`` fence is one snippet. A ``bash`` fence gives one snippet per CLI line (``ascend-compat ...``,
``cuda-morph ...``, ``python -m ascend_compat ...``; the trailing comment dropped) and one per run of other
consecutive lines (``pip install``, ``export`` + ``python train.py``, Python pasted into a bash fence). A fence with
no language (diagrams, directory trees, error text) is one ``text`` snippet.

Ids ignore comments and blank lines, so the English and Chinese halves share the ids of blocks that differ only in
their comments, and a block whose code changes gets a new id (the test then asks for it to be run or excluded).
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
CLI = re.compile(r"^(ascend-compat|cuda-morph|python -m ascend_compat)(\s|$)")
SHELL_LANGS = ("bash", "sh", "shell", "console")


@dataclass
class Snippet:
    id: str
    kind: str  # "python", "cli", "shell" or "text"
    code: str
    where: list[str] = field(default_factory=list)  # "seed-file:line" of every occurrence


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _python_key(code: str) -> str:
    """The code without comments and blank lines (tokenize, so a '#' inside a string stays)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type != tokenize.COMMENT]
        code = tokenize.untokenize(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def _strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*$", "", line).strip()


def _bash_snippets(body: str, where: str) -> list[Snippet]:
    out: list[Snippet] = []
    group: list[str] = []

    def flush() -> None:
        if group:
            key = "\n".join(_strip_comment(g) for g in group)
            out.append(Snippet(f"shell:{_digest(key)}", "shell", "\n".join(group) + "\n", [where]))
            group.clear()

    for raw in body.splitlines():
        line = _strip_comment(raw)
        if not line:
            continue  # a comment or blank line ends nothing: the lines around it stay one group
        if CLI.match(line):
            flush()
            command = " ".join(line.split())
            out.append(Snippet(f"cli:{command}", "cli", command, [where]))
        else:
            group.append(raw.rstrip())
    flush()
    return out


def extract(path: Path) -> list[Snippet]:
    """Every snippet of one README, in order."""
    text = path.read_text(encoding="utf-8")
    snippets: list[Snippet] = []
    for match in FENCE.finditer(text):
        lang, body = match.group(1).lower(), match.group(2)
        where = f"{path.name}:{text.count(chr(10), 0, match.start()) + 1}"
        if lang in ("python", "py"):
            snippets.append(Snippet(f"python:{_digest(_python_key(body))}", "python", body, [where]))
        elif lang in SHELL_LANGS:
            snippets.extend(_bash_snippets(body, where))
        else:
            snippets.append(Snippet(f"text:{_digest(body.strip())}", "text", body, [where]))
    return snippets


def collect(paths: list[Path]) -> dict[str, Snippet]:
    """The snippets of all ``paths`` by id; a snippet that appears twice is run once, with both places listed."""
    found: dict[str, Snippet] = {}
    for path in paths:
        for snippet in extract(path):
            if snippet.id in found:
                found[snippet.id].where.extend(snippet.where)
            else:
                found[snippet.id] = snippet
    return found
