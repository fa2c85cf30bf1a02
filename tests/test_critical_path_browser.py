"""The critical path drawn over the timeline, in real headless Chromium, on the straggler sample run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from playwright.sync_api import expect
from scope.app.critical_path_overlay import path_points

from scope.analysis import run
from tests.browser_util import ConsoleLog, serve_in_thread

ROOT = Path(__file__).resolve().parent.parent
SLOW = 2  # sample_traces/straggler's injected straggler
TIMEOUT_MS = 20_000


def test_path_points_join_lanes_and_break_on_hidden_ranks() -> None:
    path = pd.DataFrame(
        {
            "step": [3, 3, 3, 3],
            "order": [0, 1, 2, 3],
            "rank": [2, 2, 5, 0],
            "op": ["fwd", "bwd", "x", "opt"],
            "cls": ["cpu", "backward", "cpu", "optimizer"],
            "start_us": [1000.0, 1010.0, 1030.0, 1040.0],
            "us": [10.0, 20.0, 10.0, 5.0],
        }
    )
    xs, ys, texts = path_points(path, lanes=[0, 2], steps=range(3, 4), t0=1_000_000)
    assert ys == [1, 1, 1, 1, None, 0, 0]  # rank 5 is not shown: the line breaks there
    assert xs[0] == pytest.approx(0.0) and xs[-1] == pytest.approx(0.045)
    assert texts[0].startswith("step 3 · rank 2 · fwd")
    # a pipeline's segments name their stage (critical_path's stage column, -1 where unknown)
    _, _, texts = path_points(path.assign(stage=[1, 1, 0, 0]), lanes=[0, 2], steps=range(3, 4), t0=1_000_000)
    assert texts[0].startswith("step 3 · rank 2 (stage 1) · fwd")


@pytest.fixture(scope="module")
def sample_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from scope.app.server import create_app

    folder = tmp_path_factory.mktemp("critical_path_browser") / "straggler"
    shutil.copytree(ROOT / "sample_traces" / "straggler", folder, ignore=shutil.ignore_patterns("store"))
    run(folder, {"store": folder / "store"})
    with serve_in_thread(create_app(folder, refresh_s=0, analyze=False)) as base:
        yield base


@pytest.mark.browser
def test_timeline_draws_the_critical_path_across_ranks(browser: Any, sample_url: str, artifacts_dir: Path) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    console = ConsoleLog(page)
    try:
        page.goto(f"{sample_url}/timeline?rank={SLOW}&step=3")
        page.wait_for_selector("#timeline-graph .main-svg")
        page.wait_for_function("() => !document.querySelector('[data-dash-is-loading=\"true\"]')")
        expect(page.locator("#timeline-graph .legendtext", has_text="critical path")).to_have_count(1)
        # the path is one drawn line that visits the straggler's lane and at least one other
        trace = page.evaluate(
            "() => { const g = document.querySelector('#timeline-graph .js-plotly-plot');"
            " const t = g.data.find(d => d.name === 'critical path'); return t ? t.y : null; }"
        )
        assert trace is not None
        labels = page.evaluate("() => document.querySelector('#timeline-graph .js-plotly-plot').layout.yaxis.ticktext")
        lanes = {labels[int(y)] for y in trace if y is not None}
        assert f"rank {SLOW}" in lanes and len(lanes) >= 2, lanes
        shots = artifacts_dir / "dashboard"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / "critical-path-timeline.png"), full_page=True)
        assert not console.errors, console.errors
    finally:
        context.close()
