"""Hostile values in every record scope reads back: the hook's attempts, progress and checkpoint records,
heartbeats, the launcher's attempt records, control files (scope.recordio, analyzers/goodput/records.py,
collectors/hook/lifecycle.py, collectors/watchdog.py).

Wrong types, NaN and infinities, huge integers, 4,000-digit numbers, FIFOs, links to /dev/zero and big
files: the answer is a named warning and a partial result, never a hang, a crash, or a number outside its
possible range (goodput shares within 0-100%, summing to the wall time). Derandomized and small.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scope.analyzers.goodput import goodput
from scope.collectors.watchdog import read_heartbeats

from scope.recordio import read_json
from tests.helpers import fuzz_settings

FAST = fuzz_settings(40)
S = 10**9
T0 = 1_700_000_000 * S
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([10**12, -1, 2**63, 10**4000, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _attempts(rank: int) -> list[dict[str, Any]]:
    return [
        {"event": "start", "attempt": 0, "pid": 100 + rank, "time_ns": T0, "proc_start_ns": T0 - S, "world_size": 2},
        {"event": "end", "attempt": 0, "state": "exited", "step": 20, "global_step": 20, "time_ns": T0 + 30 * S,
         "last_step_ns": T0 + 29 * S},
    ]  # fmt: skip


def _progress() -> list[dict[str, Any]]:
    return [{"step": s, "global_step": s, "t_ns": T0 + (5 + s) * S, "attempt": 0, "data_ns": 10**6} for s in range(21)]


def _checkpoints() -> list[dict[str, Any]]:
    return [{"op": "save", "api": "torch.save", "path": "/c/a.pt", "step": 10, "global_step": 10, "attempt": 0,
             "start_ns": T0 + 15 * S, "dur_ns": S // 2, "bytes": 10**6, "last_step_ns": T0 + 15 * S}]  # fmt: skip


def _launcher() -> list[dict[str, Any]]:
    return [{"start_ns": T0, "end_ns": T0 + 31 * S, "world_size": 2,
             "ranks": [{"rank": r, "pid": 100 + r, "exit_code": 0} for r in (0, 1)]}]  # fmt: skip


FILES: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "ranks/0/attempts.jsonl": lambda: _attempts(0),
    "ranks/1/attempts.jsonl": lambda: _attempts(1),
    "ranks/0/progress.jsonl": _progress,
    "ranks/0/checkpoints.jsonl": _checkpoints,
    "hosts/h/attempts.jsonl": _launcher,
}


def _write_run(root: Path, records: dict[str, list[dict[str, Any]]]) -> None:
    for rel, recs in records.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def _within(fn: Callable[[], Any], seconds: float = 30.0) -> Any:
    """FN's result; fails (instead of hanging the suite) when it has not returned in SECONDS."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"no answer in {seconds:.0f} s: a reader blocked or ran away")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _check_goodput(run: Path) -> Any:
    report = _within(lambda: goodput(run), 90)
    acc = report.acc
    assert math.isfinite(acc.wall_s) and acc.wall_s >= 0
    for name, seconds in acc.buckets.items():
        assert math.isfinite(seconds) and 0 <= seconds <= acc.wall_s * (1 + 1e-9) + 1e-9, (name, seconds, acc.wall_s)
    assert sum(acc.buckets.values()) == pytest.approx(acc.wall_s, rel=1e-6, abs=1e-6)
    if report.goodput_pct is not None:
        assert 0 <= report.goodput_pct <= 100 + 1e-9
    assert acc.steps_redone >= 0
    for rank in report.ranks.values():
        assert len(rank["last_steps"]) <= 10_000
    return report


@FAST
@given(st.sampled_from(sorted(FILES)), st.data())
@example("ranks/0/attempts.jsonl", None)
def test_goodput_from_records_with_hostile_values(
    tmp_path_factory: pytest.TempPathFactory, rel: str, data: Any
) -> None:
    """One record of one file with one hostile value: goodput still answers, in range, and names the file."""
    records = {name: make() for name, make in FILES.items()}
    recs = records[rel]
    if data is None:  # the issue's own case: an attempt number a list of that length would not fit in memory
        recs[0]["attempt"] = 10**12
    else:
        rec = data.draw(st.sampled_from(recs))
        key = data.draw(st.sampled_from(sorted(rec)))
        rec[key] = data.draw(HOSTILE)
    run = tmp_path_factory.mktemp("run")
    _write_run(run, records)
    report = _check_goodput(run)
    changed = json.dumps(records[rel]) != json.dumps(FILES[rel]())
    if changed and any(rel in w for w in report.warnings):
        assert any("impossible" in w or "unreadable" in w for w in report.warnings if rel in w), report.warnings


@pytest.mark.parametrize("rel", sorted(FILES))
# "huge" reads 300 MiB per file (six files): the slow tier
@pytest.mark.parametrize("kind", ["fifo", "dev_zero", pytest.param("huge", marks=pytest.mark.slow)])
def test_a_record_file_that_is_a_fifo_a_link_to_dev_zero_or_huge(tmp_path: Path, rel: str, kind: str) -> None:
    """A FIFO is skipped by name, /dev/zero read no further than a bound, a file of 300 MiB in one line
    costs one skipped line: goodput answers within seconds with the other files' result."""
    _write_run(tmp_path, {name: make() for name, make in FILES.items()})
    path = tmp_path / rel
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as fh:  # sparse: 300 MiB of NUL bytes, no newline
            fh.truncate(300 << 20)
    started = time.monotonic()
    report = _check_goodput(tmp_path)
    assert time.monotonic() - started < 20
    said = " ".join(report.warnings)
    if kind != "huge" or rel != "hosts/h/attempts.jsonl":
        assert str(path) in said, said
    if kind == "fifo":
        assert "a FIFO, not a regular file; skipped" in said
    elif kind == "dev_zero":
        assert "a character device, not a regular file; skipped" in said


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_progress_records_are_read_in_bounded_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress lines are streamed and thinned to MAX_PROGRESS_MARKS marks, with a warning: memory stays
    that of the cap, not of the file (10^7 lines took 8 GB). Here 200,000 lines under a cap of 2,000 (the
    real cap, 100,000, against 10^7 lines would hold the suite for minutes); the step count and the wall
    time stay exact."""
    import tracemalloc

    from scope.analyzers.goodput import record_files

    monkeypatch.setattr(record_files, "MAX_PROGRESS_MARKS", 2000)
    _write_run(tmp_path, {name: make() for name, make in FILES.items() if "progress" not in name})
    n = 200_000
    recs = _attempts(0)
    recs[1].update(step=n, global_step=n, time_ns=T0 + (n + 10) * S, last_step_ns=T0 + (n + 5) * S)
    (tmp_path / "ranks/0/attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    line = '{{"step": {0}, "global_step": {0}, "t_ns": {1}, "attempt": 0, "data_ns": 1000}}\n'
    with open(tmp_path / "ranks/0/progress.jsonl", "w") as fh:
        fh.write("".join(line.format(s, T0 + (5 + s) * S) for s in range(1, n + 1)))
    tracemalloc.start()
    try:
        report = _check_goodput(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 60 << 20, f"{peak >> 20} MiB"
    assert report.acc.steps_completed == n
    assert report.wall_s == pytest.approx(n + 11, abs=1)
    assert any("200,000 progress records" in w for w in report.warnings), report.warnings


@FAST
@given(st.sampled_from(["rank", "step", "pid", "time_ns", "steps_per_s", "attempt"]), HOSTILE)
def test_heartbeats_with_hostile_values(tmp_path_factory: pytest.TempPathFactory, key: str, value: Any) -> None:
    """The watchdog, attach and the launcher read heartbeats: a hostile one is skipped, the others kept."""
    run = tmp_path_factory.mktemp("beats")
    for rank in (0, 1):
        (run / "ranks" / str(rank)).mkdir(parents=True)
        beat = {"rank": rank, "step": 5, "pid": 10 + rank, "time_ns": T0, "steps_per_s": 2.0, "state": "running"}
        if rank == 1:
            beat[key] = value
        (run / "ranks" / str(rank) / "heartbeat.json").write_text(json.dumps(beat))
    (run / "ranks" / "2").mkdir()
    os.mkfifo(run / "ranks" / "2" / "heartbeat.json")  # never waited on
    beats = _within(lambda: read_heartbeats(run), 10)
    assert 0 in beats and set(beats) <= {0, 1}
    for beat in beats.values():
        assert type(beat["step"]) is int and 0 <= beat["step"] < 2**53
        rate = beat.get("steps_per_s")
        assert rate is None or (math.isfinite(rate) and rate >= 0)


def test_small_json_reads_are_guarded(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "big.json").write_text("[" + "0," * (1 << 20) + "0]")
    for name in ("fifo.json", "zero.json", "big.json"):
        assert _within(lambda n=name: read_json(tmp_path / n), 5) is None


@FAST
@given(st.sampled_from(["attempt", "pid", "time_ns", "event"]), HOSTILE)
def test_the_hooks_own_start_reads_hostile_attempt_records(
    tmp_path_factory: pytest.TempPathFactory, key: str, value: Any
) -> None:
    """The hook numbers its attempt from its own earlier records: a hostile one is skipped, never raised
    into the job, and the attempt number stays small."""
    from scope.collectors.hook.lifecycle import LifeRecorder

    run = tmp_path_factory.mktemp("hookrun")
    recs = _attempts(0)
    recs[0][key] = value
    _write_run(run, {"ranks/0/attempts.jsonl": recs})
    said: list[str] = []
    log = types.SimpleNamespace(info=said.append, error=lambda what, exc=None: said.append(f"{what}: {exc}"))
    recorder = LifeRecorder(run, log, lambda: 0, lambda: None)
    _within(lambda: recorder.start(0), 10)
    assert 0 <= recorder.attempt <= 1
    assert not any("recording the attempt start" in s for s in said), said


def test_node_records_and_heartbeats_read_by_the_launcher_are_guarded(tmp_path: Path) -> None:
    """The launcher merges nodes/*.json and reads each rank's heartbeat for its backend: a FIFO or a link to
    /dev/zero there is skipped, never waited on."""
    from scope.collectors.launch_manifest import _backend_from_heartbeats, read_nodes

    from scope.manifest import RankInfo, RunManifest

    (tmp_path / "nodes").mkdir()
    os.mkfifo(tmp_path / "nodes" / "a.json")
    (tmp_path / "nodes" / "b.json").symlink_to("/dev/zero")
    (tmp_path / "ranks" / "0").mkdir(parents=True)
    os.mkfifo(tmp_path / "ranks" / "0" / "heartbeat.json")
    assert _within(lambda: read_nodes(tmp_path), 10) == []
    manifest = RunManifest(ranks=[RankInfo(rank=0)])
    assert _within(lambda: _backend_from_heartbeats(tmp_path, manifest), 10) == ""
