"""One rank's tables from one read of its events: the breakdown (_timeline.py), the step time budget
(_budget.py) and the budget's evidence (_budget_evidence.py). Apart from all three, which it joins: the
budget reads the timeline's sets, so the timeline cannot also call the budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scope.analyzers import _intervals as iv
from scope.analyzers._budget import BUDGET_EVENT_COLUMNS, Host, rank_budget, waits_of
from scope.analyzers._budget_evidence import evidence_columns
from scope.analyzers._timeline import EVENT_COLUMNS, RankJob, breakdown_rows, cpu_sets, gpu_sets, has_gpu, step_windows

from scope.store import Store


def rank_tables(job: RankJob) -> tuple[pd.DataFrame, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The rank's breakdown, its step time budget and the budget's evidence (analyzers/_budget.py,
    _budget_evidence.py; those two as columns, joined into one table for all ranks), from one read of
    its events."""
    store = Store(job.store_root, {})
    columns = list(dict.fromkeys(EVENT_COLUMNS + BUDGET_EVENT_COLUMNS))
    events = store.read_events(job.rank, columns=columns).to_pandas()
    on_gpu = has_gpu(events)
    sets = gpu_sets(events) if on_gpu else cpu_sets(events)
    win = step_windows(job.store_root, job.rank, sets)
    waits = iv.union(job.wait_starts, job.wait_ends)
    breakdown = breakdown_rows(job.rank, sets, waits, win)
    host = Host.of(events)
    budget = rank_budget(job.rank, events, on_gpu, waits_of(job), win, host)
    return breakdown, budget, evidence_columns(job.rank, events, win, host)
