"""torchrun, run in the launcher's own process with two seams for scope.

`torch.distributed.run` is driven through its `parse_args` / `run`, exactly as
`python -m torch.distributed.run ARGV` would run it, with:
  * a LogsSpecs that puts each rank's stdout, stderr and error file under `RUN/ranks/<global rank>/`
    (torchrun's own `--log-dir` layout is per local rank and attempt) and adds scope's per-rank
    environment (NCCL log and Flight Recorder dump paths need the rank, which NCCL cannot expand);
  * a record of every worker process torchrun starts (rank, pid, exit status), which the hang
    watchdog and run.json need and torchrun reports only for failed ranks.
Both are installed for the duration of one run and removed afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.rundir import fr_dir, rank_dir

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing.api import LogsSpecs


@dataclass
class WorkerRecord:
    rank: int
    local_rank: int
    world_size: int | None
    pid: int | None
    start_ns: int
    proc: Any = field(repr=False, default=None)  # subprocess.Popen
    end_ns: int | None = None
    returncode: int | None = None
    restart_count: int = 0  # the worker group (attempt) torchrun started it in

    def poll(self) -> None:
        if self.returncode is None and self.proc is not None:
            code = self.proc.poll()
            if code is not None:
                self.returncode = code
                self.end_ns = time.time_ns()


class WorkerRegistry:
    """Worker processes of this node, by global rank (the latest attempt wins on a restart). Each
    attempt's workers are kept until the next worker group starts: `on_attempt_end` then gets the
    finished group (torchrun has stopped it by then), and `finish()` gets the last one."""

    def __init__(self, on_attempt_end: Callable[[int, list[WorkerRecord]], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._workers: dict[int, WorkerRecord] = {}
        self._group: list[WorkerRecord] = []
        self._on_attempt_end = on_attempt_end

    def add(self, record: WorkerRecord) -> None:
        finished: list[WorkerRecord] = []
        with self._lock:
            if self._group and self._group[0].restart_count != record.restart_count:
                finished, self._group = self._group, []
            self._group.append(record)
            self._workers[record.rank] = record
        if finished:
            self._attempt_ended(finished)

    def finish(self) -> None:
        """The job is over: the last worker group's record."""
        with self._lock:
            finished, self._group = self._group, []
        if finished:
            self._attempt_ended(finished)

    def _attempt_ended(self, workers: list[WorkerRecord]) -> None:
        if self._on_attempt_end is None:
            return
        try:
            self._on_attempt_end(workers[0].restart_count, workers)
        except Exception as exc:  # a record lost, never the job
            print(f"scope: attempt record not written: {exc}", file=sys.stderr)

    def snapshot(self) -> list[WorkerRecord]:
        with self._lock:
            workers = sorted(self._workers.values(), key=lambda w: w.rank)
        for worker in workers:
            worker.poll()
        return workers

    def pids(self) -> dict[int, int]:
        return {w.rank: w.pid for w in self.snapshot() if w.pid is not None and w.returncode is None}

    def signal_all(self, signum: int) -> None:
        for worker in self.snapshot():
            if worker.returncode is None and worker.proc is not None:
                with contextlib.suppress(OSError):
                    worker.proc.send_signal(signum)


@dataclass
class TorchrunOutcome:
    ok: bool
    error: str | None = None  # what went wrong, in torchrun's words
    failures: dict[int, int] = field(default_factory=dict)  # rank -> exit code torchrun reported
    interrupted: str | None = None  # the signal that stopped the launcher itself
    summary: str = ""  # torchrun's failure report (the table it prints)


def make_logs_specs_class(run_dir: Path, extra_env: dict[str, str], tee: bool) -> type[LogsSpecs]:
    """A LogsSpecs class bound to this run (torchrun instantiates it from its own arguments)."""
    from torch.distributed.elastic.multiprocessing.api import LogsDest, LogsSpecs

    dest_fields = {f.name for f in dataclasses.fields(LogsDest)}

    class RunDirLogsSpecs(LogsSpecs):
        @property
        def root_log_dir(self) -> str:
            return str(run_dir)

        def reify(self, envs: dict[int, dict[str, str]]) -> Any:
            stdouts: dict[int, str] = {}
            stderrs: dict[int, str] = {}
            error_files: dict[int, str] = {}
            for local_rank, env in envs.items():
                rank = int(env.get("RANK", local_rank))
                folder = rank_dir(run_dir, rank)
                folder.mkdir(parents=True, exist_ok=True)
                _keep_previous_attempt(folder, env.get("TORCHELASTIC_RESTART_COUNT"))
                stdouts[local_rank] = str(folder / "stdout.log")
                stderrs[local_rank] = str(folder / "stderr.log")
                error_files[local_rank] = str(folder / "error.json")
                _clear_stale(folder / "error.json")
                env.update(extra_env)
                env.update(per_rank_env(run_dir, rank, extra_env))
                env["TORCHELASTIC_ERROR_FILE"] = error_files[local_rank]
            shown = set(envs) if self._local_ranks_filter is None else set(self._local_ranks_filter)
            values: dict[str, Any] = {
                "stdouts": stdouts,
                "stderrs": stderrs,
                "tee_stdouts": {r: p for r, p in stdouts.items() if tee and r in shown},
                "tee_stderrs": {r: p for r, p in stderrs.items() if tee and r in shown},
                "error_files": error_files,
                "filtered_stdout": str(run_dir / "ranks" / ".filtered_stdout.log"),
                "filtered_stderr": str(run_dir / "ranks" / ".filtered_stderr.log"),
            }
            return LogsDest(**{k: v for k, v in values.items() if k in dest_fields})

    return RunDirLogsSpecs


def per_rank_env(run_dir: Path, rank: int, job_env: dict[str, str]) -> dict[str, str]:
    """Variables that must name the rank: only those scope chose (a user's own settings win)."""
    out: dict[str, str] = {}
    managed = set(job_env.get("SCOPE_PER_RANK_ENV", "").split(","))
    if "NCCL_DEBUG_FILE" in managed:
        out["NCCL_DEBUG_FILE"] = str(rank_dir(run_dir, rank) / "nccl.log")
    if "TORCH_FR_DUMP_TEMP_FILE" in managed:
        folder = fr_dir(run_dir, rank)
        folder.mkdir(parents=True, exist_ok=True)
        # NCCL's own dump on a timeout appends the rank to this prefix.
        out["TORCH_FR_DUMP_TEMP_FILE"] = str(folder / "nccl_trace_rank_")
    return out


def _keep_previous_attempt(folder: Path, restart_count: str | None) -> None:
    """A restarted worker group writes the same file names: the failed attempt's output (its traceback,
    what the diagnosis reads) moves aside as attempt<N>.<name> first."""
    try:
        previous = int(restart_count or 0) - 1
    except ValueError:
        return
    if previous < 0:
        return
    for name in ("stdout.log", "stderr.log", "error.json"):
        src = folder / name
        with contextlib.suppress(OSError):
            if src.is_file() and src.stat().st_size:
                src.replace(folder / f"attempt{previous}.{name}")


def _clear_stale(path: Path) -> None:
    """A leftover error file from an earlier attempt would be taken for this attempt's."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@contextlib.contextmanager
def _patched(run_dir: Path, extra_env: dict[str, str], tee: bool, registry: WorkerRegistry) -> Iterator[None]:
    import torch.distributed.elastic.multiprocessing.api as mp_api
    import torch.distributed.run as trun

    logs_cls = make_logs_specs_class(run_dir, extra_env, tee)
    original_logs = trun._get_logs_specs_class
    original_handler = mp_api.get_subprocess_handler

    def get_logs_specs_class(logs_specs_name: str | None) -> type[LogsSpecs]:
        return logs_cls if logs_specs_name is None else original_logs(logs_specs_name)

    def get_subprocess_handler(*args: Any, **kwargs: Any) -> Any:
        handler = original_handler(*args, **kwargs)
        env = kwargs.get("env") or {}
        proc = getattr(handler, "proc", None)
        local_rank = int(kwargs.get("local_rank_id", env.get("LOCAL_RANK", 0)))
        world = env.get("WORLD_SIZE")
        restarts = env.get("TORCHELASTIC_RESTART_COUNT") or "0"
        registry.add(
            WorkerRecord(
                rank=int(env.get("RANK", local_rank)),
                local_rank=local_rank,
                world_size=int(world) if world else None,
                pid=getattr(proc, "pid", None),
                start_ns=time.time_ns(),
                proc=proc,
                restart_count=int(restarts) if restarts.isdigit() else 0,
            )
        )
        return handler

    trun._get_logs_specs_class = get_logs_specs_class
    mp_api.get_subprocess_handler = get_subprocess_handler
    try:
        yield
    finally:
        trun._get_logs_specs_class = original_logs
        mp_api.get_subprocess_handler = original_handler


# torchrun's agent turns these into SignalException and leaves its handlers installed when it returns.
_AGENT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signal_handlers_restored() -> Iterator[None]:
    """The process's own signal handlers back once the job is over: what runs after it (the demo's
    dashboard, served until Ctrl-C) must see Ctrl-C as KeyboardInterrupt, not as torchrun's
    SignalException ("internal error" with a traceback once the dashboard was stopped)."""
    saved = {sig: signal.getsignal(sig) for sig in _AGENT_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:
                signal.signal(sig, handler)


def run_torchrun(
    argv: list[str], run_dir: Path, extra_env: dict[str, str], registry: WorkerRegistry, tee: bool = True
) -> TorchrunOutcome:
    """Run torchrun with `argv` (its own command line) on this thread, which must be the main one."""
    import torch.distributed.run as trun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    args = trun.parse_args(argv)
    with _patched(run_dir, extra_env, tee, registry), _signal_handlers_restored():
        try:
            trun.run(args)
        except ChildFailedError as exc:
            failures = {rank: f.exitcode for rank, f in exc.failures.items()}
            first = exc.get_first_failure()[1]
            return TorchrunOutcome(ok=False, error=str(first.message), failures=failures, summary=exc.format_msg())
        except SignalException as exc:
            name = signal.Signals(exc.sigval).name
            return TorchrunOutcome(ok=False, error=f"launcher received {name}", interrupted=name)
        except KeyboardInterrupt:
            return TorchrunOutcome(ok=False, error="interrupted", interrupted="SIGINT")
        except Exception as exc:  # rendezvous errors and the like: the job could not run
            return TorchrunOutcome(ok=False, error=f"{type(exc).__name__}: {exc}")
    return TorchrunOutcome(ok=True)
