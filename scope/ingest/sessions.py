"""Several ranks in one file: profiler sessions of different ranks appended to one trace file.

Both ingest paths read concatenated sessions as one rank's trace (right for successive windows of one
rank). When the sessions' distributedInfo name different ranks, their events would be mixed into one
rank's timeline, so the file is named with the ranks it holds and the run is marked partial. Only
files already known to hold more than one session are scanned, so a normal trace costs nothing.
Traces merged into one session (one distributedInfo) are told by their ProfilerStep windows instead.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from scope.warnings import InputWarning

# `"rank": N` before any nested object inside distributedInfo (rank comes first in every PyTorch era).
_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(-?\d+)')
_CHUNK = 1 << 22
_OVERLAP = 512  # longer than any distributedInfo prefix up to its rank


def ranks_in_file(path: str | Path) -> list[int]:
    """The distributedInfo rank of each session in the file, in file order (what can be read of it)."""
    found: list[int] = []
    tail, tail_at, last_at = b"", 0, -1  # tail_at: stream offset of tail; last_at: of the last match taken
    try:
        with _open(Path(path)) as f:
            while chunk := f.read(_CHUNK):
                buf = tail + chunk
                for m in _RANK.finditer(buf):
                    # one straddling the previous cut is not counted twice, nor one whose digits the cut may have split
                    if tail_at + m.start() > last_at and m.end() < len(buf):
                        found.append(int(m.group(1)))
                        last_at = tail_at + m.start()
                keep = min(len(buf), _OVERLAP)
                tail, tail_at = buf[-keep:], tail_at + len(buf) - keep
    except (OSError, EOFError, zlib.error):
        pass  # a cut or corrupt file: the sessions read so far
    return found


def _open(path: Path) -> io.BufferedIOBase:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.GzipFile(path, "rb")
    return path.open("rb")


def several_ranks_warning(path: str, sessions: int) -> InputWarning | None:
    """A warning when the file's concatenated sessions come from different ranks; None otherwise."""
    if sessions <= 0:
        return None
    ranks = ranks_in_file(path)
    if len(set(ranks)) <= 1:
        return None
    listed = ", ".join(str(r) for r in sorted(set(ranks)))
    return _mixed(path, f"{len(ranks)} profiler sessions of ranks {listed}")


def concurrent_steps_warning(path: str, windows: Iterable[tuple[object, int, int]]) -> InputWarning | None:
    """A warning when one file's ProfilerStep windows run at once on different threads; None otherwise.

    `windows` are (thread, start, end) of each ProfilerStep event in the file. One process steps its
    profiler on one thread, so steps that overlap on two threads are two processes' traces merged into
    one session (several ranks in one file without a second distributedInfo to tell them apart).
    """
    latest_end: dict[object, int] = {}  # thread -> the latest end of its windows seen so far
    overlapping = 0
    for thread, start, end in sorted(windows, key=lambda w: w[1]):
        if any(t != thread and e > start for t, e in latest_end.items()):
            overlapping += 1
        latest_end[thread] = max(end, latest_end.get(thread, end))
    if overlapping == 0:
        return None
    return _mixed(
        path, f"{len(latest_end)} threads run ProfilerStep windows at the same time, {overlapping} overlapping"
    )


SEVERAL_RANKS = "several ranks in one file"


def _mixed(path: str, how: str) -> InputWarning:
    """Several ranks' events mixed into one rank's timeline: no rank of them is read as it ran (partial)."""
    return InputWarning(
        path,
        f"{SEVERAL_RANKS} ({how})",
        consequence="their events are mixed into one rank's timeline: save one trace per rank (or split the file) "
        "to analyze them apart",
        partial=True,
    )
