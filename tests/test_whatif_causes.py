"""Cause classes on synthetic timelines grown from the ST schedule (benchmarks/whatif_synth.py).

Each cause is injected into a balanced copy of the schedule (DP8 x PP4); the finding must name that
cause, and only that one. A balanced job must get no finding at all.
"""

from __future__ import annotations

import pandas as pd
import pytest
from scope.analyzers.whatif.findings import whatif_findings
from scope.analyzers.whatif.model import analyze_ops

from benchmarks.whatif_synth import synthesize, tile_dp
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def schedule() -> pd.DataFrame:
    st = pd.read_parquet(shared_data("straggler_analysis", "trace-ST.parquet"))
    return tile_dp(st[st["step"] == st["step"].min()], 4)


@pytest.mark.parametrize(
    ("cause", "kind"),
    [
        ("slow_worker", "slow_worker"),
        ("last_stage", "stage_imbalance"),
        ("first_stage", "stage_imbalance"),
        ("sequence_length", "data_imbalance"),
    ],
)
def test_injected_cause_is_named(schedule: pd.DataFrame, cause: str, kind: str) -> None:
    result = analyze_ops(synthesize(schedule, 12, pp=4, cause=cause, seed=3), pp=4)
    [finding] = whatif_findings(result)
    assert finding.kind == kind
    assert finding.metrics["slowdown"] >= 1.1
    if kind == "slow_worker":
        assert finding.metrics["workers"] == [{"dp_rank": 0, "stage": 0}]
    if kind == "stage_imbalance":
        assert finding.metrics["stage"] == (3 if cause == "last_stage" else 0)
    if kind == "data_imbalance":  # spread: many workers share it, fixing a few explains little
        assert finding.metrics["workers_sharing"] >= 8
        assert finding.metrics["m_w"] < 0.5
        # equal micro-batch compute within each stage and step removes it (M_D), the last stage does not
        assert finding.metrics["m_d"] >= 0.9 and finding.metrics["m_s"] < 0.5
        assert "equal micro-batch compute within each stage and step removes" in finding.summary
    if kind == "stage_imbalance":  # a stage's own load stays when its micro-batches are made equal
        assert finding.metrics["m_d"] < 0.2


def test_balanced_job_has_no_finding(schedule: pd.DataFrame) -> None:
    result = analyze_ops(synthesize(schedule, 12, pp=4, cause="none", seed=3), pp=4)
    assert result.slowdown < 1.1
    assert whatif_findings(result) == []
