"""The dashboard's Live page in headless Chromium: it shows the live detector's open findings and follows
new events as they are written, without a reload."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_util import ConsoleLog, serve_in_thread

pytestmark = [pytest.mark.browser]
TIMEOUT_MS = 30_000


def event(action: str, step: int) -> str:
    finding = {"kind": "straggler", "severity": "warning", "ranks": [3], "steps": [30],
               "summary": "rank 3 is a persistent compute straggler: compute 90.0 ms per step vs 40.0 ms on the "
               "other ranks, costing about 50.0 ms per step"}  # fmt: skip
    return json.dumps({"action": action, "key": "straggler:3", "t": time.time(), "step": step, "finding": finding})


def test_live_page_follows_the_events(tmp_path: Path, browser: Any) -> None:
    from scope.app.server import create_app

    run = tmp_path / "run"
    for rank in range(4):
        folder = run / "ranks" / str(rank)
        folder.mkdir(parents=True)
        beat = {"rank": rank, "step": 40, "time_ns": time.time_ns(), "written_ns": time.time_ns(), "state": "running"}
        (folder / "heartbeat.json").write_text(json.dumps(beat))
    (run / "live").mkdir()
    events = run / "live" / "events.jsonl"
    events.write_text(event("new", 34) + "\n")
    app = create_app(run, refresh_s=1, analyze=False)
    with serve_in_thread(app) as base:
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.set_default_timeout(TIMEOUT_MS)
        console = ConsoleLog(page)
        page.goto(base + "/live")
        expect(page.locator("#live-headline")).to_have_text("1 open finding")
        expect(page.locator("#live-open")).to_contain_text("rank 3 is a persistent compute straggler")
        expect(page.locator("#live-ranks tbody tr")).to_have_count(4)
        with open(events, "a") as fh:  # the detector clears it while the page is open
            fh.write(event("clear", 52) + "\n")
        expect(page.locator("#live-headline")).to_have_text("0 open findings")
        expect(page.locator("#live-events li").first).to_contain_text("step 52: clear straggler")
        page.goto(base + "/goodput")  # another page: the Live page's refresh has nothing to update there
        page.wait_for_timeout(2500)
        assert console.errors == [], console.errors
