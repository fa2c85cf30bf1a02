"""`--hta-compat` against HTA 0.5.0's own output (../shared/data/hta_reference) on every trace there."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scope.analyzers.hta_compat import hta_rank

from scope.cli import main
from scope.ingest import ingest
from tests.conftest import shared_data

# reference folder -> trace folder under ../shared/data/hta
TRACES = {
    "trace_filter": ("trace_filter",),
    "nccl_parser_config": ("nccl_parser_config",),
    "df_index_resolver": ("df_index_resolver",),
    "negative_queue_length_values_check": ("negative_queue_length_values_check",),
    "trace_diff_control": ("trace_diff", "control"),
    "trace_diff_test": ("trace_diff", "test"),
    "ns_resolution_trace": ("ns_resolution_trace",),
}
TOLERANCE_PP = 0.5
COLUMNS = ["name", "cat", "kind", "ts_ns", "dur_ns", "device", "correlation"]


def _close(ours: float, ref: float) -> bool:
    if isinstance(ref, float) and math.isnan(ref):
        return math.isnan(ours)
    return abs(ours - ref) <= TOLERANCE_PP


@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(TRACES))
def test_temporal_breakdown_and_overlap_match_hta(name: str, tmp_path: Path) -> None:
    ref_dir = shared_data("hta_reference", name)
    store = ingest(shared_data("hta", *TRACES[name]), tmp_path / "store").store
    temporal = pd.read_csv(ref_dir / "temporal_breakdown.csv").set_index("rank")
    overlap = pd.read_csv(ref_dir / "comm_comp_overlap.csv").set_index("rank")["comp_comm_overlap_pctg"]
    assert sorted(store.ranks) == sorted(temporal.index)
    for rank in store.ranks:
        row = hta_rank(store.read_events(rank, columns=COLUMNS).to_pandas(), rank)
        ref = temporal.loc[rank]
        assert row is not None
        assert row["kernel_time_us"] == pytest.approx(ref["kernel_time(us)"], abs=2)
        for ours, theirs in (
            ("idle_pct", "idle_time_pctg"),
            ("compute_pct", "compute_time_pctg"),
            ("non_compute_pct", "non_compute_time_pctg"),
        ):
            assert _close(row[ours], float(ref[theirs])), (rank, ours, row[ours], ref[theirs])
        assert _close(row["comm_comp_overlap_pct"], float(overlap.loc[rank])), (rank, row["comm_comp_overlap_pct"])


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@pytest.mark.shared_data
def test_cli_flag_adds_hta_compat_to_the_json(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    trace = shared_data("hta", "trace_filter")
    assert main(["analyze", str(trace), "--store", str(tmp_path / "s"), "--json", str(out), "-q"]) == 0
    assert "hta_compat" not in json.loads(out.read_text())
    assert main(["analyze", str(trace), "--store", str(tmp_path / "s"), "--json", str(out), "-q", "--hta-compat"]) == 0
    rows = json.loads(out.read_text())["hta_compat"]
    assert [r["rank"] for r in rows] == [0, 1]
    expected = {0: (53.56, 17.71, 28.74, 11.81), 1: (54.72, 22.57, 22.72, 20.05)}  # HTA 0.5.0
    for r in rows:
        got = (r["idle_pct"], r["compute_pct"], r["non_compute_pct"], r["comm_comp_overlap_pct"])
        assert got == pytest.approx(expected[r["rank"]], abs=TOLERANCE_PP)
