"""The rank's interval sets (compute, exposed and overlapped communication, copies) on the GPU's clock, or
the training thread's on a CPU rank (scope/rankpass/timeline.py); stays in the worker."""

from __future__ import annotations

from scope.rankpass.spec import RankTable
from scope.rankpass.timeline import EVENT_COLUMNS, Sets, cpu_sets, gpu_sets, has_gpu
from scope.rankpass.view import RankView


def make(view: RankView) -> Sets:
    # a GPU rank's from the arrays; a CPU rank's (gloo: a few thousand events) from the frame
    ev = view.arrays
    return gpu_sets(ev) if has_gpu(ev) else cpu_sets(view.events)


TABLE = RankTable(name="sets", make=make, events=tuple(EVENT_COLUMNS), travels=False)
