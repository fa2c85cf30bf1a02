"""Renderers: an Analysis in, text out. One module per format (text, markdown, json), and the
diagnosis text of `scope diagnose`; nothing else in scope formats results for people."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.result import Analysis

FORMATS = ("text", "json", "markdown")
MAX_WIDTH = 100  # the text report is written for a 100-column terminal at most
MIN_WIDTH = 40


def render(
    analysis: Analysis, fmt: str = "text", tables: bool | list[str] = False, summary: bool = True, width: int = 0
) -> str:
    """`tables`: True for every table in full, or the names of those to show."""
    if fmt == "json":
        from scope.render.json import render_json

        return render_json(analysis)
    if fmt == "markdown":
        from scope.render.markdown import render_markdown

        return render_markdown(analysis, tables=tables, summary=summary)
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    from scope.render.text import render_text

    return render_text(analysis, width=width or terminal_width(), tables=tables, summary=summary)


def terminal_width() -> int:
    """The width every terminal renderer wraps to: the terminal's ($COLUMNS when set), at most MAX_WIDTH
    (longer lines read badly), at least MIN_WIDTH (a hanging indent needs room)."""
    return max(MIN_WIDTH, min(MAX_WIDTH, shutil.get_terminal_size((MAX_WIDTH, 24)).columns))


def wrap_text(text: str, width: int = 0) -> str:
    """Text whose renderer does not wrap, wrapped to `width` (default: the terminal's): an overlong line
    continues under its own indentation plus two. A line with no space after its indentation (a table
    rule, a path) stays whole."""
    width = width or terminal_width()
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out.extend(wrap(line.strip(), width, indent, indent + "  "))
    return "\n".join(out)


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """One logical line as terminal lines: `first` before it, `rest` before each continuation. Paths,
    kernel names and log excerpts do not break well: long words are kept whole rather than cut."""
    import textwrap

    return textwrap.wrap(
        text, width=width, initial_indent=first, subsequent_indent=rest, break_long_words=False, break_on_hyphens=False
    ) or [first.rstrip()]
