"""Property-based fuzz of every Python-side reader and of `scope diagnose` on damaged inputs.

Inputs are real files (the sample hang run, the RAS captures) damaged by hypothesis: truncated, bytes
flipped, slices duplicated or dropped, junk spliced in. The property: no internal error (a reader
returns its result or raises ScopeError naming the file), and every damaged file is accounted for
(read, or named as unreadable). Derandomized (a fixed seed) and small: a few seconds in all.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.readers.inputs import Job, _scan_error_file
from scope.analyzers.diagnose.readers.ras import parse_ras
from scope.analyzers.diagnose.readers.ras_evidence import ras_anomalies
from scope.analyzers.diagnose.reasoning.file_reading import read_text
from scope.collectors.watchdog import read_heartbeats

from scope.cli import main
from scope.errors import EXIT_OK, EXIT_PARTIAL, ScopeError
from scope.flight_recorder import load_dump
from scope.manifest import read_manifest
from tests.helpers import fuzz_settings

ROOT = Path(__file__).resolve().parents[1]
HANG = ROOT / "sample_traces" / "hang"
RAS = Path(__file__).parent / "data" / "ras"
FAST = fuzz_settings(40)
JUNK = st.sampled_from(
    [b"\x00", b"\xff\xfe", b"\x80\x04", b"[" * 3000, b"{" * 3000, b'"entries": ', b"\n#0-0 (ab) MISMATCH\n", b"NaN"]
)


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` after one to three damages: truncation, a flipped byte, a dropped or doubled slice, junk."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, max(len(out) - 1, 0)))
        j = draw(st.integers(i, min(len(out), i + 512)))
        op = draw(st.sampled_from(["truncate", "flip", "drop", "double", "junk"]))
        if op == "truncate":
            del out[i:]
        elif op == "flip" and out:
            out[i] ^= draw(st.integers(1, 255))
        elif op == "drop":
            del out[i:j]
        elif op == "double":
            out[i:i] = out[i:j]
        else:
            out[i:i] = draw(JUNK)
    return bytes(out)


def _real(path: Path) -> bytes:
    return path.read_bytes()


DUMP = HANG / "ranks" / "2" / "fr" / "001-hang.pkl"
JSON_DUMP = json.dumps(
    {
        "version": "2.10",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "pg_status": {"0": {"last_enqueued_collective": 3}},
        "entries": [
            {
                "record_id": 0,
                "pg_id": 0,
                "process_group": ["0", "default_pg"],
                "collective_seq_id": 3,
                "profiling_name": "nccl:all_reduce",
                "input_sizes": [[4]],
                "state": "scheduled",
            }
        ],
    }
).encode()


DEEP = b"[" * 5000 + b"]" * 5000


def _bomb(cyclic: bool = False) -> bytes:
    """Nested shared lists: 2^60 values when walked (the adversarial round's pickle bomb class)."""
    nested: list = []
    for _ in range(60):
        nested = [nested, nested]
    if cyclic:
        nested.append(nested)
    return pickle.dumps({"version": "2.4", "pg_config": {"0": {"ranks": nested}}, "entries": [{}]}, protocol=2)


@settings(FAST, max_examples=80)
@given(st.one_of(damaged(_real(DUMP)), damaged(JSON_DUMP), st.binary(max_size=256)))
@example(JSON_DUMP.replace(b"[[4]]", DEEP))
@example(b'{"version": "2", "entries": ' + DEEP + b"}")
@example(_bomb())
@example(_bomb(cyclic=True))
def test_flight_recorder_loader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "_dump_0"
    path.write_bytes(data)
    try:
        dump = load_dump(path)
    except ScopeError as exc:
        assert str(path) in exc.message
    else:
        assert isinstance(dump.entries, list)


LOGS = [
    HANG / "ranks" / "2" / "stderr.log",
    HANG / "ranks" / "2" / "stacks" / "001-hang.txt",
    HANG / "ranks" / "0" / "hook.log",
    RAS / "incomplete_dead.txt",
]


@FAST
@given(st.sampled_from(LOGS).flatmap(lambda p: damaged(_real(p))))
@example(b"\x1b]0;title\x07\x1b[2J\x1b[31m[rank3]:\x1b[0m RuntimeError: x\n\x9b2J\r\x00")  # escapes
@example(b"[scope hook] not active: ModuleNotFoundError: x\n2026-01-01T00:00:00 [scope sidecar] OSError\n")
@example(("\ufeffstep\n" + "[" * 3000).encode())  # deep brackets in a log line
def test_log_stack_and_kmsg_scanner(data: bytes) -> None:
    scan = read_text(data.decode("utf-8", errors="replace"), "x.log", None, None, 2026)
    assert all(a.file == "x.log" for a in scan.anomalies)


@FAST
@given(st.sampled_from(sorted(RAS.glob("*.[tjl]*[tgn]"))).flatmap(lambda p: damaged(_real(p))))
@example(b'{"nccl_version": "2.28.9", "communicators": [' + DEEP + b"]}")
def test_ras_parser(data: bytes) -> None:
    try:
        status = parse_ras(data.decode("utf-8", errors="replace"), "ras.txt")
    except ScopeError as exc:
        assert exc.message.startswith("ras.txt:")
    else:
        ras_anomalies(status, "ras.txt")


@FAST
@given(damaged(_real(HANG / "run.json")), damaged(_real(HANG / "ranks" / "1" / "heartbeat.json")))
@example(b'{"schema_version": 1, "ranks": ' + DEEP + b"}", DEEP)
def test_manifest_heartbeat_and_error_file(tmp_path: Path, manifest: bytes, beat: bytes) -> None:
    (tmp_path / "run.json").write_bytes(manifest)
    try:
        read_manifest(tmp_path)
    except ScopeError as exc:
        assert "run.json" in exc.message
    (tmp_path / "ranks" / "1").mkdir(parents=True, exist_ok=True)
    (tmp_path / "ranks" / "1" / "heartbeat.json").write_bytes(beat)
    assert set(read_heartbeats(tmp_path)) <= {1}
    err = tmp_path / "error.json"
    err.write_bytes(beat)
    try:
        _scan_error_file(Job(str(err), "error.json", "error_file"), 2026, read_text)
    except ScopeError as exc:
        assert "error.json" in exc.message


TARGETS = [
    "run.json",
    "ranks/2/fr/001-hang.pkl",
    "ranks/1/fr/001-hang.pkl",
    "ranks/2/stderr.log",
    "ranks/2/stacks/001-hang.txt",
    "ranks/0/hook.log",
    "ranks/3/heartbeat.json",
]


@pytest.fixture(scope="module")
def hang_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("fuzz") / "hang"
    shutil.copytree(HANG, run, ignore=shutil.ignore_patterns("traces"))
    return run


@settings(FAST, max_examples=12)
@given(st.lists(st.sampled_from(TARGETS), min_size=1, max_size=3, unique=True), st.data())
def test_diagnose_on_a_damaged_run(hang_copy: Path, targets: list[str], data: st.DataObject) -> None:
    for rel in targets:
        (hang_copy / rel).write_bytes(data.draw(damaged(_real(HANG / rel))))
    try:
        report = diagnose(hang_copy)
        unreadable = " ".join(report.sections["inputs"]["unreadable"])
        for rel in targets:  # every damaged file accounted for: read, or named
            if rel.endswith(".pkl"):
                try:
                    load_dump(hang_copy / rel)
                except ScopeError:
                    assert rel in unreadable, (rel, unreadable)
            if rel == "run.json":
                try:
                    read_manifest(hang_copy)
                except ScopeError:
                    assert "run.json" in unreadable, unreadable
    finally:
        for rel in targets:
            shutil.copy(HANG / rel, hang_copy / rel)


def test_cli_on_a_damaged_run(hang_copy: Path, tmp_path: Path) -> None:
    """The command line end to end on one damaged run: exit 0 or 4, never an internal error."""
    (hang_copy / "ranks/1/fr/001-hang.pkl").write_bytes(_real(DUMP)[:300])
    (hang_copy / "ranks/3/fr/deep.json").write_text('{"version": "2", "entries": ' + "[" * 20000 + "]" * 20000 + "}")
    try:
        for command in ("diagnose", "analyze"):
            code = main([command, str(hang_copy), "--json", str(tmp_path / f"{command}.json")])
            assert code == EXIT_PARTIAL, command
            report = json.loads((tmp_path / f"{command}.json").read_text())
            warnings = " ".join(report["warnings"])
            assert "ranks/1/fr/001-hang.pkl" in warnings and "deep.json" in warnings
        assert main(["diagnose", str(HANG), "--json", str(tmp_path / "ok.json")]) == EXIT_OK
    finally:
        shutil.copy(DUMP.parent.parent.parent / "1" / "fr" / "001-hang.pkl", hang_copy / "ranks/1/fr/001-hang.pkl")
        (hang_copy / "ranks/3/fr/deep.json").unlink()


def _huge() -> int:
    return 10**5000 - 1  # made by a function: hypothesis cannot repr the number in a st.just


ODD = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.builds(_huge)  # past the 4,300 digits Python writes as text: one such dump lost all 16
    | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _dump_dict(rank: int) -> dict:
    from scope.flight_recorder import _NoGlobalsUnpickler

    with open(HANG / "ranks" / str(rank) / "fr" / "001-hang.pkl", "rb") as fh:
        raw = _NoGlobalsUnpickler(fh).load()
    raw["entries"] = [{k: v for k, v in e.items() if k != "frames"} for e in raw["entries"][-6:]]
    return raw


@settings(FAST, max_examples=25)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["entry", "pg_config", "pg_status"]), st.data()),
        min_size=1,
        max_size=4,
    )
)
def test_flight_recorder_analysis_on_odd_but_loadable_dumps(tmp_path: Path, edits: list) -> None:
    """Dumps that load but hold values of the wrong type or size: the analysis must still finish."""
    dumps = {r: _dump_dict(r) for r in range(4)}
    for rank, where, data in edits:
        d = dumps[rank]
        if where == "entry" and d["entries"]:
            e = data.draw(st.sampled_from(d["entries"]))
            e[data.draw(st.sampled_from(sorted(e)))] = data.draw(ODD)
        elif where == "pg_config" and d.get("pg_config"):
            cfg = d["pg_config"][data.draw(st.sampled_from(sorted(d["pg_config"])))]
            cfg[data.draw(st.sampled_from(["ranks", "desc", "name"]))] = data.draw(ODD)
        elif d.get("pg_status"):
            st_ = d["pg_status"][data.draw(st.sampled_from(sorted(d["pg_status"])))]
            st_[data.draw(st.sampled_from(sorted(st_)))] = data.draw(ODD)
    for r, d in dumps.items():
        (tmp_path / f"_dump_{r}").write_bytes(pickle.dumps(d))
    report = diagnose(tmp_path)
    read = report.sections["inputs"]
    assert read["dumps"] + len(read["unreadable"]) == 4, read


@FAST
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4))
@example([b'{"kind": "dump", "created_ns": 1' + b"0" * 5000 + b"}", DEEP, b'{"kind": "profile", "steps": "x"}'])
def test_control_requests_never_raise(tmp_path: Path, files: list[bytes]) -> None:
    """Whatever lands in RUN/control/ is read without raising, blocking or re-reading (the hook thread)."""
    from scope.collectors.hook.control import RequestPoller

    folder = tmp_path / "control"
    folder.mkdir(exist_ok=True)
    for i, data in enumerate(files):
        (folder / f"r{i}.json").write_bytes(data)
    poller = RequestPoller(tmp_path, since_ns=0)
    poller.poll(force=True)
    assert poller.poll(force=True) == []  # each file once
