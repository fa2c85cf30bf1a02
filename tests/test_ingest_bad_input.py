"""Bad input gives a clear message naming the file; nothing already ingested is lost."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL, ScopeError
from scope.ingest import ingest
from scope.ingest.job import RankJob, RankOutcome
from scope.store import Store


def _trace(rank: int, n: int = 50, world: int = 2) -> dict:
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 1000,
            "dur": 10 * n + 10,
        }
    ]
    for i in range(n):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"aten::op{i % 5}",
                "pid": 1,
                "tid": 1,
                "ts": 1001 + 10 * i,
                "dur": 5,
                "args": {"External id": i, "Input Dims": [[4, 4]]},
            }
        )
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world},
        "traceEvents": events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }


def _write(path: Path, data: dict, gz: bool = False) -> Path:
    text = json.dumps(data, indent=1).encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


def test_truncated_trace_is_salvaged_with_a_warning_naming_file_and_offset(tmp_path: Path) -> None:
    full = json.dumps(_trace(0, n=2000), indent=1).encode()
    cut = full[: len(full) * 2 // 3]
    (tmp_path / "rank0.json").write_bytes(cut)
    report = ingest(tmp_path, tmp_path / "store")
    (meta,) = report.store.meta["ranks"].values()
    assert meta["salvaged"]
    assert 1000 < meta["n_events"] < 2001
    warning = next(w for w in map(str, report.warnings) if "truncated" in w)
    assert "rank0.json" in warning and "byte" in warning
    assert report.partial


def test_truncated_gzip_is_salvaged(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(_trace(0, n=20000), indent=1).encode())
    (tmp_path / "rank0.json.gz").write_bytes(data[: len(data) // 2])
    report = ingest(tmp_path, tmp_path / "store")
    (meta,) = report.store.meta["ranks"].values()
    assert meta["n_events"] > 100
    assert any("gzip stream ends early" in w for w in map(str, report.warnings))


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty file"),
        (b"\x1f\x8b\x08\x00garbage-not-deflate", "corrupt gzip"),
        (b'{"hello": [1, 2, 3]}', "not a Kineto trace"),
        (b"[1, 2, 3]", "not a Kineto trace"),
    ],
    ids=["empty", "corrupt-gzip", "json-not-a-trace", "json-array"],
)
def test_unusable_file_is_named_and_the_good_rank_is_kept(tmp_path: Path, content: bytes, problem: str) -> None:
    _write(tmp_path / "rank0.json", _trace(0))
    bad = tmp_path / "rank1.json.gz" if content.startswith(b"\x1f\x8b") else tmp_path / "rank1.json"
    bad.write_bytes(content)
    report = ingest(tmp_path, tmp_path / "store")
    assert report.store.ranks == [0]
    assert report.store.meta["ranks"]["0"]["n_events"] == 51
    assert any(bad.name in e and problem in e for e in report.errors), report.errors
    assert report.partial


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
def test_header_nested_deeper_than_the_decoder_recurses_is_ignored(
    tmp_path: Path, native: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by scripts/fuzz_native.py: msgspec raises RecursionError, not DecodeError, on such nesting."""
    monkeypatch.setenv("SCOPE_NATIVE", native)
    text = json.dumps(_trace(0)).replace('"schemaVersion": 1', '"junk": ' + "[" * 20_000 + "]" * 20_000, 1)
    (tmp_path / "rank0.json").write_text(text)
    report = ingest(tmp_path, tmp_path / "store", force=True)
    assert report.store.meta["ranks"]["0"]["n_events"] == 51


def test_a_bug_met_on_one_rank_costs_only_that_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception while ingesting one rank is reported as an internal error naming its
    files; the other ranks are ingested and the run is partial, not lost."""
    import scope.ingest.native_rank as native_rank
    import scope.ingest.rank as python_rank

    for module, name in ((native_rank, "ingest_rank_native"), (python_rank, "ingest_rank_python")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda job, _orig=original: _raise_on_rank_1(job, _orig))
    _write(tmp_path / "rank0.json", _trace(0))
    _write(tmp_path / "rank1.json", _trace(1))
    report = ingest(tmp_path, tmp_path / "store")
    assert report.store.ranks == [0]
    (error,) = [e for e in report.errors if "internal error" in e]
    assert "rank1.json" in error and "ValueError: simulated parser bug" in error
    assert report.partial


def _raise_on_rank_1(job: RankJob, original: Callable[[RankJob], RankOutcome]) -> RankOutcome:
    if job.rank == 1:
        raise ValueError("simulated parser bug")
    return original(job)


def test_only_bad_files_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "rank0.json").write_bytes(b"")
    with pytest.raises(ScopeError, match=r"rank0\.json: empty file"):
        ingest(tmp_path, tmp_path / "store")


def test_missing_distributed_info_falls_back_to_the_file_name(tmp_path: Path) -> None:
    data = _trace(0)
    del data["distributedInfo"]
    _write(tmp_path / "trainer_rank-3.json", data)
    _write(tmp_path / "other.json", data)
    report = ingest(tmp_path, tmp_path / "store")
    assert 3 in report.store.ranks
    assert any("other.json: no rank in distributedInfo or in the file name" in w for w in map(str, report.warnings))


def test_duplicate_ranks_and_gaps_are_reported(tmp_path: Path) -> None:
    _write(tmp_path / "a.json", _trace(0, world=8))
    _write(tmp_path / "b.json", _trace(0, world=8))
    _write(tmp_path / "c.json", _trace(2, world=8))
    report = ingest(tmp_path, tmp_path / "store")
    text = "\n".join(map(str, report.warnings))
    assert "rank 0 has 2 trace files (a.json, b.json)" in text
    assert "missing ranks 1, 3-7" in text


def test_traces_of_different_jobs_are_refused_naming_each_jobs_files(tmp_path: Path) -> None:
    """One rule with operation timelines (scope.ingest.optrace): two jobs in one folder are not one run."""
    from scope.errors import MixedJobsError

    _write(tmp_path / "a.json", _trace(0, world=4))
    _write(tmp_path / "c.json", _trace(2, world=8))
    with pytest.raises(
        MixedJobsError, match=r"2 different jobs \(world_size 4 .*: a\.json; world_size 8 .*: c\.json\)"
    ):
        ingest(tmp_path, tmp_path / "store")
    assert not (tmp_path / "store").exists()


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "rank0.json", _trace(0))
    assert main(["ingest", str(tmp_path), "-q"]) == EXIT_OK
    (tmp_path / "rank1.json").write_bytes(b"{not json")
    assert main(["ingest", str(tmp_path), "-q"]) == EXIT_PARTIAL
    assert "rank1.json" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "missing")]) == EXIT_INPUT
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["ingest"]) == 2


def test_store_is_reused_unless_inputs_change(tmp_path: Path) -> None:
    for r in range(3):
        _write(tmp_path / f"rank{r}.json", _trace(r, world=3))
    first = ingest(tmp_path, tmp_path / "store")
    assert first.parsed == [0, 1, 2]
    again = ingest(tmp_path, tmp_path / "store")
    assert again.parsed == [] and again.reused == [0, 1, 2]
    _write(tmp_path / "rank1.json", _trace(1, n=80, world=3))
    changed = ingest(tmp_path, tmp_path / "store")
    assert changed.parsed == [1] and changed.reused == [0, 2]
    assert changed.store.meta["ranks"]["1"]["n_events"] == 81
    (tmp_path / "rank2.json").unlink()
    dropped = ingest(tmp_path, tmp_path / "store")
    assert dropped.store.ranks == [0, 1]
    assert not (tmp_path / "store" / "events" / "rank-00002.parquet").exists()


def test_a_same_size_edit_in_the_middle_with_its_mtime_put_back_is_read_again(tmp_path: Path) -> None:
    """A restored backup or `cp -p` of an edited trace: same size, same mtime, only the middle differs.
    The digest of the head and tail alone kept the stale rank."""
    import os

    body = json.dumps(_trace(0, n=4000), indent=1).encode()
    (tmp_path / "rank0.json").write_bytes(body)
    first = ingest(tmp_path, tmp_path / "store")
    assert first.parsed == [0] and len(body) > 300_000  # the middle is beyond the head and tail samples
    st = (tmp_path / "rank0.json").stat()
    middle = body.index(b'"aten::op', len(body) // 2)
    edited = body[:middle] + b'"aten::pq' + body[middle + len(b'"aten::op') :]  # same size
    (tmp_path / "rank0.json").write_bytes(edited)
    os.utime(tmp_path / "rank0.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    again = ingest(tmp_path, tmp_path / "store")
    assert again.parsed == [0] and again.reused == []
    names = set(again.store.read_events(0, columns=["name"]).column("name").to_pylist())
    assert any(str(n).startswith("aten::pq") for n in names)


def test_a_store_fingerprinted_another_way_is_read_again_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older scope's store (blake2b digests, no digest named): every rank is read again, once, with a
    note; before, a full re-ingest (minutes on a large store) came with no reason."""
    for r in range(2):
        _write(tmp_path / f"rank{r}.json", _trace(r))
    store = tmp_path / "store"
    assert ingest(tmp_path, store).parsed == [0, 1]
    meta_path = store / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert meta["classification"]["digest"] == "sha1-96"
    del meta["classification"]["digest"]  # as an older scope wrote it, with its own digests
    for entry in meta["ranks"].values():
        entry["inputs"] = [[path, size, mtime, "b" * 24] for path, size, mtime, _ in entry["inputs"]]
    meta_path.write_text(json.dumps(meta))
    assert main(["ingest", str(tmp_path), "--store", str(store)]) == EXIT_OK
    captured = capsys.readouterr()
    assert "another fingerprint (an older scope's blake2b): re-reading 2 files" in captured.err
    assert "parsed: 2  reused: 0" in captured.out
    assert main(["ingest", str(tmp_path), "--store", str(store)]) == EXIT_OK
    captured = capsys.readouterr()
    assert "fingerprint" not in captured.err and "parsed: 0  reused: 2" in captured.out


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
def test_comm_args_nested_past_the_decoder_limit_cost_only_their_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str
) -> None:
    """`"Process Group Ranks": "[[[[..."` (found by scripts/fuzz_native.sh) raised RecursionError from the
    JSON decoder and lost the whole rank as an internal error."""
    monkeypatch.setenv("SCOPE_NATIVE", native)
    trace = _trace(0, world=1)
    deep = "[" * 5000 + "]" * 5000
    trace["traceEvents"].append(
        {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 5, "dur": 1,
         "args": {"Collective name": "allreduce", "Process Group Ranks": deep, "Input Dims": deep}}
    )  # fmt: skip
    _write(tmp_path / "rank0.json", trace)
    report = ingest(tmp_path, tmp_path / "store")
    assert report.parsed == [0] and not report.errors
    assert report.store.meta["ranks"]["0"]["n_events"] == len(trace["traceEvents"])


@pytest.mark.parametrize("native", ["1", "0"], ids=["native", "python"])
def test_a_name_with_bytes_that_are_not_utf8_costs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, native: str
) -> None:
    """A damaged byte inside an event name (a plain trace's bit flip): the event is kept, its name reads
    with U+FFFD where the bytes were, and the analysis goes on. The native core wrote the raw bytes into
    Parquet's UTF-8 column, and the analysis failed as a bug in scope on its first frame."""
    monkeypatch.setenv("SCOPE_NATIVE", native)
    for rank in (0, 1):
        text = json.dumps(_trace(rank), indent=1).encode()
        bad = b"aten::op\x8f3" if rank else b"aten::op\xe2\x823"  # a stray byte; a cut 3-byte sequence
        (tmp_path / f"rank{rank}.json").write_bytes(text.replace(b"aten::op3", bad))
    assert main(["analyze", str(tmp_path), "--store", str(tmp_path / "store"), "-q"]) == EXIT_OK
    assert "unexplained_time ranks 0, 1" in capsys.readouterr().out  # both ranks analyzed
    store = Store.open(tmp_path / "store")
    for rank in (0, 1):
        names = set(store.read_events(rank, columns=["name"]).column("name").to_pylist())
        assert "aten::op\ufffd3" in names and len(names) == 6, names


def test_a_trace_without_step_marks_is_not_said_to_be_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ProfilerStep marks: the trace is one window, analyzed; with nothing abnormal in it the verdict
    is that, not "Nothing analyzed: no trace ... could be read"."""
    from scope.result import NOTHING_READ

    for rank in (0, 1):
        trace = _trace(rank)
        trace["traceEvents"] = trace["traceEvents"][1:]
        _write(tmp_path / f"rank{rank}.json", trace)
    assert main(["analyze", str(tmp_path), "--store", str(tmp_path / "store"), "-q"]) == EXIT_OK
    out = capsys.readouterr().out
    assert NOTHING_READ not in out and "Per rank" in out, out
