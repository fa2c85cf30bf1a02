"""The memory page on a million-event snapshot, in headless Chromium: what it draws is bounded by the level
of detail (at most TIMELINE_BINS spans for the timeline, flame nodes above a share of the peak), not by the
events, and the page draws in seconds. A synthetic snapshot in torch's format (benchmarks/memory.py), with
shallow stacks: the events are what is measured."""

from __future__ import annotations

import pickle
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scope.analyzers.memory.lod import TIMELINE_BINS

from benchmarks.memory import synthetic_snapshot
from scope.analysis import run
from tests.browser_util import ConsoleLog, serve_in_thread

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 60_000
ENTRIES = 1_000_000
BASELINE_ENTRIES = 500
MAX_POINTS = 2 * TIMELINE_BINS + 2_000  # the band's two lines, the peak's marker, the flame's nodes
# every point the page's plotly graphs hold, as plotly decoded them (_fullData: arrays sent as typed
# arrays are decoded there): a trace's x, or its ids (icicle), or its z cells (heat-map)
COUNT_POINTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => [g.parentElement.id,
  g._fullData.reduce((n, t) => n + (t.ids ? t.ids.length : t.z ? t.z.length * t.z[0].length : t.x.length), 0)])"""


def analyzed_job(root: Path, entries: int) -> tuple[Path, int, float]:
    job = root / f"job{entries}"
    job.mkdir()
    with open(job / "rank0_snapshot.pickle", "wb") as fh:
        pickle.dump(synthetic_snapshot(entries, seed=3, depth=(0, 2)), fh)
    start = time.perf_counter()
    analysis = run(job)
    analyzed = time.perf_counter() - start
    peak = int(analysis.tables["memory_snapshots"]["peak_allocated"].iloc[0])
    spans = analysis.tables["memory_snapshot_timeline"]
    assert len(spans) == min(TIMELINE_BINS, entries + 1) and int(spans["high"].max()) == peak  # kept exactly
    return job, peak, analyzed


@pytest.fixture(scope="module")
def million_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, int, float]]:
    """The page of a million-event snapshot, and of a 500-event one (the baseline: as many points)."""
    from scope.app.server import create_app

    root = tmp_path_factory.mktemp("lod")
    job, peak, analyzed = analyzed_job(root, ENTRIES)
    small, _, _ = analyzed_job(root, BASELINE_ENTRIES)
    with (
        serve_in_thread(create_app(job, refresh_s=0, analyze=False)) as base,
        serve_in_thread(create_app(small, refresh_s=0, analyze=False)) as small_base,
    ):
        yield base, small_base, peak, analyzed


def draw(page: Any, url: str) -> float:
    """Seconds from asking for the page to its timeline and flame graph drawn."""
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("#memory-snapshot-timeline .scatterlayer .trace")
    page.wait_for_selector("#memory-flame .slice")
    return time.perf_counter() - start


def test_a_million_events_draw_as_a_bounded_band(
    browser: Any, million_url: tuple[str, str, int, float], artifacts_dir: Path
) -> None:
    base, small_base, peak, analyzed = million_url
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    console = ConsoleLog(page)
    try:
        # each page twice: the first visit of a server loads Dash's and plotly's scripts too
        cold = draw(page, base + "/memory")
        drawn = draw(page, base + "/memory")
        baseline = min(draw(page, small_base + "/memory") for _ in range(2))
        page.goto(base + "/memory")
        page.wait_for_selector("#memory-flame .slice")
        points = dict(page.evaluate(COUNT_POINTS))
        assert set(points) >= {"memory-snapshot-timeline", "memory-flame"}
        assert points["memory-snapshot-timeline"] == 2 * TIMELINE_BINS + 1
        assert sum(points.values()) <= MAX_POINTS  # of a million events
        band = page.evaluate(
            "() => Array.from(document.querySelector('#memory-snapshot-timeline .js-plotly-plot')._fullData[0].y)"
        )
        assert peak >= 2**28 and max(band) * 2**30 == pytest.approx(peak, rel=1e-9)  # in GiB: the peak is drawn
        assert drawn < 20, f"the memory page took {drawn:.1f} s to draw"
        (artifacts_dir / "dashboard").mkdir(exist_ok=True)
        page.screenshot(path=str(artifacts_dir / "dashboard" / "memory-million.png"), full_page=True)
        took = f"page drawn in {cold:.2f} s first, {drawn:.2f} s again ({BASELINE_ENTRIES} events: {baseline:.2f} s)"
        print(f"{ENTRIES:,} events: analysis {analyzed:.1f} s, {took}, points {points}", file=sys.stderr)
        assert console.take() == []
    finally:
        context.close()
