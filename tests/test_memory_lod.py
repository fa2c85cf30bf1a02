"""A snapshot's replayed timeline at a bounded level of detail (analyzers/memory/lod.py): a million levels
become at most TIMELINE_BINS spans whose band keeps every spike."""

from __future__ import annotations

import numpy as np
from scope.analyzers.memory.lod import TIMELINE_BINS, level_bins
from scope.analyzers.memory.snapshot import Replay


def _replay(levels: np.ndarray, timed: bool = True) -> Replay:
    n = len(levels) - 1
    times = np.arange(n, dtype=np.int64) * 10 + 1_000 if timed else np.full(n, -1, dtype=np.int64)
    peak_at = int(np.argmax(levels[1:]))
    return Replay(0, levels, times, int(levels[0]), int(levels[peak_at + 1]), peak_at, {})


def test_a_million_levels_become_bounded_spans_that_keep_the_one_spike() -> None:
    rng = np.random.default_rng(0)
    levels = rng.integers(1 << 30, 2 << 30, size=1_000_001, dtype=np.int64)
    levels[777_777] = 9 << 30  # one event's spike, 1 in a million: a sampled line would miss it
    levels[123_456] = 1  # and one dip
    spans = level_bins(_replay(levels))
    assert len(spans) == TIMELINE_BINS
    assert max(s[4] for s in spans) == 9 << 30 and min(s[3] for s in spans) == 1
    # spans tile the levels in order: level 0 is before the first entry, the times are their first entry's
    assert spans[0][:3] == (0, -1, 1_000) and spans[1][1] == 999 and spans[1][2] == 1_000 + 10 * 999
    assert [s[0] for s in spans] == list(range(TIMELINE_BINS))


def test_few_levels_are_kept_one_per_span_and_untimed_traces_keep_their_order() -> None:
    levels = np.array([5, 7, 3, 9], dtype=np.int64)
    spans = level_bins(_replay(levels, timed=False))
    assert [(s[1], s[2], s[3], s[4]) for s in spans] == [(-1, -1, 5, 5), (0, -1, 7, 7), (1, -1, 3, 3), (2, -1, 9, 9)]
