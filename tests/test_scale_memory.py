"""Memory flat in the rank count: the process that coordinates an analysis keeps per-rank state of small,
bounded size (benchmarks/scale.py measures it at 1,024 to 16,384 ranks; this keeps it on a small pair).

The slope test analyzes two synthesized runs of the same small trace, 24 and 192 ranks, each in a fresh
process, and compares the peak RSS of that process (ru_maxrss: the kernel's own figure, not a sample).
The unit tests below pin the fixes that made it flat, exactly: each replaced a whole-run structure by a
bounded one and must give the same result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import shared_data

SMALL, LARGE = 24, 192
# MB of peak RSS per rank added between the two sizes. Measured here (2 cores, load 3-12): 0.10-0.14 MB
# per rank on this 220-event trace, main before these changes about the same (0.14): at this size the
# allocator settling dominates, and the gains show at thousands of ranks (benchmarks/scale.py: 0.40 ->
# 0.26 MB per rank from 1,024 to 4,096 ranks, then 0.023 once headers were summarized and the per-rank
# pass fused, 0.013 once ranks' tables came as Arrow batches: 390 MB measured at 16,384 ranks). This
# floor catches a gross regression (a table or a DataFrame per rank of every rank's rows held at once);
# the exact tests below pin each bounded structure.
MAX_MB_PER_RANK = 0.3

_PEAK = """
import json, resource, sys
from scope.analysis import run
def main():
    analysis = run(sys.argv[1], {"store": sys.argv[2], "workers": 1})
    stragglers = sorted(r for f in analysis.findings if f.kind == "straggler" for r in f.ranks)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mb": peak_mb, "stragglers": stragglers}))
if __name__ == "__main__":
    main()
"""


def _synth(ranks: int, out: Path) -> Path:
    from benchmarks.synth import SynthSpec, synthesize

    synthesize(SynthSpec(ranks=ranks, source=shared_data("hta", "amd_trace"), out=out, stragglers=[ranks // 3]))
    return out


def _peak(run: Path, store: Path, script: Path) -> dict:
    done = subprocess.run(
        [sys.executable, str(script), str(run), str(store)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 4), done.stderr[-2000:]
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.subprocess
def test_the_coordinating_process_does_not_grow_with_the_rank_count(tmp_path: Path) -> None:
    script = tmp_path / "peak.py"
    script.write_text(_PEAK)
    small = _peak(_synth(SMALL, tmp_path / "small"), tmp_path / "small-store", script)
    large = _peak(_synth(LARGE, tmp_path / "large"), tmp_path / "large-store", script)
    slope = (large["peak_mb"] - small["peak_mb"]) / (LARGE - SMALL)
    said = f"peak RSS {small['peak_mb']:.0f} MB at {SMALL} ranks, {large['peak_mb']:.0f} MB at {LARGE}: "
    print(said + f"{slope:.3f} MB per rank")
    assert slope < MAX_MB_PER_RANK, said + f"{slope:.2f} MB per rank (floor {MAX_MB_PER_RANK})"
    # the same analysis still names the rank synth slowed down
    assert small["stragglers"] == [SMALL // 3] and large["stragglers"] == [LARGE // 3]
    # What the store keeps per rank does not grow with the world: each rank's header lists every rank
    # of its process groups (pg_config), which meta.json kept whole (100 MB at 4,096 ranks).
    per_rank = {
        n: (tmp_path / f"{name}-store" / "meta.json").stat().st_size / n
        for n, name in ((SMALL, "small"), (LARGE, "large"))
    }
    assert per_rank[LARGE] < 1.15 * per_rank[SMALL], per_rank


def test_a_process_group_rank_list_is_kept_as_exact_ranges() -> None:
    """compact_ranks: runs of one step written as a-b[:s], in order, exactly (expanded back here)."""
    from scope.ingest.job import LIST_RANKS_UP_TO, compact_pg_config, compact_ranks

    def expand(text: str) -> list[int]:
        out: list[int] = []
        for run in text.split(","):
            first, _, rest = run.partition("-")
            last, _, step = rest.partition(":")
            out += [int(first)] if not rest else list(range(int(first), int(last) + 1, int(step or 1)))
        return out

    rng = np.random.default_rng(3)
    cases = [list(range(4096)), list(range(3, 4092, 8)), [0, 1], [5, 3, 1], [7], [0, 2, 3, 4, 9, 9, 10]]
    cases += [sorted(rng.choice(300, size=int(rng.integers(1, 120)), replace=False).tolist()) for _ in range(50)]
    for ranks in cases:
        assert expand(compact_ranks(ranks)) == ranks, ranks
    assert compact_ranks(list(range(16384))) == "0-16383"
    config = [{"pg_name": "0", "pg_size": 100, "ranks": list(range(100))}, {"pg_name": "1", "ranks": [0, 1]}]
    assert compact_pg_config(config) == [{"pg_name": "0", "pg_size": 100, "ranks": "0-99"}, config[1]]
    assert compact_pg_config({"0": {"ranks": list(range(LIST_RANKS_UP_TO))}}) == {
        "0": {"ranks": list(range(LIST_RANKS_UP_TO))}
    }


def test_the_replayed_loss_needs_no_rank_by_rank_table() -> None:
    """The straggler's replayed loss from each step's two busiest ranks equals the what-if of every
    rank replayed one by one (the rank x rank x step array it replaced), ties and gaps included."""
    from scope.analyzers.stragglers import _replay_loss

    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 9, 40):
        busy = rng.uniform(0, 100, (n, 4))
        busy[rng.random((n, 4)) < 0.2] = np.nan
        busy[:, 1] = 50.0  # every rank tied
        excess = rng.uniform(-10, 60, (n, 4))
        excess[rng.random((n, 4)) < 0.2] = np.nan
        got = _replay_loss(pd.DataFrame(busy), pd.DataFrame(excess)).to_numpy()
        present = np.where(np.isnan(busy), -np.inf, busy)
        top = present.max(axis=0)
        for r in range(n):
            alone = present.copy()
            alone[r] = np.where(np.isnan(busy[r] - excess[r]), -np.inf, busy[r] - excess[r])
            replayed = alone.max(axis=0) if n > 1 else np.maximum(alone.max(axis=0), 0.0)
            want = np.where(np.isfinite(replayed) & np.isfinite(top), top - replayed, 0.0)
            assert np.array_equal(got[r], want), (n, r)


def test_rows_made_a_column_at_a_time_are_the_cleaned_records() -> None:
    """records() skips cleaning number columns cell by cell: the rows are still clean(df.to_dict("records")),
    for every kind of column an analysis table holds."""
    from scope.result import clean, records

    df = pd.DataFrame({
        "f": [1.5, np.nan, np.inf, -np.inf],
        "f32": np.array([1.25, np.nan, 2, 3], dtype=np.float32),
        "i": [1, 2, 3, 4],
        "u": np.array([1, 2, 3, 250], dtype=np.uint8),
        "b": [True, False, True, False],
        "n": pd.array([1, None, 3, 4], dtype="Int64"),
        "s": pd.array(["a", None, "c", "d"], dtype="string"),
        "o": np.array(["x", None, 3, 2.5], dtype=object),
        "t": pd.to_datetime(["2020-01-01", None, "2021-01-01", "2022-01-01"]),
        "l": [np.array([1.0, np.nan]), [1, 2], None, np.array([], dtype=int)],
        "c": pd.Categorical(["x", "y", None, "x"]),
        5: [1, 2, 3, 4],
    })  # fmt: skip
    want = clean(df.to_dict("records"))
    got = records(df)
    assert repr(got) == repr(want)  # types too: 2 and 2.0 compare equal, but not in JSON
    assert got[1]["f"] is None and got[2]["f"] is None and got[3]["f32"] == 3.0 and got[1]["n"] is None


def test_the_json_written_piece_by_piece_is_the_json_of_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """analysis.json and --json are written a chunk of rows at a time: the same JSON as json.dumps(to_dict()),
    indented alike but for each table row, which is on one line."""
    import scope.result as result
    from scope.finding import Finding
    from scope.render.json import jsonable
    from scope.result import Analysis

    analysis = Analysis(
        run={"world_size": 3, "hosts": ["a"]},
        ranks=pd.DataFrame({"rank": [0, 1, 2], "host_name": ["a", None, "a"]}),
        steps=pd.DataFrame({"rank": [0, 1, 2], "step": [1, 1, 1], "step_us": [1.5, float("nan"), 2.0]}),
        findings=[Finding(kind="straggler", severity="warning", summary="rank 2\nslow", ranks=[2], steps=[1])],
        tables={"empty": pd.DataFrame(), "ranks_of": pd.DataFrame({"ranks": [[0, 1], [2]], "n": [2, 1]})},
    )
    monkeypatch.setattr(result, "JSON_CHUNK_ROWS", 1)
    whole = json.loads(json.dumps(analysis.to_dict(), indent=2, default=jsonable, allow_nan=False))
    text = "".join(analysis.iter_json(indent=2, default=jsonable, allow_nan=False))
    assert json.loads(text) == whole
    assert '\n    {"rank": 1, "step": 1, "step_us": null}' in text  # a row, a line
    assert '\n  "findings": [\n    {\n      "kind": "straggler"' in text  # the rest indented as json.dumps does
    stored = "".join(analysis.iter_json(indent=1, default=str, allow_nan=True))
    assert json.loads(stored) == json.loads(json.dumps(analysis.to_dict(), indent=1, default=str))


def test_op_totals_folded_in_batches_are_the_totals_of_all_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """ops folds each rank's counts into per-name totals as ranks finish; folding every few rows gives
    the table one reduction over every rank's rows gives."""
    from scope.rankpass import op_counts as ops

    rng = np.random.default_rng(3)
    names = [f"op{i}" for i in range(12)]
    ranks = {r: pd.DataFrame({
        "kind": rng.choice(["cpu_op", "compute"], 6),
        "name": rng.choice(names, 6),
        "parent": "",
        "calls": rng.integers(1, 9, 6),
        "ns": rng.integers(1_000, 90_000, 6),
    }).drop_duplicates(["kind", "name", "parent"]) for r in range(30)}  # fmt: skip
    steps = pd.Series({r: 1 + r % 3 for r in ranks})

    def table(fold_rows: int) -> pd.DataFrame:
        monkeypatch.setattr(ops.OpTotals, "FOLD_ROWS", fold_rows)
        totals = ops.OpTotals()
        for r, counts in ranks.items():
            totals.add(ops.fold_rows(counts, int(steps[r])))
        return totals.table(int(steps.sum()))

    once = table(10**9)
    pd.testing.assert_frame_equal(table(7), once, check_exact=True)
    every = pd.concat([c.assign(rank=r) for r, c in ranks.items()])
    assert once["calls"].sum() == every["calls"].sum()
    assert once["ranks"].max() == every.groupby(["kind", "name"])["rank"].nunique().max()


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@pytest.mark.parametrize("sample", ["straggler", "pipeline"])
def test_the_slim_store_gives_the_analysis_of_the_whole_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample: str
) -> None:
    """Store.for_analysis keeps of each rank's meta only what the analyzers read (n_events): an
    analyzer reading another key would see nothing there, silently."""
    from scope.analysis import run
    from scope.store import Store

    path = Path(__file__).resolve().parent.parent / "sample_traces" / sample
    options = {"store": str(tmp_path / "store"), "force": True}
    slim = run(path, options).to_dict()
    monkeypatch.setattr(Store, "for_analysis", lambda self: self)
    whole = run(path, options).to_dict()
    for result in (slim, whole):
        result["run"].pop("analyzed_at", None)
    assert slim == whole
