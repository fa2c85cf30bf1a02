"""run.json from one or many launchers.

Each node's launcher owns one fragment, `RUN/nodes/<host>-<node>.json` (its host, its ranks, their
pids and exit status, its view of a hang), and rewrites it as things happen. After each write the
launcher merges all fragments into `run.json` under a file lock, so nodes that finish in any order
leave one consistent manifest; the last one to finish writes the final state. Keys another tool
added to run.json (a clock offset, an `extra` entry) are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scope.manifest import HostInfo, RankInfo, RunManifest, read_manifest, write_manifest
from scope.recordio import read_json
from scope.rundir import heartbeat_path, is_run_dir

NODES_DIR = "nodes"
LOCK_NAME = ".run.lock"
GROUND_TRUTH = "ground_truth.json"
# Worst first: one hung node makes the run hung, one failed node makes it failed.
STATUS_ORDER = ("running", "hung", "failed", "completed", "unknown")


@dataclass
class NodeRecord:
    host: str
    launcher_pid: int
    start_ns: int
    node_rank: int | None = None
    nnodes: int = 1
    run_id: str = ""
    command: list[str] = field(default_factory=list)
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)
    launcher: dict[str, Any] = field(default_factory=dict)  # scope and torchrun command lines, options
    status: str = "running"
    end_ns: int | None = None
    world_size: int | None = None
    ranks: list[dict[str, Any]] = field(default_factory=list)  # RankInfo fields
    hang: dict[str, Any] | None = None
    error: str | None = None
    cpus: int | None = None  # the launcher's usable CPU cores (sched affinity)
    # What the run directory could not take (full or read-only disk): per-rank output dropped, records
    # not written. Empty when nothing was lost.
    lost: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        node = self.node_rank if self.node_rank is not None else f"pid{self.launcher_pid}"
        return f"{self.host}-{node}"


def node_path(run_dir: Path, node: NodeRecord) -> Path:
    return Path(run_dir) / NODES_DIR / f"{node.key}.json"


def write_node(run_dir: Path, node: NodeRecord) -> None:
    path = node_path(run_dir, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(asdict(node), indent=1))
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no half-written temporary behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def read_nodes(run_dir: Path) -> list[NodeRecord]:
    nodes = []
    names = {f for f in NodeRecord.__dataclass_fields__}
    for path in sorted((Path(run_dir) / NODES_DIR).glob("*.json")):
        data = read_json(path)  # guarded: a FIFO or /dev/zero among node records is skipped
        if data is not None:
            with contextlib.suppress(TypeError, ValueError):
                nodes.append(NodeRecord(**{k: v for k, v in data.items() if k in names}))
    return nodes


def rank_entry(
    rank: int,
    host: str,
    local_rank: int | None,
    pid: int | None,
    returncode: int | None,
    start_ns: int | None,
    end_ns: int | None,
) -> dict[str, Any]:
    """A RankInfo as a dict. A negative return code (Popen's way) means killed by that signal."""
    sig = None
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            sig = signal.Signals(-returncode).name
        sig = sig or f"signal {-returncode}"
    info = RankInfo(rank, host, local_rank, pid, returncode, sig, start_ns, end_ns)
    return vars(info).copy()


@contextlib.contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    """An exclusive lock across launchers; on a file system without locks, go ahead unlocked."""
    path = Path(run_dir) / LOCK_NAME
    with open(path, "a") as fh:
        with contextlib.suppress(OSError):
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def merge_manifest(run_dir: Path) -> RunManifest:
    """Merge every node's record (and ground truth, backend) into run.json; returns it."""
    run_dir = Path(run_dir)
    with _locked(run_dir):
        manifest = _read_existing(run_dir)
        nodes = sorted(read_nodes(run_dir), key=lambda n: (n.node_rank is None, n.node_rank or 0, n.host))
        if nodes:
            _apply_nodes(manifest, nodes)
        manifest.ground_truth = _read_ground_truth(run_dir) or manifest.ground_truth
        manifest.backend = manifest.backend or _backend_from_heartbeats(run_dir, manifest)
        write_manifest(run_dir, manifest)
    return manifest


def _read_existing(run_dir: Path) -> RunManifest:
    if not is_run_dir(run_dir):
        return RunManifest()
    try:
        return read_manifest(run_dir)
    except Exception:
        return RunManifest()  # a broken manifest is rebuilt from the node records


def _apply_nodes(manifest: RunManifest, nodes: list[NodeRecord]) -> None:
    lead = nodes[0]
    manifest.run_id = lead.run_id or manifest.run_id
    manifest.command = lead.command
    manifest.cwd = lead.cwd
    manifest.env = lead.env
    offsets = {h.name: h.clock_offset_ns for h in manifest.hosts}
    ranks = sorted((r for n in nodes for r in n.ranks), key=lambda r: r["rank"])
    manifest.ranks = [RankInfo(**r) for r in ranks]
    hosts: dict[str, list[int]] = {}
    cpus: dict[str, int] = {}
    for node in nodes:
        hosts.setdefault(node.host, []).extend(r["rank"] for r in node.ranks)
        if node.cpus:
            cpus[node.host] = max(cpus.get(node.host, 0), node.cpus)
    manifest.hosts = [HostInfo(name, sorted(r), offsets.get(name, 0), cpus.get(name)) for name, r in hosts.items()]
    sizes = [n.world_size for n in nodes if n.world_size]
    manifest.world_size = max(sizes) if sizes else (len(ranks) or None)
    manifest.start_ns = min(n.start_ns for n in nodes)
    ended = [n.end_ns for n in nodes if n.end_ns is not None]
    expected = max(n.nnodes for n in nodes)
    all_ended = len(ended) == len(nodes) and len(nodes) >= expected
    manifest.end_ns = max(ended) if all_ended else None
    manifest.status = _merged_status([n.status for n in nodes], complete=len(nodes) >= expected)
    hangs = [n.hang for n in nodes if n.hang]
    manifest.hang = _merge_hangs(hangs) if hangs else None
    manifest.extra["launcher"] = lead.launcher
    manifest.extra["nodes"] = [
        {"host": n.host, "node_rank": n.node_rank, "status": n.status, "error": n.error} for n in nodes
    ]
    if expected > len(nodes):
        manifest.extra["nodes_expected"] = expected
    lost = {n.key: n.lost for n in nodes if n.lost}
    if lost:
        manifest.extra["lost"] = lost


def _merged_status(statuses: list[str], complete: bool) -> str:
    if "running" in statuses:
        # A hang seen by a node that is still running is the run's state already.
        return "hung" if "hung" in statuses else "running"
    for status in STATUS_ORDER[1:]:
        if status in statuses:
            return status if (complete or status != "completed") else "running"
    return "unknown"


def _merge_hangs(hangs: list[dict[str, Any]]) -> dict[str, Any]:
    """The earliest detection, with every node's view of the last steps."""
    earliest = min(hangs, key=lambda h: h.get("detected_ns") or 0)
    first = dict(earliest)
    last_steps: dict[str, Any] = {}
    dumps: dict[str, Any] = {}
    ras: dict[str, Any] = {}  # each node's watchdog asked its own RAS port
    for hang in hangs:
        last_steps.update(hang.get("last_steps", {}))
        dumps.update(hang.get("dumps", {}))
        if hang.get("ras"):
            ras[str(hang.get("detected_by") or "")] = hang["ras"]
    if ras:
        first["ras"] = ras
    first["last_steps"] = dict(sorted(last_steps.items(), key=lambda kv: int(kv[0])))
    if dumps:
        first["dumps"] = dict(sorted(dumps.items(), key=lambda kv: int(kv[0])))
    return first


def _read_ground_truth(run_dir: Path) -> dict[str, Any] | None:
    return read_json(run_dir / GROUND_TRUTH)


def _backend_from_heartbeats(run_dir: Path, manifest: RunManifest) -> str:
    for info in manifest.ranks:
        beat = read_json(heartbeat_path(run_dir, info.rank))
        backend = beat.get("backend") if beat is not None else None
        if backend:
            return str(backend)
    return ""
