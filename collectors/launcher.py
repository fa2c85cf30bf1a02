"""`scope run`: launch a job through torchrun with collection on, and leave a complete run directory.

One launcher per node (run it under srun or mpirun for several nodes; the node rank comes from the
scheduler when not given). It
  1. writes this node's record and run.json (status running) and starts the counter sidecar when
     `scope.collectors.sidecar` is there;
  2. runs torchrun in this process (launch_torchrun) with the hook's sitecustomize on PYTHONPATH,
     NCCL_DEBUG=INFO into per-rank files, the Flight Recorder on, and per-rank stdout, stderr and
     error files under RUN/ranks/<rank>/;
  3. watches heartbeats on a thread: on a hang, collects stack and Flight Recorder dumps from every
     rank, records the hang, and ends the job when asked to (`--kill-on-hang`);
  4. records pids, exit codes and signals of its ranks, and merges run.json.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.collectors import launch_env
from scope.collectors.hook.config import HookConfig
from scope.collectors.launch_attempts import append_attempt, attempt_record
from scope.collectors.launch_live import FIXED_HANG_TIMEOUT_S, start_live, watchdog_for
from scope.collectors.launch_manifest import NodeRecord, merge_manifest, rank_entry, write_node
from scope.collectors.launch_torchrun import TorchrunOutcome, WorkerRecord, WorkerRegistry, run_torchrun
from scope.collectors.watchdog import LIVE_NICE, WatchdogThread

from scope.engine import leave_jobs_their_allocator
from scope.errors import EXIT_JOB_FAILED, EXIT_OK, EXIT_USAGE, ScopeError
from scope.manifest import RunManifest, read_manifest
from scope.rundir import is_run_dir

# After SIGTERM on --kill-on-hang, ranks blocked in a collective get this long before SIGKILL.
KILL_GRACE_S = 10.0
# Space held in the run directory from the start and given back at the end, so the final run.json
# (and node record) can be written even when the job filled the disk.
RESERVE_NAME = ".scope-reserve"
RESERVE_BYTES = 1 << 20


@dataclass
class LaunchConfig:
    run_dir: Path
    command: list[str]  # SCRIPT ARGS..., or -m MODULE ARGS...
    nproc_per_node: str = "1"
    nnodes: str | None = None
    node_rank: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_backend: str | None = None
    rdzv_id: str | None = None
    rdzv_conf: str | None = None
    master_addr: str | None = None
    master_port: int | None = None
    max_restarts: int = 0
    torchrun_args: list[str] = field(default_factory=list)
    # Seconds without progress before the dumps; 0 switches the watchdog off; None: the job's rhythm (10 of its
    # typical steps, at least AUTO_HANG_FLOOR_S), from the live detector (FIXED_HANG_TIMEOUT_S without it).
    hang_timeout_s: float | None = FIXED_HANG_TIMEOUT_S
    hang_startup_timeout_s: float | None = None  # before the first step (default: 3x hang_timeout_s)
    live: bool = True  # the live detector on a launcher thread of its own (scope.live): a line per finding
    metrics_port: int | None = None
    alert_cmd: str | None = None
    alert_url: str | None = None
    hang_floor_s: float | None = None  # the live hang verdict's floor (default scope.live.hang.HANG_FLOOR_S)
    kill_on_hang: bool = False
    profile_start: int = 2
    profile_every: int = 0
    profile_active: int = 3
    profile_flops: bool = False
    profile_memory: bool = False
    memory_snapshot_entries: int = 0  # > 0: snapshot on OOM with this much allocator history
    time_ddp: bool = False  # a gloo DDP reducer's all-reduces timed (collectors/hook/ddp_reducer.py)
    tee: bool = True
    sidecar: bool = True
    sidecar_hz: float = 1.0
    force: bool = False
    argv: list[str] = field(default_factory=list)  # the scope command line, for the record


@dataclass
class LaunchResult:
    run_dir: Path
    status: str
    exit_code: int  # scope's exit code: 0, or 5 when the job failed or hung
    manifest: RunManifest
    outcome: TorchrunOutcome


def node_count(cfg: LaunchConfig, placement: launch_env.NodePlacement) -> str:
    """torchrun's --nnodes value: given, else the scheduler's node count, else 1."""
    return cfg.nnodes or (str(placement.nnodes) if placement.nnodes else "1")


def torchrun_argv(cfg: LaunchConfig, placement: launch_env.NodePlacement) -> list[str]:
    """torchrun's own command line for this node."""
    nnodes = node_count(cfg, placement)
    node_rank = cfg.node_rank if cfg.node_rank is not None else placement.node_rank
    argv = [f"--nproc-per-node={cfg.nproc_per_node}", f"--nnodes={nnodes}"]
    single = nnodes in ("1", "1:1")
    master_addr = cfg.master_addr or (placement.master_addr if not single else None)
    if single and not (cfg.rdzv_endpoint or cfg.master_addr or cfg.rdzv_backend):
        argv.append("--standalone")
    else:
        if not (cfg.rdzv_endpoint or master_addr):
            raise ScopeError(
                f"--nnodes {nnodes}: give --rdzv-endpoint HOST:PORT or --master-addr (or MASTER_ADDR)",
                EXIT_USAGE,
            )
        for flag, value in (
            ("--rdzv-backend", cfg.rdzv_backend),
            ("--rdzv-endpoint", cfg.rdzv_endpoint),
            ("--rdzv-id", cfg.rdzv_id),
            ("--rdzv-conf", cfg.rdzv_conf),
            ("--master-addr", master_addr),
            ("--master-port", cfg.master_port or os.environ.get("MASTER_PORT")),
            ("--node-rank", node_rank),
        ):
            if value is not None:
                argv.append(f"{flag}={value}")
    argv.append(f"--max-restarts={cfg.max_restarts}")
    argv += cfg.torchrun_args
    command = list(cfg.command)
    if command[:1] == ["-m"]:
        if len(command) < 2:
            raise ScopeError("-m needs a module name", EXIT_USAGE)
        argv += ["-m", *command[1:]]
    else:
        argv += command
    return argv


def _check_command(command: list[str]) -> None:
    """Mistakes worth a clear message before starting torchrun and N interpreters."""
    import importlib.util

    if not command:
        raise ScopeError("no command to run: scope run --out RUN -- SCRIPT ARGS...", EXIT_USAGE)
    if importlib.util.find_spec("torch") is None:
        raise ScopeError("scope run needs PyTorch in this environment (pip install torch)", EXIT_USAGE)
    script = command[0]
    if script != "-m" and script.endswith(".py") and not Path(script).is_file():
        raise ScopeError(f"{script}: no such script", EXIT_USAGE)


def _check_run_dir(cfg: LaunchConfig, nnodes: str) -> None:
    run_dir = cfg.run_dir
    if run_dir.exists() and not run_dir.is_dir():
        raise ScopeError(f"{run_dir}: exists and is not a folder", EXIT_USAGE)
    if cfg.force or not is_run_dir(run_dir):
        return
    status = "unknown"
    with contextlib.suppress(ScopeError):
        status = read_manifest(run_dir).status
    # Nodes of one multi-node run share the folder and arrive in any order.
    if nnodes not in ("1", "1:1") and status == "running":
        return
    raise ScopeError(f"{run_dir}: already holds a run (status {status}); choose another --out or pass --force")


def _node_record(
    cfg: LaunchConfig, argv: list[str], placement: launch_env.NodePlacement, job_env: dict[str, str]
) -> NodeRecord:
    nnodes = node_count(cfg, placement)
    node_rank = cfg.node_rank if cfg.node_rank is not None else placement.node_rank
    if node_rank is None and nnodes in ("1", "1:1"):
        node_rank = 0
    run_id = cfg.rdzv_id or os.environ.get("SLURM_JOB_ID") or f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    return NodeRecord(
        host=launch_env.hostname(),
        launcher_pid=os.getpid(),
        start_ns=time.time_ns(),
        cpus=usable_cpus(),
        node_rank=node_rank,
        nnodes=int(nnodes.split(":")[-1]) if nnodes.split(":")[-1].isdigit() else 1,
        run_id=run_id,
        command=list(cfg.command),
        cwd=os.getcwd(),
        env=launch_env.relevant_env({**os.environ, **job_env}),
        launcher={
            "argv": cfg.argv,
            "torchrun_argv": argv,
            "placement": placement.source or None,
            "hang_timeout_s": cfg.hang_timeout_s,  # None: from the job's rhythm
            "kill_on_hang": cfg.kill_on_hang,
            "profile": {
                "start": cfg.profile_start,
                "every": cfg.profile_every,
                "active": cfg.profile_active,
                "flops": cfg.profile_flops,
                "memory": cfg.profile_memory,
            },
            "memory_snapshot_entries": cfg.memory_snapshot_entries,
        },
    )


class _Session:
    """The mutable state of one launch, shared by the main thread and the watchdog thread."""

    def __init__(self, cfg: LaunchConfig, node: NodeRecord) -> None:
        self.cfg = cfg
        self.node = node
        self.registry = WorkerRegistry(on_attempt_end=self.record_attempt)
        self._pids_recorded = False

    def record_ranks(self, outcome: TorchrunOutcome | None = None) -> None:
        workers = self.registry.snapshot()
        if not workers and outcome is not None:
            self._ranks_from_heartbeats(outcome)
            return
        self.node.ranks = [
            rank_entry(w.rank, self.node.host, w.local_rank, w.pid, w.returncode, w.start_ns, w.end_ns) for w in workers
        ]
        sizes = [w.world_size for w in workers if w.world_size]
        self.node.world_size = max(sizes) if sizes else self.node.world_size

    def record_attempt(self, restart_count: int, workers: list[WorkerRecord]) -> None:
        """A worker group ended (the next one starts, or the job is over): its ranks' exit codes and
        signals, and its world size (collectors/launch_attempts.py)."""
        record = attempt_record(workers, self.node.host, self.node.key, self.node.launcher_pid, restart_count)
        append_attempt(self.cfg.run_dir, record)

    def _ranks_from_heartbeats(self, outcome: TorchrunOutcome) -> None:
        """When torchrun's worker processes could not be observed (another torch version): the
        hook's heartbeats give rank and pid, torchrun's failure report the exit codes."""
        from scope.collectors.watchdog import read_heartbeats

        beats = [b for b in read_heartbeats(self.cfg.run_dir).values() if b.get("host") == self.node.host]
        self.node.ranks = [
            rank_entry(
                b["rank"],
                self.node.host,
                b.get("local_rank"),
                b.get("pid"),
                outcome.failures.get(b["rank"], 0 if outcome.ok else None),
                b.get("started_ns"),
                b.get("written_ns"),
            )
            for b in sorted(beats, key=lambda b: b["rank"])
        ]

    def publish(self) -> RunManifest:
        write_node(self.cfg.run_dir, self.node)
        return merge_manifest(self.cfg.run_dir)

    def publish_final(self) -> RunManifest:
        """The last record: the reserve is given back first, so a full disk still takes it. When even
        that fails (a read-only disk), the state is said on stderr and returned, never raised."""
        _release_reserve(self.cfg.run_dir)
        try:
            return self.publish()
        except OSError as exc:
            print(
                f"scope: run.json could not be written ({exc.strerror or exc}: {exc.filename or self.cfg.run_dir}); "
                f"the run {self.node.status}, and its record on disk is incomplete",
                file=sys.stderr,
            )
            from scope.collectors.launch_manifest import _apply_nodes

            manifest = RunManifest()
            _apply_nodes(manifest, [self.node])
            return manifest

    def note_losses(self) -> None:
        """What the run directory could not take, from the ranks' last heartbeats (their dropped output)."""
        from scope.collectors.watchdog import read_heartbeats

        dropped = {
            str(rank): beat["output_dropped"]
            for rank, beat in sorted(read_heartbeats(self.cfg.run_dir).items())
            if beat.get("host") == self.node.host and beat.get("output_dropped")
        }
        if dropped:
            self.node.lost["rank_output"] = dropped
            total = sum(s.get("dropped_bytes", 0) for streams in dropped.values() for s in streams.values())
            print(
                f"scope: the run directory refused {total:,} bytes of the ranks' output (ranks "
                f"{', '.join(dropped)}); the job went on, the text is lost (run.json: lost)",
                file=sys.stderr,
            )

    def tick(self) -> None:
        """Note exits as they happen (end times); once all workers started, publish their pids."""
        workers = self.registry.snapshot()
        if self._pids_recorded:
            return
        expected = _int_or_none(self.cfg.nproc_per_node)
        if workers and (expected is None or len(workers) >= expected):
            self._pids_recorded = True
            self.record_ranks()
            self.publish()

    def on_recover(self, record: dict[str, Any]) -> None:
        """The ranks step again after a recorded hang: running again, the stall kept as a recovered hang
        (the latest in `hang`, earlier ones in `hang.earlier`)."""
        if self.node.hang is not None:
            self.node.hang.update(recovered=True, recovered_ns=record.get("recovered_ns"))
        self.node.status = "running"
        print("scope: the ranks step again; the stall is recorded (run.json hang.recovered)", file=sys.stderr)
        with contextlib.suppress(OSError):
            self.publish()

    def on_hang(self, report: dict[str, Any]) -> None:
        if self.node.hang is not None and self.node.hang.get("recovered"):
            earlier = self.node.hang.pop("earlier", [])
            report["earlier"] = [*earlier, self.node.hang]
        self.node.hang = report
        self.node.status = "hung"
        self.record_ranks()
        try:
            self.publish()
        except OSError as exc:  # the record waits for the end; the report and --kill-on-hang do not
            print(f"scope: hang record not written: {exc.strerror or exc}", file=sys.stderr)
        behind = report.get("behind_ranks") or "none"
        print(
            f"scope: hang: no rank advanced for {report['timeout_s']:.0f} s "
            f"(last steps {report['last_steps']}, behind: {behind}); dumps taken",
            file=sys.stderr,
        )
        if self.cfg.kill_on_hang:
            print("scope: --kill-on-hang: ending the job", file=sys.stderr)
            self.registry.signal_all(signal.SIGTERM)
            deadline = time.monotonic() + KILL_GRACE_S
            while time.monotonic() < deadline and self.registry.pids():
                time.sleep(0.2)
            self.registry.signal_all(signal.SIGKILL)


def _start_sidecar(cfg: LaunchConfig) -> Any:
    if not cfg.sidecar:
        return None
    from scope.collectors.sidecar import start_sidecar  # part of scope: an import error is a bug, not an option

    try:
        # Kernel-log lines from before the job (another process's segfault) are not this job's.
        return start_sidecar(cfg.run_dir, hz=cfg.sidecar_hz, kmsg_backlog_s=5.0)
    except Exception as exc:
        print(f"scope: counter sidecar not started: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _final_status(session: _Session, outcome: TorchrunOutcome) -> str:
    """Every rank exited 0: completed, even after a stall the watchdog recorded (a long checkpoint or
    evaluation; the hang record stays, marked recovered, and the analysis reports the stall)."""
    returncodes = [r.get("exit_code") for r in session.node.ranks]
    completed = outcome.ok and returncodes and all(code == 0 for code in returncodes)
    if session.node.hang and completed:
        session.node.hang["recovered"] = True
        session.node.hang["outcome"] = "completed"
        if not session.node.hang.get("recovered_ns"):  # no step after the stall: it ended at the exit
            session.node.hang["recovered_ns"] = time.time_ns()
    if session.node.hang and not session.node.hang.get("recovered"):
        return "hung"
    return "completed" if completed else "failed"


def _check_writable(run_dir: Path) -> None:
    """Before the job starts: a run directory that cannot take a file is said now, not found later."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".scope-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ScopeError(
            f"{run_dir}: cannot write the run directory ({exc.strerror or exc}); choose a writable --out",
            EXIT_USAGE,
        ) from None


def _hold_reserve(run_dir: Path) -> None:
    with contextlib.suppress(OSError), open(run_dir / RESERVE_NAME, "wb") as fh:
        fh.write(b"\0" * RESERVE_BYTES)  # real blocks, not a sparse hole


def _release_reserve(run_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (run_dir / RESERVE_NAME).unlink()
    # the room each rank's hook kept for its last words (collectors/hook/streams.py), left by a rank that
    # was killed before it could give it back
    with contextlib.suppress(OSError):
        for left in (run_dir / "ranks").glob("*/.scope-last-words"):
            with contextlib.suppress(OSError):
                left.unlink()


def launch(cfg: LaunchConfig) -> LaunchResult:
    """Run the job; returns when it ended, with run.json final for this node."""
    leave_jobs_their_allocator()
    _check_command(cfg.command)
    cfg.run_dir = cfg.run_dir.resolve()
    placement = launch_env.detect_placement()
    argv = torchrun_argv(cfg, placement)
    _check_run_dir(cfg, node_count(cfg, placement))
    _check_writable(cfg.run_dir)
    _hold_reserve(cfg.run_dir)
    hook = HookConfig(
        run_dir=cfg.run_dir,
        profile_start=cfg.profile_start,
        profile_every=cfg.profile_every,
        profile_active=cfg.profile_active,
        profile_flops=cfg.profile_flops,
        profile_memory=cfg.profile_memory,
        memory_snapshot_entries=cfg.memory_snapshot_entries,
        time_ddp=cfg.time_ddp,
    )
    job_env = launch_env.job_env(cfg.run_dir, hook)
    session = _Session(cfg, _node_record(cfg, argv, placement, job_env))
    try:
        session.publish()
    except OSError as exc:
        _release_reserve(cfg.run_dir)
        raise ScopeError(
            f"{cfg.run_dir}: cannot write run.json ({exc.strerror or exc}); choose a writable --out"
        ) from None
    sidecar = _start_sidecar(cfg)
    live = start_live(cfg, session.node)
    watchdog = watchdog_for(cfg, session, live)
    monitor = WatchdogThread(watchdog, [session.tick])
    # the look at the watchdog's pace (every 0.25 s under a short --hang-timeout), on its own nicer thread
    looker = (
        None if live is None else WatchdogThread(None, [live.tick], monitor.poll_s, nice=LIVE_NICE, name="scope-live")
    )
    for thread in (monitor, looker):
        if thread is not None:
            thread.start()
    try:
        outcome = run_torchrun(argv, cfg.run_dir, job_env, session.registry, cfg.tee)
    finally:
        monitor.stop()
        if looker is not None:
            looker.stop()
        if live is not None:
            with contextlib.suppress(Exception):
                live.tick()  # what the last steps showed
                live.close()
        if sidecar is not None:
            with contextlib.suppress(Exception):
                sidecar.stop()
    if outcome.summary:
        print(outcome.summary, file=sys.stderr)
    elif outcome.error:
        print(f"scope: the job failed: {outcome.error}", file=sys.stderr)
    session.registry.finish()
    session.record_ranks(outcome)
    session.node.error = outcome.error
    session.node.status = _final_status(session, outcome)
    session.node.end_ns = time.time_ns()
    with contextlib.suppress(Exception):  # the losses are worth saying; never worth a traceback
        session.note_losses()
    manifest = session.publish_final()
    code = EXIT_OK if session.node.status == "completed" else EXIT_JOB_FAILED
    return LaunchResult(cfg.run_dir, manifest.status, code, manifest, outcome)


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def usable_cpus() -> int | None:
    """The cores this launcher (and the ranks it starts) may run on: its affinity, else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()
