"""The report's document tree: headings, paragraphs, lists, tables and code blocks, written as Markdown, as
self-contained HTML, or as JSON (the same blocks, grouped by section) from one tree.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ascend_compat.migrate.render import md_cell

Block = tuple  # ("h", level, text) | ("p", text) | ("ul"|"ol", items) | ("table", headers, rows) | ("code", lang, text)


@dataclass
class Doc:
    """A report as blocks; inline text uses Markdown's `code` and **bold** only."""

    title: str
    blocks: list[Block] = field(default_factory=list)

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def ul(self, items: Iterable[str]) -> None:
        self.blocks.append(("ul", list(items)))

    def ol(self, items: Iterable[str]) -> None:
        self.blocks.append(("ol", list(items)))

    def table(self, headers: list[str], rows: list[list[str]]) -> None:
        self.blocks.append(("table", headers, rows))

    def code(self, lang: str, text: str) -> None:
        self.blocks.append(("code", lang, text))

    def to_markdown(self) -> str:
        out: list[str] = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out.append("#" * b[1] + " " + b[2])
            elif kind == "p":
                out.append(b[1])
            elif kind in ("ul", "ol"):
                out.extend(
                    (f"{i}. " if kind == "ol" else "- ") + item.replace("\n", " ") for i, item in enumerate(b[1], 1)
                )
            elif kind == "table":
                out.append("| " + " | ".join(md_cell(c) for c in b[1]) + " |")
                out.append("|" + "|".join("---" for _ in b[1]) + "|")
                out.extend("| " + " | ".join(md_cell(c) for c in row) + " |" for row in b[2])
            elif kind == "code":
                fence = "````" if "```" in b[2] else "```"
                out.append(f"{fence}{b[1]}\n{b[2].rstrip()}\n{fence}")
            out.append("")
        return "\n".join(out).rstrip("\n") + "\n"

    def to_json(self) -> dict:
        """The same content as the Markdown: the title, what precedes the first section, and per ``##``
        section its blocks."""
        sections: list[dict] = []
        current: dict = {"title": "", "blocks": []}
        for b in self.blocks:
            if b[0] == "h" and b[1] == 1:
                continue  # the title
            if b[0] == "h" and b[1] == 2:
                sections.append(current)
                current = {"title": b[2], "blocks": []}
                continue
            current["blocks"].append(_block_json(b))
        sections.append(current)
        return {"title": self.title, "preamble": sections[0]["blocks"], "sections": sections[1:]}

    def to_html(self) -> str:
        body: list[str] = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                body.append(f"<h{b[1]}>{inline_html(b[2])}</h{b[1]}>")
            elif kind == "p":
                body.append(f"<p>{inline_html(b[1])}</p>")
            elif kind in ("ul", "ol"):
                items = "".join(f"<li>{inline_html(i)}</li>" for i in b[1])
                body.append(f"<{kind}>{items}</{kind}>")
            elif kind == "table":
                head = "".join(f"<th>{inline_html(c)}</th>" for c in b[1])
                rows = "".join(
                    "<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in row) + "</tr>" for row in b[2]
                )
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
            elif kind == "code":
                lang, code = html.escape(b[1]), html.escape(b[2].rstrip())
                body.append(f'<pre><code class="language-{lang}">{code}</code></pre>')
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body)
            + "\n</body>\n</html>\n"
        )


def _block_json(b: Block) -> dict:
    kind = b[0]
    if kind == "h":
        return {"type": "heading", "level": b[1], "text": b[2]}
    if kind == "p":
        return {"type": "paragraph", "text": b[1]}
    if kind in ("ul", "ol"):
        return {"type": "list", "ordered": kind == "ol", "items": b[1]}
    if kind == "table":
        return {"type": "table", "headers": b[1], "rows": b[2]}
    return {"type": "code", "language": b[1], "text": b[2]}


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
    "table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}code{background:#f5f5f5;padding:0 .2rem}"
    "pre{background:#f5f5f5;padding:.75rem;overflow-x:auto}pre code{padding:0}"
)
_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def inline_html(text: str) -> str:
    """Escape ``text`` for HTML, turning Markdown code spans and bold into elements."""
    codes: list[str] = []

    def stash(m: re.Match) -> str:
        inner = m.group(2)
        if len(inner) > 1 and inner.startswith(" ") and inner.endswith(" "):
            inner = inner[1:-1]  # CommonMark strips the padding added around backticks
        codes.append(f"<code>{html.escape(inner, quote=False)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    # Code spans first (their content is literal), bold over the rest: bold may contain code spans.
    text = _CODE_SPAN.sub(stash, text.replace("\x00", ""))
    text = _BOLD.sub(r"<strong>\1</strong>", html.escape(text, quote=False))
    return re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], text)


__all__ = ["Block", "Doc", "inline_html"]
