"""The run-directory layout: where each stage writes and reads (documented in docs/run-directory.md).

    RUN/
      run.json                         manifest (scope.manifest), merged from nodes/
      ground_truth.json                faults a sample workload injected (also in run.json)
      nodes/<host>-<node>.json         each node's launcher record (scope.collectors.launch_manifest)
      ranks/<rank>/                    one folder per global rank
        traces/rank<R>.step<A>-<B>.pt.trace.json.gz
                                       torch.profiler windows (Kineto), steps A..B inclusive
        stdout.log, stderr.log         the rank's output
        nccl.log                       NCCL_DEBUG=INFO output
        fr/<seq>-<reason>.pkl          Flight Recorder dumps (torch pickle; reason: hang, exit,
                                       exception, sigterm, sigusr2, attach); NCCL's own dump on
                                       a timeout: fr/nccl_trace_rank_<R>
        stacks/<seq>-<reason>.txt      Python stacks of all threads, with thread names
        stacks/faulthandler.txt        C-level stacks on SIGUSR2 and fatal signals (appended)
        stacks/sigterm.txt             C-level stacks on SIGTERM (appended)
        heartbeat.json                 latest {"step", "time_ns", "pid", "state", ...} by the hook
        hook.log                       what the in-process hook did and any error it caught
        error.json                     torchrun's per-rank error file
      hosts/<host>/                    one folder per host
        counters/<table>/*.parquet     sidecar counter chunks: host, net, disk, ib, gpu, nvlink,
                                       events (format: scope.collectors.sidecar)
        kmsg.log                       kernel-log lines (Xid, AER, mlx5)
        sidecar.log, sidecar.json      the sampler's notices and errors; its status and cost
      stacks/<pid>/                    py-spy dumps by `scope attach` of processes with no known rank
      control/*.json                   requests to a running job (attach, watchdog):
                                       scope.collectors.hook.control
      live/events.jsonl                live findings opened and cleared (scope.live.monitor)
      store/                           written by `scope ingest` (scope.store)

A plain folder of trace files is accepted too; scope.inputs lists what a run holds, and where its store goes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from scope.manifest import MANIFEST_NAME

TRACE_SUFFIXES = (".json", ".json.gz")


def is_run_dir(path: Path) -> bool:
    return (Path(path) / MANIFEST_NAME).is_file()


def rank_dir(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / "ranks" / str(rank)


def traces_dir(run_dir: Path, rank: int) -> Path:
    return rank_dir(run_dir, rank) / "traces"


def fr_dir(run_dir: Path, rank: int) -> Path:
    return rank_dir(run_dir, rank) / "fr"


def stacks_dir(run_dir: Path, rank: int) -> Path:
    return rank_dir(run_dir, rank) / "stacks"


def heartbeat_path(run_dir: Path, rank: int) -> Path:
    return rank_dir(run_dir, rank) / "heartbeat.json"


def host_dir(run_dir: Path, host: str) -> Path:
    return Path(run_dir) / "hosts" / host


def launcher_attempts_path(run_dir: Path, host: str) -> Path:
    """The launcher's record of each worker-group attempt on this host (collectors/launch_attempts.py)."""
    return host_dir(run_dir, host) / "attempts.jsonl"


def counters_dir(run_dir: Path, host: str) -> Path:
    return host_dir(run_dir, host) / "counters"


def control_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "control"


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(path: Path) -> str | None:
    """What PATH is when it is neither a regular file nor a folder (links followed): 'a FIFO', 'a character
    device', ..., 'a broken link'; None otherwise. Only regular files are ever opened: a FIFO blocks its
    reader forever, a link to /dev/zero never ends."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken link" if os.path.islink(path) else None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def skipped_message(path: Path | str, what: str) -> str:
    return f"{path}: {what}, not a regular file; skipped (only regular files are read)"
