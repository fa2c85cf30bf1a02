"""The dashboard in headless Chromium on the recorded sample runs: nothing binary is ever shown as bytes
(a Flight Recorder dump cited as evidence is quoted decoded; no page holds a U+FFFD replacement
character), and the labels over the Counters graph never overlap.

The hang sample (sample_traces/hang) has Flight Recorder dumps as evidence; the straggler sample gets
a 60 s GPU counter series around its profiled steps, so three narrow steps named by two findings each
sit side by side on the axis, the case where labels used to pile up.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from scope import rundir
from scope.analysis import run as analyze
from tests.browser_util import ConsoleLog, browser_page, serve_in_thread

pytestmark = pytest.mark.browser

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
PAGES = ("/", "/heatmap", "/timeline", "/collectives", "/counters", "/failure")
TIMEOUT_MS = 20_000


def _served(run: Path) -> Iterator[str]:
    from scope.app.server import create_app

    analyze(run)
    with serve_in_thread(create_app(run, refresh_s=0, analyze=False)) as base:
        yield base


@pytest.fixture(scope="module")
def hang_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    run = tmp_path_factory.mktemp("hang") / "run"
    shutil.copytree(SAMPLES / "hang", run, ignore=shutil.ignore_patterns("store"))
    yield from _served(run)


@pytest.fixture(scope="module")
def straggler_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    run = tmp_path_factory.mktemp("straggler") / "run"
    shutil.copytree(SAMPLES / "straggler", run, ignore=shutil.ignore_patterns("store"))
    analysis = analyze(run)
    steps = analysis.steps
    assert steps is not None and not steps.empty
    middle = int(steps["start_ns"].min())
    ts = middle - 30 * 10**9 + np.linspace(0, 60 * 10**9, 240).astype(np.int64)
    folder = rundir.counters_dir(run, "vm") / "gpu"
    folder.mkdir(parents=True)
    util = (80 + 10 * np.sin(ts / 1e9)).astype(int)
    pd.DataFrame({"ts_ns": ts, "gpu": np.zeros(len(ts), dtype="int32"), "util_gpu_pct": util}).to_parquet(
        folder / f"{ts[0]}-1-00001.parquet", index=False
    )
    yield from _served(run)


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    with browser_page(browser, TIMEOUT_MS, expect_too=False) as page:
        yield page


def settle(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#page > *")
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !document.querySelector('[data-dash-is-loading=\"true\"]')")
    for graph in page.query_selector_all(".js-plotly-plot"):
        graph.wait_for_selector(".main-svg")


def test_failure_evidence_from_a_flight_recorder_dump_is_decoded(page: Any, hang_url: str) -> None:
    settle(page, hang_url + "/failure")
    quotes = page.locator("pre.quote").all_inner_texts()
    dump_quotes = [q for q in quotes if "entry " in q]
    assert dump_quotes, quotes
    text = "\n".join(dump_quotes)
    assert "gloo:all_reduce" in text and "seq " in text and "state scheduled" in text and " at " in text
    assert "Float" in text  # sizes and dtypes


@pytest.mark.parametrize("sample", ["hang", "straggler"])
def test_no_page_shows_replacement_characters(page: Any, sample: str, request: pytest.FixtureRequest) -> None:
    base = request.getfixturevalue(f"{sample}_url")
    console = ConsoleLog(page)
    for path in PAGES:
        settle(page, base + path)
        assert not console.take(), f"{sample}{path}: console errors"
        body = page.inner_text("body")
        assert "\ufffd" not in body, f"{sample}{path}: a replacement character"
        assert "\\x80\\x" not in body, f"{sample}{path}: raw pickle bytes"


def test_counters_labels_never_overlap(page: Any, straggler_url: str) -> None:
    settle(page, straggler_url + "/counters")
    page.locator("#counters-graph .gtitle", has_text="util gpu").wait_for()  # drawn, not "loading…"
    boxes = page.eval_on_selector_all(
        "#counters-graph .annotation",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })",
    )
    assert boxes, "no step labels drawn"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            overlap = min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5
            assert not overlap, f"annotation boxes overlap: {a} and {b}"
    markers = page.locator("#counters-graph .scatterlayer .trace .points path")
    assert markers.count() >= 3  # the findings: one marker per step they name, their kinds in its hover
