"""The comparison of two runs, typed: what `scope compare` prints and writes (--json), and what the
dashboard's Compare page shows. One JSON contract, `to_dict` / `from_dict` (a round trip gives the same
object): the keys of `scope compare --json` since it was written; later versions add keys, never remove
or rename one, and `from_dict` ignores the keys it does not know. Each part (step, ranks, ops, ...) is
the JSON of its own comparison (budget.py, ranks.py, ops.py, collectives.py, findings.py, memory.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from scope import __version__
from scope.jsonsafe import load_json_object, save_json


@dataclass
class RunSide:
    """One of the two runs: where it is, its store, and whether its saved analysis was reused."""

    path: str
    store: str | None = None
    reused_analysis: bool = False
    source: str | None = None
    world_size: int | None = None


@dataclass
class ComparisonResult:
    a: RunSide
    b: RunSide
    comparable: bool = True
    not_comparable: list[str] = field(default_factory=list)  # why the runs are not comparable
    notes: list[str] = field(default_factory=list)
    step: dict[str, Any] = field(default_factory=dict)  # the step budget's change (budget.BudgetDiff)
    host: dict[str, Any] | None = None  # GPU runs: the training thread's budget change
    ranks: dict[str, Any] = field(default_factory=dict)
    ops: dict[str, Any] = field(default_factory=dict)
    collectives: dict[str, Any] = field(default_factory=dict)
    findings: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    scope_version: str = __version__

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (see the module docstring)."""
        from scope.jsonsafe import clean

        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["a"], out["b"] = asdict(self.a), asdict(self.b)
        return dict(clean(out))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComparisonResult:
        """Tolerant: keys it does not know are left out, missing ones take their defaults."""
        known = {f.name: data[f.name] for f in fields(cls) if f.name in data and f.name not in ("a", "b")}
        return cls(a=_side(data.get("a")), b=_side(data.get("b")), **known)

    def with_note(self, note: str) -> ComparisonResult:
        """A copy with NOTE first among the notes (the page says what changed since its last view)."""
        from dataclasses import replace

        return replace(self, notes=[note, *self.notes])

    def save(self, file: Path | str) -> Path:
        """The JSON contract to FILE (what `scope compare --json FILE` writes)."""
        return save_json(file, self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def load(cls, file: Path | str) -> ComparisonResult:
        return cls.from_dict(load_json_object(file, "a comparison"))


def _side(data: Any) -> RunSide:
    data = data if isinstance(data, dict) else {}
    known = {f.name: data[f.name] for f in fields(RunSide) if f.name in data}
    known.setdefault("path", "")
    return RunSide(**known)
