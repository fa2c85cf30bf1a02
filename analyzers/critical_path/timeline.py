"""Critical paths of operation-level timelines: one per step, on the what-if engine's model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scope.analyzers.critical_path.core import solve
from scope.analyzers.critical_path.optrace import US, OpGraph, from_stepgraph
from scope.analyzers.critical_path.step_path import StepPath


def optrace_graphs(ops: pd.DataFrame, pp: int | None = None) -> list[OpGraph]:
    from scope.analyzers.whatif.graph import build, prepare, step_templates

    ops = prepare(ops)
    pp = int(pp or ops["stage"].max() + 1)
    return [from_stepgraph(build(ops, steps, pp)) for steps in step_templates(ops)]


def paths_of(graphs: list[OpGraph]) -> list[StepPath]:
    out = []
    for og in graphs:
        sg = og.source
        durations = og.durations(sg.duration)
        frame = sg.op_frame
        assert frame is not None
        names = {int(w): f"dp{int(d)}/stage{int(s)}" for w, d, s in zip(frame["worker"], frame["dp_rank"],
                                                                         frame["stage"], strict=True)}  # fmt: skip
        for col, step in enumerate(sg.steps):
            dur = np.ascontiguousarray(durations[:, col])
            g = og.graph
            sol = solve(g, dur)
            view = _with_durations(g, dur, sol.start)
            out.append(StepPath(int(step), view, sol, float(sg.base_time[col]) * US, names))
    return sorted(out, key=lambda p: p.step)


def _with_durations(g: Any, dur: np.ndarray, start: np.ndarray) -> Any:
    """The template's graph seen with one step's durations (the plan is shared, not rebuilt). Its starts
    are the replay's: the timeline's waits are what the engine recomputes, so there is no clock to
    contradict (a Kineto step's starts are the traced ones)."""
    from dataclasses import replace

    view = replace(g, dur=dur, start=start)
    view._plan = g.plan()
    return view


def optrace_paths(store: Any) -> list[StepPath]:
    from scope.analyzers.whatif import read_ops

    ops = read_ops(store)
    if ops.empty:
        return []
    pp = (store.run.get("timeline") or {}).get("pp_size")
    return paths_of(optrace_graphs(ops, pp))
