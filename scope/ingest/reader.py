"""Streaming reader for Kineto (torch.profiler) Chrome-trace files.

A trace can be gigabytes, so the `traceEvents` array is never decoded whole: the decompressed byte
stream is cut at event boundaries into chunks of about CHUNK_BYTES, and each chunk is decoded with
msgspec into compact typed structs that the caller turns into columns and drops. Everything outside
the array (distributedInfo, baseTimeNanoseconds, ...) becomes the header.

A file cut short (a rank that crashed while writing) is salvaged up to its last complete event and
the truncation is reported with its byte offset; only what cannot be read at all raises TraceError.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from scope.errors import TraceError
from scope.ingest.recover import RecoveringDecoder, Recovery, recovery_warnings
from scope.warnings import InputWarning

CHUNK_BYTES = 2 << 20
_READ_BYTES = 1 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# Between two events of the array: `}` `,` `{`. Inside an event this only occurs in arrays of objects,
# which a failed decode then rules out.
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_MAX_HEAD_BYTES = 256 << 20
# One event may be this big (the native core has no such limit short of memory; past it the rest of the
# file is reported as corrupt rather than held whole).
MAX_EVENT_BYTES = 4 << 30


class EventArgs(msgspec.Struct, gc=False, frozen=True):
    """The `args` fields scope uses; all others are skipped by the decoder without being built."""

    external_id: int = msgspec.field(default=-1, name="External id")
    correlation: int = -1
    stream: int = -1
    device: int = -1
    collective: str = msgspec.field(default="", name="Collective name")
    in_nelems: int = msgspec.field(default=-1, name="In msg nelems")
    out_nelems: int = msgspec.field(default=-1, name="Out msg nelems")
    group_size: int = msgspec.field(default=-1, name="Group size")
    dtype: str = ""
    pg_name: str = msgspec.field(default="", name="Process Group Name")
    pg_desc: str = msgspec.field(default="", name="Process Group Description")
    pg_ranks: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Process Group Ranks")
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")
    concrete: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Concrete Inputs")
    src_rank: int = msgspec.field(default=-1, name="Src Rank")
    dst_rank: int = msgspec.field(default=-1, name="Dst Rank")
    flops: float = -1.0
    # a "[memory]" event's (profile_memory=True); None: no integer Bytes (the event is not kept)
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")
    total_allocated: int = msgspec.field(default=-1, name="Total Allocated")
    total_reserved: int = msgspec.field(default=-1, name="Total Reserved")
    addr: int = msgspec.field(default=-1, name="Addr")
    device_type: int = msgspec.field(default=-1, name="Device Type")
    device_id: int = msgspec.field(default=-1, name="Device Id")


_NO_ARGS = EventArgs()


class RawEvent(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: float = 0.0
    dur: float = 0.0
    args: EventArgs = _NO_ARGS


_CHUNK_DECODER = msgspec.json.Decoder(list[RawEvent])
_EVENT_DECODER = msgspec.json.Decoder(RawEvent)
_RAW_LIST_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_ANY_DECODER = msgspec.json.Decoder()


@dataclass
class ReadReport:
    """What happened while reading one file: warnings name the file and byte offsets."""

    path: str
    header: dict[str, Any] = field(default_factory=dict)
    events_seen: int = 0
    bytes_read: int = 0
    truncated: bool = False
    warnings: list[InputWarning] = field(default_factory=list)
    recovery: Recovery = field(default_factory=Recovery)


def _open_blocks(path: Path, report: ReadReport) -> Iterator[bytes]:
    """Decompressed blocks of the file; a gzip stream cut short ends the iteration with a warning."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
        fh.seek(0)
        if magic == b"\x1f\x8b":
            yield from _gunzip_blocks(fh, path, report)
        else:
            while block := fh.read(_READ_BYTES):
                yield block


def _gunzip_blocks(fh: Any, path: Path, report: ReadReport) -> Iterator[bytes]:
    """Stream-decompress with zlib so a truncated file still yields everything before the cut
    (gzip.GzipFile.read drops the partial block when it hits the end early)."""
    inflater = zlib.decompressobj(wbits=31)
    produced = 0
    while True:
        raw = fh.read(1 << 18)
        if not raw:
            break
        try:
            while raw:
                for out in _inflate(inflater, raw):
                    produced += len(out)
                    yield out
                raw = b""
                if inflater.eof and inflater.unused_data:  # concatenated gzip members
                    raw = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
        except zlib.error as exc:
            if produced == 0:
                raise TraceError(str(path), f"corrupt gzip data ({exc})") from None
            report.truncated = True
            report.warnings.append(
                InputWarning(str(path), f"corrupt gzip data after {produced} decompressed bytes ({exc})", partial=True)
            )
            return
    if not inflater.eof:
        if produced == 0:
            raise TraceError(str(path), "corrupt or empty gzip data (no complete block)")
        report.truncated = True
        report.warnings.append(gzip_cut_short(str(path)))


def gzip_cut_short(path: str) -> InputWarning:
    return InputWarning(path, "gzip stream ends early (file cut short while being written)", partial=True)


def truncated(path: str, size: int, salvaged_to: int, events: int) -> InputWarning:
    """A trace cut at byte `size`: the events up to `salvaged_to` were kept (both ingest paths say this)."""
    consequence = f"salvaged events up to byte {salvaged_to} ({events} events in all)"
    return InputWarning(path, f"trace is truncated at byte {size}", (salvaged_to, size), consequence, partial=True)


def _last_boundary(buf: bytes, start: int, end: int) -> re.Match[bytes] | None:
    """The last event boundary in buf[start:end]."""
    tail = deque(_BOUNDARY.finditer(buf, start, end), maxlen=1)
    return tail[0] if tail else None


def _inflate(inflater: Any, raw: bytes) -> Iterator[bytes]:
    """Decompressed output of raw in blocks of at most _READ_BYTES (traces compress ~15-20x)."""
    data = raw
    while data:
        out = inflater.decompress(data, _READ_BYTES)
        if out:
            yield out
        data = inflater.unconsumed_tail
    while not inflater.eof and (out := inflater.decompress(b"", _READ_BYTES)):
        yield out


def _parse_header_part(text: bytes) -> dict[str, Any]:
    """Decode `{"a": 1, "b": 2,` (before the array) or `, "c": 3}` (after it) as one object."""
    body = text.strip()
    if body.startswith(b"{"):
        body = body[1:]
    if body.endswith(b"}"):
        body = body[:-1]
    body = body.strip().strip(b",").strip()
    if not body:
        return {}
    try:
        value = _ANY_DECODER.decode(b"{" + body + b"}")
    except (msgspec.DecodeError, RecursionError):  # nesting deeper than msgspec recurses: not a header
        return {}
    return value if isinstance(value, dict) else {}


class TraceReader:
    """Iterate decoded event chunks of one trace file; `report` fills in as reading goes on."""

    def __init__(self, path: Path, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.report = ReadReport(path=str(path))
        self._recovering = RecoveringDecoder(self._decode_view, _decode_one, self.report.recovery)

    def chunks(self) -> Iterator[list[RawEvent]]:
        blocks = _open_blocks(self.path, self.report)
        buf, consumed, eof = self._read_head(blocks)
        pos = 0
        want = self.chunk_bytes  # grows while one event is bigger than a chunk (a 6 MB args string)
        while True:
            if not eof and len(buf) - pos < want:
                # blocks gathered, then joined once: appending each block to the buffer copied it whole
                # every time (quadratic in an event of gigabytes)
                parts, have = [buf[pos:]], len(buf) - pos
                while have < want:
                    block = next(blocks, None)
                    if block is None:
                        eof = True
                        break
                    self.report.bytes_read += len(block)
                    parts.append(block)
                    have += len(block)
                buf = b"".join(parts)
                consumed += pos
                pos = 0
            if eof:
                yield from self._read_last(buf, pos, consumed)
                self._warn_recovery()
                return
            cut = self._cut_and_decode(buf, pos, consumed)
            if cut is None and want < MAX_EVENT_BYTES:
                want *= 2  # no event boundary yet: one event spans the chunk; read on
                continue
            if cut is None:  # no event boundary in MAX_EVENT_BYTES: corrupt in the middle
                self._warn_corrupt(consumed + pos)
                self._warn_recovery()
                return
            want = self.chunk_bytes
            end, events = cut
            self.report.events_seen += len(events)
            yield events
            pos = end

    def _read_head(self, blocks: Iterator[bytes]) -> tuple[bytes, int, bool]:
        """Read until the start of the traceEvents array; return the buffer after `[`."""
        buf = b""
        for block in blocks:
            self.report.bytes_read += len(block)
            buf += block
            match = _EVENTS_KEY.search(buf)
            if match:
                self.report.header = _parse_header_part(buf[: match.start()])
                return buf[match.end() :], match.end(), False
            if len(buf) > _MAX_HEAD_BYTES:
                break
        if not buf.strip():
            raise TraceError(str(self.path), "empty file")
        raise TraceError(str(self.path), 'not a Kineto trace: no "traceEvents" array found')

    def _cut_and_decode(self, buf: bytes, pos: int, consumed: int) -> tuple[int, list[RawEvent]] | None:
        """Decode events from pos up to the last event boundary; return (next pos, events)."""
        last = _last_boundary(buf, max(pos, len(buf) - (1 << 20)), len(buf)) or _last_boundary(buf, pos, len(buf))
        if last is None:
            return None
        close = last.start() + 1  # just after the `}` ending the last event of the chunk
        events = self._recovering.decode(buf[pos:close], consumed + pos)
        return last.end() - 1, events  # next chunk starts at the `{`

    def _decode_view(self, view: memoryview) -> list[RawEvent]:
        """A JSON array of events; odd types are coerced, malformed JSON raises msgspec.DecodeError."""
        try:
            return _CHUNK_DECODER.decode(view)
        except msgspec.ValidationError:
            return [_decode_one(raw) for raw in _RAW_LIST_DECODER.decode(view)]
        except RecursionError:  # an event nested deeper than the decoder recurses: one by one, flattened
            return [_decode_one(raw) for raw in _split_events(bytes(view))]

    def _read_last(self, buf: bytes, pos: int, consumed: int) -> Iterator[list[RawEvent]]:
        """At end of input: find the array's closing `]` (the one the rest of the header follows), or
        salvage a truncated array."""
        rest = buf[pos:]
        close = _array_close(rest)
        if close is not None:
            events = self._recovering.decode(rest[:close], consumed + pos)
            self.report.recovery.close(end=consumed + pos + close)
            self.report.header.update(_parse_header_part(rest[close + 1 :]))
            self.report.events_seen += len(events)
            yield events
            return
        yield from self._salvage(rest, consumed + pos)

    def _salvage(self, rest: bytes, offset: int) -> Iterator[list[RawEvent]]:
        self.report.truncated = True
        found = _last_boundary(rest, 0, len(rest))
        if found is not None:
            events = self._recovering.decode(rest[: found.start() + 1], offset)
            self.report.recovery.close(end=offset + found.end() - 1)
            if events:
                self.report.events_seen += len(events)
                self.report.warnings.append(
                    truncated(str(self.path), offset + len(rest), offset + found.start() + 1, self.report.events_seen)
                )
                yield events
                return
        self.report.warnings.append(
            InputWarning(
                str(self.path),
                f"trace is truncated at byte {offset + len(rest)}",
                (offset, offset + len(rest)),
                f"salvaged the {self.report.events_seen} complete events before byte {offset}",
                partial=True,
            )
        )

    def _warn_recovery(self) -> None:
        rec = self.report.recovery
        rec.close()
        self.report.warnings.extend(
            recovery_warnings(
                str(self.path), rec.skipped, rec.regions, rec.nregions, rec.repaired, rec.repair_offset, rec.sessions
            )
        )

    def _warn_corrupt(self, offset: int) -> None:
        self.report.truncated = True
        self.report.warnings.append(
            InputWarning(
                str(self.path),
                f"invalid JSON in the event array near byte {offset}",
                consequence=f"kept the {self.report.events_seen} events before it",
                partial=True,
            )
        )


def _decode_one(raw: bytes | msgspec.Raw) -> RawEvent:
    """One event; one with unexpected types is coerced (malformed JSON raises msgspec.DecodeError)."""
    try:
        return _EVENT_DECODER.decode(raw)
    except msgspec.ValidationError:
        return _coerce_event(_ANY_DECODER.decode(raw))
    except RecursionError:  # nested deeper than the decoder recurses: valid JSON, kept as the native core keeps it
        return _decode_one(_flatten_deep(bytes(raw)))


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# Values nested deeper than this inside one event are replaced by null before decoding: no field scope
# reads nests that deep, and the decoder's recursion stays bounded.
KEEP_DEPTH = 64


def _split_events(array: bytes) -> list[bytes]:
    """The elements of a JSON array of objects, found without recursion (strings respected); an
    unbalanced array is malformed (msgspec.DecodeError, which the recovery handles)."""
    events: list[bytes] = []
    depth = 0
    start = 0
    for token in _TOKEN.finditer(array):
        ch = token.group()
        if ch in (b"[", b"{"):
            depth += 1
            if depth == 2:
                start = token.start()
        elif ch in (b"]", b"}"):
            if depth == 2:
                events.append(array[start : token.end()])
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        raise msgspec.DecodeError("JSON nested too deeply and unbalanced")
    return events


def _flatten_deep(raw: bytes) -> bytes:
    """RAW with every container nested deeper than KEEP_DEPTH replaced by null (strings respected)."""
    out: list[bytes] = []
    depth = 0
    last = 0
    cut_from: int | None = None
    for token in _TOKEN.finditer(raw):
        ch = token.group()
        if ch in (b"[", b"{"):
            depth += 1
            if depth == KEEP_DEPTH + 1 and cut_from is None:
                cut_from = token.start()
        elif ch in (b"]", b"}"):
            if depth == KEEP_DEPTH + 1 and cut_from is not None:
                out += [raw[last:cut_from], b"null"]
                last, cut_from = token.end(), None
            depth -= 1
    if cut_from is not None:  # unbalanced: leave it to the decoder to call it malformed
        raise msgspec.DecodeError("JSON nested too deeply and unbalanced")
    out.append(raw[last:])
    return b"".join(out)


def _array_close(rest: bytes) -> int | None:
    """Index of the `]` closing the event array in rest (the end of input), or None (truncated).

    The `]` must be followed by the rest of the header and preceded by a whole last event (a `]`
    inside a header string like Kineto's "INFO" log lines passes the first test, not the second).
    When the last event itself is malformed, the rightmost candidate right after a `}` is taken (the
    native core's rule too)."""
    start, fallback = len(rest), None
    for _ in range(32):
        close = rest.rfind(b"]", 0, start)
        if close < 0:
            break
        start = close
        if not _is_header_tail(rest[close + 1 :]):
            continue
        first = _event_start_before(rest, close)
        try:
            _decode_one(rest[first:close])
            return close
        except msgspec.DecodeError:
            pass
        if fallback is None and rest[_last_non_ws(rest, close)] == ord("}"):
            fallback = close
    return fallback


def _event_start_before(buf: bytes, end: int) -> int:
    """Index of the `{` of the last event boundary (`}` `,` `{`) before end, or 0."""
    at = end
    while (at := buf.rfind(b"{", 0, at)) > 0:
        comma = _last_non_ws(buf, at)
        if comma >= 0 and buf[comma] == ord(",") and buf[_last_non_ws(buf, comma)] == ord("}"):
            return at
    return 0


def _last_non_ws(buf: bytes, end: int) -> int:
    """Index of the last byte before end that is not whitespace, or -1."""
    i = end - 1
    while i >= 0 and buf[i] in b" \t\r\n":
        i -= 1
    return i


def _is_header_tail(text: bytes) -> bool:
    """Whether text can follow the event array's `]`: the rest of the header object (`, "k": v}`)."""
    body = text.strip()
    if body in (b"", b"}"):
        return True
    if not (body.startswith(b",") and body.endswith(b"}")):
        return False
    try:
        return isinstance(_ANY_DECODER.decode(b"{" + body[1:]), dict)
    except (msgspec.DecodeError, RecursionError):
        return False


def _as_int(value: Any, default: int = -1) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _coerce_event(data: Any) -> RawEvent:
    """Build an event from a generic decode, keeping what has a usable type and defaulting the rest."""
    if not isinstance(data, dict):
        return RawEvent(ph="?")
    raw_args = data.get("args")
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
    encode = msgspec.json.encode
    mem_bytes = args.get("Bytes")
    ev_args = EventArgs(
        external_id=_as_int(args.get("External id")),
        correlation=_as_int(args.get("correlation")),
        stream=_as_int(args.get("stream")),
        device=_as_int(args.get("device")),
        collective=str(args.get("Collective name") or ""),
        in_nelems=_as_int(args.get("In msg nelems")),
        out_nelems=_as_int(args.get("Out msg nelems")),
        group_size=_as_int(args.get("Group size")),
        dtype=str(args.get("dtype") or ""),
        pg_name=str(args.get("Process Group Name") or ""),
        pg_desc=str(args.get("Process Group Description") or ""),
        pg_ranks=msgspec.Raw(encode(args["Process Group Ranks"]))
        if "Process Group Ranks" in args
        else msgspec.Raw(b""),
        input_dims=msgspec.Raw(encode(args["Input Dims"])) if "Input Dims" in args else msgspec.Raw(b""),
        input_type=msgspec.Raw(encode(args["Input type"])) if "Input type" in args else msgspec.Raw(b""),
        concrete=msgspec.Raw(encode(args["Concrete Inputs"])) if "Concrete Inputs" in args else msgspec.Raw(b""),
        src_rank=_as_int(args.get("Src Rank")),
        dst_rank=_as_int(args.get("Dst Rank")),
        flops=_as_float(args.get("flops", -1.0)),
        mem_bytes=mem_bytes if type(mem_bytes) is int else None,
        total_allocated=_as_int(args.get("Total Allocated")),
        total_reserved=_as_int(args.get("Total Reserved")),
        addr=_as_int(args.get("Addr")),
        device_type=_as_int(args.get("Device Type")),
        device_id=_as_int(args.get("Device Id")),
    )
    pid, tid = data.get("pid", -1), data.get("tid", -1)
    return RawEvent(
        ph=str(data.get("ph", "")),
        cat=str(data.get("cat", "")),
        name=str(data.get("name", "")),
        pid=pid if isinstance(pid, (int, str)) else -1,
        tid=tid if isinstance(tid, (int, str)) else -1,
        ts=_as_float(data.get("ts")),
        dur=_as_float(data.get("dur")),
        args=ev_args,
    )


def read_header(path: Path) -> dict[str, Any]:
    """The header of a trace (the part before the event array), reading no further than needed."""
    reader = TraceReader(path)
    blocks = _open_blocks(reader.path, reader.report)
    reader._read_head(blocks)
    return reader.report.header
