"""Match lines against the signature table (knowledge/signatures.py) and turn a match into an anomaly.

A row is tried only when one of its needles is on the line (substring search, case-insensitive: NCCL
writes "Mismatched" in one release and "mismatch" in another), then its patterns.
The anomaly carries the row's id as its code and the row's remedy, meaning, reference and confidence in
its details, so the finding's suggestion can quote the remedy of every signature that fired.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.other_collectives import as_cuda_words
from scope.analyzers.diagnose.knowledge.signatures import BENIGN, SIGNATURES, Signature
from scope.analyzers.diagnose.model import APPLICATION, COMM_ERROR, HARDWARE, MISMATCH, STALL
from scope.analyzers.diagnose.readers.lines import Parsed, parse_line

if TYPE_CHECKING:
    from scope.analyzers.diagnose.readers.scan import Scanner

LEVEL_OF_CAUSE = {
    "hardware": HARDWARE,
    "configuration": APPLICATION,
    "application": APPLICATION,
    "network": COMM_ERROR,
    "nccl_bug": COMM_ERROR,
    "desync": MISMATCH,
    "stall": STALL,
}
_LOOK_AHEAD = 12
_LOOK_BEHIND = 4


@dataclass(frozen=True)
class Compiled:
    sig: Signature
    patterns: tuple[re.Pattern[str], ...]
    ranks_re: re.Pattern[str] | None
    before_re: re.Pattern[str] | None
    fields_re: re.Pattern[str] | None
    context_re: re.Pattern[str] | None
    context_requires: re.Pattern[str] | None
    platform_re: re.Pattern[str] | None
    went_on_re: re.Pattern[str] | None
    traceback_re: re.Pattern[str] | None = None


_USER_ROWS: tuple[Signature, ...] = ()


def active() -> tuple[Signature, ...]:
    """The user's rows (scope.toml / [tool.scope], tried first: the site knows its messages), then scope's."""
    return _USER_ROWS + SIGNATURES


@contextmanager
def user_rows(rows: tuple[Signature, ...]) -> Iterator[None]:
    """Use the user's rows while diagnosing (pool workers are forked inside, so they see them too)."""
    global _USER_ROWS
    if not rows:
        yield
        return
    previous, _USER_ROWS = _USER_ROWS, rows
    _clear_caches()
    try:
        yield
    finally:
        _USER_ROWS = previous
        _clear_caches()


# Caches elsewhere that are derived from the active rows (scan.py's needle lists): their modules register
# them here, so this module need not import its importers to clear them.
_DERIVED_CACHES: list[Callable[[], None]] = []


def clear_with_rows(cache_clear: Callable[[], None]) -> None:
    """Have CACHE_CLEAR called whenever the active rows change (user rows come and go)."""
    _DERIVED_CACHES.append(cache_clear)


def _clear_caches() -> None:
    for fn in (compiled, needles, _row_needles, _needs_context, _any_needle):
        fn.cache_clear()
    for cache_clear in _DERIVED_CACHES:
        cache_clear()


@cache
def compiled() -> tuple[Compiled, ...]:
    return tuple(
        Compiled(
            s,
            tuple(re.compile(p) for p in s.patterns),
            re.compile(s.ranks_re) if s.ranks_re else None,
            re.compile(s.before_re) if s.before_re else None,
            re.compile(s.fields_re) if s.fields_re else None,
            re.compile(s.context_re) if s.context_re else None,
            re.compile(s.context_requires) if s.context_requires else None,
            re.compile(s.platform_re) if s.platform_re else None,
            re.compile(s.went_on_re) if s.went_on_re else None,
            re.compile(s.traceback_re) if s.traceback_re else None,
        )
        for s in active()
    )


@cache
def needles() -> tuple[str, ...]:
    """Every row's needles: the scanner's extra trigger words."""
    return tuple(dict.fromkeys(n for s in active() for n in s.needles))


@cache
def _row_needles() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(n.lower() for n in s.needles) for s in active())


@cache
def _benign() -> re.Pattern[str]:
    return re.compile("|".join(BENIGN))


def is_benign(text: str) -> bool:
    return bool(_benign().search(text))


@cache
def _needs_context() -> bool:
    return any(r.before_re for r in compiled())


@cache
def _any_needle() -> re.Pattern[str]:
    """Every needle, lowered: searched in the lowered line (an IGNORECASE alternation is about 9x slower)."""
    return re.compile("|".join(re.escape(n) for n in dict.fromkeys(n.lower() for n in needles())))


def match_text(
    text: str, before: list[str] | None = None, has_context: Callable[[Compiled], bool] | None = None
) -> Compiled | None:
    """The first row whose needle and pattern are on `text` (and whose context, if any, precedes it). A row that
    needs its context_re's line counts only where `has_context` finds it (without a file there is none)."""
    if "HIP " in text:  # the HIP runtime's and RCCL's words for what CUDA's rows read (other_collectives.py)
        text = as_cuda_words(text)
    low = text.lower()
    if not _any_needle().search(low):
        return None  # most lines: one scan instead of one per row
    for row, row_needles in zip(compiled(), _row_needles(), strict=True):
        if not any(n in low for n in row_needles):
            continue
        if not any(p.search(text) for p in row.patterns):
            continue
        window = (before or [])[-row.sig.before_lines :] if row.sig.before_lines else (before or [])
        if row.before_re and not any(row.before_re.search(b) for b in window):
            continue
        if (row.sig.context_needed or row.platform_re) and (has_context is None or not has_context(row)):
            continue
        return row
    return None


def handle_signature(sc: Scanner, p: Parsed, idx: int) -> int:
    """A line that matches a signature becomes that signature's anomaly; -1 when none matches."""
    before = sc.lines[max(0, idx - _LOOK_BEHIND) : idx] if _needs_context() else None
    row = match_text(p.text, before, lambda r: _has_context(sc, idx, r))
    if row is None:
        return -1
    if row.sig.min_count > 1:
        seen = sc.state.setdefault("signature_counts", {})
        seen[row.sig.id] = seen.get(row.sig.id, 0) + 1
        if seen[row.sig.id] != row.sig.min_count:
            return 0  # harmless alone (a retry); it fires once, on the N-th time
    emit_signature(sc, p, row, idx, p.text)
    return 0


def _has_context(sc: Scanner, idx: int, row: Compiled) -> bool:
    """The lines before `idx` a row needs: its context line (which must match context_requires too), an earlier
    line of the platform it is for."""
    if row.sig.context_needed:
        m = _context_line(sc, idx, row.context_re) if row.context_re else None
        if m is None or (row.context_requires is not None and not row.context_requires.search(m.group(0))):
            return False
    return row.platform_re is None or _context_line(sc, idx, row.platform_re) is not None


def emit_signature(sc: Scanner, p: Parsed, row: Compiled, idx: int, text: str, **extra: object) -> None:
    sig = row.sig
    shown = sc.traceback_text(p) if row.traceback_re is not None and sc.tracebacks else ""
    frames = sc.take_traceback(p) if sc.tracebacks else []
    # the message: the matched line, and the lines below it that the row reads its fields from (a help text, an
    # exception's detail lines): a remedy_when pattern on any of them picks the fix
    below = _message_lines(_own_lines(sc, p, sc.lines[idx + 1 : idx + 1 + sig.fields_after]), sig.fields_until)
    said = (text, *below)
    remedy = next(
        (fix for pattern, fix in sig.remedy_when if any(re.search(pattern, line) for line in said)), sig.remedy
    )
    details: dict[str, Any] = {
        "signature": sig.id,
        "cause": sig.cause,
        "meaning": sig.meaning,
        "remedy": remedy,
        "reference": sig.reference,
        "confidence": sig.confidence,
        **({"echo": True} if sig.echo else {}),
        **extra,
    }
    if frames:
        details["frames"] = frames[-6:]
    if row.fields_re:
        for line in said:
            for m in row.fields_re.finditer(line):
                _keep_groups(m, details)
    if row.traceback_re is not None and shown:
        for m in row.traceback_re.finditer(shown):
            _keep_groups(m, details)
    if sig.yields_to and any(re.search(sig.yields_to, line) for line in below):
        details["echo"] = True  # a line below names the cause better: this one counts only alone
    if row.context_re:
        _context_fields(sc, idx, row.context_re, details)
    if sig.derive:
        _derive(sig.derive, details)
    if "{" in remedy:
        details["remedy"] = fill_remedy(remedy, details)
        # the slots the line filled, for words/advice.py: of two lines of one message, the fuller reading is said.
        # A leading '_' keeps it out of the finding's metrics (words/findings.py)
        details["_remedy_slots"] = {
            m.group(1): str(details[m.group(1)]).strip()
            for m in _SLOT.finditer(remedy)
            if str(details.get(m.group(1)) or "").strip()
        }
    message = f"{sig.meaning} ({_cut(text)})"
    kind, level = sig.kind, LEVEL_OF_CAUSE[sig.cause]
    if sig.cuda_named:
        kind, level = _cuda_named(text, kind, level, details)
    severity = sig.severity
    if row.went_on_re is not None and _went_on(sc, idx, row.went_on_re):
        severity, details["went_on_past_it"] = "warning", True
    ranks: list[int | None] = [*_named_ranks(sc, row, idx)] or [None]
    for rank in ranks:
        sc.emit(p, sig.id, kind, level, message, rank=rank, lineno=idx + 1, severity=severity, **details)


def _derive(name: str, details: dict[str, Any]) -> None:
    """The fields a row's derive function reads from its numbers (knowledge/layout_arithmetic.py); the line's own
    fields win. A derive function that fails (numbers no GPU count has, a bug) costs only its words: the remedy
    keeps its slots' fallbacks and the finding stands."""
    from scope.analyzers.diagnose.knowledge.layout_arithmetic import DERIVE

    try:
        derived = DERIVE[name](details)
    except Exception:  # any failure of one row's arithmetic must not cost the log's diagnosis
        return
    for key, value in derived.items():
        details.setdefault(key, value)


def _own_lines(sc: Scanner, p: Parsed, below: list[str]) -> list[tuple[str, str]]:
    """The lines below a match (as read, and with their prefixes off) that are of its own rank: a line another rank
    printed in between ('[rank1]:' under '[rank0]:', each rank raising the same error) is that rank's message, whose
    names and numbers are not this one's. A line that names no rank is kept (an unprefixed log's continuation)."""
    if not below:
        return []
    own = []
    for line in below:
        q = parse_line(line, sc.year)
        if p.rank is None or q.rank is None or q.rank == p.rank:
            own.append((line, q.text))
    return own


def _message_lines(below: list[tuple[str, str]], until: str) -> list[str]:
    """The lines below a match that are still its message: up to the first whose text (its prefixes off: a
    '[rank0]:' tag before a blank line) matches `until` (none: all)."""
    end = next((n for n, (_, text) in enumerate(below) if until and re.search(until, text)), len(below))
    return [line for line, _ in below[:end]]


_CONTEXT_LINES = 2000  # how far back a row's context_re looks (an init's INFO lines precede its failure)
# NCCL's 'host:pid:tid [dev] ' prefix, anywhere on the line (after a timestamp or a '[rank0]:' tag)
_NCCL_HOST = re.compile(r"(?:^|[\s\]:])([\w.\-]+):(\d+):\d+ \[\d+\] ")


# a number field longer than this stays text: int() refuses past sys.get_int_max_str_digits() (4300), and a
# ValueError there would make the whole log unreadable
_INT_DIGITS = 300


def _keep_groups(m: re.Match[str], details: dict[str, Any]) -> None:
    """A match's named groups into DETAILS (a number as an int); a field already set is kept."""
    for name, value in m.groupdict().items():
        if value is not None:
            details.setdefault(name, int(value) if value.isdigit() and len(value) <= _INT_DIGITS else value)


def _context_fields(sc: Scanner, idx: int, rx: re.Pattern[str], details: dict[str, Any]) -> None:
    """The named groups of the nearest line before `idx` that `rx` matches, among the lines of the matched
    line's own process where NCCL's prefix names it: another process's init lines say nothing of this one's (its
    HCA list differs). The nearest matching line decides even where its groups are empty (NCCL listed several
    HCAs: none is quoted), so an older line never stands in for it."""
    m = _context_line(sc, idx, rx)
    if m is not None:
        _keep_groups(m, details)


def _context_line(sc: Scanner, idx: int, rx: re.Pattern[str]) -> re.Match[str] | None:
    """The match of `rx` on the nearest line before `idx` (at most _CONTEXT_LINES back), among the lines of the
    matched line's own process where NCCL's prefix names it (host:pid): another process's init lines say nothing
    of this one's (its provider, its HCA list differ)."""
    hits = _hits(sc, rx)
    proc = process_of(sc.lines[idx])
    for at in range(bisect_left(hits.lines, idx) - 1, -1, -1):
        line_no, other, m = hits.found[at]
        if line_no < idx - _CONTEXT_LINES:
            return None
        if proc is None or other is None or other == proc:
            return m
    return None


def _went_on(sc: Scanner, idx: int, rx: re.Pattern[str]) -> bool:
    """A line after `idx` of the matched line's own process (any line where no prefix names it) matches `rx`."""
    hits = _hits(sc, rx)
    proc = process_of(sc.lines[idx])
    return any(
        proc is None or other is None or other == proc for _, other, _m in hits.found[bisect_right(hits.lines, idx) :]
    )


@dataclass
class _Hits:
    """The lines of one file that a context regex matches, in order, with their process: searched once per file
    and regex (a storm of WARN lines would each search the 2000 lines before them again)."""

    lines: list[int]
    found: list[tuple[int, tuple[str, str] | None, re.Match[str]]]


def _hits(sc: Scanner, rx: re.Pattern[str]) -> _Hits:
    cache: dict[str, _Hits] = sc.state.setdefault("context_hits", {})
    hits = cache.get(rx.pattern)
    if hits is None:
        found = [(i, process_of(line), m) for i, line in enumerate(sc.lines) if (m := rx.search(line))]
        hits = cache[rx.pattern] = _Hits([f[0] for f in found], found)
    return hits


def process_of(line: str) -> tuple[str, str] | None:
    """(host, pid) of NCCL's prefix on the line; None where it has none."""
    m = _NCCL_HOST.search(line)
    return (m.group(1), m.group(2)) if m else None


_SLOT = re.compile(r"\{(\w+)(?:([|?!])([^}]*))?\}")


def fill_remedy(template: str, fields: dict[str, Any]) -> str:
    """A remedy that quotes the line: `{name}` is the field the line states, `{name|fallback}` the fallback
    where it states none (a one-space fallback drops the slot; a field fills in with its own words), and
    `{name?words with @}` those words with the field for the @ where the line states it, nothing where not (a
    clause that only makes sense with the value: 'the parameters it names: @'), and `{name!words}` the words only
    where the line does not state it (advice the value makes moot)."""

    def slot(m: re.Match[str]) -> str:
        value = fields.get(m.group(1))
        said = "" if value is None else str(value).strip()
        if m.group(2) == "?":
            return m.group(3).replace("@", said) if said else ""
        if m.group(2) == "!":
            return "" if said else m.group(3)
        if not said:
            return (m.group(3) or "").strip()
        return f" ({said})" if (m.group(3) or "") == " " else said

    return re.sub(r" +", " ", _SLOT.sub(slot, template)).replace(" .", ".").replace(" ;", ";")


_QUOTED = re.compile(r"'([^']+)'")


def _cuda_named(text: str, kind: str, level: int, details: dict[str, Any]) -> tuple[str, int]:
    """A CUDA failure is as specific as the error name it quotes (emitters.CUDA_ERRORS)."""
    from scope.analyzers.diagnose.knowledge.emitters import CUDA_ERRORS

    m = _QUOTED.search(text)
    hit = CUDA_ERRORS.get(m.group(1).strip()) if m else None
    if hit is None or hit[0] == kind:
        return kind, level
    details.update(cuda_error=m.group(1).strip(), cause_detail=hit[1])  # type: ignore[union-attr]
    new_level = {"hardware_fault": HARDWARE, "crash": APPLICATION, "oom": APPLICATION}.get(hit[0], APPLICATION)
    if hit[0] == "config_error":
        details["remedy"] = (
            f"CUDA says '{m.group(1).strip()}': {hit[1]}. Fix the program's device use (torch.cuda.set_device("  # type: ignore[union-attr]
            "local_rank) before init, streams and events of the communicator's device) or the build / driver "
            "versions; CUDA_LAUNCH_BLOCKING=1 names the failing call."
        )
    return hit[0], new_level


def _named_ranks(sc: Scanner, row: Compiled, idx: int) -> list[int]:
    if row.ranks_re is None:
        return []
    for line in sc.lines[idx : idx + _LOOK_AHEAD]:
        m = row.ranks_re.search(line)
        if m:
            named = _rank_numbers(next((g for g in m.groups() if g is not None), m.group(0)))
            if row.sig.ranks_ready:
                return sorted(set(range(max(named, default=0) + 1)) - named)
            return sorted(named)
    return []


def _rank_numbers(text: str) -> set[int]:
    """'3', '0, 2', '4-7,9' (SLURM task lists) -> the rank numbers."""
    out: set[int] = set()
    for a, b in re.findall(r"(\d+)(?:-(\d+))?", text):
        lo, hi = int(a), int(b or a)
        out.update(range(lo, min(hi, lo + 4096) + 1))
    return out


def _cut(text: str, limit: int = 200) -> str:
    from scope.analyzers.diagnose.readers.quote import shorten

    return shorten(text, limit)


def quiet_echoes(anomalies: list[Any]) -> None:
    """Error-return chains echo an error: where the file reports one in its own words (anywhere: the chain
    of one host may be printed before another's WARN), the chains are its evidence, not causes."""
    if any(a.severity != "info" and not a.details.get("echo") for a in anomalies):
        for a in anomalies:
            if a.details.get("echo"):
                a.severity = "info"
