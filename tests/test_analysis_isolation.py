"""One analyzer that raises on a value it did not expect costs only its own result (scope.analysis): the
warning names it, the run is partial (exit 4), and every other analyzer's findings are kept.

The values are the adversarial round's (issue 41, item 7), written into scope's own records of the
recorded straggler run: an attempt number given as a string or null, a 4,000-digit step, a launcher
record's `ranks` given as a string. Each crashed the whole of `scope analyze` with "internal error"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_PARTIAL
from tests.conftest import ROOT

HUGE = "9" * 4000
START = {"event": "start", "attempt": 0, "time_ns": 1_000, "pid": 5}
STEP = json.dumps({"step": 5, "time_ns": 2_000})
# (ranks/0/attempts.jsonl, ranks/0/progress.jsonl, hosts/vm/attempts.jsonl) lines
HOSTILE: dict[str, tuple[list[str], list[str], list[str]]] = {
    "attempt as a string": ([json.dumps({**START, "attempt": "x"})], [STEP], []),
    "attempt null": ([json.dumps({**START, "attempt": None})], [STEP], []),
    "4,000-digit step": ([json.dumps(START)], [STEP, f'{{"step": {HUGE}, "time_ns": 2500}}'], []),
    "ranks as a string": ([json.dumps(START)], [STEP], [json.dumps({"attempt": 0, "ranks": "abc"})]),
}


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("isolation") / "straggler"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    return run


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_one_analyzer_raising_costs_only_its_own_result(
    straggler: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    own, progress, launcher = HOSTILE[case]
    (straggler / "ranks" / "0" / "attempts.jsonl").write_text("\n".join(own) + "\n")
    (straggler / "ranks" / "0" / "progress.jsonl").write_text("\n".join(progress) + "\n")
    hosts = straggler / "hosts" / "vm"
    hosts.mkdir(parents=True, exist_ok=True)
    (hosts / "attempts.jsonl").write_text("\n".join(launcher) + "\n")
    out = straggler / "analysis.json"
    code = main(["analyze", str(straggler), "-q", "--json", str(out)])
    err = capsys.readouterr().err
    assert "internal error" not in err
    data = json.loads(out.read_text())
    failed = [w for w in data["warnings"] if "analysis stopped on a value" in w]
    if failed:  # the goodput reader may learn to skip the value itself (helper goodput); if not, isolation holds
        assert code == EXIT_PARTIAL, err
        assert all("the goodput analysis" in w for w in failed), failed
    truth = json.loads((straggler / "ground_truth.json").read_text())
    stragglers = [f for f in data["findings"] if f["kind"] == "straggler"]
    assert stragglers and truth["fault_rank"] in stragglers[0]["ranks"], [f["kind"] for f in data["findings"]]


def test_a_raising_analyzer_is_named_and_the_others_kept(
    straggler: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever an analyzer raises (here a bug planted in the stall analyzer), the rest stands."""
    import scope.analyzers.stall as stall

    def broken(ctx: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(stall, "analyze", broken)
    for name in ("attempts.jsonl", "progress.jsonl"):
        (straggler / "ranks" / "0" / name).unlink(missing_ok=True)
    shutil.rmtree(straggler / "hosts", ignore_errors=True)
    out = straggler / "planted.json"
    code = main(["analyze", str(straggler), "-q", "--json", str(out)])
    data = json.loads(out.read_text())
    assert code == EXIT_PARTIAL, capsys.readouterr().err
    assert any("the stall analysis stopped" in w and "ZeroDivisionError" in w for w in data["warnings"])
    assert any(f["kind"] == "straggler" for f in data["findings"])


MANIFEST_FIELDS = {
    "world_size as a string": ("world_size", '"x"'),
    "a 5,000-digit start": ("start_ns", HUGE),
    "hosts as a string": ("hosts", '"abc"'),
    "a rank that is text": ("ranks", '[{"rank": "x", "host": "vm"}]'),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_FIELDS))
def test_a_run_json_field_of_the_wrong_type_costs_only_that_field(
    straggler: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """run.json with a value of the wrong type (each crashed `scope analyze` with "internal error"): the
    field is left out and said (exit 4), the traces are analyzed."""
    key, value = MANIFEST_FIELDS[case]
    manifest = straggler / "run.json"
    original = manifest.read_text()
    for name in ("attempts.jsonl", "progress.jsonl"):
        (straggler / "ranks" / "0" / name).unlink(missing_ok=True)
    shutil.rmtree(straggler / "hosts", ignore_errors=True)
    try:
        doc = json.loads(original)
        doc[key] = "\0HOSTILE\0"
        manifest.write_text(json.dumps(doc).replace(json.dumps("\0HOSTILE\0"), value))
        out = straggler / "hostile.json"
        code = main(["analyze", str(straggler), "-q", "--json", str(out)])
        err = capsys.readouterr().err
        assert code == EXIT_PARTIAL and "internal error" not in err, err
        data = json.loads(out.read_text())
        assert any(w.startswith(f"run.json: {key}") for w in data["warnings"]), data["warnings"]
        assert any(f["kind"] == "straggler" for f in data["findings"])
    finally:
        manifest.write_text(original)
