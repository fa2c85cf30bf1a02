"""Flight Recorder dumps: safe loading (pickle without globals, JSON), and who a hung job waits for.

The real dumps are nvidia-resiliency-ext's 16-rank Megatron MoE job (../shared/data/nvrx_fr), where
fault_injection.log names the ranks that were faulted.
"""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.reasoning.fr_analysis import analyze_dumps

from scope.errors import ScopeError
from scope.flight_recorder import FRDump, load_dump, looks_like_dump, rank_from_name
from tests.conftest import shared_data


def load_case(case: str) -> list[FRDump]:
    folder = shared_data("nvrx_fr", case)
    return [load_dump(p) for p in sorted(folder.glob("_dump_*"))]


def faulted_ranks(case: str) -> set[int]:
    text = (shared_data("nvrx_fr", case) / "fault_injection.log").read_text()
    return {int(r) for r in re.findall(r"Rank (\d+), fault_type", text)}


# ---- loading ---------------------------------------------------------------------------------------


def test_every_real_dump_loads_without_any_global() -> None:
    for case in ("gpu_error_1st", "lock_gil_1st"):
        dumps = load_case(case)
        assert sorted(d.rank for d in dumps) == list(range(16))
        assert all(d.version == "2.9" and d.pg_config for d in dumps)
        assert sum(len(d.entries) for d in dumps) > 100


def test_a_pickle_that_calls_code_is_refused_and_names_the_file(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, ("echo should-never-run",))

    path = tmp_path / "_dump_3"
    path.write_bytes(pickle.dumps({"version": "2.9", "entries": [Evil()]}))
    with pytest.raises(ScopeError) as err:
        load_dump(path)
    assert str(path) in err.value.message and "refusing global" in err.value.message


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (pickle.dumps({"entries": []})[:9], "truncated"),
        (b"{not json", "neither"),
        (pickle.dumps([1, 2, 3]), "not a Flight Recorder dump"),
    ],
)
def test_bad_dumps_give_a_clear_error(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "_dump_0"
    path.write_bytes(content)
    with pytest.raises(ScopeError) as err:
        load_dump(path)
    assert str(path) in err.value.message and problem in err.value.message


def test_json_dump_reads_like_the_pickle(tmp_path: Path) -> None:
    """torch's _dump_fr_trace_json writes numbers of pg_status as strings and lists for tuples."""
    src = shared_data("nvrx_fr", "lock_gil_1st", "_dump_8")
    raw = pickle.loads(src.read_bytes())  # our own test data: the safe loader is tested above
    raw["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in raw["pg_status"].items()}
    path = tmp_path / "nccl_trace_rank_8.json"
    path.write_text(json.dumps(raw))
    as_json, as_pickle = load_dump(path), load_dump(src)
    assert as_json.rank == 8 == as_pickle.rank
    assert as_json.pg_status == as_pickle.pg_status
    assert [e["collective_seq_id"] for e in as_json.entries] == [e["collective_seq_id"] for e in as_pickle.entries]
    assert looks_like_dump(path, path.read_bytes()[:4096])


def test_rank_comes_from_the_file_name() -> None:
    assert rank_from_name(Path("_dump_12")) == 12
    assert rank_from_name(Path("nccl_trace_rank_3.json")) == 3
    assert rank_from_name(Path("001-exit.pkl")) is None


# ---- analysis on the real dumps --------------------------------------------------------------------


def blamed(analysis: Any) -> set[int]:
    return {a.rank for a in analysis.anomalies if a.code.startswith("fr_")}


def test_gpu_error_names_rank_12_on_pg_74_all_to_all_and_reports_rank_14() -> None:
    analysis = analyze_dumps(load_case("gpu_error_1st"))
    culprit = [a for a in analysis.anomalies if a.code == "fr_not_joined"]
    assert [a.rank for a in culprit] == [12]
    d = culprit[0].details
    assert (d["pg"], d["op"], d["pg_desc"]) == ("74", "all_to_all", "EXPERT_MODEL_PARALLEL_GROUP")
    assert d["shape"] == "(4027x5120 BFloat16)" and d["seq"] == 20537 and d["waiting_ranks"] == [13, 15]
    stalled = [a for a in analysis.anomalies if a.code == "fr_gpu_stalled"]
    assert [a.rank for a in stalled] == [14]
    assert blamed(analysis) == faulted_ranks("gpu_error_1st") == {12, 14}


def test_lock_gil_names_ranks_9_and_14_on_pg_72_and_nobody_else() -> None:
    analysis = analyze_dumps(load_case("lock_gil_1st"))
    culprit = [a for a in analysis.anomalies if a.code == "fr_not_joined"]
    assert sorted(a.rank for a in culprit) == [9, 14]
    assert {(a.details["pg"], a.details["op"], a.details["seq"]) for a in culprit} == {("72", "all_to_all", 45265)}
    assert blamed(analysis) == faulted_ranks("lock_gil_1st")


def test_fr_table_has_every_rank_of_the_waited_group() -> None:
    analysis = analyze_dumps(load_case("lock_gil_1st"))
    rows = {(r["pg"], r["rank"]): r for r in analysis.rows}
    pg72 = {rank: rows[("72", rank)] for rank in range(8, 16)}
    assert {r: row["role"] for r, row in pg72.items() if row["role"] == "culprit"} == {9: "culprit", 14: "culprit"}
    assert pg72[9]["last_enqueued"] == 45264 and pg72[8]["last_enqueued"] == 45267
    assert pg72[8]["last_completed"] == 45264 and pg72[8]["last_enqueued_op"] == "all_to_all"


def test_diagnose_reports_one_finding_per_root_cause(tmp_path: Path) -> None:
    report = diagnose(shared_data("nvrx_fr", "gpu_error_1st"))
    assert report.findings[0].kind == "hang" and report.findings[0].ranks == [12]
    summary = report.findings[0].summary
    assert "Rank 12" in summary and "all_to_all" in summary and "PG 74" in summary and "4027x5120" in summary
    assert {r for f in report.findings for r in f.ranks} == {12, 14}
    # a dump is a pickle: cited by entry and call, never as 'file:line'
    assert all(re.match(r"^_dump_\d+, entry \d+: \w+ #\d+ on PG \d+", ev) for ev in report.findings[0].evidence)


# ---- synthetic dumps: missing ranks and desyncs ----------------------------------------------------


def entry(seq: int, op: str = "all_reduce", size: int = 4, done: bool = True, t: int = 0) -> dict[str, Any]:
    return {
        "record_id": seq,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": f"gloo:{op}",
        "time_created_ns": 10**18 + seq * 10**6 + t,
        "input_sizes": [[size]],
        "input_dtypes": ["Float"],
        "output_sizes": [[size]],
        "output_dtypes": ["Float"],
        "state": "scheduled",
        "retired": done,
        "timeout_ms": 10000,
        "is_p2p": False,
    }


def write_dumps(folder: Path, per_rank: dict[int, list[dict[str, Any]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rank, entries in per_rank.items():
        (folder / f"_dump_{rank}").write_bytes(
            pickle.dumps(
                {
                    "version": "2.10",
                    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
                    "pg_status": {},
                    "entries": entries,
                }
            )
        )


def test_a_rank_without_a_dump_that_everyone_waits_for_is_the_missing_rank(tmp_path: Path) -> None:
    waiting = [entry(1), entry(2), entry(3, done=False)]
    write_dumps(tmp_path, {0: waiting, 1: waiting, 3: waiting})
    report = diagnose(tmp_path)
    top = report.findings[0]
    assert top.kind == "missing_rank" and top.ranks == [2]
    assert "no Flight Recorder dump" in top.summary and "all_reduce #3" in top.summary


def test_a_rank_calling_another_size_is_the_desync(tmp_path: Path) -> None:
    good = [entry(1), entry(2, size=4, done=False)]
    write_dumps(tmp_path, {0: good, 1: good, 2: [entry(1), entry(2, size=1024, done=False)], 3: good})
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "collective_mismatch" and top.ranks == [2]
    assert "[[1024]]" in top.summary and "[[4]]" in top.summary


@pytest.mark.parametrize("odd", [0, 3])
def test_with_two_dumps_the_desync_is_the_call_the_job_never_made_before(tmp_path: Path, odd: int) -> None:
    """Ranks 1 and 2 died first and wrote no dump; 0 and 3 disagree one to one. The job all-reduced
    4 elements every step before, never 1024: the rank calling 1024 is the desync, whichever it is."""
    steps = [entry(1, size=99), entry(2, size=4), entry(3, size=99)]
    normal, desync = [*steps, entry(4, size=4, done=False)], [*steps, entry(4, size=1024, done=False)]
    write_dumps(tmp_path, {0: desync if odd == 0 else normal, 3: desync if odd == 3 else normal})
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "collective_mismatch" and top.ranks == [odd]
    assert "[[1024]] while the other ranks used [[4]]" in top.summary


def test_with_two_dumps_and_no_habit_to_go_by_both_sides_are_suspect(tmp_path: Path) -> None:
    """Neither size was called before: nothing tells the program's call from the desync."""
    write_dumps(tmp_path, {0: [entry(1), entry(2, size=8, done=False)], 3: [entry(1), entry(2, size=16, done=False)]})
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "collective_mismatch" and top.ranks == [0, 3]


def test_a_rank_that_stopped_short_is_the_hang_culprit(tmp_path: Path) -> None:
    ahead = [entry(1), entry(2), entry(3, done=False)]
    write_dumps(tmp_path, {0: ahead, 1: [entry(1), entry(2)], 2: ahead, 3: ahead})
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "hang" and top.ranks == [1]
    assert top.metrics["details"]["waiting_ranks"] == [0, 2, 3]


# ---- one bad dump costs only itself ----------------------------------------------------------------


def _copy_with_damaged_dump(tmp_path: Path, damage: Any) -> Path:
    """gpu_error_1st with rank 3's dump (not a faulted rank) rewritten after DAMAGE(raw dump)."""
    from scope.flight_recorder import _decode

    src = shared_data("nvrx_fr", "gpu_error_1st")
    out = tmp_path / "gpu_error_1st"
    out.mkdir()
    for f in src.iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    raw = _decode(out / "_dump_3", (out / "_dump_3").read_bytes())
    damage(raw)
    (out / "_dump_3").write_bytes(pickle.dumps(raw, protocol=4))
    return out


HUGE = 10**5000 - 1  # past the 4,300 digits Python will write as text


@pytest.mark.parametrize(
    "where",
    ["input_sizes", "timeout_ms", "version", "record_id"],
)
def test_a_5000_digit_integer_in_one_dump_costs_at_most_that_dump(tmp_path: Path, where: str) -> None:
    def damage(raw: dict[str, Any]) -> None:
        entry = raw["entries"][-1]
        if where == "input_sizes":
            entry["input_sizes"] = [[HUGE, 3]]
        elif where == "version":
            raw["version"] = HUGE
        else:
            entry[where] = HUGE

    report = diagnose(_copy_with_damaged_dump(tmp_path, damage))
    assert report.findings and report.findings[0].kind == "hang" and report.findings[0].ranks == [12]
    lost = [w for w in report.warnings if w.partial]
    assert all("_dump_3" in str(w) for w in lost), [str(w) for w in lost]


def test_a_dump_the_analysis_cannot_use_is_named_and_the_other_15_still_speak() -> None:
    """A dump that loads but breaks the cross-rank analysis (here a status whose sequence is text) is tried
    alone, named, and left out; the other dumps' diagnosis stands. Here one dimension past Python's 4,300
    digits, planted after loading (the loader refuses it since): it lost all 16 dumps' diagnosis."""
    from scope.analyzers.diagnose.post_mortem import _analyze_sparing

    dumps = load_case("gpu_error_1st")
    bad = next(d for d in dumps if d.rank == 3)
    for entry in bad.entries:
        entry["input_sizes"] = [[HUGE]]
    analysis, lost = _analyze_sparing(dumps, set(range(16)), {})
    assert analysis is not None and [str(w) for w in lost] and all("_dump_3" in str(w) for w in lost)
    culprit = [a for a in analysis.anomalies if a.code == "fr_not_joined"]
    assert [a.rank for a in culprit] == [12]
