"""The peak of a snapshot as a flame graph: the bytes live at the peak, by the stack that allocated them,
merged into a tree (outermost frame at the root). Each node's bytes are its subtree's (plotly's icicle
with branchvalues="total" draws that as is). Deep stacks are cut at MAX_DEPTH frames and nodes below
MIN_SHARE of the peak are folded into their parent, so a million-entry snapshot still draws quickly.
"""

from __future__ import annotations

from scope.analyzers.memory.snapshot import BEFORE_RECORDING, Replay

from scope.memory_snapshot import Frame, Snapshot

FLAME_COLUMNS = ["file", "rank", "device", "node", "parent", "label", "bytes"]
MAX_DEPTH = 48
MIN_SHARE = 0.002  # of the peak: smaller nodes are folded into their parent
ROOT_LABEL = "all live at the peak"


def frame_label(frame: Frame) -> str:
    filename, line, name = frame
    return f"{name} {filename.rsplit('/', 1)[-1]}:{line}"


def peak_flame(snap: Snapshot, rep: Replay) -> list[tuple[int, int, str, int]]:
    """(node, parent, label, bytes) rows, node 0 the root (parent -1)."""
    by_stack = rep.peak_by_stack()
    total = sum(nbytes for nbytes, _ in by_stack.values())
    if total <= 0:
        return []
    children: dict[tuple[int, str], int] = {}
    parents, labels, sizes = [-1], [ROOT_LABEL], [total]  # node i: its parent, label and bytes
    for (stack, before), (nbytes, _) in by_stack.items():
        frames = snap.stack(stack)[::-1][:MAX_DEPTH]  # outermost first
        node = 0
        for label in [frame_label(f) for f in frames] or [BEFORE_RECORDING if before else "(no stack recorded)"]:
            child = children.get((node, label))
            if child is None:
                child = children[(node, label)] = len(parents)
                parents.append(node)
                labels.append(label)
                sizes.append(0)
            sizes[child] += nbytes
            node = child
    floor = total * MIN_SHARE
    kept = {0}
    out = [(0, -1, ROOT_LABEL, total)]
    for node in range(1, len(parents)):  # parents come before their children
        if parents[node] in kept and sizes[node] >= floor:
            kept.add(node)
            out.append((node, parents[node], labels[node], sizes[node]))
    return out
