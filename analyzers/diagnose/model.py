"""The diagnosis data model: one Anomaly per noteworthy log line, kernel message, stack or dump fact.

Every parser (logs, nccl, kmsg, stacks, flight_recorder) returns Anomaly records; rootcause orders
them in time and by causal level and turns them into one Finding per root cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scope.warnings import InputWarning

# Causal levels: a lower level can cause a higher one, never the reverse. When two anomalies have no
# comparable timestamps, the lower level is taken as the earlier link of the chain.
HARDWARE = 0  # Xid, ECC, PCIe, NVLink, a GPU fallen off the bus
APPLICATION = 1  # an exception, OOM, segfault or abort in the training process itself
COMM_ERROR = 2  # an NCCL/network error seen locally (IB completion error, socket connect failure)
MISMATCH = 3  # ranks disagreeing on the collective (desync)
STALL = 4  # a collective timeout, a stuck watchdog, a hang
PEER_LOST = 5  # a peer vanished: connection reset/closed, remote process exited
TEARDOWN = 6  # exits, SIGTERMs from the launcher, "taking the process down", dump notices


@dataclass(slots=True)
class Anomaly:
    """One observation. `code` is the fine class (e.g. c10d_watchdog_timeout, xid); `kind` the Finding kind."""

    code: str
    kind: str
    level: int
    message: str
    file: str = ""
    line: int = 0
    rank: int | None = None
    host: str | None = None
    time_ns: int | None = None
    # Kernel-log monotonic seconds: comparable only within one host's boot.
    mono_s: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # Severity the anomaly would have as a finding of its own.
    severity: str = "critical"

    @property
    def evidence(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def sort_key(self) -> tuple[int, int, int]:
        """Earliest first: known times before unknown ones, then by causal level."""
        known = 0 if self.time_ns is not None else 1
        return (known, self.time_ns or 0, self.level)


@dataclass
class NcclInfo:
    """What NCCL_DEBUG=INFO lines say about the communicator set-up (healthy runs too)."""

    version: str | None = None
    # RCCL's banner ('RCCL version 2.18.3+hip6.1'): the log runs AMD's RCCL, which speaks NCCL's words
    rccl: str | None = None
    nranks: int | None = None
    ranks: set[int] = field(default_factory=set)
    init_complete: set[int] = field(default_factory=set)
    rank_hosts: dict[int, str] = field(default_factory=dict)
    hosts: set[str] = field(default_factory=set)
    transports: set[str] = field(default_factory=set)
    networks: set[str] = field(default_factory=set)
    channels: int | None = None

    def merge(self, other: NcclInfo) -> None:
        self.version = self.version or other.version
        self.rccl = self.rccl or other.rccl
        if other.nranks:
            self.nranks = max(self.nranks or 0, other.nranks)
        self.ranks |= other.ranks
        self.init_complete |= other.init_complete
        self.rank_hosts.update(other.rank_hosts)
        self.hosts |= other.hosts
        self.transports |= other.transports
        self.networks |= other.networks
        if other.channels:
            self.channels = max(self.channels or 0, other.channels)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "nranks": self.nranks,
            "ranks_seen": len(self.ranks | set(self.rank_hosts)),
            "init_complete": len(self.init_complete),
            "hosts": sorted(self.hosts),
            "transports": sorted(self.transports),
            "networks": sorted(self.networks),
            "channels": self.channels,
        }


@dataclass(slots=True)
class CollCall:
    """One 'NCCL INFO AllReduce: opCount N ... count C datatype D op O root R comm 0x..' line."""

    who: str  # host:pid [dev] of the process that logged it
    rank: int | None
    group: str  # commId when init logged it, else 'nranks=N'
    op_count: int
    coll: str
    count: int
    datatype: int
    op: int
    root: int
    file: str
    line: int
    host: str | None = None

    def call(self) -> tuple[str, int, int, int, int]:
        return (self.coll, self.count, self.datatype, self.op, self.root)


@dataclass
class FileScan:
    """What one input file yielded."""

    path: str
    anomalies: list[Anomaly] = field(default_factory=list)
    nccl: NcclInfo = field(default_factory=NcclInfo)
    # rank -> host learned from the file (NCCL prefixes, torchrun reports, banners).
    rank_hosts: dict[int, str] = field(default_factory=dict)
    # ranks that printed anything recognisable (a rank with a log is alive enough to write).
    ranks_seen: set[int] = field(default_factory=set)
    # ranks whose '[rankN]:' tag (torchrun's prefix of each local rank's output) opens a line of the file, read where
    # a timeout is in it: the ranks the stream carries, silent or not (words/endings.py).
    rank_tags: set[int] = field(default_factory=set)
    # PCI address -> GPU UUID, from 'NVRM: GPU at PCI:...: GPU-...' lines.
    gpu_uuids: dict[str, str] = field(default_factory=dict)
    # Used only when no file explains the failure: where the run stopped (reasoning/progress.py), and the
    # first error-class line no rule matched (reasoning/guess.py).
    stalled: Anomaly | None = None
    guess: Anomaly | None = None
    # Where the log stopped (reasoning/stages.StageStop, every log), and the line saying training finished
    # (read only when the file holds a crash: a crash after it is a crash at exit).
    stop: Any = None
    finished: tuple[int, str] | None = None
    # ... and the last training-step line before it ended (read only when the file holds a crash).
    stepped: tuple[int, str] | None = None
    # ... whether the job runs collectives, and an abort the rank printed itself after that step line
    # (knowledge/kill_senders.py: only then is a SIGABRT mid-run read as c10d's watchdog)
    collectives: bool = False
    own_abort: tuple[int, str] | None = None
    # Who the log shows killing the job, other than the OOM killer (knowledge/kill_senders.py); None: no one else
    kill_sender: str | None = None
    # The native library whose start-up lines come just before a segmentation fault (knowledge/native_init.py):
    # (line, text, row); None when none does
    native_init: Any = None
    # The first NaN / inf loss line before a native fault (knowledge/divergence.py): (line, text); None if none
    diverged: tuple[int, str] | None = None
    # In a log with a collective timeout: what a rank was busy with around it (reasoning/late_rank.Busy).
    late: Any = None
    # In a log with a collective timeout: the serving engine that wrote it (knowledge/engines.Engine), if any.
    engine: Any = None
    # The frameworks whose lines the log shows (knowledge/timeout_knobs.py): whose timeout setting the remedy names.
    frameworks: tuple[str, ...] = ()
    # faulthandler's 'Garbage-collecting' frame: a native crash while Python finalized (at exit)
    finalizing: bool = False
    # NCCL variables the log shows set by the environment: name -> (value, line) (knowledge/env_settings.py).
    env: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Per-rank NCCL INFO collective calls (readers/infolines.py), compared across ranks and files.
    coll_calls: list[CollCall] = field(default_factory=list)
    # Notes about the file that are no evidence of the job's failure (scope's own collector logs).
    notes: list[str] = field(default_factory=list)
    # Parts of the file that were not read (the middle of a huge log): the run is partial (exit 4).
    unread: list[InputWarning] = field(default_factory=list)
