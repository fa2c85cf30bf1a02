"""The goodput of a job, typed: the one object every command shows. `scope goodput` prints it and writes it
(--json); `scope analyze` keeps it in its analysis (the `goodput_report` section of analysis.json, read back
as `Analysis.goodput`) and prints its one-line summary; the dashboard's goodput page reads it back.

One JSON contract, `to_dict` / `from_dict` (a round trip gives the same object): the keys of
`scope goodput --json` since it was written; later versions add keys, never remove or rename one, and
`from_dict` ignores the keys it does not know.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from scope.finding import Finding
from scope.jsonsafe import load_json_object, save_json

SECTION = "goodput_report"  # its key in analysis.json (the `goodput` key holds the buckets table)


@dataclass
class GoodputResult:
    path: str
    clock: str  # own | bar | derived | none | records
    inputs: list[str] = field(default_factory=list)
    wall_s: float | None = None
    # the steps' only clock is a training clock that stops for validation and saves: wall_s is a lower bound
    wall_is_lower_bound: bool = False
    start: float | None = None
    end: float | None = None
    goodput_pct: float | None = None
    # where goodput_pct is unknown because no step line shows what the training did: its bounds (else None)
    productive_at_most_s: float | None = None
    goodput_pct_at_most: float | None = None
    # where the launches only evaluated (no training step or training-start line): what the log holds; '' else
    evaluation_only: str = ""
    buckets: dict[str, float | None] = field(default_factory=dict)
    bucket_meaning: dict[str, str] = field(default_factory=dict)
    steps_completed: int | None = None
    steps_redone: int = 0
    steps_redone_is_lower_bound: bool = False
    steps_completed_is_lower_bound: bool = False  # a log starting mid-run that prints every N > 1 steps
    # iterations (micro-batches) where the log counts them beside optimizer steps (steps_completed: the steps)
    iterations_completed: int | None = None
    # steps of a run that did not complete, left behind by a relaunch from scratch (a new run, not redone)
    steps_discarded: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    restarts: int = 0
    failures: int = 0
    membership_changes: int = 0
    ideal_step_s: float | None = None
    slow_step_factor: float = 1.5
    slow_steps: int = 0
    slowest_steps: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    cadence: dict[str, Any] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)  # {start, end, bucket, attempt}
    ranks: list[dict[str, Any]] = field(default_factory=list)  # {rank, last_steps}: scope's records
    cannot: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def timed(self) -> bool:
        return self.clock != "none" and bool(self.wall_s)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (see the module docstring)."""
        from scope.jsonsafe import clean

        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "findings"}
        out["start_utc"], out["end_utc"] = _utc(self.start), _utc(self.end)
        out["findings"] = [f.to_dict() for f in self.findings]
        return dict(clean(out))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GoodputResult:
        """Tolerant: keys it does not know are left out, missing ones take their defaults."""
        known = {f.name: data[f.name] for f in fields(cls) if f.name in data and f.name != "findings"}
        known.setdefault("path", "")
        known.setdefault("clock", "none")
        findings = [Finding.from_dict(f) for f in data.get("findings") or [] if isinstance(f, dict)]
        return cls(**known, findings=findings)

    def save(self, file: Path | str) -> Path:
        """The JSON contract to FILE (what `scope goodput --json FILE` writes)."""
        return save_json(file, self.to_dict(), indent=1, default=str)

    @classmethod
    def load(cls, file: Path | str) -> GoodputResult:
        return cls.from_dict(load_json_object(file, "a goodput result"))


def _utc(t: float | None) -> str | None:
    """ISO 8601 UTC of a wall-clock time; None for a time relative to a log's start (a log without dates)."""
    import datetime as dt

    if t is None or not math.isfinite(t) or t < 1e9:
        return None
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
