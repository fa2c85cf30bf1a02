"""Findings from the step time budget: a bucket above its healthy norm on a rank is a finding.

The norms are data (NORMS), each with its source. A rank's measure is the median over its steps of
the bucket's share of the step (a cause that holds up the typical step), except for checkpoints,
which stall some steps only: their measure is the share of all profiled step time. Kinds:

- input_bound: the input pipeline (DataLoader __next__, the batch's host-to-device copies, the wait
  for the first kernel after them) above its norm, and, where a DataLoader is traced, the DataLoader
  itself above the same share of the step (the TensorBoard plugin's rule). Evidence: the DataLoader's
  share and kind (single-process: num_workers=0), pageable vs pinned copies (pin_memory).
  A rank whose input time is far above its peers' (INPUT_STRAGGLER_RATIO) is a `straggler` of kind
  input instead: the others wait for it.
- host_bound: GPU idle while the training thread launches (kernel count and median length).
- sync_bound: GPU idle after synchronizing calls (which call, how often).
- checkpoint_stall: step time in checkpoint save/load.
- unexplained_time: step time no bucket explains, with where (ranks, steps).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from scope.analysis import Context
from scope.finding import Finding
from scope.rankpass.comm_infer import identifier, rule_for


class Norm(NamedTuple):
    bucket: str
    kind: str
    limit: float  # share of the step above which the bucket is a finding
    measure: str  # median (share of the typical step) | total (share of all profiled step time)
    source: str
    cpu_limit: float | None = None  # on CPU (gloo) ranks, where it differs


NORMS: tuple[Norm, ...] = (
    Norm(
        "input",
        "input_bound",
        0.05,
        "median",
        "TensorBoard PyTorch profiler plugin (torch-tb-profiler, Overview 'Performance Recommendation'): "
        "DataLoader time above 5% of the step -> raise num_workers",
    ),
    Norm(
        "host_bound",
        "host_bound",
        0.20,
        "median",
        "scope default: a GPU idle a fifth of the step while the host launches is the case CUDA graphs and "
        "torch.compile (reduce-overhead) exist for (PyTorch CUDA graphs docs, 'launch overhead')",
    ),
    Norm(
        "sync",
        "sync_bound",
        0.05,
        "median",
        "scope default (PyTorch performance tuning guide: avoid unnecessary CPU-GPU synchronization)",
    ),
    Norm(
        "checkpoint",
        "checkpoint_stall",
        0.05,
        "total",
        "scope default (torch.distributed.checkpoint async_save exists to keep saves off the step)",
    ),
    Norm(
        "unexplained",
        "unexplained_time",
        0.10,
        "median",
        "scope default: a tenth of the step without a recorded cause is too much to call accounted for; on "
        "CPU ranks a quarter (the training loop's own Python and OS scheduling on a shared host fall there)",
        cpu_limit=0.25,
    ),
)
# A rank whose median input time is this many times its peers' median is the input straggler.
INPUT_STRAGGLER_RATIO = 2.0


def _per_step(table: pd.DataFrame, bucket: str) -> pd.DataFrame:
    """Per (rank, step): the bucket's us and the step's us (zero where the bucket had no time)."""
    steps = table.drop_duplicates(["rank", "step"])[["rank", "step", "step_us"]]
    us = table[table["bucket"] == bucket].groupby(["rank", "step"])["us"].sum().rename("us")
    out = steps.merge(us, left_on=["rank", "step"], right_index=True, how="left").fillna({"us": 0.0})
    out["share"] = np.where(out["step_us"] > 0, out["us"] / out["step_us"].where(out["step_us"] > 0, 1.0), 0.0)
    return out


def _measure(steps: pd.DataFrame, how: str) -> pd.Series:
    if how == "total":
        sums = steps.groupby("rank")[["us", "step_us"]].sum()
        return (sums["us"] / sums["step_us"].where(sums["step_us"] > 0)).fillna(0.0)
    return steps.groupby("rank")["share"].median()


def _ms(us: float) -> str:
    return f"{us / 1e3:.1f} ms"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%" if x >= 0.1 else f"{100 * x:.1f}%"


def _ranks_text(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks[:8])


def find(ctx: Context, table: pd.DataFrame, evidence: pd.DataFrame) -> list[Finding]:
    """A finding per bucket whose measure is above its norm on some ranks. Traces without ProfilerStep
    (one window over the whole trace, warm-up and all) have no step to hold to a norm."""
    notes = _inferred_note(table, evidence)
    return notes + _over_norms(table, evidence)


def _inferred_note(table: pd.DataFrame, evidence: pd.DataFrame) -> list[Finding]:
    """A note naming the kernels counted as communication by inference, with the rule that makes it certain."""
    if evidence.empty or "inferred_comm" not in evidence.columns:
        return []
    kernels: dict[str, list[object]] = {}
    ranks: set[int] = set()
    for rank, text in evidence.drop_duplicates("rank")[["rank", "inferred_comm"]].itertuples(index=False):
        for name, op, launches, why in json.loads(text) if text else []:
            row = kernels.setdefault(name, [op, 0, why])
            row[1] = int(row[1]) + int(launches)  # type: ignore[call-overload]
            ranks.add(int(rank))
    if not kernels:
        return []
    inferred = table[
        (table["family"] == "inferred") & table["bucket"].isin(["comm_wait", "comm_unknown", "comm_transfer"])
    ]
    rules = [rule_for(name, str(op)) for name, (op, _n, _w) in sorted(kernels.items())]
    evidence_lines = [
        f"{identifier(name)}: {n} launches, {why}, counted as {op or 'communication'} (rule {rule_for(name, str(op))})"
        for name, (op, n, why) in sorted(kernels.items())
    ]
    return [
        Finding(
            "comm_inferred",
            "info",
            f"{len(kernels)} kernel(s) not in the communication catalog look like communication by name and "
            f"structure and are counted as communication with confidence 'inferred' "
            f"(exposed {_ms(float(inferred['us'].sum()))} in all)",
            ranks=sorted(ranks),
            evidence=evidence_lines,
            metrics={"confidence": "inferred", "kernels": {k: v[0] for k, v in kernels.items()}, "rules": rules},
            suggestion="make it certain (or exclude a false match by naming the others): "
            + " ".join(f"--comm-kernel '{r}'" for r in rules[:6]),
        )
    ]


def _over_norms(table: pd.DataFrame, evidence: pd.DataFrame) -> list[Finding]:
    table = table[table["step"] >= 0]
    if table.empty:
        return []
    on_cpu = table.groupby("rank")["timeline"].first() == "cpu"
    out: list[Finding] = []
    for norm in NORMS:
        steps = _per_step(table, norm.bucket)
        measure = _measure(steps, norm.measure)
        limit = on_cpu.reindex(measure.index).map({True: norm.cpu_limit or norm.limit, False: norm.limit})
        over = measure[measure > limit.fillna(norm.limit)]
        if norm.kind == "input_bound":
            out += _input(steps, measure, over, evidence, norm)
            continue
        if over.empty:
            continue
        out.append(BUILDERS[norm.kind](steps[steps["rank"].isin(over.index)], over, evidence, norm))
    return out


def _base_metrics(over: pd.Series, steps: pd.DataFrame, norm: Norm) -> dict[str, object]:
    return {
        "share": round(float(over.max()), 4),
        "share_by_rank": {int(r): round(float(v), 4) for r, v in over.items()},
        "norm": norm.limit,
        "norm_source": norm.source,
        "time_lost_us": round(float(steps.groupby("step")["us"].max().median()), 1),
        "steps_over": int((steps["share"] > norm.limit).sum()),
    }


def _dataloader_share(evidence: pd.DataFrame) -> pd.Series:
    """Per rank, median over steps of DataLoader __next__ time / step time (NaN: no DataLoader traced)."""
    if evidence.empty:
        return pd.Series(dtype=float)
    return evidence.groupby("rank").apply(_dl_median, include_groups=False)


def _dl_median(ev: pd.DataFrame) -> float:
    if int(ev["dataloader_calls"].sum()) == 0:
        return float("nan")
    return float(ev["dataloader_share"].median()) if "dataloader_share" in ev else float("nan")


def _input(
    steps: pd.DataFrame, measure: pd.Series, over: pd.Series, evidence: pd.DataFrame, norm: Norm
) -> list[Finding]:
    ev = evidence.copy()
    if not ev.empty:
        step_us = steps.set_index(["rank", "step"])["step_us"]
        ev["step_us"] = step_us.reindex(list(zip(ev["rank"], ev["step"], strict=True))).to_numpy()
        ev["dataloader_share"] = ev["dataloader_us"] / ev["step_us"].where(ev["step_us"] > 0)
    dl = _dataloader_share(ev)
    # where a DataLoader is traced, it must itself take more than the norm (the TensorBoard rule)
    flagged = [int(r) for r in over.index if not (pd.notna(dl.get(r)) and float(dl.get(r)) <= norm.limit)]
    stragglers = _input_stragglers(steps, measure)
    out = []
    for rank in stragglers:
        out.append(_input_finding(steps[steps["rank"] == rank], measure[[rank]], ev, dl, norm, straggler=True))
    rest = [r for r in flagged if r not in stragglers]
    if rest:
        out.append(_input_finding(steps[steps["rank"].isin(rest)], measure[rest], ev, dl, norm, straggler=False))
    return out


def _input_stragglers(steps: pd.DataFrame, measure: pd.Series) -> list[int]:
    """Ranks whose median input time is INPUT_STRAGGLER_RATIO x the other ranks' median (and above 5% of
    their step): the others wait for their data."""
    if measure.size < 2:
        return []
    us = steps.groupby("rank")["us"].median()
    peers = _median_of_the_others(us)
    out = []
    for rank, value, others in zip(us.index, us.to_numpy(), peers, strict=True):
        if float(measure[rank]) > 0.05 and value > INPUT_STRAGGLER_RATIO * max(float(others), 1.0):
            out.append(int(rank))
    return out


def _median_of_the_others(values: pd.Series) -> np.ndarray:
    """For each value, the median of all the others: from one sort, read at the two middle places of the
    others (a median per rank over the rest was quadratic: seconds of the serial end at 16,384 ranks)."""
    if values.isna().any():  # pandas skips missing values: keep its own median there
        return np.array([float(values.drop(k).median()) for k in values.index])
    data = values.to_numpy(dtype=float)
    if len(data) < 2:
        return np.full(len(data), np.nan)
    order = np.argsort(data, kind="stable")
    ranked = data[order]
    place = np.empty(len(data), dtype=np.int64)
    place[order] = np.arange(len(data))
    others = len(data) - 1

    def kth(k: int) -> np.ndarray:  # the k-th smallest of the others, for each value
        return np.where(k < place, ranked[k], ranked[min(k + 1, len(data) - 1)])

    if others % 2:
        return kth(others // 2)
    return (kth(others // 2 - 1) + kth(others // 2)) / 2


def _input_finding(
    steps: pd.DataFrame, over: pd.Series, ev: pd.DataFrame, dl: pd.Series, norm: Norm, straggler: bool
) -> Finding:
    ranks = [int(r) for r in over.index]
    mine = ev[ev["rank"].isin(ranks)] if not ev.empty else ev
    dl_share = float(dl.reindex(ranks).max()) if not dl.empty else float("nan")
    pageable = int(mine["htod_pageable"].sum()) if not mine.empty else 0
    pinned = int(mine["htod_pinned"].sum()) if not mine.empty else 0
    kinds = set(mine["dataloader_kind"]) - {""} if not mine.empty else set()
    idle = "holds the GPU idle" if set(steps.get("timeline", ["gpu"])) != {"cpu"} else "takes"
    parts = [f"the input pipeline {idle} {_pct(float(over.max()))} of the typical step"]
    if pd.notna(dl_share):
        loader = "single-process: num_workers=0" if kinds == {"single"} else "worker processes"
        parts.append(f"DataLoader __next__ takes {_pct(dl_share)} of the step ({loader})")
    if pageable:
        total = pageable + pinned
        parts.append(f"{pageable} of {total} host-to-device copies are from pageable memory (pin_memory off)")
    who = _ranks_text(ranks)
    if straggler:
        summary = f"{who} is slow to load its data, the others wait for it: " + "; ".join(parts)
    else:
        summary = "; ".join(parts)
    suggestion = []
    if "single" in kinds:
        suggestion.append("give the DataLoader worker processes (num_workers=4..8 per GPU)")
    if pageable:
        suggestion.append("pin_memory=True and .to(device, non_blocking=True)")
    suggestion.append("persistent_workers=True, a prefetch_factor of 2-4; move decoding/augmentation off the step")
    metrics = _base_metrics(over, steps, norm)
    metrics.update(
        {
            "dataloader_share": None if pd.isna(dl_share) else round(dl_share, 4),
            "dataloader_kind": ",".join(sorted(kinds)),
            "htod_pageable": pageable,
            "htod_pinned": pinned,
        }
    )
    if straggler:
        metrics["straggler_kind"] = "input"
        metrics["persistent"] = True

    def line(row: pd.Series) -> str:
        text = f"rank {int(row['rank'])} step {int(row['step'])}: input {_ms(row['us'])} of {_ms(row['step_us'])}"
        e = mine[(mine["rank"] == row["rank"]) & (mine["step"] == row["step"])] if not mine.empty else mine
        if not e.empty and int(e["dataloader_calls"].iloc[0]):
            text += f" (DataLoader __next__ {_ms(float(e['dataloader_us'].iloc[0]))})"
        return text

    kind = "straggler" if straggler else "input_bound"
    return _over_norm_finding(kind, summary, ranks, steps, norm, metrics, "; ".join(suggestion), line)


def _over_norm_finding(
    kind: str,
    summary: str,
    ranks: list[int],
    steps: pd.DataFrame,
    norm: Norm,
    metrics: dict[str, object],
    suggestion: str,
    line: Callable[[pd.Series], str],
) -> Finding:
    """A warning on the steps whose share is over the norm: its evidence is the three steps of largest
    share (`line` says one) and the norm they are over."""
    evidence = [line(row) for _, row in steps.sort_values("share", ascending=False).head(3).iterrows()]
    evidence.append(f"norm: {_pct(norm.limit)} of the step ({norm.source})")
    return Finding(
        kind,
        "warning",
        summary,
        ranks=ranks,
        steps=sorted(int(s) for s in steps.loc[steps["share"] > norm.limit, "step"].unique()),
        evidence=evidence,
        metrics=metrics,
        suggestion=suggestion,
    )


def _simple(kind: str, what: str, suggestion: str):  # type: ignore[no-untyped-def]
    def build(steps: pd.DataFrame, over: pd.Series, ev: pd.DataFrame, norm: Norm) -> Finding:
        ranks = [int(r) for r in over.index]
        mine = ev[ev["rank"].isin(ranks)] if not ev.empty else ev
        metrics = _base_metrics(over, steps, norm)
        extra = _extra(kind, mine, metrics)
        summary = f"{what} {_pct(float(over.max()))} of the {_typical(norm)}{extra}"

        def line(r: pd.Series) -> str:
            text = f"rank {int(r['rank'])} step {int(r['step'])}: {norm.bucket} {_ms(r['us'])} of {_ms(r['step_us'])}"
            return text + (_gap(mine, int(r["rank"]), int(r["step"])) if kind == "unexplained_time" else "")

        return _over_norm_finding(kind, summary, ranks, steps, norm, metrics, suggestion, line)

    return build


def _gap(ev: pd.DataFrame, rank: int, step: int) -> str:
    """Where the step's longest unexplained stretch is."""
    if ev.empty or "unexplained_gap_us" not in ev.columns:
        return ""
    row = ev[(ev["rank"] == rank) & (ev["step"] == step)]
    if row.empty or float(row["unexplained_gap_us"].iloc[0]) <= 0:
        return ""
    at, length = float(row["unexplained_gap_at_us"].iloc[0]), float(row["unexplained_gap_us"].iloc[0])
    return f"; longest gap {_ms(length)} from {_ms(at)} into the step"


def _typical(norm: Norm) -> str:
    return "typical step" if norm.measure == "median" else "profiled step time"


def _extra(kind: str, ev: pd.DataFrame, metrics: dict[str, object]) -> str:
    if ev.empty:
        return ""
    if kind == "host_bound":
        kernels = float(ev["kernels"].median())
        med = float(ev["kernel_median_us"].median())
        metrics.update({"kernels_per_step": kernels, "kernel_median_us": med})
        return f" ({kernels:.0f} kernels per step, median {med:.1f} us long)"
    if kind == "sync_bound":
        calls = float(ev["sync_calls"].median())
        top = ev["sync_top"][ev["sync_top"] != ""]
        name = str(top.value_counts().index[0]) if len(top) else ""
        metrics.update({"sync_calls_per_step": calls, "sync_op": name})
        return f" ({calls:.0f} synchronizing calls per step, mostly {name})" if name else ""
    return ""


BUILDERS = {
    "host_bound": _simple(
        "host_bound",
        "the GPU sits idle while the CPU launches work",
        "fewer, larger kernels: CUDA graphs or torch.compile(mode='reduce-overhead'), fused optimizers "
        "(foreach/fused=True), larger batches; profile the Python between launches",
    ),
    "sync_bound": _simple(
        "sync_bound",
        "the GPU drains and waits after synchronizing calls",
        "avoid .item()/.cpu()/print of GPU values every step (log every N steps), torch.cuda.synchronize in "
        "the loop and blocking copies (non_blocking=True from pinned memory)",
    ),
    "checkpoint_stall": _simple(
        "checkpoint_stall",
        "checkpoint save/load stalls training for",
        "save asynchronously (torch.distributed.checkpoint.async_save), less often, or from a background thread",
    ),
    "unexplained_time": _simple(
        "unexplained_time",
        "no recorded cause for",
        "the training thread is in no traced event then: record_function around the loop's phases "
        "(or the profiler's with_stack / Python tracing) shows what runs there",
    ),
}
