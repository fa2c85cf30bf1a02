"""One row of the signature tables (knowledge/signatures.py, runtime_errors.py, the user's config file):
its fields are described in signatures.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CAUSES = ("hardware", "network", "configuration", "application", "nccl_bug", "desync", "stall")


@dataclass(frozen=True)
class Signature:
    id: str
    needles: tuple[str, ...]
    patterns: tuple[str, ...]
    era: str
    kind: str
    cause: str
    meaning: str
    remedy: str
    reference: str
    confidence: str = "high"
    ranks_re: str = ""
    ranks_ready: bool = False
    before_re: str = ""
    # how many lines right above the match before_re is searched in (0: the scanner's look-behind, 4): 3 where the
    # line before_re finds must be the innermost frame (its frame line, its source line, the carets under it)
    before_lines: int = 0
    fields_re: str = ""
    # named groups read from the lines before the match, for the remedy (the nearest match of the same host wins)
    context_re: str = ""
    # the row fires only where context_re finds its line (a WARN whose cause an earlier INFO line states)
    context_needed: bool = False
    # with context_needed: the nearest context line must also match this (a nearer line that does not stops it)
    context_requires: str = ""
    # the row fires only where an earlier line of the match's own process matches this (the platform it is for)
    platform_re: str = ""
    # a later line of the match's own process that shows the run went on past it: the finding is a warning
    went_on_re: str = ""
    # (pattern, remedy) pairs: the first pattern the matched line holds gives the remedy instead of `remedy` (one
    # reading of a message whose fix depends on what it names: an NCCL symbol, a program of a Python environment);
    # with fields_after, the message's lines below the match count too (an exception's detail lines)
    remedy_when: tuple[tuple[str, str], ...] = ()
    # lines after the match that fields_re also reads (a help text whose message names its program lines below)
    fields_after: int = 0
    # a line that ends the message fields_after reads (a help text's closing dashes): no line from there is read
    fields_until: str = ""
    # a regex on the match's open traceback (frames and source lines as printed, one a line, prefixes off) whose
    # named groups are kept as details for the remedy, every match's (the call that entered a wrapper's forward,
    # a checkpointing frame): the code the traceback shows names what the message does not
    traceback_re: str = ""
    # a regex of a line among the fields_after lines that names the cause better (a CANN error code under torch_npu's
    # 'HCCL function error'): where one is there, the match is an echo of it (it counts only alone)
    yields_to: str = ""
    # the name of a function in layout_arithmetic.DERIVE that adds fields from the line's numbers (a product, what
    # would fit) before the remedy's slots are filled; their names start with '_' (the remedy's words, no metrics)
    derive: str = ""
    min_count: int = 1
    severity: str = "critical"
    echo: bool = False
    cuda_named: bool = False
    origin: str = "scope"  # where the row comes from: scope's table, or the user's config file


# The kind a row has when it names none: the usual finding of its cause (a row whose kind differs, a
# configuration problem that is seen as a missing rank, says so).
KIND_OF_CAUSE = {
    "application": "crash",
    "configuration": "config_error",
    "desync": "collective_mismatch",
    "hardware": "hardware_fault",
    "network": "network_fault",
    "nccl_bug": "nccl_error",
    "stall": "hang",
}


def row(
    id: str,
    needles: str | tuple[str, ...],
    patterns: str | tuple[str, ...],
    *,
    era: str,
    cause: str,
    meaning: str,
    remedy: str,
    reference: str,
    kind: str = "",
    **optional: Any,
) -> Signature:
    """A table row with the common defaults: one needle or pattern may be given bare, and the kind is the
    cause's usual one unless named; the optional fields (confidence, fields_re, ...) are Signature's."""
    return Signature(
        id=id,
        needles=(needles,) if isinstance(needles, str) else needles,
        patterns=(patterns,) if isinstance(patterns, str) else patterns,
        era=era,
        kind=kind or KIND_OF_CAUSE[cause],
        cause=cause,
        meaning=meaning,
        remedy=remedy,
        reference=reference,
        **optional,
    )
