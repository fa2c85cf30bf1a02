"""`run.json`: the manifest at the root of every run directory.

One data model with explicit to/from JSON, tolerant of older and newer files: unknown keys are
kept in `extra` and written back, missing keys take defaults. Bump SCHEMA_VERSION only for a
change an older reader would misread.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from scope import __version__
from scope.errors import ScopeError

SCHEMA_VERSION = 1
MANIFEST_NAME = "run.json"


@dataclass
class RankInfo:
    rank: int
    host: str = ""
    local_rank: int | None = None
    pid: int | None = None
    exit_code: int | None = None  # None while running or when unknown
    signal: str | None = None  # e.g. "SIGTERM" when the rank was killed
    start_ns: int | None = None
    end_ns: int | None = None


@dataclass
class HostInfo:
    name: str
    ranks: list[int] = field(default_factory=list)
    # Added to this host's timestamps to put them on the run clock (reference host: 0).
    clock_offset_ns: int = 0
    # CPU cores the launcher could run on (its affinity), when known: ranks beyond it contend for CPU.
    cpus: int | None = None


@dataclass
class RunManifest:
    schema_version: int = SCHEMA_VERSION
    scope_version: str = __version__
    run_id: str = ""
    command: list[str] = field(default_factory=list)
    cwd: str = ""
    env: dict[str, str] = field(default_factory=dict)
    backend: str = ""
    world_size: int | None = None
    hosts: list[HostInfo] = field(default_factory=list)
    ranks: list[RankInfo] = field(default_factory=list)
    start_ns: int | None = None
    end_ns: int | None = None
    status: str = "unknown"  # running | completed | failed | hung | unknown
    # How timestamps become one run clock: source clock and the reference host.
    clock: dict[str, Any] = field(default_factory=lambda: {"source": "CLOCK_REALTIME", "unit": "ns"})
    hang: dict[str, Any] | None = None
    # Faults injected by a sample workload: {"scenario", "fault", "fault_rank", ...}.
    ground_truth: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name == "hosts":
                value = [vars(h).copy() for h in value]
            elif f.name == "ranks":
                value = [vars(r).copy() for r in value]
            out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunManifest:
        names = {f.name for f in fields(cls)} - {"extra"}
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if k in names}
        kwargs["hosts"] = [_build(HostInfo, h) for h in data.get("hosts", [])]
        kwargs["ranks"] = [_build(RankInfo, r) for r in data.get("ranks", [])]
        manifest = cls(**kwargs)
        manifest.extra = {k: v for k, v in data.items() if k not in names}
        return manifest

    def rank_info(self, rank: int) -> RankInfo | None:
        return next((r for r in self.ranks if r.rank == rank), None)

    def host_of(self, rank: int) -> str:
        info = self.rank_info(rank)
        return info.host if info else ""

    def clock_offset_ns(self, host: str) -> int:
        return next((h.clock_offset_ns for h in self.hosts if h.name == host), 0)


def _build(cls: type, data: dict[str, Any]) -> Any:
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def read_manifest(run_dir: Path) -> RunManifest:
    path = Path(run_dir) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ScopeError(f"{path}: no run manifest (is this a run directory?)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScopeError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise ScopeError(f"{path}: JSON nested too deeply to be a run manifest") from None
    except OSError as exc:
        raise ScopeError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise ScopeError(f"{path}: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ScopeError(f"{path}: missing integer 'schema_version'")
    try:
        return RunManifest.from_dict(data)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise ScopeError(f"{path}: malformed run manifest ({type(exc).__name__}: {str(exc)[:100]})") from None


def write_manifest(run_dir: Path, manifest: RunManifest) -> Path:
    """Write atomically, so a reader (the dashboard, a live analysis) never sees half a file."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / MANIFEST_NAME
    fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=".run.json.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(manifest.to_dict(), fh, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no half-written temporary behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path
