"""Processes of one node holding the same local rank, read from the start-up lines in which each process states
its local rank and the GPUs it sees (knowledge/rank_layout.py).

A job of N ranks on nodes of D GPUs runs N / D nodes, so each local rank is held by N / D processes at most: more
processes stating the same local rank are two processes of one node on one GPU (an 'invalid device ordinal', a
duplicate GPU, or a stall), whatever the launcher's settings were. Only the start-up block is read (the lines
before the first training or evaluation progress): a later fit / test call prints the line again.
"""

from __future__ import annotations

import re
from collections import Counter

from scope.analyzers.diagnose.knowledge.rank_layout import RANK_LAYOUT_LINES, RankLayoutLine, compiled
from scope.analyzers.diagnose.model import APPLICATION, Anomaly

# where the start-up block ends: a step, an epoch or a progress bar (startup._PROGRESS's words)
_PROGRESS = re.compile(r"(?i)\bstep\s*[:=]?\s*\d+|\bIter(?:ation)? #?\d+|\bepoch\b|\d+%\|")
MIN_DEVICES = 2  # a process that sees one GPU (srun --gpus-per-task) holds local rank 0 legitimately


def same_local_rank(text: str, display: str) -> Anomaly | None:
    """A finding when more processes state one local rank than the job has nodes."""
    if "LOCAL_RANK" not in text:
        return None
    progress = _PROGRESS.search(text)
    head = text[: progress.start()] if progress else text
    for row in RANK_LAYOUT_LINES:
        found = _crowded(head, display, row)
        if found is not None:
            return found
    return None


def _crowded(text: str, display: str, row: RankLayoutLine) -> Anomaly | None:
    local_re, world_re = compiled(row)
    lines = list(local_re.finditer(text))
    worlds = [int(m.group(1)) for m in world_re.finditer(text)]
    device_lists = {m.group(2).replace(" ", "") for m in lines}
    if not lines or not worlds or len(device_lists) != 1:
        return None
    per_node = len(device_lists.pop().split(","))
    world = max(worlds)
    if per_node < MIN_DEVICES or (world > per_node and world % per_node):
        return None  # nodes of unequal size: no count per node to hold the lines to
    nodes = max(1, world // per_node)
    local, count = Counter(int(m.group(1)) for m in lines).most_common(1)[0]
    if count <= nodes:
        return None
    last = [m for m in lines if int(m.group(1)) == local][-1]
    return Anomaly(
        code="same_local_rank",
        kind="config_error",
        level=APPLICATION,
        message=(
            f"{row.program} start-up: {count} processes state LOCAL_RANK: {local} while each sees {per_node} GPUs, "
            f"and {world} ranks on {per_node}-GPU nodes make {nodes} node{'s' if nodes > 1 else ''}: processes of "
            f"one node were given the same local rank, so they take the same GPU"
        ),
        file=display,
        line=text.count("\n", 0, last.start()) + 1,
        severity="critical",
        details={
            "confidence": "medium",
            "local_rank": local,
            "processes": count,
            "world": world,
            "remedy": row.remedy.format(last=per_node - 1, per_node=per_node),
        },
    )
