"""`scope compare A B`: recorded runs (sample_traces/, the real dataloader pair in ../shared/data) and the
session's real DDP runs (tests/conftest.py: ddp_run), compared as a user would from the CLI."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_OK, EXIT_SLOWER, EXIT_USAGE
from tests.conftest import ROOT, shared_data


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of the recorded sample runs (analyzing writes a store into the run directory)."""
    root = tmp_path_factory.mktemp("compare_samples")
    for name in ("healthy", "straggler"):
        shutil.copytree(ROOT / "sample_traces" / name, root / name, ignore=shutil.ignore_patterns("store"))
    return root


@pytest.fixture(scope="session")
def dataloader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare_dataloader")
    for name in ("num_workers_0", "num_workers_4"):
        src = shared_data("kineto_dataloader", name)
        (root / name).mkdir()
        for trace in src.iterdir():  # links: the data stays in ../shared/data, the stores land here
            (root / name / trace.name).symlink_to(trace)
    return root


def compare_json(tmp_path: Path, a: Path, b: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / f"cmp-{a.name}-{b.name}.json"
    code = main(["compare", str(a), str(b), "--json", str(out), "-q", *extra])
    return code, json.loads(out.read_text())


def _bucket_sum(data: dict) -> float:
    return sum(b["delta_us"] for b in data["step"]["buckets"])


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_dataloader_pair_names_the_input_pipeline(dataloader: Path, tmp_path: Path) -> None:
    code, data = compare_json(tmp_path, dataloader / "num_workers_0", dataloader / "num_workers_4")
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    step = data["step"]
    assert 170e3 < step["a_mean_step_us"] < 180e3 and 135e3 < step["b_mean_step_us"] < 145e3
    # the buckets' changes add up to the step's change, exactly
    assert _bucket_sum(data) == pytest.approx(step["delta_mean_step_us"], abs=1.0)
    # the data loader's fetch is the largest op change (-68 ms), matched across its two class names
    top = data["ops"]["changed"][0]
    assert top["name"].startswith("enumerate(DataLoader)#_Single") and top["name_b"].startswith(
        "enumerate(DataLoader)#_MultiProcessing"
    )
    assert -70e3 < top["delta_us"] < -65e3
    # the step budget (the GPU's side) names the input pipeline first
    assert step["sources"] == ["budget", "budget"]
    assert step["buckets"][0]["label"] == "input pipeline" and step["buckets"][0]["beyond_noise"], step["buckets"]
    # the training thread: the loader's -68 ms, and where the other ~33 ms went (slower CPU operators beside
    # four loader processes, copies that now wait for a busy GPU, ...), adding up to the step's -35 ms
    host = data["host"]
    assert host["buckets"][0]["label"].startswith("input pipeline"), host["buckets"]
    assert -70e3 < host["buckets"][0]["delta_us"] < -65e3
    others = sum(b["delta_us"] for b in host["buckets"][1:])
    assert 28e3 < others < 38e3, host["buckets"]
    assert others + host["buckets"][0]["delta_us"] == pytest.approx(step["delta_mean_step_us"], abs=1.0)


def test_healthy_vs_straggler_names_the_rank_and_its_compute(samples: Path, tmp_path: Path) -> None:
    code, data = compare_json(tmp_path, samples / "healthy", samples / "straggler")
    truth = json.loads((samples / "straggler" / "ground_truth.json").read_text())
    rank = truth["fault_rank"]
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    assert data["ranks"]["matched"] and data["ranks"]["became_stragglers"] == [rank]
    rows = {r["rank"]: r for r in data["ranks"]["rows"]}
    # The two samples were recorded under different machine load (every rank's compute moved): what
    # is the straggler's own is its change beside the other ranks' (its compute tripled; it waits less).
    own = "own_compute" if "own_compute" in rows[rank] else "own_compute_us"  # budget or breakdown column
    assert max(rows, key=lambda r: rows[r][own]) == rank
    assert rows[rank][own] > 20e3, rows[rank]
    assert rows[rank]["largest_own_change"] == "compute", rows[rank]
    assert any(f["kind"] == "straggler" and f["ranks"] == [rank] for f in data["findings"]["appeared"])
    assert _bucket_sum(data) == pytest.approx(data["step"]["delta_mean_step_us"], abs=1.0)


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_fail_if_slower_exit_codes(dataloader: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fast, slow = dataloader / "num_workers_4", dataloader / "num_workers_0"
    code, _ = compare_json(tmp_path, fast, slow, "--fail-if-slower", "5%")
    assert code == EXIT_SLOWER
    out = capsys.readouterr().out
    assert "FAIL: B is slower than A" in out and "Top causes:" in out
    code, _ = compare_json(tmp_path, slow, fast, "--fail-if-slower", "5%")
    assert code == EXIT_OK
    assert "OK: B is not slower" in capsys.readouterr().out
    # B is 39% slower by its median step: a 50% threshold lets it pass, 30% does not
    assert compare_json(tmp_path, fast, slow, "--fail-if-slower", "50")[0] == EXIT_OK
    assert compare_json(tmp_path, fast, slow, "--fail-if-slower", "30%")[0] == EXIT_SLOWER
    assert main(["compare", str(fast), str(slow), "--fail-if-slower", "x%"]) == EXIT_USAGE


@pytest.mark.slow  # analyzes real runs: seconds (the unit tier stays under 120 s)
def test_not_comparable_runs_are_said_so(samples: Path, dataloader: Path, tmp_path: Path) -> None:
    code, data = compare_json(tmp_path, dataloader / "num_workers_0", samples / "healthy")
    assert code == EXIT_OK
    assert not data["comparable"]
    why = " ".join(data["not_comparable"])
    assert "different programs" in why and "GPU" in why
    # both on CPU with gloo, but another model (a 4-stage pipeline, not DDP): a different program
    pipeline = samples.parent / "pipeline"
    if not pipeline.exists():
        shutil.copytree(ROOT / "sample_traces" / "pipeline", pipeline, ignore=shutil.ignore_patterns("store"))
    code, data = compare_json(tmp_path, samples / "healthy", pipeline)
    assert code == EXIT_OK and not data["comparable"]
    assert any(w.startswith("different programs") for w in data["not_comparable"]), data["not_comparable"]


def test_different_rank_counts_compare_distributions(samples: Path, tmp_path: Path) -> None:
    wide = tmp_path / "healthy8"
    from benchmarks.synth import SynthSpec, synthesize

    synthesize(SynthSpec(ranks=8, source=samples / "healthy", out=wide))
    code, data = compare_json(tmp_path, samples / "healthy", wide)
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    ranks = data["ranks"]
    assert not ranks["matched"] and "A traced 4 ranks, B 8" in ranks["why_not"]
    assert ranks["only_in_b"] == [4, 5, 6, 7]
    assert [q["quantile"] for q in ranks["rows"]] == ["min", "p25", "median", "p75", "max"]
    assert all(q["a_step_us"] > 0 and q["b_step_us"] > 0 for q in ranks["rows"])


def test_text_and_markdown_reports(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(samples / "healthy"), str(samples / "straggler"), "-q"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "Step time: mean" in text and "Where the" in text and "Per rank" in text and "Findings" in text
    assert main(["compare", str(samples / "healthy"), str(samples / "straggler"), "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# scope compare") and "| cause |" in md


# Real runs side by side (tests/conftest.py: ddp_runs_together), so that they share the host's load.
# (A fourth job, the 4x-compute straggler, made the host so busy that a healthy run's steps spread by
# +/-110 ms and the slow link drowned in it: the straggler pair is tested on the recorded samples.)
# The slow link is 300 ms a bucket (conftest: slow_link_strong): at 100 ms it once failed on a loaded 2-core
# host, its skew within the reach of the healthy runs' spread.
TRIO = ("healthy", "healthy_again", "slow_link_strong")


@pytest.mark.multirank
def test_healthy_vs_slow_link_names_the_collectives(
    ddp_runs_together: Callable[[tuple[str, ...]], dict[str, Path]], tmp_path: Path
) -> None:
    runs = ddp_runs_together(TRIO)
    code, data = compare_json(tmp_path, runs["healthy"], runs["slow_link_strong"])
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    lost = [c for c in data["collectives"]["matched"] if c["lost_bandwidth"]]
    assert lost, data["collectives"]["matched"]
    # the gradient all-reduces (the big buckets) lost bandwidth: the delayed rank arrives last
    assert any(c["op"] == "all_reduce" and c["bytes"] > 1e6 for c in lost), lost
    assert min(c["eff_busbw_ratio"] for c in lost) < 0.5, lost  # the bar the healthy pair is held to
    assert all(c["b_last_arriver"] == 2 and "arrivals further apart" in c["cause"] for c in lost), lost
    assert data["step"]["beyond_noise"] and data["step"]["delta_mean_step_us"] > 0


@pytest.mark.multirank
def test_two_healthy_runs_show_no_change_of_a_rank_of_their_own(
    ddp_runs_together: Callable[[tuple[str, ...]], dict[str, Path]], tmp_path: Path
) -> None:
    runs = ddp_runs_together(TRIO)
    code, data = compare_json(tmp_path, runs["healthy"], runs["healthy_again"])
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    deltas = [r["delta_us"] for r in data["ranks"]["rows"]]
    assert len(deltas) == 4, data["ranks"]
    # Two healthy runs launched side by side (12 ranks on 2 cores) can still drift apart, as a whole and unevenly:
    # clean-clone CI saw +21% and +39% with every rank moving the same way, and once -25% with rank 0 at -36 ms and
    # rank 1 at -1.6 ms. That drift is the host's, so the test does not assert its shape; it asserts what compare
    # says of it: no collective lost bandwidth, no finding of compare's own, no rank made a straggler by it.
    # The host's drift can cost a collective some bandwidth too (clean-clone CI, 2026-12-06: the gradient
    # all-reduce at x1.18 its time per call, +14.5 ms a step against a noise of 12.7 ms, flagged as lost): compare
    # reports what the run shows. What it must not do is make such drift look like a broken link: no collective of
    # two healthy runs loses half its bandwidth, as the slowed link's gradient all-reduces do (the test above).
    assert not [c for c in data["collectives"]["matched"] if c["lost_bandwidth"] and c["eff_busbw_ratio"] < 0.5]
    # The findings that appeared are exactly B's own findings that A lacks: the comparison adds none of its
    # own. Two healthy runs usually have none; but on this host (three 4-rank jobs on 2 cores) the straggler
    # analyzer once named a healthy run's rank 0 a persistent compute straggler (clean-clone CI, 2026-12-05):
    # that is the analyzer's precision under heavy oversubscription, judged by benchmarks/precision.py.
    from scope.analysis import run as run_analysis

    def keys(findings: list[dict]) -> set[tuple[str, tuple[int, ...]]]:
        return {(f["kind"], tuple(sorted(f["ranks"]))) for f in findings}

    own_a, own_b = (keys([f.to_dict() for f in run_analysis(runs[n]).findings]) for n in ("healthy", "healthy_again"))
    assert keys(data["findings"]["appeared"]) == own_b - own_a, data["findings"]
    new_stragglers = {r for kind, ranks in own_b - own_a if kind == "straggler" for r in ranks}
    assert set(data["ranks"]["became_stragglers"]) <= new_stragglers, data["ranks"]


@pytest.mark.slow  # analyzes real runs and builds the dashboard: seconds (the unit tier stays under 120 s)
def test_compare_page_layout_without_a_browser(dataloader: Path) -> None:
    from scope.app.pages import compare as page
    from scope.app.server import create_app

    app = create_app(dataloader / "num_workers_0", refresh_s=0, compare=dataloader / "num_workers_4")
    app.scope_data.wait(120)  # type: ignore[attr-defined]
    tree = str(page.layout(app.scope_data, {}).to_plotly_json())  # type: ignore[attr-defined]
    assert "compare-waterfall" in tree and "compare-ranks" in tree and "enumerate(DataLoader)" in tree
    assert "input pipeline" in tree
    alone = create_app(dataloader / "num_workers_0", refresh_s=0, analyze=False)
    assert "--compare B" in str(page.layout(alone.scope_data, {}).to_plotly_json())  # type: ignore[attr-defined]


@pytest.mark.browser
def test_compare_page_in_a_browser(browser: Any, dataloader: Path, artifacts_dir: Path) -> None:
    from playwright.sync_api import expect
    from scope.app.server import create_app

    from tests.browser_util import ConsoleLog, serve_in_thread

    app = create_app(dataloader / "num_workers_0", refresh_s=0, compare=dataloader / "num_workers_4")
    app.scope_data.wait(120)  # type: ignore[attr-defined]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    console = ConsoleLog(page)
    try:
        with serve_in_thread(app) as base:
            page.goto(base + "/compare")
            page.wait_for_selector("#compare-waterfall .main-svg", timeout=30_000)
            page.wait_for_selector("#compare-ranks .main-svg", timeout=30_000)
            expect(page.locator("#compare-ops")).to_contain_text("enumerate(DataLoader)")
            text = page.inner_text("#page")
            assert "input pipeline" in text and "On the training thread" in text
            # the waterfall's bars: A, the causes, B
            bars = page.locator("#compare-waterfall g.point").count()
            assert bars >= 4, bars
            shots = artifacts_dir / "compare"
            shots.mkdir(exist_ok=True)
            page.screenshot(path=str(shots / "dataloader.png"), full_page=True)
            assert console.take() == []
    finally:
        context.close()


@pytest.mark.slow  # synthesizes and analyzes two 16-rank runs: seconds (the unit tier stays under 120 s)
def test_synthesized_runs_compare_from_their_stores_fast(samples: Path, tmp_path: Path) -> None:
    """The floor of benchmarks/compare.py (1,024 ranks in under 10 s there): 16 ranks, read from the stores."""
    import time

    from benchmarks.synth import SynthSpec, synthesize
    from scope.compare import compare_paths

    stores = []
    for name, stragglers in (("a", []), ("b", [5])):
        run = tmp_path / name
        synthesize(SynthSpec(ranks=16, source=samples / "healthy", out=run, stragglers=stragglers, straggler_factor=3))
        assert main(["analyze", str(run), "-q", "--no-tables"]) in (0, 4)
        stores.append(run / "store")
    start = time.perf_counter()
    c = compare_paths(*stores)
    elapsed = time.perf_counter() - start
    assert c.a.reused and c.b.reused  # nothing was analyzed again
    assert elapsed < 3.0, elapsed
    assert c.ranks.matched and c.ranks.became == [5], c.to_dict()["ranks"]
    assert c.budget.delta_us > 0


def test_a_bandwidth_loss_the_step_feels_only_over_several_keys_is_reported() -> None:
    """Two buckets of the gradient all-reduce each slowed by less than the step's noise, the step by more
    (a real slow-link run on a busy host): both losses count. One such key alone does not, nor a key
    whose bandwidth did not shift; a gain is judged the same way, with the costs' sign turned."""
    import pandas as pd

    from scope.compare.collectives import _keep_felt

    def kept(costs: list[float], lost: list[bool], gained: list[bool]) -> tuple[list[bool], list[bool], list[str]]:
        rows = pd.DataFrame({
            "delta_cost_per_step_us": costs, "lost_bandwidth": lost, "gained_bandwidth": gained,
            "cause": [f"c{i}" for i in range(len(costs))],
        })  # fmt: skip
        _keep_felt(rows, noise_us=117e3)
        return rows["lost_bandwidth"].tolist(), rows["gained_bandwidth"].tolist(), rows["cause"].tolist()

    assert kept([99e3, 67e3, 5e3], [True, True, False], [False] * 3) == (
        [True, True, False], [False] * 3, ["c0", "c1", ""],
    )  # fmt: skip
    assert kept([99e3], [True], [False]) == ([False], [False], [""])
    assert kept([150e3], [True], [False]) == ([True], [False], ["c0"])
    assert kept([-99e3, -67e3], [False, False], [True, True]) == ([False, False], [True, True], ["c0", "c1"])
    assert kept([99e3, -67e3], [True, False], [False, True]) == ([False, False], [False, False], ["", ""])


def test_different_step_structure_is_not_comparable() -> None:
    """Most collective calls per step without an (op, size, group) twin: the steps are built differently."""
    import pandas as pd

    from scope.compare import _collective_structure
    from scope.compare.collectives import CollectiveChanges

    matched = pd.DataFrame({"a_per_step": [1.0], "b_per_step": [1.0]})
    only = pd.DataFrame({"per_step": [6.0]})
    assert "different step structure" in _collective_structure(CollectiveChanges(matched, only, only))
    assert _collective_structure(CollectiveChanges(matched, only.iloc[:0], only.iloc[:0])) == ""


@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("5", 0.05), (" 12.5 % ", 0.125), ("0", 0.0)])
def test_fail_if_slower_threshold_parsing(text: str, value: float) -> None:
    from scope.cli.compare import threshold

    assert threshold(text) == pytest.approx(value)


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_kernels_renamed_on_another_gpu_match_by_their_launching_op(tmp_path: Path) -> None:
    """HTA's TraceDiff pair: the same model on an A100 (control) and a V100 (test, with torch.compile):
    cuBLAS/CUTLASS kernels have other names on each GPU, and match through the aten op that launched them."""
    control, test = shared_data("hta", "trace_diff", "control"), shared_data("hta", "trace_diff", "test")
    runs = {}
    for name, src in (("control", control), ("test", test)):
        (tmp_path / name).mkdir()
        for trace in src.iterdir():
            (tmp_path / name / trace.name).symlink_to(trace)
        runs[name] = tmp_path / name
    code, data = compare_json(tmp_path, runs["control"], runs["test"])
    assert code == EXIT_OK and data["comparable"], data["not_comparable"]
    ops = data["ops"]
    assert ops["matched_share_a"] > 0.9 and ops["matched_share_b"] > 0.9
    by_parent = {r["matched_by"]: r for r in ops["changed"] if r["matched_by"].startswith("launched by")}
    mm = by_parent["launched by aten::mm"]
    assert mm["name"].startswith("ampere_") and mm["name_b"].startswith("volta_"), mm
    assert "launched by aten::addmm" in by_parent
    # torch.compile on the test side: its compiled regions and graph launches are only in B
    only_b = {r["name"] for r in ops["only_in_b"]}
    assert "CompiledFunction" in only_b and "cudaGraphLaunch" in only_b
    assert "different ranks (A 3, B 1)" in data["ranks"]["why_not"]


def test_an_unusable_run_is_named(dataloader: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(dataloader / "num_workers_0"), str(tmp_path / "empty"), "-q"]) == EXIT_INPUT
    assert "run B: " in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing"), str(dataloader / "num_workers_0"), "-q"]) == EXIT_INPUT
    assert "run A: " in capsys.readouterr().err
