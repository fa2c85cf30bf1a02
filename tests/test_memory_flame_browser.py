"""The memory page's flame graph of a snapshot's peak, in real headless Chromium: two ranks' allocator
snapshots (the realistic synthetic shape: shared frames, 20-40 deep), the higher peak drawn as an icicle
whose root is exactly the bytes live at that peak; and beside them a real CPU profile's peak by module
and op."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from scope.analyzers.memory.snapshot import replay

from benchmarks.memory import synthetic_snapshot
from scope.analysis import run
from scope.memory_snapshot import load_snapshot
from tests.browser_util import ConsoleLog, serve_in_thread
from tests.test_memory_attribution import JOB
from tests.torch_jobs import run_profiled_job

pytestmark = pytest.mark.browser
TIMEOUT_MS = 20_000


@pytest.fixture(scope="module")
def snapshots_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int]]:
    from scope.app.server import create_app

    job = tmp_path_factory.mktemp("flame") / "job"
    job.mkdir()
    (job / "rank0_snapshot.pickle").write_bytes(pickle.dumps(synthetic_snapshot(2_000, seed=1)))
    (job / "rank1_snapshot.pickle").write_bytes(pickle.dumps(synthetic_snapshot(6_000, seed=2)))
    peaks = [replay(load_snapshot(job / f"rank{r}_snapshot.pickle"), 0).peak_bytes for r in (0, 1)]
    # and rank 0's real CPU profile, whose peak a module (Hog_0) holds through aten::repeat
    script = job.parent / "job.py"
    script.write_text(JOB)
    proc = run_profiled_job([sys.executable, str(script), str(job / "rank0.pt.trace.json")], timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run(job)
    with serve_in_thread(create_app(job, refresh_s=0, analyze=False)) as base:
        yield base, max(peaks), peaks.index(max(peaks))


def test_the_highest_peak_is_drawn_as_a_flame_graph(
    browser: Any, snapshots_url: tuple[str, int, int], artifacts_dir: Path
) -> None:
    base, peak, rank = snapshots_url
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    console = ConsoleLog(page)
    try:
        page.goto(base + "/memory")
        page.wait_for_selector("#memory-flame .main-svg")
        page.wait_for_load_state("networkidle")
        trace = page.evaluate("() => document.querySelector('#memory-flame .js-plotly-plot').data[0]")
        assert trace["type"] == "icicle" and trace["branchvalues"] == "total"
        root = trace["parents"].index("")
        assert trace["values"][root] == peak  # the root is every byte live at the peak
        # every child's bytes are within its parent's (a flame graph, not a list)
        value = dict(zip(trace["ids"], trace["values"], strict=True))
        assert all(value[c] <= value[p] for c, p in zip(trace["ids"], trace["parents"], strict=True) if p)
        assert len(trace["ids"]) > 20  # frames 20-40 deep: a real tree, not the root alone
        assert page.locator("#memory-flame .slice").count() > 5  # drawn, not only sent
        assert f"rank {rank} cuda:0: {peak / 2**30:.2f} GiB live at the peak" in page.inner_text("#page")
        # the trace's peak by module and op, largest first
        first = page.locator("#memory-allocators tbody tr").first
        expect(first).to_contain_text("Head_0/Hog_0")
        expect(first).to_contain_text("aten::repeat")
        (artifacts_dir / "dashboard").mkdir(exist_ok=True)
        page.screenshot(path=str(artifacts_dir / "dashboard" / "memory-flame.png"), full_page=True)
        assert console.take() == []
    finally:
        context.close()
