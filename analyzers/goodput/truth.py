"""A goodput report against a ground truth (the restart workload's ground_truth.json): counts exact, each
time bucket's gap as a share of the job's wall time. Shared by the demo, its test and the benchmark."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import GoodputReport


def compare(report: GoodputReport, truth: dict[str, Any]) -> dict[str, Any]:
    acc = report.acc
    wall = truth.get("wall_s") or report.wall_s or 1.0
    got = {
        "attempts": len(acc.attempts),
        "steps_redone": acc.steps_redone,
        "checkpoints": len([c for c in report.saves() if c.ended]),
    }
    want = {k: truth.get(k) for k in got}
    gaps = {b: 100.0 * abs(acc.buckets.get(b, 0.0) - float(s)) / wall for b, s in (truth.get("buckets") or {}).items()}
    worst = max(gaps, key=lambda b: gaps[b]) if gaps else None
    return {
        "got": got,
        "want": want,
        "counts_exact": got == want,
        "bucket_gap_pct": gaps,
        "worst_bucket": worst,
        "worst_gap_pct": gaps[worst] if worst else None,
        "wall_s": report.wall_s,
        "truth_wall_s": truth.get("wall_s"),
        "goodput_pct": report.goodput_pct,
    }


def summary_line(result: dict[str, Any]) -> str:
    got, want = result["got"], result["want"]
    keys = ("attempts", "steps_redone", "checkpoints")
    line = (
        f"goodput {result['goodput_pct'] or 0:.1f}%; attempts / steps redone / checkpoints "
        f"{tuple(got[k] for k in keys)} vs ground truth {tuple(want[k] for k in keys)}"
    )
    if result["worst_bucket"]:
        line += f"; largest bucket gap {result['worst_gap_pct']:.1f}% of wall ({result['worst_bucket']})"
    return line
