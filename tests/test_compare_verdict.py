"""`scope compare`'s verdict on the step (scope/compare/verdict.py), on the real dataloader pair
(ResNet-50, num_workers 0 vs 4; ../shared/data/kineto_dataloader): judged on the typical step, said with
the mean when they disagree, and never "no real change" beside a cause that moved beyond noise (issue 41,
item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from scope.cli import main
from scope.errors import EXIT_OK
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("verdict")
    out = []
    for name in ("num_workers_0", "num_workers_4"):
        (root / name).mkdir()
        for trace in shared_data("kineto_dataloader", name).iterdir():
            (root / name / trace.name).symlink_to(trace)
        out.append(root / name)
    return out[0], out[1]


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_the_real_pair_is_judged_on_its_typical_step_and_names_bs_slow_steps(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp.json"
    assert main(["compare", str(pair[0]), str(pair[1]), "-q", "--json", str(out)]) == EXIT_OK
    step = json.loads(out.read_text())["step"]
    # every step but two got ~50 ms faster; the mean (-35 ms) carries B's two slow steps, 5 and 9
    assert -55e3 < step["delta_typical_step_us"] < -45e3 and step["typical_beyond_noise"], step
    assert step["slow_steps"] == {"B": [5, 9]}
    assert "48.7 ms faster than A's, beyond noise" in step["verdict"] and "5, 9" in step["verdict"]
    main(["compare", str(pair[0]), str(pair[1]), "-q"])
    text = capsys.readouterr().out
    assert "Verdict: B's typical step is" in text and "no real change" not in text


def _slower_edges(rows: pd.DataFrame, steps: tuple[int, ...], extra_us: float) -> pd.DataFrame:
    """B's rows with STEPS made EXTRA_US slower (in `unexplained`, so each row still sums to its step)."""
    out = rows.copy()
    hit = out["step"].isin(steps)
    out.loc[hit, "step_us"] += extra_us
    out.loc[hit, "unexplained"] += extra_us
    return out


@pytest.mark.slow  # analyzes a synthesized pair: seconds (the unit tier stays under 120 s)
def test_two_slow_steps_that_pull_the_mean_into_noise_do_not_hide_the_change(pair: tuple[Path, Path]) -> None:
    """The adversarial round's reading of this pair: B's two slow steps slower still (+60 ms each), so its
    mean step moves only -15 ms, inside the ±19 ms noise, while the input pipeline still falls beyond its
    own noise and every other step is ~50 ms faster. The headline said "within noise: no real change"."""
    from scope.compare import compare_paths
    from scope.compare.budget import Budget, budget_of, diff_budgets
    from scope.render.compare import render_compare

    comparison = compare_paths(*pair)
    a, b = budget_of(comparison.a.analysis), budget_of(comparison.b.analysis)
    b = Budget(_slower_edges(b.rows, (5, 9), 60e3), b.labels, b.source)
    comparison.budget = diff_budgets(a, b)
    data = comparison.to_dict()
    step = data["step"]
    assert abs(step["delta_mean_step_us"]) < step["noise_us"], step  # the mean alone: "no change"
    assert step["beyond_noise"] and step["typical_beyond_noise"] and not step["mean_beyond_noise"]
    assert "mean and median disagree" in step["verdict"] and "slow steps in B: 5, 9" in step["verdict"]
    text = render_compare(comparison.result())
    assert "no real change" not in text and "input pipeline -48.3 ms" in text, text


def test_a_step_within_noise_with_a_cause_beyond_its_own_says_so() -> None:
    """Time that moved from one cause to another: the step holds, the verdict names the causes."""
    from scope.compare.budget import Budget, diff_budgets

    steps = list(range(8))
    a = pd.DataFrame({"rank": 0, "step": steps, "step_us": 100e3, "compute": 60e3, "input": 40e3})
    b = pd.DataFrame({"rank": 0, "step": steps, "step_us": 100e3, "compute": 90e3, "input": 10e3})
    labels = {"compute": "compute", "input": "input pipeline"}
    diff = diff_budgets(Budget(a, labels, "budget"), Budget(b, labels, "budget"))
    assert not diff.beyond_noise and diff.verdict is not None
    assert "within noise" in diff.verdict.text and "compute +30.0 ms" in diff.verdict.text
    assert "no real change" not in diff.verdict.text
