"""A snapshot's replayed timeline at a bounded level of detail: a million allocator events become at most
TIMELINE_BINS spans of consecutive events, each with the lowest and the highest allocated level inside
it (min/max decimation), so the band drawn from them keeps every spike: the highest of the highs is the
replay's peak exactly, whatever the number of events. The page draws the band, never the events.
"""

from __future__ import annotations

import numpy as np
from scope.analyzers.memory.snapshot import Replay

TIMELINE_BINS = 1000
TIMELINE_COLUMNS = ["file", "rank", "device", "bin", "first_entry", "time_us", "low", "high"]


def level_bins(rep: Replay, bins: int = TIMELINE_BINS) -> list[tuple[int, int, int, int, int]]:
    """(bin, first entry, its time in us or -1, lowest level, highest level) for spans of equal numbers
    of levels; level 0 is the one before the first entry (blocks from before recording)."""
    levels = rep.levels
    n = len(levels)
    if n == 0:
        return []
    starts = np.unique(np.linspace(0, n, min(bins, n) + 1).astype(np.int64)[:-1])
    low = np.minimum.reduceat(levels, starts)
    high = np.maximum.reduceat(levels, starts)
    # entry k is level k+1's cause; a span's time is its first entry's (level 0 takes the first entry's)
    times = rep.times_us
    first = np.clip(starts - 1, 0, max(len(times) - 1, 0))
    when = times[first] if len(times) else np.full(len(starts), -1, dtype=np.int64)
    columns = zip(starts.tolist(), when.tolist(), low.tolist(), high.tolist(), strict=True)
    return [(i, s - 1, t, lo, hi) for i, (s, t, lo, hi) in enumerate(columns)]
