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
from dataclasses import MISSING, dataclass, field, fields
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
    # Fields read_manifest left out (a value of the wrong type): said as warnings, never written back.
    problems: list[str] = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("extra", "problems"):
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
        names = {f.name for f in fields(cls)} - {"extra", "problems"}
        problems: list[str] = []
        kwargs: dict[str, Any] = _typed(cls, {k: v for k, v in data.items() if k in names}, "", problems)
        kwargs["hosts"] = _entries(HostInfo, _list(data, "hosts", problems), "hosts", problems)
        kwargs["ranks"] = _entries(RankInfo, _list(data, "ranks", problems), "ranks", problems)
        manifest = cls(**kwargs)
        manifest.extra = {k: v for k, v in data.items() if k not in names}
        manifest.problems = problems
        return manifest

    def rank_info(self, rank: int) -> RankInfo | None:
        return next((r for r in self.ranks if r.rank == rank), None)

    def host_of(self, rank: int) -> str:
        info = self.rank_info(rank)
        return info.host if info else ""

    def clock_offset_ns(self, host: str) -> int:
        return next((h.clock_offset_ns for h in self.hosts if h.name == host), 0)


def _build(cls: type, data: Any, where: str = "", problems: list[str] | None = None) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"{where.rstrip('.')} is {type(data).__name__}, not an object")
    names = {f.name for f in fields(cls)}
    return cls(**_typed(cls, {k: v for k, v in data.items() if k in names}, where, problems))


# What each field may hold (by its annotation's words): a value of another type, or an integer no clock
# or count can be (a 5,000-digit one), is left out: the field keeps its default, and the problem is said.
_KINDS: dict[str, tuple[type, ...]] = {"int": (int,), "str": (str,), "list": (list,), "dict": (dict,)}
INT64 = (1 << 63) - 1


def _typed(cls: type, values: dict[str, Any], where: str, problems: list[str] | None) -> dict[str, Any]:
    out = {}
    for f in fields(cls):
        if f.name not in values or f.name in ("hosts", "ranks"):
            continue
        value = values[f.name]
        annotation = str(f.type)
        optional = "None" in annotation
        kinds = next((k for word, k in _KINDS.items() if annotation.startswith(word)), None)
        fits = (
            (value is None and optional) or kinds is None or (isinstance(value, kinds) and not isinstance(value, bool))
        )
        if fits and isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64:
            fits = False
        if fits:
            out[f.name] = value
        elif problems is not None:
            shown = f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__
            problems.append(f"{where}{f.name} is {shown}, not {annotation}; left out")
        else:
            raise TypeError(f"{where}{f.name} is {type(value).__name__}, not {annotation}")
    required = [
        f.name for f in fields(cls) if f.name not in out and f.default is MISSING and f.default_factory is MISSING
    ]
    if required:
        raise TypeError(f"{where}{required[0]} is missing or not {cls.__name__}'s type")
    return out


def _list(data: dict[str, Any], key: str, problems: list[str]) -> list[Any]:
    value = data.get(key, [])
    if isinstance(value, list):
        return value
    problems.append(f"{key} is {type(value).__name__}, not a list; left out")
    return []


def _entries(cls: type, items: list[Any], key: str, problems: list[str]) -> list[Any]:
    """hosts[] or ranks[]: an entry that is no object, or lacks its name or rank, is left out and said."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(_build(cls, item, f"{key}[{i}].", problems))
        except TypeError as exc:
            problems.append(f"{exc}; {key}[{i}] left out")
    return out


def read_manifest(run_dir: Path) -> RunManifest:
    path = Path(run_dir) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ScopeError(f"{path}: no run manifest (is this a run directory?)") from None
    except (ValueError, UnicodeDecodeError) as exc:  # bad JSON, or an integer of 5,000 digits
        raise ScopeError(f"{path}: not valid JSON ({str(exc)[:200]})") from None
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
