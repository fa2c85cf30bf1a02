"""The flagship hang post-mortem, as a user opens it: `scope dashboard FOLDER` on a folder of Flight
Recorder dumps only (no trace). The dashboard runs the diagnosis itself and shows it: the overview
headline names the rank that never joined, the Failure page quotes the dumps' entries decoded; and
`scope analyze FOLDER` diagnoses it (exit 0) and saves the analysis the dashboard reads.

The dumps are read from ../shared/data (read-only there): the test folder links to them, so the store
is written beside the links.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from scope.cli import main
from scope.store import analysis_path
from tests.browser_util import ConsoleLog, serve_in_thread
from tests.conftest import shared_data

pytestmark = [pytest.mark.browser, pytest.mark.shared_data]
TIMEOUT_MS = 30_000


def linked_copy(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for file in sorted(source.iterdir()):
        (target / file.name).symlink_to(file.resolve())
    return target


@pytest.fixture()
def dumps(tmp_path: Path) -> Path:
    return linked_copy(shared_data("nvrx_fr", "gpu_error_1st"), tmp_path / "gpu_error_1st")


def test_analyze_diagnoses_a_folder_of_dumps_and_saves_it(dumps: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(dumps), "--quiet"]) == 0
    out = capsys.readouterr()
    assert "never joined all_to_all #20537" in out.out and "ranks 12" in out.out, out.out
    assert "no readable trace" not in out.err, out.err
    assert analysis_path(dumps / "scope_store").is_file()


def test_the_dashboard_diagnoses_a_folder_of_dumps_itself(dumps: Path, browser: Any, artifacts_dir: Path) -> None:
    from scope.app.server import create_app

    app = create_app(dumps, refresh_s=1)  # not analyzed: the dashboard starts the analysis itself
    with serve_in_thread(app) as base:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        console = ConsoleLog(page)
        try:
            page.goto(base + "/")
            verdict = page.locator("#verdict")
            deadline = time.monotonic() + 120
            while "Rank 12" not in verdict.inner_text() and time.monotonic() < deadline:
                time.sleep(1)
            headline = verdict.inner_text()
            assert headline.startswith("Failed") and "Rank 12 never joined" in headline, headline
            expect(page.locator("#live-status")).to_have_text("16 ranks · 2 findings", timeout=TIMEOUT_MS)
            page.screenshot(path=str(artifacts_dir / "postmortem-overview.png"), full_page=True)
            page.goto(base + "/failure")
            page.wait_for_selector("pre.quote")
            text = page.locator("#page").inner_text()
            assert "Not diagnosed yet" not in text
            assert "never joined all_to_all #20537" in text
            assert "_dump_13, entry 1" in text and "entry 1:" in "\n".join(page.locator("pre.quote").all_inner_texts())
            page.screenshot(path=str(artifacts_dir / "postmortem-failure.png"), full_page=True)
            assert console.take() == []
        finally:
            context.close()


@pytest.mark.shared_data
def test_a_folder_where_nothing_can_be_read_is_not_called_healthy(tmp_path: Path) -> None:
    """HTA's reference outputs (CSV and JSON tables, no trace, log or dump): the analysis saves what it has,
    and neither the terminal nor the dashboard calls that a healthy run."""
    from scope.app.data import RunData
    from scope.app.links import verdict
    from scope.app.pages.overview import installed_analyzers

    from scope.result import NOTHING_READ, read_nothing

    folder = linked_copy(shared_data("hta_reference", "trace_filter"), tmp_path / "trace_filter")
    code = main(["analyze", str(folder), "--quiet"])
    assert code == 4  # the files it could not read are named in warnings
    snap = RunData(folder, analyze=False).snapshot
    assert read_nothing(snap.findings, snap.steps, snap.tables)
    read = not read_nothing(snap.findings, snap.steps, snap.tables)
    assert verdict(snap.findings, snap.analyzed, installed_analyzers(), read_anything=read) == ("unknown", NOTHING_READ)
