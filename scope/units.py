"""Quantities for people, from one place: times in ms or s with the unit, bytes in KiB/MiB/GiB, shares
in %, bandwidth in GB/s, ratios with ×. The dashboard's cards, tables and axes use these; a value is
named by its column or metric name, whose suffix says its unit (`_us`, `_ns`, `_s`, `bytes`, `_pct`,
`_gbps`, `ratio`), as scope's tables and findings write them; and text clipped to a width.
"""

from __future__ import annotations

import math
from typing import Any

# unit suffix of a name -> seconds per unit (time values)
_TIME_SUFFIXES = {"_us": 1e-6, "_ns": 1e-9, "_ms": 1e-3, "_s": 1.0}
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
# names of fractions of a whole (0-1), shown in %
FRACTION_NAMES = ("waste", "share", "_fraction")
FRACTION_EXACT = ("norm",)  # the budget findings' limit, a share of the step ("norm: 5%" beside "share: 23.8%")
# Names whose words are not the name itself (the JSON keeps the name): the straggler ratio is named as
# every view prints it, "N× the other ranks" (scope.analyzers.stragglers.peer_ratio).
LABELS = {
    "step_ratio": "vs the other ranks",
    "score": "straggler score",
    "value_median_us": "this rank (median)",
    "others_median_us": "the other ranks (median)",
    "last_arriver_share": "last to arrive",
    "n_ranks": "number of ranks",
    "pg_desc": "PG name",
    "pg": "PG",
}
# What a metric means, where its words alone do not say it: shown beside the numbers (dashboard cards).
DEFINITIONS = {
    "time_lost_us": "time lost: what the run would save without this problem (per step, for a problem of the "
    "steps; counted once, in the finding of its cause)",
    "held_up_us": "held up: how long the other ranks waited at collectives for this rank alone (median per "
    "step); the time lost counts only what the step would shorten",
    "step_ratio": "vs the other ranks: this rank's median per step over the other ranks' median",
    "score": "straggler score: the fastest rank's median compute over this rank's (1: as fast)",
}


def seconds(value: float) -> str:
    """A duration: '0.85 ms', '84.3 ms', '2.41 s', '1,204 s' (three significant digits, never µs)."""
    if not math.isfinite(value):
        return "–"
    if abs(value) < 1.0:
        return f"{_significant(value * 1e3)} ms"
    return f"{_significant(value)} s"


def nbytes(value: float) -> str:
    """A size in powers of 1024: '512 B', '1.5 KiB', '12.3 MiB', '2.00 GiB'."""
    if not math.isfinite(value) or value < 0:
        return "–"
    for unit in _BYTE_UNITS:
        if value < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{_significant(value)} {unit}"
        value /= 1024
    return "–"  # unreachable


def time_unit(name: str) -> float | None:
    """Seconds per unit of a time-valued name ('time_lost_us' -> 1e-6), None when it is no time. A
    one-letter name before the suffix is a symbol with a subscript (the what-if's M_S, M_W), not a time."""
    if len(name) <= 3 and name[1:2] == "_":
        return None
    if name.endswith("_per_s"):  # a rate (bytes_per_s), not a time
        return None
    for suffix, scale in _TIME_SUFFIXES.items():
        if name.endswith(suffix):
            return scale
    return None


def has_unit(name: str) -> bool:
    """Whether the name says its unit (so its numbers are formatted by `quantity`)."""
    return (
        time_unit(name) is not None
        or "bytes" in name
        or name.endswith(("_pct", "_gbps"))
        or "ratio" in name
        or name.endswith(FRACTION_NAMES)
        or name in FRACTION_EXACT
        or name == "slowdown"
    )


def label(name: str) -> str:
    """A metric or column name without its unit suffix, in words: 'time_lost_us' -> 'time lost'."""
    if name in LABELS:
        return LABELS[name]
    if name.endswith("_bytes_per_s"):
        return name[: -len("_bytes_per_s")].replace("_", " ")
    for suffix in (*_TIME_SUFFIXES, "_pct", "_gbps"):
        if name.endswith(suffix) and (suffix not in _TIME_SUFFIXES or time_unit(name) is not None):
            name = name[: -len(suffix)]
            break
    return name.replace("_", " ")


def clip(text: str, limit: int) -> str:
    """TEXT cut to LIMIT characters, its last one an ellipsis (a name in a column, a line quoted in a sentence)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def count(n: int, noun: str, plural: str = "") -> str:
    """'1 log', '28 logs', '1 FR dump': a count with its noun in the number it takes."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def quantity(name: str, value: Any) -> str:
    """`value` as its name says it should read (see the module docstring); plain numbers get at most three
    significant digits and thousands separators."""
    if value is None or isinstance(value, bool):
        return {None: "–", True: "yes", False: "no"}[value]
    if isinstance(value, int | float) and not (isinstance(value, float) and not math.isfinite(value)):
        scale = time_unit(name)
        if scale is not None:
            return seconds(float(value) * scale)
        if "bytes" in name and name.endswith("_per_s"):
            return nbytes(float(value)) + "/s"
        if "bytes" in name:
            return nbytes(float(value))
        if name.endswith("_pct"):
            return f"{_significant(float(value))}%"
        if name.endswith(FRACTION_NAMES) or name in FRACTION_EXACT:
            return f"{_significant(100 * float(value))}%"
        if name.endswith("_gbps"):
            return f"{_significant(float(value))} GB/s"
        if "ratio" in name or name in ("slowdown",):
            return f"{_significant(float(value))}×"
        return f"{value:,}" if isinstance(value, int) else _significant(float(value))
    if isinstance(value, float):
        return "–"
    return str(value)


def _significant(value: float) -> str:
    """Three significant digits, thousands separated: 0.0123, 1.23, 12.3, 123, 1,234."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, 2 - magnitude)
    return f"{value:,.{decimals}f}"
