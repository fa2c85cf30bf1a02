"""Site knowledge without a release: signature rows a user adds in a config file, as for communication
kernels (scope.ingest.comm_rules). Config files, first found: `scope.toml` in the diagnosed folder (or
beside a diagnosed file), else `[tool.scope]` in a `pyproject.toml` of that folder or the current one:

    [[signatures]]
    id = "site_gpu_healthcheck"
    patterns = ["HEALTHCHECK FAILED: gpu (?P<gpu>\\\\d+)"]
    kind = "hardware_fault"          # a failure kind (the diagnose record's kinds)
    cause = "hardware"               # hardware | network | configuration | application | nccl_bug | desync | stall
    meaning = "The site's GPU health check failed on this node."
    remedy = "Drain the node (scontrol update nodename=... state=drain) and open a ticket."
    # optional: needles (default: the longest plain run of each pattern), reference, era, confidence,
    # ranks_re, severity ("critical" | "warning")

User rows are tried before scope's own (the site knows its messages best); each keeps its origin (the file)
for `scope diagnose --signatures`. A row that is not valid is an error naming the file and the row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.signatures import CAUSES, Signature
from scope.analyzers.diagnose_spec import ANALYZER as DIAGNOSE

from scope.config import config_tables
from scope.errors import EXIT_INPUT, ScopeError
from scope.regex_safety import check_pattern

if TYPE_CHECKING:
    from scope.inputs import Inventory

_REQUIRED = ("id", "patterns", "kind", "cause", "meaning", "remedy")
_OPTIONAL_STR = ("reference", "era", "confidence", "ranks_re", "severity")


def find_user_signatures(source: Path | str | Inventory) -> tuple[Signature, ...]:
    """The signature rows of the first config file for PATH that has some (none: empty); the files
    PATH's inventory lists (scope.inputs: each read once, with the comm-kernel rules)."""
    from scope.inputs import inventory_of

    for file, table in config_tables(inventory_of(source)):
        rows = table.get("signatures")
        if rows:
            return parse_rows(rows, str(file))
    return ()


def parse_rows(rows: Any, origin: str) -> tuple[Signature, ...]:
    if not isinstance(rows, list):
        raise ScopeError(f"{origin}: 'signatures' must be an array of tables ([[signatures]])", EXIT_INPUT)
    return tuple(_row(r, i, origin) for i, r in enumerate(rows))


def _row(raw: Any, index: int, origin: str) -> Signature:
    where = f"{origin}: signature #{index + 1}"
    if not isinstance(raw, dict):
        raise ScopeError(f"{where} is not a table", EXIT_INPUT)
    where = f"{where} ({raw.get('id', '?')})"
    missing = [k for k in _REQUIRED if not raw.get(k)]
    if missing:
        raise ScopeError(f"{where}: missing {', '.join(missing)}", EXIT_INPUT)
    patterns = [raw["patterns"]] if isinstance(raw["patterns"], str) else raw["patterns"]
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        raise ScopeError(f"{where}: patterns must be a list of regular expressions", EXIT_INPUT)
    for p in (*patterns, raw.get("ranks_re") or ""):
        if not isinstance(p, str):
            raise ScopeError(f"{where}: ranks_re must be a regular expression", EXIT_INPUT)
        wrong = check_pattern(p)  # matched against every log line: `(a+)+$` ran for minutes on 45 characters
        if wrong:
            raise ScopeError(f"{where}: {wrong}", EXIT_INPUT)
    if raw["kind"] not in DIAGNOSE.kinds:  # a signature names why a run failed: one of the diagnosis's kinds
        raise ScopeError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(DIAGNOSE.kinds)}", EXIT_INPUT)
    if raw["cause"] not in CAUSES:
        raise ScopeError(f"{where}: cause {raw['cause']!r} is not one of {', '.join(CAUSES)}", EXIT_INPUT)
    if raw.get("severity", "critical") not in ("critical", "warning"):
        raise ScopeError(f"{where}: severity must be critical or warning", EXIT_INPUT)
    needles = raw.get("needles") or [_needle(p) for p in patterns]
    if isinstance(needles, str):
        needles = [needles]
    if not isinstance(needles, list) or not all(isinstance(n, str) and len(n) >= 3 for n in needles):
        raise ScopeError(
            f"{where}: give needles (plain text of at least 3 characters on every matching line): a pattern "
            "without such a plain run cannot be looked for cheaply",
            EXIT_INPUT,
        )
    extra = {k: str(raw[k]) for k in _OPTIONAL_STR if raw.get(k)}
    return Signature(
        id=str(raw["id"]),
        needles=tuple(needles),
        patterns=tuple(patterns),
        era=extra.pop("era", "site rule"),
        kind=raw["kind"],
        cause=raw["cause"],
        meaning=str(raw["meaning"]),
        remedy=str(raw["remedy"]),
        reference=extra.pop("reference", origin),
        origin=origin,
        **extra,  # type: ignore[arg-type]
    )


def _needle(pattern: str) -> str:
    """The longest plain-text run of a pattern: a line that matches must contain it ('' when unsure)."""
    if "|" in pattern or "(?i)" in pattern or "[" in pattern:
        return ""  # alternatives, case folding or classes: no single plain run is sure to be on the line
    pattern = re.sub(r"\(\?(?:P<\w+>|:|=|!|<=|<!)", "(", pattern)  # group syntax is no text
    runs, run, i = [], "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            lit = nxt if not nxt.isalnum() else None  # \. \( are characters; \d \s \b are classes
            step = 2
        elif ch in ".^$*+?(){}":
            lit, step = None, 1
        else:
            lit, step = ch, 1
        following = pattern[i + step : i + step + 1]
        if lit is not None and following and following in "*?{":
            lit = None  # optional: not on every matching line
        if lit is None:
            runs.append(run)
            run = ""
        else:
            run += lit
        i += step
    runs.append(run)
    return max(runs, key=len).strip()
