"""Collectives matched across ranks by process group and sequence order (scope/rankpass/match.py).

Tables: `collectives` (one row per instance: participants, op, bytes, arrival skew, last arriver,
transfer time, algorithm and bus bandwidth), `collective_ranks` (each rank's start, end, wait and
lateness per instance) and `collective_groups` (per process group and op). Findings: instances whose
ranks disagree on op or size, and instances some traced member of the group never ran.
"""

from __future__ import annotations

import pandas as pd

from scope.analysis import Context, Result
from scope.finding import Finding
from scope.rankpass.match import group_summary

_EVIDENCE_ROWS = 5


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    m = ctx.matched
    if m.empty:
        return Result()
    tables = {
        "collectives": m.instances,
        "collective_ranks": m.per_rank,
        "collective_groups": group_summary(m.instances, m.per_rank, m.traced_ranks),
    }
    in_steps = m.instances[m.instances["step"] >= 0]
    findings = [f for f in (_mismatch_finding(in_steps), _missing_finding(in_steps)) if f]
    return Result(findings=findings, tables=tables)


def _where(row: pd.Series) -> str:
    return f"pg {row['pg'] or '(default)'} seq {row['seq']} (step {row['step']}, {row['op']})"


def _mismatch_finding(inst: pd.DataFrame) -> Finding | None:
    bad = inst[inst["mismatch"].notna()]
    if bad.empty:
        return None
    kinds = sorted(bad["mismatch"].unique())
    ranks = sorted({r for rs in bad["ranks"] for r in rs})
    first = bad.iloc[0]
    return Finding(
        kind="collective_mismatch",
        severity="warning",
        summary=(f"{len(bad)} collective(s) disagree across ranks on {' and '.join(kinds)}, first at {_where(first)}"),
        ranks=ranks,
        steps=sorted({int(s) for s in bad["step"]}),
        evidence=[
            f"{_where(r)}: ranks {r['ranks']} disagree on {r['mismatch']}"
            for _, r in bad.head(_EVIDENCE_ROWS).iterrows()
        ],
        metrics={"instances": len(bad), "types": kinds},
        suggestion="ranks must issue the same collectives in the same order with the same sizes; "
        "look for rank-dependent control flow around the first instance",
    )


def _missing_finding(inst: pd.DataFrame) -> Finding | None:
    bad = inst[(inst["n_missing"] > 0) & ~inst["p2p"]]
    if bad.empty:
        return None
    missing = sorted({r for rs in bad["missing_ranks"] for r in rs})
    first = bad.iloc[0]
    return Finding(
        kind="collective_mismatch",
        severity="warning",
        summary=(f"{len(bad)} collective instance(s) lack traced rank(s) {missing}, first at {_where(first)}"),
        ranks=missing,
        steps=sorted({int(s) for s in bad["step"]}),
        evidence=[
            f"{_where(r)}: ran on {r['ranks']}, missing {r['missing_ranks']}"
            for _, r in bad.head(_EVIDENCE_ROWS).iterrows()
        ],
        metrics={"instances": len(bad), "mismatch": "missing participant"},
        suggestion="a rank that skips a collective desynchronizes the group; check the ranks' traces "
        "cover the same steps and that no rank takes a different code path",
    )
