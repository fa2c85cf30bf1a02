"""The memory page in real headless Chromium, on a real 4-rank run whose rank 2 leaks 4 MiB a step
(allocations recorded with profile_memory=True), and on allocator snapshots of two ranks."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from scope.analysis import run
from tests.browser_util import ConsoleLog, browser_page, serve_in_thread
from tests.test_memory_snapshots import current_snapshot

pytestmark = pytest.mark.browser
TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def leak_url(ddp_run: Any) -> Iterator[str]:
    from scope.app.server import create_app

    traces = ddp_run("memory_leak")
    snaps = traces / "snapshots"
    snaps.mkdir(exist_ok=True)
    (snaps / "rank2_snapshot.pickle").write_bytes(pickle.dumps(current_snapshot(), protocol=4))
    run(traces)
    with serve_in_thread(create_app(traces, refresh_s=0, analyze=False)) as base:
        yield base


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    with browser_page(browser, TIMEOUT_MS) as page:
        yield page


@pytest.mark.multirank
def test_memory_page_shows_every_rank_and_the_leaking_one(page: Any, leak_url: str, artifacts_dir: Path) -> None:
    console = ConsoleLog(page)
    page.goto(leak_url + "/memory")
    page.wait_for_selector("#memory-heatmap .main-svg")
    page.wait_for_load_state("networkidle")
    text = page.inner_text("#page")
    assert "Ranks × time" in text and "Memory grows step after step" in text
    # the heat-map has a row per rank; the rank picked first is the one that peaked highest (the leak)
    rows = page.evaluate("() => document.querySelector('#memory-heatmap .js-plotly-plot').data[0].y")
    assert sorted(rows) == [0, 1, 2, 3]
    expect(page.locator("#memory-rank")).to_contain_text("2")
    page.wait_for_function(
        "() => { const g = document.querySelector('#memory-rank-graph .js-plotly-plot');"
        " return g && g.data && g.data.length > 0 && g.layout.title.text.startsWith('rank 2'); }"
    )
    assert page.locator("#memory-peaks tbody tr").count() == 4
    # the snapshot's peak sites, largest first, each with its stack
    sites = page.inner_text("#memory-sites")
    assert sites.index("train.py:20") < sites.index("train.py:30")
    (artifacts_dir / "dashboard").mkdir(exist_ok=True)
    page.screenshot(path=str(artifacts_dir / "dashboard" / "memory.png"), full_page=True)
    assert console.take() == []
