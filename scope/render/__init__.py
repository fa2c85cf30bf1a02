"""Renderers: an Analysis in, text out. One module per format (text, markdown, json), and the
diagnosis text of `scope diagnose`; nothing else in scope formats results for people."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from scope.compare.result import ComparisonResult
    from scope.goodput_result import GoodputResult
    from scope.result import Analysis

    Result: TypeAlias = Analysis | GoodputResult | ComparisonResult

FORMATS = ("text", "json", "markdown")
# The one renderer table: (the type of a command's result, the format) -> "module:function" in scope.render,
# a function of (result, Style). `scope analyze` and `scope diagnose` give an Analysis, `scope goodput` a
# GoodputResult (an analysis holds one too: Analysis.goodput), `scope compare` a ComparisonResult.
RENDERERS: dict[tuple[str, str], str] = {
    ("Analysis", "text"): "text:text_of",
    ("Analysis", "markdown"): "markdown:markdown_of",
    ("Analysis", "json"): "json:json_of",
    ("GoodputResult", "text"): "goodput:text_of",
    ("GoodputResult", "markdown"): "goodput:markdown_of",
    ("GoodputResult", "json"): "json:contract_of",
    ("ComparisonResult", "text"): "compare:text_of",
    ("ComparisonResult", "markdown"): "compare:markdown_of",
    ("ComparisonResult", "json"): "json:contract_of",
}
MAX_WIDTH = 100  # the text report is written for a 100-column terminal at most
MIN_WIDTH = 40


@dataclass(frozen=True)
class Style:
    """How a result is rendered: an analysis' tables (True: all, in full; a list: those), its per-rank
    summary, the width text wraps to."""

    tables: bool | list[str] = False
    summary: bool = True
    width: int = MAX_WIDTH


def render(
    result: Result, fmt: str = "text", tables: bool | list[str] = False, summary: bool = True, width: int = 0
) -> str:
    """Any command's typed result in FORMAT, by the one renderer table (RENDERERS). `tables`: True for
    every table of an analysis in full, or the names of those to show."""
    import importlib

    entry = RENDERERS.get((type(result).__name__, fmt))
    if entry is None:
        raise ValueError(f"unknown format {fmt!r} for {type(result).__name__} (one of {', '.join(FORMATS)})")
    module, name = entry.split(":")
    style = Style(tables=tables, summary=summary, width=width or terminal_width())
    text: str = getattr(importlib.import_module(f"scope.render.{module}"), name)(result, style)
    return text


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
