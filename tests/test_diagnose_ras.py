"""NCCL RAS status: text and JSON parsing into findings, and the hang watchdog's query of a live RAS port.

The captures in tests/data/ras/ are written here in the real `ncclras` formats (see its README)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.readers.ras import looks_like_ras, parse_ras
from scope.analyzers.diagnose.readers.ras_evidence import ras_anomalies
from scope.collectors.ras_client import query_ras
from scope.collectors.watchdog import HangWatchdog

DATA = Path(__file__).parent / "data" / "ras"
CAPTURES = ["mismatch_behind.txt", "incomplete_dead.txt", "missing_ranks.json", "error_abort.txt"]


def _folder(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def test_text_mismatch_names_the_rank_behind() -> None:
    status = parse_ras((DATA / "mismatch_behind.txt").read_text(), "mismatch_behind.txt")
    assert status.fmt == "text" and status.nccl_version == "2.27.5+cuda12.9" and status.world == 8
    (comm,) = status.comms
    assert comm.size == 8 and comm.status == "RUNNING" and comm.errors == {"MISMATCH"}
    assert comm.op_groups["AllReduce"] == [(1207, 7, []), (1206, 1, [5])]
    (a,) = ras_anomalies(status, "mismatch_behind.txt")
    assert (a.code, a.kind, a.rank) == ("ras_op_count_mismatch", "hang", 5)
    assert a.details["side"] == "behind" and a.details["count"] == 1206 and a.details["others_count"] == 1207


def test_diagnose_reports_the_ras_hang_first(tmp_path: Path) -> None:
    report = diagnose(_folder(tmp_path, "mismatch_behind.txt"))
    first = report.findings[0]
    assert first.kind == "hang" and first.ranks == [5] and first.severity == "critical"
    assert "behind" in first.summary and "AllReduce" in first.summary
    assert first.evidence == ["mismatch_behind.txt"] and "py-spy" in first.suggestion


def test_text_incomplete_and_dead_name_the_missing_rank(tmp_path: Path) -> None:
    status = parse_ras((DATA / "incomplete_dead.txt").read_text(), "incomplete_dead.txt")
    assert status.n_dead == 1 and status.timeouts == 2
    assert [(p.pid, p.node) for p in status.dead_processes] == [(51234, "10.0.0.7")]
    (comm,) = status.comms
    assert comm.errors == {"INCOMPLETE", "MISMATCH"} and comm.n_missing == 1
    assert [(m.rank, m.pid, m.dead) for m in comm.missing] == [(3, 51234, True)]
    report = diagnose(_folder(tmp_path, "incomplete_dead.txt"))
    kinds = [(f.kind, f.ranks) for f in report.findings]
    assert kinds[0] == ("missing_rank", [3]) and "considered dead" in report.findings[0].summary
    assert ("hang", [0]) in kinds  # rank 0 ahead at AllGather: also said, after the missing rank


def test_json_missing_ranks_and_counts(tmp_path: Path) -> None:
    text = (DATA / "missing_ranks.json").read_text()
    assert looks_like_ras(text.encode()[:4096])
    status = parse_ras(text, "missing_ranks.json")
    assert status.fmt == "json" and status.world == 4 and status.timeouts == 1
    (comm,) = status.comms
    assert [(m.rank, m.dead) for m in comm.missing] == [(2, True)]
    assert comm.op_groups["AllReduce"] == [(309, 1, [1]), (310, 2, [0, 3])]
    report = diagnose(_folder(tmp_path, "missing_ranks.json"))
    assert [(f.kind, f.ranks) for f in report.findings][:2] == [("missing_rank", [2]), ("hang", [1])]
    assert report.sections["inputs"]["unreadable"] == []


def test_ras_ok_is_evidence_not_a_verdict(tmp_path: Path) -> None:
    """RAS 'OK' pasted above a watchdog timeout: the timeout is still the finding, RAS adds a note."""
    report = diagnose(_folder(tmp_path, "ok_then_timeout.log"))
    assert report.findings and report.findings[0].kind == "timeout"
    assert not any(f.metrics.get("code", "").startswith("ras_") for f in report.findings)
    assert any("every communicator OK" in w for w in map(str, report.warnings))


def test_parser_is_tolerant_and_a_bad_ras_file_is_named(tmp_path: Path) -> None:
    noisy = (
        (DATA / "mismatch_behind.txt")
        .read_text()
        .replace("Warnings\n", "Warnings\n  some future line RAS may add\n\x00\x01 junk\n")
    )
    (tmp_path / "ras_status.txt").write_text(noisy + "trailing output of another tool\n  Rank 9 -- GPU 0 x\n")
    (tmp_path / "bad.json").write_text('{"nccl_version": "2.29.1", "communicators": [ {"hash": ')
    report = diagnose(tmp_path)
    assert [(f.kind, f.ranks) for f in report.findings][:1] == [("hang", [5])]
    assert any(u.startswith("bad.json:") and "RAS" in u for u in report.sections["inputs"]["unreadable"])


# ---- the watchdog's query ---------------------------------------------------------------------------


class FakeRas(threading.Thread):
    """A loopback server speaking the RAS client protocol (NCCL's src/ras/client.cc), one connection."""

    def __init__(self, reply: str) -> None:
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.reply = reply
        self.commands: list[str] = []

    def run(self) -> None:
        conn, _ = self.server.accept()
        with conn, conn.makefile("rb") as reader:
            for answer in ("SERVER PROTOCOL 2\n", "OK\n", None):
                line = reader.readline().decode().strip()
                self.commands.append(line)
                if answer:
                    conn.sendall(answer.encode())
            data = self.reply.encode()
            for i in range(0, len(data), 700):  # NCCL streams the status in pieces
                conn.sendall(data[i : i + 700])
                time.sleep(0.01)
        self.server.close()


def test_query_speaks_the_ras_protocol() -> None:
    server = FakeRas((DATA / "incomplete_dead.txt").read_text())
    server.start()
    reply = query_ras(("127.0.0.1", server.port), timeout_s=5, use_client=False)
    server.join(5)
    assert server.commands == ["CLIENT PROTOCOL 2", "TIMEOUT 5", "STATUS"]
    assert reply.via == "tcp" and reply.text == (DATA / "incomplete_dead.txt").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _hung_run(tmp_path: Path, backend: str) -> None:
    for rank in range(4):
        path = tmp_path / "ranks" / str(rank) / "heartbeat.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"rank": rank, "step": 7, "pid": os.getpid(), "host": "elsewhere", "state": "running"}
        path.write_text(json.dumps({**data, "backend": backend}))


def _hang(tmp_path: Path, port: int) -> dict:
    dog = HangWatchdog(
        tmp_path,
        5.0,
        host="h1",
        local_pids=dict,
        on_hang=lambda r: None,
        dump_wait_s=0,
        ras_options={"address": ("127.0.0.1", port), "use_client": False, "timeout_s": 5},
    )
    assert dog.check(now=100.0) is None
    report = dog.check(now=106.0)
    assert report is not None
    return report


def test_watchdog_stores_the_ras_status_and_diagnose_reads_it(tmp_path: Path) -> None:
    server = FakeRas((DATA / "mismatch_behind.txt").read_text())
    server.start()
    _hung_run(tmp_path, "nccl")
    report = _hang(tmp_path, server.port)
    assert report["ras"] == {"status": "ok", "via": "tcp", "file": "hosts/h1/ras.txt"}
    assert (tmp_path / "hosts/h1/ras.txt").read_text() == (DATA / "mismatch_behind.txt").read_text()
    first = diagnose(tmp_path).findings[0]
    assert first.kind == "hang" and first.ranks == [5] and first.evidence == ["hosts/h1/ras.txt"]


def test_watchdog_without_ras_is_a_quick_noted_no_op(tmp_path: Path) -> None:
    _hung_run(tmp_path, "nccl")
    t0 = time.monotonic()
    report = _hang(tmp_path, _free_port())
    assert time.monotonic() - t0 < 3
    assert report["ras"]["status"] == "absent" and "no NCCL RAS reply" in report["ras"]["note"]
    assert not (tmp_path / "hosts").exists()


def test_watchdog_does_not_ask_ras_for_a_gloo_job(tmp_path: Path) -> None:
    _hung_run(tmp_path, "gloo")
    report = _hang(tmp_path, _free_port())
    assert report["ras"]["status"] == "skipped"


@pytest.mark.parametrize("name", ["mismatch_behind.txt", "incomplete_dead.txt", "missing_ranks.json"])
def test_every_capture_is_recognised(name: str) -> None:
    assert looks_like_ras((DATA / name).read_bytes()[:4096])


def test_text_error_and_status_mismatch(tmp_path: Path) -> None:
    status = parse_ras((DATA / "error_abort.txt").read_text(), "error_abort.txt")
    (comm,) = status.comms
    assert comm.rank_errors == {"Remote process error": (1, [11])}
    assert comm.status_groups == {"RUNNING": (15, []), "ABORT": (1, [11])}
    report = diagnose(_folder(tmp_path, "error_abort.txt"))
    (first,) = report.findings  # the abort follows from the error: its cascade
    assert (first.kind, first.ranks) == ("nccl_error", [11]) and "Remote process error" in first.summary
    assert first.metrics["cascade"]["by_code"] == {"ras_status_mismatch": 1}


def test_each_nodes_ras_answer_is_kept_in_the_merged_hang() -> None:
    from scope.collectors.launch_manifest import _merge_hangs

    merged = _merge_hangs(
        [
            {"detected_ns": 2, "detected_by": "b", "last_steps": {"1": 3}, "ras": {"status": "absent", "note": "x"}},
            {"detected_ns": 1, "detected_by": "a", "last_steps": {"0": 3}, "ras": {"status": "ok", "via": "tcp"}},
        ]
    )
    assert merged["detected_by"] == "a"
    assert merged["ras"] == {"a": {"status": "ok", "via": "tcp"}, "b": {"status": "absent", "note": "x"}}


def test_ras_corroborates_the_flight_recorder_culprit(tmp_path: Path) -> None:
    """The sample hang run (rank 2 stalls) with a RAS capture naming rank 2 behind: one finding, FR's words."""
    run = tmp_path / "hang"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_traces" / "hang", run)
    (run / "hosts" / "vm").mkdir(parents=True)
    shutil.copy(DATA / "hang_rank2.txt", run / "hosts" / "vm" / "ras.txt")
    first = diagnose(run).findings[0]
    assert first.kind == "hang" and first.ranks == [2] and "never joined" in first.summary
    assert "hosts/vm/ras.txt" in first.evidence
    assert [r["code"] for r in first.metrics["related"]] == ["ras_op_count_mismatch"]


def test_json_capture_saved_under_a_log_name(tmp_path: Path) -> None:
    """`ncclras -f json > ras.log`: known by content, not by suffix."""
    shutil.copy(DATA / "missing_ranks.json", tmp_path / "ras.log")
    assert [(f.kind, f.ranks) for f in diagnose(tmp_path).findings][:1] == [("missing_rank", [2])]


def test_a_listed_group_of_outliers_ahead(tmp_path: Path) -> None:
    status = parse_ras((DATA / "ahead_pair.txt").read_text(), "ahead_pair.txt")
    assert status.comms[0].op_groups["ReduceScatter"] == [(300, 14, []), (301, 2, [6, 7])]
    first = diagnose(_folder(tmp_path, "ahead_pair.txt")).findings[0]
    assert first.kind == "hang" and first.ranks == [6, 7]
    assert "2 rank(s)" in first.summary and "ahead of the others" in first.summary and "14 rank(s)" in first.summary


def test_a_silent_ras_port_costs_at_most_the_timeout() -> None:
    """Something accepts on the port but never answers (a stuck RAS thread): bounded, no reply, noted."""
    server = socket.create_server(("127.0.0.1", 0))
    try:
        t0 = time.monotonic()
        reply = query_ras(("127.0.0.1", server.getsockname()[1]), timeout_s=1.0, use_client=False)
        assert time.monotonic() - t0 < 2.5
        assert reply.text is None and "timed out" in reply.note
    finally:
        server.close()


def test_summary_variants_and_a_bogus_rank_in_an_empty_group(tmp_path: Path) -> None:
    status = parse_ras((DATA / "outlier_node_nocomm.txt").read_text(), "outlier_node_nocomm.txt")
    assert status.world == 2 and status.n_missing_processes == 1
    assert [(c.label[:4], c.size) for c in status.comms] == [("#0-0", 2), ("#2-0", 0)]
    report = diagnose(_folder(tmp_path, "outlier_node_nocomm.txt"))
    first = report.findings[0]
    assert first.kind == "missing_rank" and first.ranks == [1]  # the bogus rank of the size-0 group names no rank


@pytest.mark.parametrize("name", CAPTURES)
def test_every_ras_finding_has_a_concrete_fix(tmp_path: Path, name: str) -> None:
    for f in diagnose(_folder(tmp_path, name)).findings:
        assert f.suggestion and "{" not in f.suggestion and f.summary.startswith("NCCL RAS")
