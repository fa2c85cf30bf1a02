"""One step's solved graph: what the analyzer and the timeline readers hand each other (a module of its own so
that neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass, field

from scope.analyzers.critical_path.core import Graph, Solution


@dataclass
class StepPath:
    step: int
    graph: Graph
    solution: Solution
    measured_us: float
    names: dict[int, str] = field(default_factory=dict)  # rank -> how to name it ("rank 3", "dp0/stage1")
