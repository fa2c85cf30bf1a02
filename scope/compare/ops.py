"""Operations and kernels matched between two runs (from each run's `op_stats`, analyzers/ops.py).

Matching, in order: by kind family and name; then by the label before '#' (torch.profiler names
record_function scopes `LABEL#QUALNAME`: `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`
with num_workers=0 is `...#_MultiProcessingDataLoaderIter.__next__` with workers, `Optimizer.step#SGD.step`
becomes `Optimizer.step#AdamW.step`); then GPU kernels left over on both sides are matched by
the CPU operator that launched them (a kernel renamed by a new cuDNN or compiler version, launched
by the same aten::cudnn_convolution, is the same work). What is left is only in A or only in B.

Each change splits in two (exactly): launches, (calls_b - calls_a) x per-call time of A, and per-call
time, calls_b x (per-call b - per-call a). A kernel launched 3x as often is a different finding from one
that became slower; the larger part names the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

FAMILIES = {
    "cpu_op": "cpu op",
    "annotation": "cpu op",
    "compute": "kernel",
    "comm": "comm",
    "memcpy": "kernel",
    "memset": "kernel",
    "runtime": "runtime",
}
KERNEL_KINDS = ("compute", "comm", "memcpy", "memset")
TOP = 15  # rows kept per list in the text report (the JSON keeps MAX_ROWS)
MAX_ROWS = 500
ROW_COLUMNS = [
    "family",
    "name",
    "name_b",
    "matched_by",
    "a_us",
    "b_us",
    "delta_us",
    "a_calls",
    "b_calls",
    "a_per_call_us",
    "b_per_call_us",
    "calls_effect_us",
    "per_call_effect_us",
    "why",
]


@dataclass
class OpChanges:
    changed: pd.DataFrame  # matched ops, largest |delta| first (per step, averaged over ranks)
    only_a: pd.DataFrame
    only_b: pd.DataFrame
    matched_share: tuple[float, float] = (1.0, 1.0)  # share of A's / B's op time with a counterpart
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from scope.result import records

        return {
            "changed": records(self.changed.head(MAX_ROWS)),
            "only_in_a": records(self.only_a.head(MAX_ROWS)),
            "only_in_b": records(self.only_b.head(MAX_ROWS)),
            "matched_share_a": self.matched_share[0],
            "matched_share_b": self.matched_share[1],
            "notes": self.notes,
        }


def _by_name(stats: pd.DataFrame) -> pd.DataFrame:
    """Per (family, name): time and calls per step, over every parent."""
    df = stats.assign(family=stats["kind"].map(FAMILIES).fillna("other"))
    out = df.groupby(["family", "name"], observed=True)[["us_per_step", "calls_per_step"]].sum()
    return out.rename(columns={"us_per_step": "us", "calls_per_step": "calls"})


def compare_ops(a: pd.DataFrame | None, b: pd.DataFrame | None) -> OpChanges:
    empty = pd.DataFrame(columns=ROW_COLUMNS)
    if a is None or b is None or a.empty or b.empty:
        note = "operation statistics are missing for " + ("A" if a is None or a.empty else "B")
        return OpChanges(empty, empty, empty, (float("nan"), float("nan")), [note])
    na, nb = _by_name(a), _by_name(b)
    both = na.index.intersection(nb.index)
    rows = [_row(fam, name, name, "name", na.loc[(fam, name)], nb.loc[(fam, name)]) for fam, name in both]
    left_a, left_b = na.drop(index=both), nb.drop(index=both)
    by_label, used_a, used_b = _match_by_label(left_a, left_b)
    rows += by_label
    left_a, left_b = left_a.drop(index=used_a), left_b.drop(index=used_b)
    by_parent, used_a, used_b = _match_by_parent(a, b, left_a, left_b)
    rows += by_parent
    left_a = left_a.drop(index=[i for i in used_a if i in left_a.index])
    left_b = left_b.drop(index=[i for i in used_b if i in left_b.index])
    changed = pd.DataFrame(rows, columns=ROW_COLUMNS) if rows else empty
    if not changed.empty:
        changed = changed.reindex(changed["delta_us"].abs().sort_values(ascending=False).index)
    return OpChanges(
        changed.reset_index(drop=True),
        _only(left_a),
        _only(left_b),
        (_share(na, left_a), _share(nb, left_b)),
    )


def _row(family: str, name: str, name_b: str, how: str, a: pd.Series, b: pd.Series) -> dict[str, Any]:
    a_us, b_us, a_calls, b_calls = float(a["us"]), float(b["us"]), float(a["calls"]), float(b["calls"])
    a_per = a_us / a_calls if a_calls else 0.0
    b_per = b_us / b_calls if b_calls else 0.0
    calls_effect = (b_calls - a_calls) * a_per
    per_call_effect = b_calls * (b_per - a_per)
    return {
        "family": family,
        "name": name,
        "name_b": name_b,
        "matched_by": how,
        "a_us": a_us,
        "b_us": b_us,
        "delta_us": b_us - a_us,
        "a_calls": a_calls,
        "b_calls": b_calls,
        "a_per_call_us": a_per,
        "b_per_call_us": b_per,
        "calls_effect_us": calls_effect,
        "per_call_effect_us": per_call_effect,
        "why": _why(a_calls, b_calls, a_per, b_per, calls_effect, per_call_effect),
    }


def _why(a_calls: float, b_calls: float, a_per: float, b_per: float, calls_eff: float, per_eff: float) -> str:
    if abs(calls_eff) >= abs(per_eff) and a_calls:
        return f"{b_calls / a_calls:.2g}x the calls ({a_calls:.4g} -> {b_calls:.4g} per step)"
    if a_per:
        ratio = b_per / a_per
        return f"{'slower' if ratio > 1 else 'faster'} per call ({a_per:,.1f} -> {b_per:,.1f} us, x{ratio:.2f})"
    return ""


def _label(name: str) -> str:
    return name.split("#", 1)[0] if "#" in name.strip("#") else ""


def _match_by_label(
    left_a: pd.DataFrame, left_b: pd.DataFrame
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[tuple[str, str]]]:
    """CPU scopes `LABEL#...` left over on both sides, matched by LABEL (one name per label on each side)."""
    rows, used_a, used_b = [], [], []
    labels_b: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for fam, name in left_b.index:
        if fam == "cpu op" and _label(name):
            labels_b.setdefault((fam, _label(name)), []).append((fam, name))
    labels_a: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for fam, name in left_a.index:
        if fam == "cpu op" and _label(name):
            labels_a.setdefault((fam, _label(name)), []).append((fam, name))
    for key, in_a in labels_a.items():
        in_b = labels_b.get(key, [])
        if len(in_a) == 1 and len(in_b) == 1:
            rows.append(
                _row(key[0], in_a[0][1], in_b[0][1], f"label {key[1]}", left_a.loc[in_a[0]], left_b.loc[in_b[0]])
            )
            used_a.append(in_a[0])
            used_b.append(in_b[0])
    return rows, used_a, used_b


def _match_by_parent(
    a: pd.DataFrame, b: pd.DataFrame, left_a: pd.DataFrame, left_b: pd.DataFrame
) -> tuple[list[dict[str, Any]], list[tuple[str, str]], list[tuple[str, str]]]:
    """Kernels without a same-name counterpart, grouped by the CPU operator that launched them."""
    ka = _unmatched_kernels(a, left_a)
    kb = _unmatched_kernels(b, left_b)
    if ka.empty or kb.empty:
        return [], [], []
    rows, used_a, used_b = [], [], []
    for parent in sorted(set(ka["parent"]) & set(kb["parent"]) - {""}):
        ga, gb = ka[ka["parent"] == parent], kb[kb["parent"] == parent]
        sa = pd.Series({"us": ga["us_per_step"].sum(), "calls": ga["calls_per_step"].sum()})
        sb = pd.Series({"us": gb["us_per_step"].sum(), "calls": gb["calls_per_step"].sum()})
        family = FAMILIES[ga.sort_values("us_per_step").iloc[-1]["kind"]]
        rows.append(_row(family, _names(ga), _names(gb), f"launched by {parent}", sa, sb))
        used_a += [(FAMILIES[k], n) for k, n in zip(ga["kind"], ga["name"], strict=True)]
        used_b += [(FAMILIES[k], n) for k, n in zip(gb["kind"], gb["name"], strict=True)]
    return rows, used_a, used_b


def _unmatched_kernels(stats: pd.DataFrame, left: pd.DataFrame) -> pd.DataFrame:
    names = {n for fam, n in left.index if fam in ("kernel", "comm")}
    kernels = stats[stats["kind"].isin(KERNEL_KINDS) & stats["name"].isin(names)]
    return kernels.groupby(["parent", "kind", "name"], as_index=False)[["us_per_step", "calls_per_step"]].sum()


def _names(group: pd.DataFrame) -> str:
    names = group.sort_values("us_per_step", ascending=False)["name"].tolist()
    return names[0] + (f" (+{len(names) - 1} more)" if len(names) > 1 else "")


def _only(left: pd.DataFrame) -> pd.DataFrame:
    out = left.reset_index().rename(columns={"us": "us_per_step", "calls": "calls_per_step"})
    return out.sort_values("us_per_step", ascending=False).reset_index(drop=True)


def _share(all_ops: pd.DataFrame, left: pd.DataFrame) -> float:
    """Share of the run's kernel and CPU-op time that has a counterpart in the other run."""
    fam = all_ops.index.get_level_values("family")
    total = float(all_ops.loc[fam != "runtime", "us"].sum())
    if total <= 0:
        return float("nan")
    lfam = left.index.get_level_values("family") if not left.empty else np.array([])
    unmatched = float(left.loc[lfam != "runtime", "us"].sum()) if not left.empty else 0.0
    return 1.0 - unmatched / total
