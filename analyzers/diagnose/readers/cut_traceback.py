"""A traceback cut before its exception line whose frames wait in a collective: a timeout, read from the frames;
or whose innermost torch.distributed frame creates a process group: the ranks could not connect.

Users paste the end of a console: the frames of a C++ stack (`frame #13: c10d::ProcessGroupNCCL::barrier(...)`)
or of a Python one (`File ".../distributed_c10d.py", line 2709, in barrier`) with the line that names the
exception cut away or lost among other ranks' output. A process whose stack ends in a collective and that
printed no error of its own was waiting for its peers when it stopped: the process-group timeout ended it
(30 minutes by default), or a peer that went away did. Read only when nothing in the file names a failure.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.line_shapes import EXCERPT_CUT
from scope.analyzers.diagnose.model import COMM_ERROR, STALL, Anomaly

from scope.collective_calls import BLOCKING_PY_CALLS, NATIVE_CALLS

# C++ frames of c10d's process groups: 'c10d::ProcessGroupNCCL::barrier(' / '...::WorkNCCL::wait('
NATIVE_FRAME = re.compile(r"frame #(\d+): .*?\bc10d::(ProcessGroup\w*)::(?:\w+::)?(\w+)\(")
# Python frames of torch.distributed's collective calls
PY_FRAME = re.compile(r'File "[^"]*distributed_c10d\.py", line \d+, in (\w+)')
ANCHOR = re.compile(NATIVE_FRAME.pattern + "|" + PY_FRAME.pattern)
REMEDY = (
    "Find what the peers did while this rank waited: a peer busy with long work of its own (pre-processing a "
    "dataset under main_process_first, evaluation or a save on rank 0) calls for raising the process-group "
    "timeout (init_process_group(timeout=...), HF Trainer --ddp_timeout) or doing that work once before the "
    "job; a peer that crashed or was killed has its own error in its log; a peer stuck elsewhere shows in its "
    "stack (py-spy dump --pid)."
)


# torch.distributed's calls that create a process group (distributed_c10d.py): the backend connects every rank to
# every other (gloo's pairs to the address each rank's hostname resolves to, NCCL's bootstrap on the interface it
# picks) after the store exchanged their addresses. A stack that ends in one raised while connecting.
GROUP_CALLS = frozenset(
    {"init_process_group", "new_group", "new_subgroups", "new_subgroups_by_enumeration", "_new_process_group_helper"}
)
GROUP_REMEDY = (
    "Creating a process group connects every rank to every other: gloo advertises the address each node's "
    "hostname resolves to, NCCL the interface it picks, so a hostname that resolves to 127.0.x.x (/etc/hosts) or "
    "an interface the other nodes cannot reach (docker0, a bridge, a container's own) fails across nodes while one "
    "node works. Set GLOO_SOCKET_IFNAME (a gloo group: also the CPU-side groups data loaders and checkpointing "
    "create) and NCCL_SOCKET_IFNAME to the NIC the nodes reach each other on (ip -br addr) on every node, check "
    "that hostname -i gives a routable address, and that MASTER_ADDR:MASTER_PORT is reachable; the cut exception "
    "line names the connection that failed."
)


def creating_group(text: str, display: str) -> Anomaly | None:
    """A cut traceback whose innermost torch.distributed frame creates a process group, as a connection
    failure between the ranks; None when the innermost such frame is anything else."""
    frames = list(PY_FRAME.finditer(text))
    if not frames or frames[-1].group(1) not in GROUP_CALLS or not runs_to_the_end(text, frames[-1]):
        return None
    last = frames[-1]
    backend = _backend_named(text[max(0, last.start() - 400) : last.end() + 400])  # the caller's line, or its own
    return Anomaly(
        code="group_creation_cut",
        kind="config_error",
        level=COMM_ERROR,
        message=(
            f"A process raised while creating a{backend} process group (stack frame 'distributed_c10d.py in "
            f"{last.group(1)}'), and the log holds no error line of its own: the traceback is cut. Creating a "
            "group fails most often because the ranks cannot connect to each other"
        ),
        file=display,
        line=text.count("\n", 0, last.start()) + 1,
        severity="critical",
        details={"op": last.group(1), "confidence": "low", "action": GROUP_REMEDY},
    )


def runs_to_the_end(text: str, frame: re.Match[str]) -> bool:
    """The frame's traceback runs to the log's end: every line after it is indented under the frame's own
    prefix (a source line, a deeper frame), blank or an excerpt's cut marker. A log record or an exception line
    after it is a traceback the program handled and went past (a fallback, a retry), or a whole one. Another
    traceback's header is no such line: the ranks' copies of one stack interleave, each cut where the log ends."""
    start = text.rfind("\n", 0, frame.start()) + 1
    prefix = text[start : frame.start()].rstrip()
    for ln in text[frame.end() :].split("\n")[1:]:
        own = ln[len(prefix) :] if prefix and ln.startswith(prefix) else ln
        if own.strip() and not own[:1].isspace() and not EXCERPT_CUT.match(own) and not own.startswith("Traceback"):
            return False
    return True


def _backend_named(source: str) -> str:
    """' gloo' or ' NCCL' where a source line around the frame (the call made, printed under its caller's frame)
    names the backend."""
    m = re.search(r"""backend\s*=\s*["']?(gloo|nccl|mpi)""", source, re.IGNORECASE)
    return f" {m.group(1).lower() if m.group(1).lower() == 'gloo' else m.group(1).upper()}" if m else ""


def waiting_in_collective(text: str, display: str) -> Anomaly | None:
    """The collective the cut stack waits in, as a timeout anomaly; None when no stack ends in one."""
    if "ProcessGroup" not in text and "distributed_c10d" not in text:
        return None
    found = _outermost_native(text) or _innermost_python(text)
    if found is None:
        return None
    line, op, frame = found
    return Anomaly(
        code="collective_wait_cut",
        kind="timeout",
        level=STALL,
        message=(
            f"A process stopped while waiting in {op} (stack frame '{frame}'), and the log holds no error line of "
            "its own: the traceback is cut. A rank that ends inside a collective was waiting for its peers until "
            "the process-group timeout (30 min by default) or a peer's exit ended it"
        ),
        file=display,
        line=line,
        severity="critical",
        details={"op": op, "frame": frame, "confidence": "medium", "action": REMEDY},
    )


def _outermost_native(text: str) -> tuple[int, str, str] | None:
    """C++ frames count from the innermost (#0): the highest-numbered collective frame is the call made."""
    best: tuple[int, int, str, str] | None = None
    for m in NATIVE_FRAME.finditer(text):
        op = m.group(3)
        if op not in NATIVE_CALLS:
            continue
        number = int(m.group(1))
        if best is None or number > best[0]:
            line = text.count("\n", 0, m.start()) + 1
            best = (number, line, op, f"c10d::{m.group(2)}::{op}")
    return None if best is None else best[1:]


def _innermost_python(text: str) -> tuple[int, str, str] | None:
    """Python frames run outermost first: the last collective frame is the call that waited."""
    last = None
    for m in PY_FRAME.finditer(text):
        if m.group(1) in BLOCKING_PY_CALLS:
            last = m
    if last is None:
        return None
    return text.count("\n", 0, last.start()) + 1, last.group(1), f"distributed_c10d.py in {last.group(1)}"
