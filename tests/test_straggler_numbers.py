"""One straggler, one set of numbers (issue 41, item 16), on the recorded straggler demo run
(sample_traces/straggler, rank 2 at 3x compute).

The ratio is defined once (scope.analyzers.stragglers.peer_ratio: the rank's median per step over the
other ranks' median) and every view prints that number, named the same way ("N× the other ranks"): the
text and Markdown reports, the JSON metrics and scores table, the dashboard's finding card and heat-map.
The evidence steps are steps where the rank lost time, and "time lost" and "held up" are defined in words
where they are shown; an effect whose time its cause counts says so instead of "time lost: 0 ms"."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scope.app.data import RunData, Snapshot
from scope.app.pages import heatmap
from scope.app.pages.common import finding_card, metric_definitions, metric_items

from scope import units
from scope.analysis import run as analyze
from scope.finding import Finding
from scope.render import render
from scope.result import Analysis
from tests.conftest import ROOT

STRAGGLER = 2
RATIO = re.compile(r"(\d+(?:\.\d+)?)× the other ranks")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("straggler") / "run"
    shutil.copytree(ROOT / "sample_traces" / "straggler", path, ignore=shutil.ignore_patterns("store"))
    return path


@pytest.fixture(scope="module")
def analysis(run: Path) -> Analysis:
    return analyze(run)


@pytest.fixture(scope="module")
def snap(run: Path, analysis: Analysis) -> Snapshot:
    return RunData(run, analyze=False).snapshot


def straggler(findings: list[Finding]) -> Finding:
    (found,) = [f for f in findings if f.kind == "straggler"]
    assert found.ranks == [STRAGGLER]
    return found


def texts(component: Any) -> Iterator[str]:
    """Every string a Dash component shows."""
    if isinstance(component, str):
        yield component
        return
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [] if children is None else [children]:
        yield from texts(child)


def test_one_ratio_in_every_view(analysis: Analysis, snap: Snapshot) -> None:
    f = straggler(analysis.findings)
    m = f.metrics
    # its definition: the rank's median over the other ranks' median, the two numbers the summary prints
    assert m["step_ratio"] == pytest.approx(m["value_median_us"] / m["others_median_us"], rel=1e-9)
    scores = analysis.table("straggler_scores")
    assert scores is not None
    assert float(scores.set_index("rank").loc[STRAGGLER, "compute_step_ratio"]) == pytest.approx(m["step_ratio"])
    printed = units.quantity("step_ratio", m["step_ratio"])  # '2.41×'
    ratios = {
        "summary": RATIO.findall(f.summary),
        "text": RATIO.findall(render(analysis, "text", width=100)),
        "markdown": RATIO.findall(render(analysis, "markdown")),
        "card": [i for i in metric_items(m) if i.startswith("vs the other ranks")],
    }
    df = heatmap.source(snap)
    metric = heatmap.default_metric(snap, df, heatmap.metric_options(df))
    ratios["heatmap"] = RATIO.findall(heatmap.hottest(df, metric))
    assert ratios["card"] == [f"vs the other ranks: {printed}"], ratios
    for view in ("summary", "text", "markdown", "heatmap"):
        assert ratios[view] == [printed.rstrip("×")], (view, ratios)
    # the summary's two medians are the ones whose quotient that is
    shown = re.search(r"compute ([\d.]+) ms per step, [\d.]+× the other ranks \(([\d.]+) ms\)", f.summary)
    assert shown, f.summary
    assert float(shown[1]) / float(shown[2]) == pytest.approx(m["step_ratio"], rel=0.01)


def test_per_step_ratio_of_the_heatmap_is_the_evidence_step_quotient(analysis: Analysis, snap: Snapshot) -> None:
    from scope.app import aggregate

    steps = analysis.table("straggler_steps")
    assert steps is not None
    compute = steps[(steps["rank"] == STRAGGLER) & (steps["kind"] == "compute")].set_index("step")
    rel, _ = aggregate.heat_matrix(heatmap.source(snap), "compute_us", relative=True)
    for step, row in compute.iterrows():
        assert rel.loc[STRAGGLER, step] == pytest.approx(row["ratio"], rel=1e-6)


def test_evidence_steps_are_steps_where_the_rank_lost_time(analysis: Analysis) -> None:
    f = straggler(analysis.findings)
    lines = [e for e in f.evidence if e.startswith("step ")]
    assert lines, f.evidence
    for line in lines:
        step, lost = re.match(r"step (\d+): .*, ([\d.]+) ms lost$", line).groups()  # type: ignore[union-attr]
        assert int(step) in f.steps and float(lost) > 0, line
    assert re.match(rf"slow, and costing time, in {len(f.steps)} of \d+ profiled steps", f.evidence[0])


def test_time_lost_and_held_up_are_defined_where_they_are_shown(analysis: Analysis) -> None:
    f = straggler(analysis.findings)
    assert "time lost: about" in f.summary and "what the step would shorten" in f.summary
    held = [e for e in f.evidence if e.startswith("held up:")]
    assert held and "for this rank alone" in held[0] and "time lost counts only" in held[0]
    shown = metric_items(f.metrics)
    meant = metric_definitions(f.metrics, shown)
    assert any(d.startswith("time lost: ") for d in meant) and any(d.startswith("held up: ") for d in meant)
    card = " ".join(texts(finding_card(f, 0)))
    assert "held up: how long the other ranks waited" in card and "time lost: what the run would save" in card


def test_an_effect_says_where_its_time_is_counted(analysis: Analysis) -> None:
    (cb,) = [f for f in analysis.findings if f.kind == "comm_bound"]
    assert cb.metrics["time_lost_us"] == 0.0  # the JSON keeps its key; the time is counted once, at the cause
    assert cb.metrics["time_lost_counted_in"] == f"the finding of rank {STRAGGLER}"
    assert f"counted in the finding of rank {STRAGGLER}" in cb.summary
    items = metric_items(cb.metrics)
    assert f"time lost: counted in the finding of rank {STRAGGLER}" in items
    assert not any(i.startswith("time lost: 0") for i in items)


def test_a_host_straggler_prints_its_ratio_and_why_it_is_not_the_quotient_of_its_times() -> None:
    """Host time is near 0 on healthy ranks, so its ratio adds 1% of the step to both sides: said, and the
    number printed is still the JSON's."""
    import scope.analyzers.stragglers as stragglers

    from tests.test_stragglers import _ctx, synthetic

    (f,) = stragglers.analyze(_ctx(synthetic(slow={2: {"host": 60}}))).findings
    assert f.metrics["straggler_kind"] == "host"
    printed = units.quantity("step_ratio", f.metrics["step_ratio"])
    assert RATIO.findall(f.summary) == [printed.rstrip("×")]
    assert "(1% of the step) added to both" in f.summary
    assert f"vs the other ranks: {printed}" in metric_items(f.metrics)


@pytest.mark.browser
def test_the_served_dashboard_prints_the_same_ratio(run: Path, analysis: Analysis, browser: Any) -> None:
    """In Chromium: the overview's card and the heat-map's headline carry the JSON's number."""
    from scope.app.server import create_app

    from tests.browser_util import serve_in_thread

    printed = units.quantity("step_ratio", straggler(analysis.findings).metrics["step_ratio"])
    page = browser.new_page()
    try:
        with serve_in_thread(create_app(run, refresh_s=0, analyze=False)) as base:
            page.goto(base + "/")
            card = page.locator(".finding-card", has_text="straggler").first
            card.wait_for(timeout=30_000)
            assert f"vs the other ranks: {printed}" in card.inner_text()
            page.goto(base + "/heatmap")
            title = page.locator("#heatmap-graph .gtitle")
            title.wait_for(timeout=30_000)
            page.wait_for_function(
                "() => document.querySelector('#heatmap-graph .gtitle')?.textContent.includes('hottest')",
                timeout=30_000,
            )
            assert f"{printed} the other ranks" in (title.text_content() or "")
    finally:
        page.close()
