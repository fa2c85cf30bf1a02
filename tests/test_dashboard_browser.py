"""The dashboard in real headless Chromium, on a real 4-rank gloo run with a straggler on rank 2.

One `scope run` job and one browser per session. Screenshots go to test-artifacts/dashboard/.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_util import ConsoleLog, browser_page, serve_in_thread
from tests.torch_jobs import torch_aborted_in_a_rank

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
STRAGGLER = 2
PAGES = ("/", "/heatmap", "/timeline", "/collectives", "/counters", "/failure")
TIMEOUT_MS = 20_000


def _scope(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scope", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 4-rank gloo DDP job under `scope run` (traces, logs, Flight Recorder, counters), analyzed."""
    base = tmp_path_factory.mktemp("dashboard")
    run = base / "run"
    job = _straggler_run(run)
    if torch_aborted_in_a_rank(run, completed=job.returncode == 0):  # torch's own abort (tests/torch_jobs.py)
        run = base / "run-again"
        job = _straggler_run(run)
    if job.returncode != 0:
        pytest.fail(f"scope run failed ({job.returncode}):\n{job.stdout[-3000:]}\n{job.stderr[-3000:]}")
    analysis = _scope("analyze", str(run), "--quiet", "--no-tables", timeout=300)
    if analysis.returncode not in (0, 4):
        pytest.fail(f"scope analyze failed ({analysis.returncode}):\n{analysis.stderr[-3000:]}")
    return run


def _straggler_run(run: Path) -> subprocess.CompletedProcess[str]:
    return _scope(
        "run",
        "--out",
        str(run),
        "--nproc-per-node",
        "4",
        "--quiet",
        "--profile-active",  # four profiled steps: the medians the straggler verdict rests on steady
        "4",
        "--",
        "-m",
        "scope.collectors.workloads.ddp",
        "--steps",
        "7",
        "--fault",
        "straggler",
        "--fault-rank",
        str(STRAGGLER),
        "--factor",  # unmistakable even on a busy shared host: this test is about the dashboard, not the analysis
        "5",
        timeout=400,
    )


@pytest.fixture(scope="session")
def sample_url(sample_run: Path) -> Iterator[str]:
    from scope.app.server import create_app

    with serve_in_thread(create_app(sample_run, refresh_s=0)) as base:
        yield base


@pytest.fixture(scope="session")
def synthetic_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A store with every analyzer table and a hang, for the views the healthy sample cannot show."""
    from scope.app.server import create_app

    from benchmarks.dashboard_synth import synthesize

    store = synthesize(tmp_path_factory.mktemp("synthetic"), ranks=16, steps=6)
    with serve_in_thread(create_app(store, refresh_s=0, analyze=False)) as base:
        yield base


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    with browser_page(browser, TIMEOUT_MS) as page:
        yield page


@pytest.fixture()
def console(page: Any) -> ConsoleLog:
    return ConsoleLog(page)


@pytest.fixture(scope="session")
def shots(artifacts_dir: Path) -> Path:
    path = artifacts_dir / "dashboard"
    path.mkdir(exist_ok=True)
    return path


def settle(page: Any) -> None:
    """Until the page's callbacks have answered and its graphs are drawn."""
    page.wait_for_selector("#page > *")
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !document.querySelector('[data-dash-is-loading=\"true\"]')")
    for graph in page.query_selector_all(".js-plotly-plot"):
        graph.wait_for_selector(".main-svg")


def open_page(page: Any, url: str) -> None:
    page.goto(url)
    settle(page)


@pytest.mark.multirank  # the sample run is a real torchrun job
def test_every_page_of_the_sample_run_loads_without_console_errors(
    page: Any, console: ConsoleLog, sample_url: str, shots: Path
) -> None:
    expectations = {
        "/": "Findings",
        "/heatmap": "Ranks × steps",
        "/timeline": "Timeline",
        "/collectives": "Arrival skew",
        "/counters": "Counters",
        "/failure": "Flight Recorder",
    }
    for path in PAGES:
        open_page(page, sample_url + path)
        assert expectations[path] in page.inner_text("#page"), f"{path} is missing its content"
        page.screenshot(path=str(shots / f"sample-{path.strip('/') or 'overview'}.png"), full_page=True)
        assert console.take() == [], f"console errors on {path}"
    assert page.locator(".nav-link.active").inner_text() == "Failure"


def click_heat_cell(page: Any, rank_index: int, n_ranks: int, step_index: int, n_steps: int) -> None:
    """Click the middle of one cell of the heat-map (rank 0 is the top row)."""
    box = page.locator("#heatmap-graph .nsewdrag").first.bounding_box()
    x = box["x"] + box["width"] * (step_index + 0.5) / n_steps
    y = box["y"] + box["height"] * (rank_index + 0.5) / n_ranks
    page.mouse.click(x, y)


@pytest.mark.multirank  # the sample run is a real torchrun job
def test_clicking_a_heatmap_cell_opens_that_rank_and_step(
    page: Any, console: ConsoleLog, sample_url: str, shots: Path
) -> None:
    open_page(page, sample_url + "/heatmap")
    page.locator("#heatmap-metric input[value='compute_us']").check()  # the metric that shows the straggler
    settle(page)
    ticks = page.locator("#heatmap-graph .xtick text").all_text_contents()
    steps = [int(t) for t in ticks]
    step = steps[1]
    click_heat_cell(page, STRAGGLER, 4, 1, len(steps))
    title = page.locator("#heatmap-cell-title")
    title.wait_for()
    assert title.inner_text() == f"Rank {STRAGGLER}, step {step}"
    page.screenshot(path=str(shots / "sample-heatmap-cell.png"), full_page=True)
    page.locator("#heatmap-open-timeline").click()
    page.wait_for_url(re.compile(rf"/timeline\?rank={STRAGGLER}&step={step}$"))
    settle(page)
    expect(page.locator("#timeline-graph .gtitle")).to_contain_text(f"Step {step}")
    expect(page.locator("#timeline-graph .ytick", has_text=f"rank {STRAGGLER}")).to_have_count(1)
    page.screenshot(path=str(shots / "sample-timeline-from-cell.png"), full_page=True)
    assert console.take() == []


@pytest.mark.multirank  # the sample run is a real torchrun job
def test_clicking_the_straggler_finding_opens_its_evidence(
    page: Any, console: ConsoleLog, sample_url: str, shots: Path
) -> None:
    open_page(page, sample_url + "/")
    card = page.locator(".finding-card", has_text="straggler").first
    assert card.count() == 1, "the analysis reported no straggler"
    assert f"rank {STRAGGLER}" in card.locator(".finding-where").inner_text(), "the wrong rank was named"
    card.locator(".finding-link").first.click()
    page.wait_for_url(re.compile(rf"/heatmap\?rank={STRAGGLER}"))
    settle(page)
    assert page.locator("#heatmap-cell-title").inner_text().startswith(f"Rank {STRAGGLER}, step")
    assert page.locator("#heatmap-metric input[value='compute_us']").is_checked()
    page.screenshot(path=str(shots / "sample-straggler-evidence.png"), full_page=True)
    assert console.take() == []


def test_views_of_a_failed_pipeline_run(page: Any, console: ConsoleLog, synthetic_url: str, shots: Path) -> None:
    """Root cause first on the overview; its link opens the failure report with the culprit marked."""
    from benchmarks.dashboard_synth import plan_for

    culprit = plan_for(16, 6).straggler
    open_page(page, synthetic_url + "/")
    assert page.locator("#verdict").inner_text().startswith("Failed:")
    page.locator(".finding-card", has_text="hang").locator(".finding-link").first.click()
    page.wait_for_url(re.compile(r"/failure\?focus=0$"))
    settle(page)
    assert page.locator(".finding-card.focused .finding-kind").inner_text() == "hang"
    assert page.locator("#fr-table .culprit-row").inner_text().split("\t")[-1].strip() == f"yes: {culprit}"
    assert "RuntimeError: stuck here" in page.locator(".quote .hit").inner_text()
    page.screenshot(path=str(shots / "synthetic-failure.png"), full_page=True)
    open_page(page, synthetic_url + "/")
    page.locator(".finding-card", has_text="pipeline_bubble").locator(".finding-link").first.click()
    page.wait_for_url(re.compile(r"/timeline\?view=pipeline"))
    settle(page)
    expect(page.locator("#timeline-graph .ytick", has_text="stage 0 · rank 0")).to_have_count(1)
    expect(page.locator("#timeline-bubbles .gtitle")).to_contain_text("Pipeline bubble per stage")
    page.screenshot(path=str(shots / "synthetic-pipeline.png"), full_page=True)
    open_page(page, synthetic_url + "/collectives?pg=tp1")
    expect(page.locator("#coll-slowest-table tbody tr").first).to_contain_text("tp1")
    page.screenshot(path=str(shots / "synthetic-collectives.png"), full_page=True)
    assert console.take() == []
