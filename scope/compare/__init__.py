"""What changed between two runs: the step budget, per rank, per operation, per collective, findings.

    from scope.compare import compare_paths
    comparison = compare_paths("runs/last_week", "runs/today")
    comparison.budget.delta_us          # mean step change, = sum of the buckets' changes

Each run is analyzed as `scope analyze` would (cached in its store; runs.py), then compared from the
analyses' compact tables only (budget, op_stats, collectives, findings): no event is read here, so two
1,024-rank runs compare in seconds. Pure: nothing here prints (scope/render/compare.py does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from scope.compare.budget import BudgetDiff, budget_of, diff_budgets, host_budget_of
from scope.compare.collectives import CollectiveChanges, compare_collectives
from scope.compare.findings import FindingChanges, compare_findings
from scope.compare.memory import MemoryChanges, compare_memory
from scope.compare.ops import OpChanges, compare_ops
from scope.compare.ranks import RankChanges, compare_ranks
from scope.compare.result import ComparisonResult, RunSide
from scope.compare.runs import Side, load_side

# Below this share of either run's op time with a counterpart in the other, they are different programs.
MIN_MATCHED_OPS = 0.5
# Below this share of collective calls per step with a counterpart, the steps are built differently.
MIN_MATCHED_COLLECTIVES = 0.5

__all__ = ["Comparison", "ComparisonResult", "compare", "compare_paths", "slower_by"]


@dataclass
class Comparison:
    a: Side
    b: Side
    budget: BudgetDiff
    ranks: RankChanges
    ops: OpChanges
    collectives: CollectiveChanges
    findings: FindingChanges
    host: BudgetDiff | None = None  # GPU runs: the training thread's budget difference
    memory: MemoryChanges = field(default_factory=MemoryChanges)  # peak memory (profile_memory traces)
    not_comparable: list[str] = field(default_factory=list)  # why the runs are not comparable
    notes: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return not self.not_comparable

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of its typed result (scope.compare.result)."""
        return self.result().to_dict()

    def result(self) -> ComparisonResult:
        """The typed result every reader takes (the renderers, the dashboard's Compare page)."""
        return ComparisonResult(
            a=_side_of(self.a),
            b=_side_of(self.b),
            comparable=self.comparable,
            not_comparable=list(self.not_comparable),
            notes=list(self.notes),
            step=self.budget.to_dict(),
            host=self.host.to_dict() if self.host is not None else None,
            ranks=self.ranks.to_dict(),
            ops=self.ops.to_dict(),
            collectives=self.collectives.to_dict(),
            findings=self.findings.to_dict(),
            memory=self.memory.to_dict(),
        )


def _side_of(side: Side) -> RunSide:
    run = side.analysis.run
    return RunSide(
        path=str(side.path),
        store=str(side.store_dir) if side.store_dir else None,
        reused_analysis=side.reused,
        source=run.get("source") or run.get("run_dir"),
        world_size=run.get("world_size"),
    )


def compare_paths(
    a: Path | str, b: Path | str, options: Mapping[str, Any] | None = None, reanalyze: bool = False
) -> Comparison:
    return compare(load_side("A", a, options, reanalyze), load_side("B", b, options, reanalyze))


def compare(a: Side, b: Side) -> Comparison:
    ba, bb = budget_of(a.analysis), budget_of(b.analysis)
    budget = diff_budgets(ba, bb)
    ops = compare_ops(a.op_stats(), b.op_stats())
    coll = compare_collectives(a.analysis, b.analysis, budget.noise_us)
    comparison = Comparison(
        a=a,
        b=b,
        budget=budget,
        ranks=compare_ranks(a.analysis, b.analysis, ba, bb),
        ops=ops,
        collectives=coll,
        findings=compare_findings(a.analysis.findings, b.analysis.findings),
        memory=compare_memory(a.analysis, b.analysis),
    )
    ha, hb = host_budget_of(a.analysis), host_budget_of(b.analysis)
    if ha is not None and hb is not None:
        comparison.host = diff_budgets(ha, hb)
    comparison.not_comparable = _not_comparable(comparison, ba.rows, bb.rows)
    if ba.source != bb.source:
        comparison.notes.append(f"A's budget comes from its {ba.source} table, B's from its {bb.source} table")
    comparison.notes += ops.notes
    return comparison


def _not_comparable(c: Comparison, rows_a: pd.DataFrame, rows_b: pd.DataFrame) -> list[str]:
    """Plain reasons the two runs are not the same program with the same step (empty: comparable)."""
    why = []
    for side, rows in (("A", rows_a), ("B", rows_b)):
        if rows.empty:
            why.append(f"{side} ({c.a.path if side == 'A' else c.b.path}) has no profiled steps")
    ta, tb = _timeline(c.a), _timeline(c.b)
    if ta and tb and ta != tb:
        why.append(f"A's steps run on the {ta.upper()}, B's on the {tb.upper()} (different kinds of trace)")
    share_a, share_b = c.ops.matched_share
    if min(share_a, share_b) < MIN_MATCHED_OPS:
        why.append(
            f"different programs: only {_pct(share_a)} of A's operator and kernel time has a counterpart in B, "
            f"{_pct(share_b)} of B's in A (a different model or framework)"
        )
    structure = _collective_structure(c.collectives)
    if structure:
        why.append(structure)
    return why


def _timeline(side: Side) -> str:
    bd = side.analysis.table("breakdown")
    if bd is None or "timeline" not in bd.columns or bd.empty:
        return ""
    return str(bd["timeline"].mode().iloc[0])


def _collective_structure(coll: CollectiveChanges) -> str:
    """Different step structure: most collective calls per step of one run have no (op, size) twin."""
    matched_a = float(coll.rows["a_per_step"].sum()) if not coll.rows.empty else 0.0
    matched_b = float(coll.rows["b_per_step"].sum()) if not coll.rows.empty else 0.0
    all_a = matched_a + (float(coll.only_a["per_step"].sum()) if "per_step" in coll.only_a else 0.0)
    all_b = matched_b + (float(coll.only_b["per_step"].sum()) if "per_step" in coll.only_b else 0.0)
    if not all_a or not all_b:
        return ""
    share = min(matched_a / all_a, matched_b / all_b)
    if share >= MIN_MATCHED_COLLECTIVES:
        return ""
    return (
        f"different step structure: only {_pct(share)} of the collective calls per step match by (op, size, group) "
        f"({all_a:.3g} per step in A, {all_b:.3g} in B)"
    )


def _pct(x: float) -> str:
    return "?" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.0f}%"


def slower_by(c: Comparison) -> float:
    """B's median step over A's, minus 1 (0.05: 5% slower); what --fail-if-slower tests."""
    a, b = c.budget.a_median_us, c.budget.b_median_us
    if not a or math.isnan(a) or math.isnan(b):
        return float("nan")
    return b / a - 1.0
