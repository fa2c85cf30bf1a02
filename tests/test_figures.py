"""The dashboard's pure parts: reductions and figure builders, tested on hand-made data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scope.analyzers import link_rules
from scope.app import aggregate, counter_series, figures, figures_timeline
from scope.app.links import finding_links, verdict
from scope.app.pages.failure import fr_groups

from scope.causality import finding_tree, link_findings
from scope.finding import Finding
from scope.rankpass import timeline
from scope.result import Analysis
from tests.helpers import inventory

BASE = 1_700_000_000_000_000_000


def steps_frame(ranks: int = 4, steps: int = 3, slow: tuple[int, int] | None = None) -> pd.DataFrame:
    rows = []
    for r in range(ranks):
        for s in range(steps):
            us = 100_000.0 + r * 10 + s
            if slow == (r, s):
                us *= 3
            rows.append({"rank": r, "step": s, "step_us": us, "compute_us": us * 0.8})
    return pd.DataFrame(rows)


def test_heat_matrix_is_ranks_by_steps_and_relative_is_centred_on_one() -> None:
    df = steps_frame(slow=(2, 1))
    matrix, width = aggregate.heat_matrix(df, "step_us")
    assert matrix.shape == (4, 3) and width == 1
    assert list(matrix.index) == [0, 1, 2, 3] and list(matrix.columns) == [0, 1, 2]
    assert matrix.loc[2, 1] == pytest.approx(300_063.0)
    rel, _ = aggregate.heat_matrix(df, "step_us", relative=True)
    assert rel.loc[2, 1] == pytest.approx(3.0, rel=0.01)
    assert rel.loc[0, 0] == pytest.approx(1.0, rel=0.01)


def test_heat_matrix_bins_many_steps_keeping_the_worst_cell() -> None:
    df = steps_frame(ranks=3, steps=1000, slow=(1, 517))
    matrix, width = aggregate.heat_matrix(df, "step_us", max_columns=100)
    assert width == 10 and matrix.shape == (3, 100)
    assert 510 in matrix.columns
    assert matrix.loc[1, 510] == pytest.approx(3 * (100_000 + 10 + 517))
    assert matrix.to_numpy().argmax() == list(matrix.index).index(1) * 100 + 51


def test_heatmap_figure_carries_the_matrix_and_marks_the_focus() -> None:
    matrix, _ = aggregate.heat_matrix(steps_frame(slow=(2, 1)), "step_us")
    fig = figures.heatmap_figure(matrix / 1000, "step time", "ms", highlight_rank=2, highlight_step=1)
    heat = fig.data[0]
    assert list(heat.y) == [0, 1, 2, 3] and list(heat.x) == [0, 1, 2]
    assert np.asarray(heat.z)[2][1] == pytest.approx(300.063)
    rects = [(s.y0, s.y1, s.x0, s.x1) for s in fig.layout.shapes]
    assert (1.5, 2.5, -0.5, 2.5) in rects  # the rank's row
    assert (1.5, 2.5, 0.5, 1.5) in rects  # the cell
    assert fig.layout.yaxis.autorange == "reversed"


def test_step_summary_names_the_slowest_rank() -> None:
    summary = aggregate.step_summary(steps_frame(slow=(3, 2)))
    row = summary.set_index("step").loc[2]
    assert row["slowest_rank"] == 3 and row["max"] == pytest.approx(3 * 100_032)
    fig = figures.step_time_figure(summary)
    assert list(fig.data[1].customdata) == [3, 3, 3]


def test_union_merges_overlaps_and_keeps_the_longest_label() -> None:
    starts = np.array([0, 5, 30, 31, 100])
    ends = np.array([10, 20, 32, 60, 110])
    labels = np.array(["a", "b", "c", "d", "e"])
    merged = aggregate.union_segments(starts, ends, labels, min_gap=0)
    assert merged[["start_ns", "end_ns"]].to_numpy().tolist() == [[0, 20], [30, 60], [100, 110]]
    assert merged["label"].tolist() == ["b", "d", "e"]
    gapped = aggregate.union_segments(starts, ends, labels, min_gap=15)
    assert gapped[["start_ns", "end_ns"]].to_numpy().tolist() == [[0, 60], [100, 110]]


def test_bounded_segments_never_exceed_the_budget() -> None:
    rng = np.random.default_rng(1)
    starts = np.sort(rng.integers(0, 10**9, 50_000))
    ends = starts + rng.integers(1, 5_000, 50_000)
    seg = aggregate.bounded_segments(starts, ends, np.array(["k"] * len(starts)), 1e9, max_segments=300)
    assert 0 < len(seg) <= 300
    assert seg["start_ns"].iloc[0] == starts[0] and seg["end_ns"].max() == ends.max()


def gpu_events() -> pd.DataFrame:
    """Step 0-1000 ns: compute 100-400 and 600-700, an all-reduce 400-650, idle elsewhere."""
    rows = [
        ("step", "ProfilerStep#0", 0, 1000, -1, 1),
        ("compute", "gemm", 100, 300, 0, -1),
        ("compute", "relu", 600, 100, 0, -1),
        ("comm", "ncclDevKernel_AllReduce", 400, 250, 0, -1),
        ("cpu_op", "aten::mm", 90, 20, -1, 1),
    ]
    return pd.DataFrame(rows, columns=["kind", "name", "ts_ns", "dur_ns", "device", "thread"])


def test_lane_segments_split_compute_comm_and_idle() -> None:
    seg = aggregate.lane_segments(gpu_events(), 0, 1000)
    by = {cat: g[["start_ns", "end_ns"]].to_numpy().tolist() for cat, g in seg.groupby("cat")}
    assert by["compute"] == [[100, 400], [600, 700]]
    assert by["comm"] == [[400, 650]]
    assert by["idle"] == [[0, 100], [700, 1000]]
    assert seg[seg["cat"] == "comm"]["label"].tolist() == ["ncclDevKernel_AllReduce"]


def test_lane_segments_on_cpu_only_traces_use_the_main_thread() -> None:
    rows = [
        ("step", "ProfilerStep#3", 0, 1000, -1, 7),
        ("cpu_op", "aten::addmm", 0, 500, -1, 7),
        ("cpu_op", "other_thread_op", 500, 400, -1, 9),
        ("comm", "gloo:all_reduce", 500, 300, 0, -1),
    ]
    events = pd.DataFrame(rows, columns=["kind", "name", "ts_ns", "dur_ns", "device", "thread"])
    seg = aggregate.lane_segments(events, 0, 1000)
    by = {cat: g[["start_ns", "end_ns"]].to_numpy().tolist() for cat, g in seg.groupby("cat")}
    assert by["compute"] == [[0, 500]]
    assert by["comm"] == [[500, 800]]
    assert by["idle"] == [[800, 1000]]


def test_lane_compute_without_step_marks_is_the_thread_the_budget_reads() -> None:
    """No ProfilerStep marks: thread 9 records more operators, thread 7 spends more time in them. The
    lanes name the thread the step budget reads (the most operator time), not the most operators."""
    rows = [
        ("cpu_op", "aten::addmm", 0, 600, -1, 7),
        *[("cpu_op", "aten::detach", 600 + 10 * i, 5, -1, 9) for i in range(5)],
    ]
    events = pd.DataFrame(rows, columns=["kind", "name", "ts_ns", "dur_ns", "device", "thread"])
    assert timeline.main_thread(events) == 7
    seg = aggregate.lane_segments(events, 0, 1000)
    assert seg[seg["cat"] == "compute"][["start_ns", "end_ns"]].to_numpy().tolist() == [[0, 600]]


def test_timeline_figure_draws_one_path_per_category_and_the_last_arriver() -> None:
    lanes = [
        ("rank 0", aggregate.lane_segments(gpu_events(), 0, 1000)),
        ("rank 1", aggregate.lane_segments(gpu_events(), 0, 1000)),
    ]
    highlight = pd.DataFrame(
        {"lane": [0, 1], "start_ns": [400, 450], "end_ns": [650, 650], "rank": [0, 1], "label": "all_reduce #3"}
    )
    fig = figures_timeline.timeline_figure(lanes, 0, "step 0", highlight, step_marks=[(0, 0)], focus_lane=1)
    names = [t.name for t in fig.data]
    assert names[:4] == ["idle", "compute", "memcpy / memset", "communication"]
    compute = next(t for t in fig.data if t.name == "compute")
    xs = np.asarray(compute.x, dtype=float)
    assert np.isnan(xs[2::3]).all() and len(xs) == 2 * 2 * 3  # 2 segments x 2 lanes, NaN-separated
    assert xs[0] == pytest.approx(100 / 1e6) and xs[1] == pytest.approx(400 / 1e6)
    assert any("last arriver: rank 1" in (t.name or "") for t in fig.data)
    assert list(fig.layout.yaxis.ticktext) == ["rank 0", "rank 1"]


def test_box_stats_match_numpy_quantiles() -> None:
    df = pd.DataFrame(
        {"pg": ["0"] * 100 + ["tp1"] * 10, "op": "all_reduce", "skew_us": list(range(100)) + [1000.0] * 10}
    )
    stats = aggregate.box_stats(df, ["pg", "op"], "skew_us").set_index("group")
    row = stats.loc["0 / all_reduce"]
    assert row["median"] == pytest.approx(np.median(range(100)))
    assert row["q1"] == pytest.approx(np.quantile(range(100), 0.25))
    assert row["n"] == 100
    fig = figures.distribution_figure(stats.reset_index(), "skew", "µs")
    assert list(fig.data[0].x) == ["0 / all_reduce", "tp1 / all_reduce"]
    assert list(fig.data[0].median) == [pytest.approx(49.5), pytest.approx(1000.0)]


def test_counter_rates_per_entity_skip_resets() -> None:
    df = pd.DataFrame(
        {
            "ts_ns": [0, 10**9, 2 * 10**9, 0, 10**9, 2 * 10**9],
            "iface": ["eth0"] * 3 + ["ib0"] * 3,
            "tx_bytes": [0, 1000, 3000, 500, 100, 600],
        }
    )
    rates = aggregate.counter_rates(df, "tx_bytes", "iface")
    eth = rates[rates["entity"] == "eth0"]["value"].tolist()
    ib = rates[rates["entity"] == "ib0"]["value"].tolist()
    assert eth == [1000.0, 2000.0]
    assert ib == [500.0]  # the drop from 500 to 100 is a reset, not a negative rate
    assert counter_series.is_cumulative(df.drop(index=4), "tx_bytes", "iface")
    gauges = pd.DataFrame({"ts_ns": [0, 1, 2], "util_gpu_pct": [1, 2, 3]})
    assert not counter_series.is_cumulative(gauges, "util_gpu_pct", None)


def test_downsample_keeps_spikes_and_bounds_points() -> None:
    df = pd.DataFrame({"ts_ns": np.arange(100_000), "value": np.zeros(100_000)})
    df.loc[54_321, "value"] = 99.0
    out = aggregate.downsample_series(df, "ts_ns", "value", max_points=1000)
    assert len(out) <= 1000 and out["value"].max() == 99.0


def test_counter_figure_shades_steps_and_marks_findings() -> None:
    series = pd.DataFrame({"ts_ns": [0, 10**9, 2 * 10**9], "entity": "0", "value": [1.0, 2.0, 3.0]})
    fig = figures.counter_figure(
        series,
        0,
        "gpu util",
        "%",
        step_marks=[(1, 0, 10**9), (2, 10**9, 2 * 10**9)],
        marks=[(10**9, 2 * 10**9, "straggler")],
    )
    assert len(fig.layout.shapes) == 3
    assert fig.layout.shapes[2].fillcolor == figures.COLORS["bubble"]
    markers = [t for t in fig.data if t.name == "findings and events"]
    assert len(markers) == 1 and list(markers[0].text) == ["straggler"]  # in the hover, not a label
    assert not any(a.text == "straggler" for a in fig.layout.annotations)


def test_counter_figure_labels_never_pile_up_over_narrow_steps() -> None:
    """Twenty 10 ms steps inside a 60 s series, each named by two findings: one marker per step, its
    findings in the hover, and step numbers only where they have room."""
    series = pd.DataFrame({"ts_ns": [0, 60 * 10**9], "entity": "0", "value": [1.0, 2.0]})
    steps = [(s, 30 * 10**9 + s * 10**7, 30 * 10**9 + (s + 1) * 10**7) for s in range(20)]
    marks = [(a, b, f"step {s}: comm_bound, straggler") for s, a, b in steps]
    fig = figures.counter_figure(series, 0, "gpu util", "%", step_marks=steps, marks=marks)
    xs = sorted(a.x for a in fig.layout.annotations)
    assert len(xs) == 1  # 20 steps in 0.2 s of a 60 s axis: room for one step number
    markers = next(t for t in fig.data if t.name == "findings and events")
    assert len(markers.x) == 20 and markers.text[3] == "step 3: comm_bound, straggler"


def test_ranks_parse_and_format_round_trip() -> None:
    known = list(range(1024))
    assert aggregate.parse_ranks("0-3, 12 1000-1002", known) == [0, 1, 2, 3, 12, 1000, 1001, 1002]
    assert aggregate.parse_ranks("5000, x, 7", known) == [7]
    assert aggregate.format_ranks([0, 1, 2, 3, 12, 14, 15]) == "0-3, 12, 14-15"
    lanes = aggregate.choose_lanes(known, focus=[777], limit=24)
    assert len(lanes) == 24 and 777 in lanes and lanes == sorted(lanes)
    assert aggregate.choose_lanes([0, 1, 2], focus=[9]) == [0, 1, 2]


def test_each_finding_links_to_the_view_of_its_evidence() -> None:
    straggler = Finding("straggler", "warning", "", ranks=[2], steps=[3])
    assert finding_links(straggler, 0)[0][0] == "/heatmap?rank=2&step=3&metric=compute_us"
    assert finding_links(straggler, 0)[1][0] == "/timeline?rank=2&step=3"
    slow = Finding("slow_collective", "warning", "", metrics={"pg": "tp3", "op": "all_gather"})
    assert finding_links(slow, 4)[0][0] == "/collectives?pg=tp3&op=all_gather&finding=4"
    bubble = Finding("pipeline_bubble", "info", "", steps=[7])
    assert finding_links(bubble, 1)[0][0] == "/timeline?view=pipeline&step=7"
    hang = Finding("hang", "critical", "", ranks=[5])
    assert finding_links(hang, 2) == [("/failure?focus=2", "failure report")]


def test_root_cause_comes_before_its_effect_and_leads_the_verdict() -> None:
    """The overview reads the causal tree scope.causality built (the dashboard has no copy of its rules):
    the straggler the others wait for is the root, whatever order the analyzers gave them in."""
    effect = Finding("comm_bound", "warning", "waiting", ranks=[2], metrics={"cause": "waiting", "time_lost_us": 900.0})
    cause = Finding("straggler", "warning", "rank 2 is slow", ranks=[2], metrics={"time_lost_us": 500.0})
    note = Finding("pipeline_bubble", "info", "bubble")
    findings = Analysis.build(inventory(), None, link_findings([note, effect, cause], link_rules()), {}, []).findings
    tree = finding_tree(findings)
    assert [n.finding.kind for n in tree] == ["straggler", "pipeline_bubble"]
    assert [c.finding.kind for c in tree[0].children] == ["comm_bound"]
    level, sentence = verdict(findings, analyzed=True)
    assert level == "warning" and "rank 2 is slow" in sentence and "1 effect of it folded under it" in sentence
    crash = Finding("crash", "critical", "rank 1 died")
    assert verdict([crash, *findings], True) == ("critical", "Failed: rank 1 died")
    assert verdict([], True)[0] == "ok"
    assert verdict([], False)[0] == "unknown"


def test_flight_recorder_groups_mark_the_culprit() -> None:
    fr = pd.DataFrame(
        {"pg": "0", "rank": range(8), "last_enqueued": [10] * 8, "last_completed": [9] * 8, "role": ["waiting"] * 8}
    )
    fr.loc[5, ["last_enqueued", "role"]] = [9, "culprit"]
    groups = fr_groups(fr, set())
    culprit = groups[groups["culprit"] != ""]
    assert culprit["ranks"].tolist() == ["5"] and culprit["culprit"].tolist() == ["yes: 5"]
    assert groups[groups["culprit"] == ""]["ranks"].tolist() == ["0-4, 6-7"]


def test_empty_inputs_give_explanatory_figures() -> None:
    for fig in (
        figures.heatmap_figure(pd.DataFrame(), "x", "ms"),
        figures.step_time_figure(pd.DataFrame()),
        figures_timeline.timeline_figure([], 0, "x"),
        figures.bubble_figure(None),
        figures.distribution_figure(pd.DataFrame(), "Skew", "µs"),
    ):
        assert fig.layout.annotations and fig.layout.annotations[0].text
    cell = figures.cell_figure({"compute": 1000.0, "idle": 500.0}, {"compute": 800.0, "idle": 100.0}, 3, 7)
    assert [t.name for t in cell.data] == ["compute", "idle"]
    assert math.isclose(cell.data[0].x[0], 1.0)
