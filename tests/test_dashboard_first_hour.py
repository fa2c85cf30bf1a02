"""What the dashboard shows a new user of the straggler demo (the recorded 4-rank run in sample_traces/
straggler, rank 2 at 3x compute): the heat-map opens on the view that shows the straggler and its headline
names rank 2; the rank axis has integer ticks; the comm-bound finding names the ranks that wait, and the
rank they wait for in words, with a step count its metrics agree with."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest
from scope.app import figures
from scope.app.data import RunData, Snapshot
from scope.app.pages import heatmap

from scope.analysis import run as analyze
from scope.result import Analysis
from tests.conftest import ROOT

STRAGGLER = 2


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    run = tmp_path_factory.mktemp("straggler") / "run"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    analyze(run)
    return RunData(run, analyze=False).snapshot


def test_the_heatmap_opens_on_the_view_that_shows_the_straggler(snap: Snapshot) -> None:
    df = heatmap.source(snap)
    metric = heatmap.default_metric(snap, df, heatmap.metric_options(df))
    assert metric == "compute_us"
    headline = heatmap.hottest(df, metric)
    assert re.match(rf" · hottest: rank {STRAGGLER} \(\d\.\d\d× the other ranks", headline), headline
    # step time hides a compute straggler of a synchronous job: every rank waits for it, so that view's
    # single hottest cell can be anyone's; the headline still reads the persistent one.
    assert heatmap.default_metric(Snapshot(0, Analysis(), pd.DataFrame(), [], {}), df, [{"value": "step_us"}]) == (
        "step_us"
    )


def test_when_no_rank_stands_out_the_headline_says_so() -> None:
    even = pd.DataFrame({"rank": [0, 1, 0, 1], "step": [1, 1, 2, 2], "step_us": [100.0, 101.0, 99.0, 100.0]})
    assert heatmap.hottest(even, "step_us") == " · no rank stands out (each within 5% of the other ranks)"


def test_the_rank_axis_has_integer_ticks() -> None:
    matrix = pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], index=[0, 1], columns=[5, 6])
    fig = figures.heatmap_figure(matrix, "t", "ms")
    assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.tickformat == "d"
    assert fig.layout.xaxis.dtick == 1


def test_steps_far_apart_get_automatic_ticks_not_one_per_step_number() -> None:
    """Profiled windows at steps 23-36, 259-288, 514-538, 1010-1048 (ByteDance's ST job): a tick per step
    number in between was 1,031 labels, and the heat-map took Chromium 100 s to draw."""
    steps = [23, 25, 36, 259, 288, 514, 538, 1010, 1048]
    matrix = pd.DataFrame([[1.0] * len(steps)] * 8, index=range(8), columns=steps)
    fig = figures.heatmap_figure(matrix, "t", "ms")
    assert fig.layout.xaxis.dtick is None and fig.layout.xaxis.tickformat == "d"


def test_comm_bound_names_the_waiting_ranks_and_the_rank_waited_for(snap: Snapshot) -> None:
    bound = [f for f in snap.findings if f.kind == "comm_bound"]
    assert len(bound) == 1, [f.kind for f in snap.findings]
    f = bound[0]
    assert f.ranks == [0, 1, 3] and f.metrics["waiting_for"] == [STRAGGLER]
    match = re.match(r"Ranks 0, 1, 3 are communication-bound in (\d+) of (\d+) steps", f.summary)
    assert match, f.summary
    assert int(match[1]) == f.metrics["steps_bound"] and int(match[2]) == f.metrics["steps"]
    assert f"waiting for rank {STRAGGLER}" in f.summary
    assert f.caused_by, "the waiting is the straggler's consequence"
