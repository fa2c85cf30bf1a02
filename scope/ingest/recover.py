"""Event-level recovery for the Python reader: a malformed event costs that event, not the rest of the file.

The same rules as the native scanner (scope/ingest/native/kineto.c), so both paths write the same store:
- an empty value (`"Process Group Description": ,`, a PyTorch profiler bug in NCCL kernels' args) and the
  non-JSON literals NaN / Infinity / -Infinity are read as null, and the event is kept ("repaired");
- any other malformed event is skipped: parsing resumes at the next `}` `,` `{` after the event's start
  whose event parses (a string cut short inside the event cannot hide that boundary, because the search
  starts at the event, not where the parse failed).

A chunk is decoded whole first (the fast path); only when msgspec reports a malformed byte does the
decoder split there: the events before the bad one are decoded as one piece, the bad one is repaired
or skipped, and decoding resumes on the rest. Each byte is decoded about twice at most.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from scope.warnings import InputWarning

_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")
# Outside strings: `:` followed by `,` / `}` (an empty value), or a NaN / Infinity literal.
_REPAIRABLE = re.compile(rb'"(?:[^"\\]|\\.)*"|(:[ \t\r\n]*)(?=[,}])|(-?Infinity|NaN)')
_WS = b" \t\r\n"
MAX_REGIONS = 8  # skipped regions listed in the warning (the count covers all of them)


@dataclass
class Recovery:
    """What recovery did in one file; offsets are stream offsets of decompressed bytes."""

    skipped: int = 0
    repaired: int = 0
    repair_offset: int = -1
    regions: list[list[int]] = field(default_factory=list)  # [start, end, events]
    nregions: int = 0
    sessions: int = 0  # further "traceEvents" arrays after the first (profiler sessions concatenated)
    _open: list[int] | None = None

    def skip(self, offset: int) -> None:
        if self._open is None:
            self._open = [offset, offset, 0]
        self._open[2] += 1

    def resume(self, offset: int) -> None:
        """A good event starts at offset: the open skipped region (if any) ends there."""
        if self._open is None:
            return
        self._open[1] = offset
        self.close()

    def close(self, end: int | None = None) -> None:
        if self._open is None:
            return
        if end is not None:
            self._open[1] = end
        if self.nregions < MAX_REGIONS:
            self.regions.append(self._open)
        self.nregions += 1
        self.skipped += self._open[2]
        self._open = None

    def repair(self, offset: int) -> None:
        if self.repaired == 0:
            self.repair_offset = offset
        self.repaired += 1


def recovery_warnings(
    path: str, skipped: int, regions: list[Any], nregions: int, repaired: int, at: int, sessions: int = 0
) -> list[InputWarning]:
    """The warnings both ingest paths give for what recovery did (the same words, for the same store).
    Only skipped events lose part of the file (partial); concatenated sessions and repaired values do not."""
    out = []
    if sessions:
        out.append(
            InputWarning(
                path,
                f"{sessions + 1} profiler sessions concatenated in one file",
                consequence="their events are read as one trace (the header before the first array and the one "
                "after the last apply)",
            )
        )
    if skipped:
        spans = ", ".join(f"{r[0]}-{r[1]}" for r in regions)
        more = f" and {nregions - len(regions)} more" if nregions > len(regions) else ""
        span = (int(regions[0][0]), int(regions[-1][1])) if regions else None
        out.append(
            InputWarning(
                path,
                f"skipped {skipped} malformed event{'s' if skipped != 1 else ''} in the event array "
                f"(bytes {spans}{more})",
                span,
                "parsing resumed at the next event",
                partial=True,
            )
        )
    if repaired:
        out.append(
            InputWarning(
                path,
                f"repaired {repaired} event{'s' if repaired != 1 else ''} with an empty value or NaN / Infinity "
                f"(read as null; the first at byte {at})",
            )
        )
    return out


def negative_dur_warning(path: str, count: int) -> list[InputWarning]:
    if not count:
        return []
    return [InputWarning(path, f"{count} complete event{'s' if count != 1 else ''} with a negative dur, read as 0")]


def repair_text(text: bytes) -> bytes | None:
    """text with empty values and NaN / Infinity read as null, or None when there is nothing to repair."""
    changed = False

    def fix(m: re.Match[bytes]) -> bytes:
        nonlocal changed
        if m.group(1) is not None:
            changed = True
            return m.group(1) + b"null"
        if m.group(2) is not None:
            changed = True
            return b"null"
        return m.group(0)

    fixed = _REPAIRABLE.sub(fix, text)
    return fixed if changed else None


def _valid_utf8(text: bytes) -> bytes:
    """text with invalid UTF-8 replaced by U+FFFD: the native core keeps such strings the same way
    (it decodes them with errors="replace"), so the event is kept, not skipped, and not counted as repaired."""
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return text.decode("utf-8", "replace").encode()
    return text


def _error_byte(exc: msgspec.DecodeError) -> int | None:
    found = _ERROR_BYTE.search(str(exc))
    return int(found.group(1)) if found else None


def _skip_ws(body: bytes | bytearray, i: int, end: int) -> int:
    while i < end and body[i] in _WS:
        i += 1
    return i


class RecoveringDecoder:
    """Decode the events of body (the text between two event boundaries, no brackets), recovering.

    decode_list(view) decodes a JSON array of events (raising msgspec.DecodeError with the byte);
    decode_one(text) decodes one event.
    """

    def __init__(
        self,
        decode_list: Callable[[memoryview], list[Any]],
        decode_one: Callable[[bytes], Any],
        recovery: Recovery,
    ) -> None:
        self.decode_list = decode_list
        self.decode_one = decode_one
        self.recovery = recovery

    def decode(self, body: bytes, base: int) -> list[Any]:
        """Events of body, whose first byte is at stream offset base.

        The whole body is tried first; after a malformed event the rest goes in pieces of about
        PIECE_BYTES, so the next bad event costs re-decoding part of one piece, not of the rest."""
        buf = bytearray(b"[" + body + b"]")  # body[i] is buf[i + 1]; bytes before i are free to overwrite
        n = len(body)
        events: list[Any] = []
        i = _skip_ws(body, 0, n)
        whole = True
        while i < n:
            close, resume = (n, n) if whole else _piece(body, i, n)
            buf[i] = ord("[")
            saved = buf[close + 1]
            buf[close + 1] = ord("]")  # the byte after the piece's last `}` (a `,`, or the final `]`)
            try:
                got = self.decode_list(memoryview(buf)[i : close + 2])
            except msgspec.DecodeError as exc:
                buf[close + 1] = saved
                i = self._recover(body, buf, i, exc, base, events)
                whole = False
                continue
            buf[close + 1] = saved
            if got:
                self.recovery.resume(base + i)
            events.extend(got)
            i = resume
        return events

    def _recover(self, body: bytes, buf: bytearray, i: int, exc: msgspec.DecodeError, base: int, events: list) -> int:
        """Decode the good events from i, then repair or skip the bad one; return where to go on."""
        n = len(body)
        err = _error_byte(exc)
        err = n if err is None else min(n, i + err - 1)
        bad = i
        at = err
        while (found := _boundary_before(body, at, i)) is not None:
            brace, bad_start = found
            comma = brace + 2  # buf index of the byte after the `}`: closes the prefix array
            saved = buf[comma]
            buf[comma] = ord("]")
            try:
                got = self.decode_list(memoryview(buf)[i : comma + 1])
            except msgspec.DecodeError:
                buf[comma] = saved
                at = brace  # that `}` was inside the bad event: look further back
                continue
            buf[comma] = saved
            self.recovery.resume(base + i)
            events.extend(got)
            bad = bad_start
            break
        joined = self._session_join(body, bad)
        if joined is not None:
            event, resume = joined
            self.recovery.resume(base + bad)
            events.append(event)
            return resume
        nxt = _BOUNDARY.search(body, bad + 1)
        end = nxt.start() + 1 if nxt else n
        segment = body[bad:end]
        text = _valid_utf8(segment)
        fixed = repair_text(text)
        if fixed is not None or text is not segment:
            try:
                event = self.decode_one(fixed if fixed is not None else text)
            except msgspec.DecodeError:
                pass
            else:
                self.recovery.resume(base + bad)
                if fixed is not None:
                    self.recovery.repair(base + bad)
                events.append(event)
                return nxt.end() - 1 if nxt else n
        self.recovery.skip(base + bad)
        return nxt.end() - 1 if nxt else n

    def _session_join(self, body: bytes, bad: int) -> tuple[Any, int] | None:
        """The event at bad ends its array and another session's "traceEvents" array follows (files
        concatenated from several profiler sessions): (that event, where the next array's first event is)."""
        at, limit = bad, min(len(body), bad + MAX_EVENT_BYTES)
        while (close := body.find(b"]", at, limit)) >= 0:
            at = close + 1
            end = _last_non_ws(body, close, bad)
            if end < bad or body[end] != ord("}"):
                continue
            key = _EVENTS_KEY.search(body, close, close + MAX_SESSION_GAP)
            if key is None:
                return None
            try:
                event = self.decode_one(body[bad : end + 1])
            except msgspec.DecodeError:
                continue
            self.recovery.sessions += 1
            return event, _skip_ws(body, key.end(), len(body))
        return None


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
MAX_EVENT_BYTES = 64 << 10  # where the `]` after a session's last event is looked for
MAX_SESSION_GAP = 1 << 20  # the text between two sessions' arrays (a tail and a header) is far smaller
PIECE_BYTES = 16 << 10


def _piece(body: bytes, i: int, n: int) -> tuple[int, int]:
    """(index just after the `}` ending a piece of about PIECE_BYTES from i, where the next piece starts)."""
    if i + PIECE_BYTES >= n:
        return n, n
    m = _BOUNDARY.search(body, i + PIECE_BYTES)
    return (m.start() + 1, m.end() - 1) if m else (n, n)


def _boundary_before(body: bytes, end: int, lo: int) -> tuple[int, int] | None:
    """The last event boundary `}` `,` `{` whose `{` is before end and `}` at or after lo: (`}`, `{`) indexes."""
    at = end
    while (at := body.rfind(b"{", lo, at)) > lo:
        comma = _last_non_ws(body, at, lo)
        if comma > lo and body[comma] == ord(","):
            brace = _last_non_ws(body, comma, lo)
            if brace >= lo and body[brace] == ord("}"):
                return brace, at
    return None


def _last_non_ws(body: bytes, end: int, lo: int) -> int:
    i = end - 1
    while i >= lo and body[i] in _WS:
        i -= 1
    return i
