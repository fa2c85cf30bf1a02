"""Step lines of a format no row of formats.py lists, read by their structure: an increasing step counter
with a per-step time field whose unit the line states. Kept only when a log has enough of them, the counter
mostly increasing, and no known row gave a step line; the report says the lines were read this way."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.goodput.parse import Mark

# A progress line no row knows, by its structure: a step counter and a per-step time field with a unit.
_COUNTER = re.compile(
    r"\b(?:global[ _]step|iteration|iter|step|update|batch)s?\b\s*[:=#]?\s*\[?\s*(?P<step>\d{1,12})"
    r"(?:\s*/\s*(?P<total>\d{1,12}))?(?![\d.])",
    re.IGNORECASE,
)
_TIME_FIELD = re.compile(
    r"(?P<key>\b[\w /]{0,40}?(?:time|elapsed|duration|latency)[\w /]{0,20}?(?:\s*\((?P<kunit>ms|s|sec)\))?)"
    r"(?:\s*[:=]\s*|\s+)(?P<val>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(?P<unit>ms|s|sec|secs|seconds)?\b",
    re.IGNORECASE,
)
# Fewer such lines than this, or a counter that does not mostly increase, is not a training log's progress.
STRUCTURAL_MIN_LINES = 3


def structural_step(line: str) -> tuple[int, int | None, float] | None:
    """(step, total, seconds per step) of a line of a format no row lists: a step counter, then a per-step
    time whose unit is stated (in the field's name, `(ms)`, `_ms`, or after the number)."""
    counter = _COUNTER.search(line)
    if counter is None:
        return None
    for field_m in _TIME_FIELD.finditer(line, counter.end()):
        key = field_m.group("key").lower()
        unit = (field_m.group("kunit") or field_m.group("unit") or "").lower()
        if not unit:
            unit = "ms" if key.rstrip().endswith(("_ms", " ms")) else "s" if key.rstrip().endswith("_s") else ""
        if not unit or "total" in key or "eta" in key.split():
            continue
        value = float(field_m.group("val")) / (1000.0 if unit == "ms" else 1.0)
        total = counter.group("total")
        return int(counter.group("step")), int(total) if total else None, value
    return None


def _per_step_times(marks: list[Mark]) -> None:
    """A time field that grows with the counter line after line is the run's elapsed clock, not a step's
    time: each step's time is then the growth over the steps between two lines."""
    pairs = list(pairwise(marks))
    grows = sum(1 for a, b in pairs if (b.step_s or 0.0) > (a.step_s or 0.0) and (b.step or 0) > (a.step or 0))
    if len(pairs) < 2 or grows < 0.8 * len(pairs):
        return
    clock = [m.step_s for m in marks]
    marks[0].step_s = None
    for (a, b), (ta, tb) in zip(pairs, pairwise(clock), strict=True):
        d = (b.step or 0) - (a.step or 0)
        b.step_s = (tb - ta) / d if d > 0 and ta is not None and tb is not None and tb >= ta else None


def _increasing(marks: list[Mark]) -> bool:
    steps = [m.step for m in marks if m.step is not None]
    ups = sum(1 for a, b in pairwise(steps) if b > a)
    return len(steps) >= STRUCTURAL_MIN_LINES and ups >= 0.8 * (len(steps) - 1)


def accept_structural(marks: list[Mark], candidates: list[Mark], file: str) -> tuple[list[Mark], list[str]]:
    """The marks with the structural step lines kept (and a note saying so) when they look like a training
    log's progress and no known row gave a step line, else without them."""
    if candidates and _increasing(candidates) and not any(m.kind == "step" and m.row != "structural" for m in marks):
        _per_step_times(candidates)
        note = (
            f"{file}: step lines read by their structure (a step counter and a per-step time), no known "
            f"format: {candidates[0].text[:100]}"
        )
        return marks, [note]
    drop = {id(m) for m in candidates}
    return [m for m in marks if id(m) not in drop], []
