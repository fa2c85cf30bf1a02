"""Live detection's feeds and sinks, real: the run-directory tail, the Prometheus endpoint scraped and parsed,
alerts to a real local HTTP server and a real command, the replay of the ByteDance timelines, `scope watch`."""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scope.finding import Finding
from scope.live.alerts import AlertSender
from scope.live.detector import LiveEvent
from scope.live.metrics import MetricsServer
from scope.live.monitor import LiveMonitor
from scope.live.replay import optrace_samples, replay
from scope.live.tail import RunTail
from scope.manifest import RunManifest, write_manifest
from tests.conftest import shared_data

ROOT = Path(__file__).resolve().parent.parent


def write_progress(
    run: Path, rank: int, steps: int, step_s: float, cpu_share: float, t0: float = 1e9, first: int = 1
) -> None:
    folder = run / "ranks" / str(rank)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "progress.jsonl", "a") as fh:
        for step in range(first, steps + 1):
            span = int(step_s * 1e9)
            rec = {"step": step, "global_step": step, "t_ns": int((t0 + step * step_s) * 1e9), "attempt": 0}
            rec.update(cpu_ns=int(span * cpu_share), wait_ns=0, span_ns=span)
            fh.write(json.dumps(rec) + "\n")
    beat = {"rank": rank, "step": steps, "time_ns": int((t0 + steps * step_s) * 1e9), "state": "running",
            "written_ns": int((t0 + steps * step_s) * 1e9)}  # fmt: skip
    (folder / "heartbeat.json").write_text(json.dumps(beat))


def straggling_run(run: Path, steps: int = 40, first: int = 1) -> None:
    """Four ranks' steps of 0.2 s; rank 3 computes 90% of its step, the others 40%."""
    for rank in range(4):
        write_progress(run, rank, steps, 0.2, 0.9 if rank == 3 else 0.4, first=first)


def test_tail_reads_partial_lines_and_skips_damage_and_non_regular_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    straggling_run(run)
    path = run / "ranks" / "0" / "progress.jsonl"
    text = path.read_bytes()
    cut = text.index(b"\n", len(text) // 2) + 10  # a line the hook is still writing
    path.write_bytes(text[:cut])
    tail = RunTail(run)
    first, _ = tail.poll()
    with open(path, "ab") as fh:
        fh.write(text[cut:] + b"not json\n" + b"x" * 70000 + b"\n")
    second, beats = tail.poll()
    steps = sorted(s.step for s in first + second if s.rank == 0)
    assert steps == list(range(2, 41))  # every step once; the first line has no line before it
    assert tail.dropped == 2 and len(beats) == 4
    fifo = run / "ranks" / "1" / "progress.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)  # would block a plain open(); the tail never waits on it
    started = time.monotonic()
    assert [s for s in RunTail(run).poll()[0] if s.rank == 1] == []
    assert time.monotonic() - started < 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_prometheus_endpoint_scraped_and_parsed(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    run = tmp_path / "run"
    straggling_run(run, steps=30)
    metrics = MetricsServer(free_port(), addr="127.0.0.1")
    lines: list[str] = []
    try:
        monitor = LiveMonitor(run, say=lines.append, metrics=metrics)
        events = monitor.tick(1e9 + 30 * 0.2)
        straggling_run(run, steps=40, first=31)
        now = 1e9 + 40 * 0.2 + 1.5
        assert monitor.tick(now) == []  # still slow: said once
        assert [(e.finding.kind, e.finding.ranks) for e in events] == [("straggler", [3])]
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics.port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        metrics.close()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}  # fmt: skip
    assert samples[("scope_live_step_seconds", (("rank", "0"),))] == pytest.approx(0.2)
    assert samples[("scope_live_straggler_score", (("rank", "3"),))] == pytest.approx(0.9 / 0.4, rel=0.01)
    assert samples[("scope_live_seconds_since_progress", (("rank", "1"),))] == pytest.approx(1.5, abs=0.01)
    assert samples[("scope_live_verdict", (("key", "straggler:3"), ("kind", "straggler"), ("ranks", "3")))] == 1
    assert samples[("scope_live_hang", ())] == 0
    assert samples[("scope_live_samples_total", ())] == 4 * 39
    assert samples[("scope_live_dropped_samples_total", ())] == 0
    assert lines == [events[0].line()]
    recorded = (run / "live" / "events.jsonl").read_text().splitlines()
    assert [json.loads(r)["key"] for r in recorded] == ["straggler:3"]


def test_alert_rules_example_names_only_exported_metrics() -> None:
    rules = (ROOT / "docs" / "live-alerts.rules.yml").read_text()
    exported = {"scope_live_step_seconds", "scope_live_straggler_score", "scope_live_seconds_since_progress",
                "scope_live_verdict", "scope_live_hang", "scope_live_dropped_samples_total"}  # fmt: skip
    named = set(re.findall(r"scope_live_\w+", rules))
    assert named and named <= exported, named - exported


class _Hook(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []
    hang = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/hang":
            self.hang.wait(30)  # an endpoint that never answers in time
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def event(action: str, rank: int = 3) -> LiveEvent:
    finding = Finding(kind="straggler", severity="warning", summary=f"rank {rank} is slow", ranks=[rank])
    return LiveEvent(action, f"straggler:{rank}", finding, time.time(), step=30)


@pytest.fixture
def http_server() -> Any:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    _Hook.received = []
    _Hook.hang.clear()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _Hook.hang.set()
    server.shutdown()


def wait_for(cond: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.subprocess  # the alert command runs as a process
def test_alert_command_and_url_fire_once_per_finding_and_once_on_clearing(tmp_path: Path, http_server: str) -> None:
    out = tmp_path / "alerts.txt"
    cmd = f"{sys.executable} -c \"import os,sys; open(sys.argv[1],'a').write(os.environ['SCOPE_ALERT_ACTION'] + ' ' + os.environ['SCOPE_ALERT_RANKS'] + chr(10))\" {out}"  # noqa: E501
    sender = AlertSender(cmd, http_server + "/hook", repeat_s=60)
    assert sender.submit(event("new"))
    assert not sender.submit(event("new"))  # the same finding again within repeat_s: once
    assert sender.submit(event("clear"))
    assert wait_for(lambda: len(_Hook.received) == 2 and out.is_file() and len(out.read_text().splitlines()) == 2)
    sender.close()
    assert out.read_text().splitlines() == ["new 3", "clear 3"]
    assert [(p["action"], p["finding"]["ranks"]) for p in _Hook.received] == [("new", [3]), ("clear", [3])]
    assert (sender.sent, sender.failed, sender.dropped) == (4, 0, 1)


@pytest.mark.subprocess  # the alert command runs as a process
def test_a_hanging_alert_endpoint_and_command_cost_the_caller_nothing(http_server: str) -> None:
    # Two alerts a minute: what is queued is sent (2 s each: the command's and the POST's timeouts) and
    # close() ends the sender within the test; at 30, its thread went on starting `sleep 30` for a minute
    # after the test had ended.
    sender = AlertSender("sleep 30", http_server + "/hang", timeout_s=1.0, per_minute=2)
    started = time.monotonic()
    for rank in range(50):
        sender.submit(event("new", rank))
    assert time.monotonic() - started < 0.5  # submit never waits on the endpoint
    assert wait_for(lambda: sender.failed >= 2, timeout=15)  # each send gave up after its timeout
    assert any("timed out" in e or "TimeoutExpired" in e for e in sender.errors), list(sender.errors)
    assert sender.dropped == 48  # 2 a minute at most
    sender.close(wait_s=15)
    assert not [t for t in threading.enumerate() if t.name == "scope-alerts" and t.is_alive()]
    assert (sender.sent, sender.failed) == (0, 4)  # both alerts, command and POST, timed out


def test_a_detector_that_raises_costs_the_monitor_one_line(tmp_path: Path) -> None:
    lines: list[str] = []
    monitor = LiveMonitor(tmp_path, say=lines.append)

    def broken(now: float) -> list[LiveEvent]:
        raise ZeroDivisionError("bug")

    monitor.detector.evaluate = broken  # type: ignore[method-assign]
    straggling_run(tmp_path)
    assert monitor.tick() == [] and monitor.tick() == []
    assert len(lines) == 1 and "detection stopped working (ZeroDivisionError: bug); the job goes on" in lines[0]


@pytest.mark.shared_data
def test_replay_of_the_bytedance_timelines() -> None:
    """AR: the one slowed worker (DP 0, stage 0; slowed from the first traced step) is flagged within 5
    steps; ST: the long last stage is a stage imbalance, no rank straggler."""
    ar = replay(optrace_samples(shared_data("straggler_analysis", "trace-AR.parquet")))
    new = [e for e in ar.events if e.action == "new"]
    assert [(e.finding.kind, e.finding.ranks) for e in new] == [("straggler", [0])]
    assert new[0].step <= 1 + 5 and new[0].finding.metrics["straggler_kind"] == "compute"
    assert 2.0 < new[0].finding.metrics["step_ratio"] < 2.7
    st = replay(optrace_samples(shared_data("straggler_analysis", "trace-ST.parquet")))
    found = [(e.finding.kind, e.finding.ranks, e.finding.metrics.get("stage")) for e in st.events if e.action == "new"]
    assert found == [("pipeline_imbalance", [6, 7], 3)]


@pytest.mark.shared_data
@pytest.mark.subprocess
def test_scope_watch_replays_a_timeline_and_follows_a_finished_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    trace = shared_data("straggler_analysis", "trace-ST.parquet")
    proc = subprocess.run([sys.executable, "-m", "scope", "watch", str(trace)], capture_output=True, text=True,
                          env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "scope live: pipeline_imbalance: pipeline stage 3 on ranks 6, 7 bounds the step" in proc.stdout
    run = tmp_path / "run"
    straggling_run(run)
    write_manifest(run, RunManifest(status="completed"))
    proc = subprocess.run([sys.executable, "-m", "scope", "watch", str(run), "--json"], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    keys = [json.loads(line)["key"] for line in proc.stdout.splitlines()]
    assert keys == ["straggler:3"] and "the run ended (completed): replaying its steps" in proc.stderr


def test_live_events_are_scopes_own_words_never_the_jobs_log(tmp_path: Path) -> None:
    """RUN/live/events.jsonl quotes hang verdicts ("never joined all_reduce #812"): the inventory files it as
    scope's own, so no log reader takes it for the job's failure."""
    from scope.inputs import Inventory

    run = tmp_path / "run"
    straggling_run(run)
    write_manifest(run, RunManifest(status="running"))
    (run / "live").mkdir()
    (run / "live" / "events.jsonl").write_text(json.dumps({"action": "new", "summary": "never joined"}) + "\n")
    kinds = {str(e.rel): e.kind for e in Inventory.scan(run).entries}
    assert kinds["live/events.jsonl"] == "live_events"


def test_the_hook_thread_reads_the_training_threads_cpu_and_where_it_stands() -> None:
    from scope.collectors.hook.where import MainThreadClock, main_thread_site

    clock = MainThreadClock()
    before = clock.read()
    if before is None:
        pytest.skip("no schedstat on this kernel")
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:  # the main thread computes
        pass
    after = clock.read()
    assert after is not None and after[0] - before[0] >= 150_000_000
    seen: list[str | None] = []
    thread = threading.Thread(target=lambda: (time.sleep(0.3), seen.append(main_thread_site())))
    thread.start()
    waiting_here_for_the_thread(thread)
    assert len(seen) == 1 and str(seen[0]).endswith("tests/test_live_sinks.py:waiting_here_for_the_thread"), seen


def waiting_here_for_the_thread(thread: threading.Thread) -> None:
    while thread.is_alive():
        time.sleep(0.01)


def test_the_watchdog_waits_the_jobs_rhythm_not_a_fixed_timeout(tmp_path: Path) -> None:
    """`scope run`'s default: the watchdog's limit is the live detector's (10 typical steps, a floor), asked
    at each look; its hang record says the limit it used."""
    from scope.collectors.watchdog import HangWatchdog

    for rank in range(2):
        path = tmp_path / "ranks" / str(rank) / "heartbeat.json"
        path.parent.mkdir(parents=True)
        path.write_text(
            json.dumps({"rank": rank, "step": 7, "pid": os.getpid(), "host": "elsewhere", "state": "running"})
        )
    limit = [40.0]
    reports: list[dict[str, Any]] = []
    dog = HangWatchdog(tmp_path, 300.0, host="h1", local_pids=dict, on_hang=reports.append, dump_wait_s=0,
                       ras_enabled=False, limit=lambda: limit[0])  # fmt: skip
    assert dog.check(now=100.0) is None
    assert dog.check(now=125.0) is None
    limit[0] = 30.0  # the job's rhythm as it is now
    report = dog.check(now=131.0)
    assert report is not None and report["timeout_s"] == 30.0 and report["rhythm"] is True
    assert reports == [report]


@pytest.mark.subprocess
def test_scope_watch_follows_a_running_run(tmp_path: Path) -> None:
    """A run still going (run.json: running): `scope watch` looks until --for runs out and says each finding
    once; its recorded steps stopped long ago, so the rhythm also calls it hung (the culprit unknown: every
    rank stopped at the same step with no where)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    run = tmp_path / "run"
    straggling_run(run)
    write_manifest(run, RunManifest(status="running"))
    proc = subprocess.run([sys.executable, "-m", "scope", "watch", str(run), "--for", "2", "--interval", "0.2"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("scope live: straggler: rank 3 is a persistent compute straggler"), lines
    assert len(lines) == 2 and lines[1].startswith("scope live: hang: no rank completed a step for"), lines
    assert [json.loads(x)["key"] for x in (run / "live" / "events.jsonl").read_text().splitlines()] == [
        "straggler:3",
        "hang",
    ]
