"""The what-if engine against the published outputs of the OSDI'25 artifact (ByteDance's AR and ST traces).

Targets: S within 2% of `blocking_slowdown`; S by DP rank and by stage within 2% of `result-*.json`;
M_W and M_S within 0.05 of `mw-*.json` / `ms-*.json`.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from scope.analyzers.whatif.model import analyze_ops

from tests.conftest import shared_data


@pytest.fixture(scope="module", params=["AR", "ST"])
def job(request: pytest.FixtureRequest) -> tuple[object, dict, dict, dict]:
    folder = shared_data("straggler_analysis")
    trace = request.param
    ops = pd.read_parquet(shared_data("straggler_analysis", f"trace-{trace}.parquet"))
    result = json.loads((folder / f"result-{trace}.json").read_text())
    pp = result["job_meta"]["pp_size"]
    ms = json.loads((folder / f"ms-{trace}.json").read_text())
    mw = json.loads((folder / f"mw-{trace}.json").read_text())
    return analyze_ops(ops, pp=pp), result, ms, mw


def test_slowdown_matches_published(job: tuple) -> None:
    ours, published, _, _ = job
    assert ours.slowdown == pytest.approx(published["blocking_slowdown"], rel=0.02)


def test_decomposition_by_dp_rank_and_stage_matches_published(job: tuple) -> None:
    ours, published, _, _ = job
    for rank, value in published["blocking_decompose_by_dp_rank"].items():
        assert ours.by_dp_rank[int(rank)] == pytest.approx(value, rel=0.02), f"DP rank {rank}"
    for stage, value in published["blocking_decompose_by_stage"].items():
        assert ours.by_stage[int(stage)] == pytest.approx(value, rel=0.02), f"stage {stage}"


def test_explained_fractions_match_published(job: tuple) -> None:
    ours, _, ms, mw = job
    assert ours.fix_workers["explained_by_removal"] == pytest.approx(mw["Mw"], abs=0.05)
    assert ours.fix_last_stage["explained_by_removal"] == pytest.approx(ms["Ms"], abs=0.05)


def test_per_step_and_per_op_type_attribution_match_published(job: tuple) -> None:
    ours, published, _, _ = job
    for step, value in published["blocking_step_slowdown"].items():
        assert ours.by_step[int(step)] == pytest.approx(value, rel=0.02), f"step {step}"
    for step, by_rank in published["blocking_decompose_by_dp_rank_per_step"].items():
        for rank, value in by_rank.items():
            assert ours.by_dp_rank_per_step[int(rank)][int(step)] == pytest.approx(value, rel=0.02)
    for step, by_stage in published["blocking_decompose_by_stage_per_step"].items():
        for stage, value in by_stage.items():
            assert ours.by_stage_per_step[int(stage)][int(step)] == pytest.approx(value, rel=0.02)
    for optype, value in published["blocking_decompose_by_optype"].items():
        assert ours.by_optype[optype] == pytest.approx(value, rel=0.02), optype
