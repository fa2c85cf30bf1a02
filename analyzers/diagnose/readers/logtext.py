"""A log's text, read in bounded memory: whole when it is small, else its head and its tail with the
middle's lines counted (not kept), so the first error (an OOM at start-up) and the last are both seen and
every line keeps its true number. The part not read is said (the diagnosis is then partial, exit 4).

UTF-16 logs (PowerShell's `>`, Windows tools) are recognised by their byte-order mark or by the zero
bytes of ASCII text in UTF-16, and decoded as such.
"""

from __future__ import annotations

import os
from pathlib import Path

from scope.warnings import InputWarning

MAX_LOG_BYTES = 512 << 20  # read per log at most
HEAD_BYTES = 64 << 20  # of which the start: the first error of a job is often near it
CHUNK = 16 << 20
# Lines of an unread middle are kept as empty lines (their numbers right); past this many, not even that.
MAX_BLANK_LINES = 64 << 20


def utf16_encoding(head: bytes) -> str | None:
    """'utf-16-le' / 'utf-16-be' when HEAD is UTF-16 text (with or without a byte-order mark), else None."""
    if head.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff"):
        return "utf-16-be"
    sample = head[:4096]
    half = len(sample) // 2
    if half < 8:
        return None
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    if odd > 0.3 * half and even < 0.02 * half:
        return "utf-16-le"
    if even > 0.3 * half and odd < 0.02 * half:
        return "utf-16-be"
    return None


def _decode(data: bytes, encoding: str) -> str:
    text = data.decode(encoding, errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def read_log_text(
    path: str | Path, display: str, max_bytes: int = MAX_LOG_BYTES, head_bytes: int = HEAD_BYTES
) -> tuple[str, list[InputWarning]]:
    """(text, what was not read: the bytes of the middle, a partial warning). Never reads more than
    MAX_BYTES of the file into memory."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        first = fh.read(min(max_bytes, 4096))
        encoding = utf16_encoding(first) or "utf-8"
        if size <= max_bytes:
            return _decode(first + fh.read(max_bytes - len(first)), encoding), []
        width = 2 if encoding.startswith("utf-16") else 1
        newline = "\n".encode(encoding)
        fh.seek(0)
        head = fh.read(head_bytes)
        cut = _after_last(head, newline, width)
        head = head[:cut]
        tail_start = size - (max_bytes - head_bytes)
        tail_start -= (tail_start - cut) % width  # keep UTF-16 code units aligned
        fh.seek(cut)
        middle = _count(fh, newline, tail_start - cut)
        tail = fh.read(max_bytes - head_bytes)
    first_nl = _find(tail, newline, width)
    if first_nl < 0:  # one line runs through the whole tail: nothing of it is a line of its own
        middle, tail = middle, b""
    else:  # the tail's first, partial line belongs to the middle
        middle, tail = middle + 1, tail[first_nl + len(newline) :]
    head_lines = _decode(head, encoding).count("\n")
    skipped_mib = (size - len(head) - len(tail)) / 2**20
    blank = "\n" * middle if middle <= MAX_BLANK_LINES else "\n"
    text = _decode(head, encoding) + blank + _decode(tail, encoding)
    where = f"lines {head_lines + 1:,} to {head_lines + middle:,}" if middle <= MAX_BLANK_LINES else "its middle"
    what = (
        f"{size / 2**20:,.0f} MiB, over the {max_bytes >> 20} MiB read per log: its first "
        f"{len(head) / 2**20:,.0f} MiB and last {len(tail) / 2**20:,.0f} MiB were read"
    )
    consequence = f"{where} ({skipped_mib:,.0f} MiB) were not"
    if middle > MAX_BLANK_LINES:
        consequence += " (line numbers in its tail are not exact)"
    return text, [InputWarning(display, what, (len(head), size - len(tail)), consequence, partial=True)]


def _find(data: bytes, newline: bytes, width: int, start: int = 0) -> int:
    pos = data.find(newline, start)
    while pos >= 0 and pos % width:
        pos = data.find(newline, pos + 1)
    return pos


def _after_last(data: bytes, newline: bytes, width: int) -> int:
    pos = data.rfind(newline)
    while pos >= 0 and pos % width:
        pos = data.rfind(newline, 0, pos)
    return pos + len(newline) if pos >= 0 else len(data) - len(data) % width


def _count(fh, newline: bytes, length: int) -> int:  # type: ignore[no-untyped-def]
    """Newlines in the next LENGTH bytes of FH, read in chunks (the middle of a huge log is never held)."""
    count = 0
    left = length
    while left > 0:
        chunk = fh.read(min(CHUNK, left))
        if not chunk:
            break
        count += chunk.count(newline)  # UTF-16: chunks start code-unit aligned (CHUNK and the cut are even)
        left -= len(chunk)
    return count
