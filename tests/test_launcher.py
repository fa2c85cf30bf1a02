"""`scope run` on real 4-rank torchrun jobs (gloo on CPU), and the launcher's pieces on their own.

The real runs are session fixtures shared by the tests that read them: a run that completes (with
`scope attach --profile-steps` while it runs), a hang, a desync (through `scope demo`), and a crash launched as two
"nodes" (two launchers sharing one run directory, as under srun).
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scope.collectors import launch_env
from scope.collectors.launch_manifest import NodeRecord, merge_manifest, rank_entry, write_node
from scope.collectors.launcher import LaunchConfig, torchrun_argv
from scope.collectors.watchdog import HangWatchdog

from scope.errors import ScopeError
from scope.manifest import read_manifest
from tests.torch_jobs import torch_aborted_in_a_rank

ROOT = Path(__file__).resolve().parent.parent
WORLD = 4
# Small steps keep the runs short on two shared cores.
DDP = ["-m", "scope.collectors.workloads.ddp", "--hidden", "128", "--batch", "64"]
RUN_TIMEOUT_S = 300


@dataclass
class Run:
    out: Path
    returncode: int
    output: str

    @property
    def manifest(self) -> dict:
        return json.loads((self.out / "run.json").read_text())

    def rank_dir(self, rank: int) -> Path:
        return self.out / "ranks" / str(rank)

    def ranks(self) -> dict[int, dict]:
        return {r["rank"]: r for r in self.manifest["ranks"]}


def scope_cmd(out: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "scope", "run", "--out", str(out), "--quiet", "--no-sidecar", *args]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "TORCH_FR", "NCCL_"))}


def scope_run(out: Path, *args: str) -> Run:
    proc = subprocess.run(
        scope_cmd(out, *args), cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )
    return Run(out, proc.returncode, proc.stdout + proc.stderr)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def attach_when_running(out: Path, result: dict) -> None:
    """From a thread: once rank 0 has stepped a few times, ask for a 2-step window."""
    from scope.cli import main

    beat = out / "ranks" / "0" / "heartbeat.json"
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if json.loads(beat.read_text()).get("step", 0) >= 6:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.3)
    result["code"] = main(["attach", str(out), "--profile-steps", "2", "--wait", "120"])


@pytest.fixture(scope="session")
def slow_link(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict]:
    """A job that completes; rank 1 delays its all-reduces (100 ms), so steps take long enough for
    `scope attach` to reach the job while it runs, without loading the CPUs."""
    base = tmp_path_factory.mktemp("slow_link")

    def attached_run(out: Path) -> tuple[Run, dict]:
        attached: dict = {}
        thread = threading.Thread(target=attach_when_running, args=(out, attached), daemon=True)
        thread.start()
        fault = ["--fault", "slow-link", "--fault-rank", "1", "--delay-ms", "100"]
        run = scope_run(out, "--nproc-per-node", str(WORLD), "--", *DDP, "--steps", "60", *fault)
        thread.join(timeout=150)
        return run, attached

    run, attached = attached_run(base / "run")
    if torch_aborted_in_a_rank(run.out, completed=run.returncode == 0):  # torch's own abort (tests/torch_jobs.py)
        run, attached = attached_run(base / "run-again")
    return run, attached


@pytest.fixture(scope="session")
def hang(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("hang") / "run"
    # The watchdog (8 s) fires long before gloo's timeout (90 s) would end the waiting ranks.
    args = ["--nproc-per-node", str(WORLD), "--hang-timeout", "8", "--kill-on-hang", "--"]
    return scope_run(out, *args, *DDP, "--steps", "10", "--fault", "hang", "--fault-rank", "2", "--pg-timeout-s", "90")


@pytest.fixture(scope="session")
def desync(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Through `scope demo`, which launches, analyzes and compares with the ground truth."""
    out = tmp_path_factory.mktemp("desync") / "run"
    cmd = [sys.executable, "-m", "scope", "demo", "--scenario", "desync", "--fault-rank", "1", "--no-serve"]
    cmd += ["--out", str(out), "--steps", "10"]
    proc = subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    return Run(out, proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture(scope="session")
def crash_two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Two launchers, two ranks each, one run directory: what `srun -N 2 scope run` does."""
    out = tmp_path_factory.mktemp("crash") / "run"
    port = free_port()
    procs = []
    for node in range(2):
        args = ["--nproc-per-node", "2", "--nnodes", "2", "--node-rank", str(node), "--rdzv-backend", "c10d"]
        args += ["--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "crash-test", "--hang-timeout", "60"]
        cmd = scope_cmd(out, *args, "--", *DDP, "--steps", "10", "--fault", "crash", "--fault-rank", "3")
        procs.append(
            subprocess.Popen(
                cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    outputs = [p.communicate(timeout=RUN_TIMEOUT_S)[0] for p in procs]
    return Run(out, max(p.returncode for p in procs), "\n".join(outputs))


def fr_entries(path: Path) -> list[dict]:
    return pickle.loads(path.read_bytes())["entries"]


# -- a completed run + attach ----------------------------------------------------------------------
@pytest.mark.multirank
def test_completed_run_leaves_a_complete_run_directory(slow_link: tuple[Run, dict]) -> None:
    run, _ = slow_link
    assert run.returncode == 0, run.output
    m = run.manifest
    assert m["status"] == "completed" and m["world_size"] == WORLD and m["backend"] == "gloo"
    assert m["ground_truth"]["workload"] == "ddp" and m["ground_truth"]["fault"] == "slow-link"
    assert m["env"]["NCCL_DEBUG"] == "INFO" and m["env"]["TORCH_FR_BUFFER_SIZE"] == "2000"
    assert m["end_ns"] > m["start_ns"]
    assert [h["name"] for h in m["hosts"]] == [socket.gethostname()]
    for rank, info in run.ranks().items():
        assert info["exit_code"] == 0 and info["signal"] is None and info["pid"] > 0
        folder = run.rank_dir(rank)
        assert (folder / f"traces/rank{rank}.step2-4.pt.trace.json.gz").is_file()
        assert "scope-workload-steps" in (folder / "stdout.log").read_text()
        assert (folder / "stderr.log").is_file()
        # the exit dump's sequence number is 001 unless a stack dump came first (a rank slowed by a busy host)
        exit_dumps = sorted((folder / "fr").glob("*-exit.pkl"))
        assert len(exit_dumps) == 1 and fr_entries(exit_dumps[0]), "the Flight Recorder was on"
        beat = json.loads((folder / "heartbeat.json").read_text())
        assert beat["step"] == 60 and beat["state"] == "exited" and beat["pid"] == info["pid"]
    assert sorted(run.ranks()) == list(range(WORLD))


@pytest.mark.multirank
def test_attach_profile_steps_yields_a_new_window_on_every_rank(slow_link: tuple[Run, dict]) -> None:
    run, attached = slow_link
    assert attached.get("code") == 0, run.output
    windows = {}
    for rank in range(WORLD):
        names = {p.name for p in (run.rank_dir(rank) / "traces").glob("*.gz")}
        names.discard(f"rank{rank}.step2-4.pt.trace.json.gz")
        assert len(names) == 1, names
        windows[rank] = names.pop().split(".")[1]
    # Every rank profiled the same two steps, after the scheduled window.
    assert len(set(windows.values())) == 1
    first, last = map(int, windows[0].removeprefix("step").split("-"))
    assert last - first == 1 and first > 6


# -- hang --------------------------------------------------------------------------------------
@pytest.mark.multirank
def test_hang_is_detected_and_every_rank_dumped(hang: Run) -> None:
    assert hang.returncode == 5, hang.output
    m = hang.manifest
    assert m["status"] == "hung"
    assert m["ground_truth"]["fault"] == "hang" and m["ground_truth"]["fault_rank"] == 2
    assert m["hang"]["timeout_s"] == 8 and sorted(m["hang"]["last_steps"]) == ["0", "1", "2", "3"]
    for rank, info in hang.ranks().items():
        # --kill-on-hang ended every rank: SIGTERM, escalated to SIGKILL after 10 s for a rank that
        # does not die of it (seen in about 1 of 3 suite runs, a rank blocked in a gloo collective:
        # an open bug of the hook's SIGTERM path, noted on the issue)
        assert info["signal"] in ("SIGTERM", "SIGKILL"), info
        folder = hang.rank_dir(rank)
        assert list((folder / "stacks").glob("*-hang.txt")), f"rank {rank}: no stack dump"
        assert list((folder / "fr").glob("*-hang.pkl")), f"rank {rank}: no Flight Recorder dump"
        assert "Current thread" in (folder / "stacks" / "faulthandler.txt").read_text()
    # The stacks show where each rank is: the stuck rank in its stall, the others in a collective.
    stuck = next((hang.rank_dir(2) / "stacks").glob("*-hang.txt")).read_text()
    assert "stall_after_skipped_collective" in stuck
    # The Flight Recorder shows the stuck rank enqueued fewer collectives than its peers.
    seqs = {
        r: max(e["collective_seq_id"] for e in fr_entries(next((hang.rank_dir(r) / "fr").glob("*-hang.pkl"))))
        for r in range(WORLD)
    }
    assert seqs[2] < min(seqs[r] for r in (0, 1, 3)), seqs


# -- desync ------------------------------------------------------------------------------------
@pytest.mark.multirank
def test_desync_demo_records_exit_status_and_flight_recorder(desync: Run) -> None:
    # The demo succeeds when the scenario ran as designed: this one fails on purpose.
    assert desync.returncode == 0, desync.output
    assert "run failed (as designed)" in desync.output and "scope demo: analyzing" in desync.output
    m = desync.manifest
    assert m["status"] == "failed" and m["ground_truth"]["fault"] == "desync"
    dumped = 0
    for rank, info in desync.ranks().items():
        assert info["exit_code"] != 0, info
        folder = desync.rank_dir(rank)
        fr = list((folder / "fr").glob("*.pkl"))
        if info["signal"] == "SIGABRT":
            # gloo aborted this rank in C++ (the size check); faulthandler still caught its stacks.
            assert "Fatal Python error: Aborted" in (folder / "stacks" / "faulthandler.txt").read_text()
        else:
            assert fr, f"rank {rank} ({info}) was alive at the failure but left no Flight Recorder dump"
            dumped += 1
        assert (folder / f"traces/rank{rank}.step2-4.pt.trace.json.gz").is_file()
    assert dumped >= 2


# -- crash across two launchers ------------------------------------------------------------------
@pytest.mark.multirank
def test_two_launchers_merge_one_manifest_with_the_crash(crash_two_nodes: Run) -> None:
    run = crash_two_nodes
    assert run.returncode == 5, run.output
    m = run.manifest
    assert m["status"] == "failed" and m["world_size"] == WORLD
    assert len(list((run.out / "nodes").glob("*.json"))) == 2
    assert [n["node_rank"] for n in m["nodes"]] == [0, 1]
    ranks = run.ranks()
    assert sorted(ranks) == list(range(WORLD))
    assert ranks[3]["exit_code"] == 1 and ranks[3]["signal"] is None
    error = json.loads((run.rank_dir(3) / "error.json").read_text())
    assert "RuntimeError" in error["message"]["message"]
    assert list((run.rank_dir(3) / "fr").glob("*-exception.pkl"))
    assert all(ranks[r]["exit_code"] != 0 for r in (0, 1, 2))


# -- the pieces, without a job --------------------------------------------------------------------
def test_torchrun_command_line() -> None:
    none = launch_env.NodePlacement()
    cfg = LaunchConfig(run_dir=Path("r"), command=["-m", "pkg.train", "--lr", "1"], nproc_per_node="4")
    argv = torchrun_argv(cfg, none)
    assert "--standalone" in argv and argv[-4:] == ["-m", "pkg.train", "--lr", "1"]
    multi = LaunchConfig(run_dir=Path("r"), command=["train.py"], nnodes="2")
    with pytest.raises(ScopeError, match="rdzv-endpoint"):
        torchrun_argv(multi, none)
    slurm = launch_env.detect_placement({"SLURM_NODEID": "1", "SLURM_NNODES": "2", "SLURM_JOB_NODELIST": "gpu[07-08]"})
    argv = torchrun_argv(LaunchConfig(run_dir=Path("r"), command=["train.py"]), slurm)
    assert "--nnodes=2" in argv and "--node-rank=1" in argv and "--master-addr=gpu07" in argv


def test_slurm_nodelist_expansion() -> None:
    hosts = launch_env.expand_slurm_nodelist("node[01-03,07],gpu5,a[9-10]")
    assert hosts == ["node01", "node02", "node03", "node07", "gpu5", "a9", "a10"]


def test_relevant_env_keeps_job_settings_and_drops_secrets() -> None:
    env = launch_env.relevant_env({"NCCL_IB_HCA": "mlx5", "HF_TOKEN": "x", "NCCL_TOKEN": "y", "HOME": "/r"})
    assert env == {"NCCL_IB_HCA": "mlx5"}


def test_manifest_merges_nodes_in_any_order(tmp_path: Path) -> None:
    def node(n: int, status: str, end: int | None) -> NodeRecord:
        rec = NodeRecord(host=f"h{n}", launcher_pid=100 + n, start_ns=10 + n, node_rank=n, nnodes=2, run_id="j1")
        rec.ranks = [
            rank_entry(2 * n + i, f"h{n}", i, 1000 + i, 0 if status == "completed" else -15, 1, end) for i in range(2)
        ]
        rec.status, rec.end_ns, rec.world_size = status, end, 4
        return rec

    write_node(tmp_path, node(1, "completed", 50))
    first = merge_manifest(tmp_path)
    assert first.status == "running" and first.end_ns is None  # node 0 not there yet
    write_node(tmp_path, node(0, "failed", 60))
    (tmp_path / "ground_truth.json").write_text(json.dumps({"fault": "crash"}))
    merge_manifest(tmp_path)
    m = read_manifest(tmp_path)
    assert m.status == "failed" and m.end_ns == 60 and m.start_ns == 10
    assert [r.rank for r in m.ranks] == [0, 1, 2, 3] and [h.name for h in m.hosts] == ["h0", "h1"]
    assert m.ranks[0].signal == "SIGTERM" and m.ground_truth == {"fault": "crash"}


def test_watchdog_detects_no_progress_and_requests_dumps(tmp_path: Path) -> None:
    def beat(rank: int, step: int) -> None:
        path = tmp_path / "ranks" / str(rank) / "heartbeat.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"rank": rank, "step": step, "pid": os.getpid(), "host": "elsewhere", "state": "running"}
        path.write_text(json.dumps(data))

    reports: list[dict] = []
    dog = HangWatchdog(tmp_path, 10.0, host="here", local_pids=dict, on_hang=reports.append, dump_wait_s=0)
    for rank in range(3):
        beat(rank, 4)
    assert dog.check(now=100.0) is None
    beat(1, 5)
    assert dog.check(now=105.0) is None
    assert dog.check(now=114.0) is None  # rank 1 advanced at 105
    report = dog.check(now=115.5)
    assert report is not None and reports == [report]
    assert report["last_steps"] == {"0": 4, "1": 5, "2": 4} and report["behind_ranks"] == [0, 2]
    assert list((tmp_path / "control").glob("dump-*.json"))
    assert dog.check(now=200.0) is None  # reported once


def test_ranks_fall_back_to_heartbeats_when_workers_were_not_observed(tmp_path: Path) -> None:
    from scope.collectors.launch_torchrun import TorchrunOutcome
    from scope.collectors.launcher import _node_record, _Session

    cfg = LaunchConfig(run_dir=tmp_path, command=["train.py"], nproc_per_node="2")
    session = _Session(cfg, _node_record(cfg, [], launch_env.NodePlacement(), {}))
    for rank in (0, 1):
        path = tmp_path / "ranks" / str(rank) / "heartbeat.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"rank": rank, "pid": 10 + rank, "host": session.node.host, "state": "exited"}))
    session.record_ranks(TorchrunOutcome(ok=False, failures={1: -9}))
    assert [(r["rank"], r["pid"], r["exit_code"], r["signal"]) for r in session.node.ranks] == [
        (0, 10, None, None),
        (1, 11, -9, "SIGKILL"),
    ]


@pytest.mark.parametrize("name", ["healthy", "straggler", "pipeline", "memory", "hang"])
def test_sample_traces_are_complete_run_directories(name: str) -> None:
    """sample_traces/ (python -m scope.collectors.make_samples) holds what `scope run` leaves, small."""
    samples = ROOT / "sample_traces"
    run = Run(samples / name, 0, "")
    m = run.manifest
    expected = m["ground_truth"]["expected"]["status"]
    assert m["status"] == expected and m["world_size"] == WORLD
    for rank in range(WORLD):
        assert list((run.rank_dir(rank) / "traces").glob(f"rank{rank}.step*.pt.trace.json.gz")), (name, rank)
        assert list((run.rank_dir(rank) / "fr").glob("*.pkl")), (name, rank)
    total = sum(p.stat().st_size for p in samples.rglob("*") if p.is_file())
    assert total < 5e6
