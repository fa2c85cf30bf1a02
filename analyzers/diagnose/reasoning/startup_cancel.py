"""A job cancelled (or ended at its time limit) while its log stood in rendezvous or process-group init: the ranks
waited for members that never came, so the wait is the finding and the scheduler's cancel is its end
(knowledge/scheduler_wait.py). Only where the log shows such a wait: no job output after the init line (a rank
other than 0 prints no step line, only its metrics), no NCCL rings built (every rank had joined), no cancel for
the scheduler's own reason (preemption) and none seconds after the init line (a user's scancel)."""

from __future__ import annotations

from datetime import datetime

from scope.analyzers.diagnose.knowledge.scheduler_wait import (
    LIGHTNING_RANK_ZERO,
    LIGHTNING_SLURM_REFERENCE,
    LIGHTNING_SLURM_WORLD,
    LIGHTNING_WORLD,
    LINE_TIME,
    LONG_WAIT_S,
    MAX_GPUS_PER_NODE,
    NODE_COUNT,
    NOT_A_WAIT,
    RANKS_CONNECTED,
    SCHEDULER_ENDINGS,
    SHORT_WAIT_S,
    STARTUP_CHATTER,
    TASKS_PER_NODE,
    VISIBLE_DEVICES,
    WAIT_STAGES,
    WAITED_IN,
)
from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO
from scope.analyzers.diagnose.model import STALL, Anomaly, FileScan
from scope.analyzers.diagnose.reasoning.startup import PROGRESS
from scope.analyzers.diagnose.reasoning.stop_causes import stop_causes


def cancelled_while_waiting(result: FileScan, text: str, display: str) -> Anomaly | None:
    """A scheduler's cancel printed after a start-up wait, with nothing else failing: the cancel becomes that
    wait's end (info) and the wait is returned, where the run stopped (FileScan.stalled)."""
    stop = result.stop
    if stop is None or stop.stage not in WAIT_STAGES or stop.cut:
        return None
    endings = [a for a in result.anomalies if a.code in SCHEDULER_ENDINGS and a.severity != "info"]
    if not endings or any(a.line <= stop.line for a in endings):
        return None  # the cancel came before the last start-up line: not the end of that wait
    if any(a.severity == "critical" and a.code not in SCHEDULER_ENDINGS for a in result.anomalies):
        return None  # something else failed: the cancel may be its end, read as before
    lines = text.split("\n")
    end = min(a.line for a in endings)
    said = lines[end - 1] if end <= len(lines) else ""
    if PROGRESS.search(text) or _job_output(lines[stop.line : end - 1]) or RANKS_CONNECTED.search(text):
        return None  # a step, the job's own output or the communicator built after start-up: it got past it
    if NOT_A_WAIT.search(said):
        return None  # preempted, or its node failed: the scheduler's reason, wherever the run stood
    waited = _seconds_between(lines[stop.line - 1], said)
    if waited is not None and waited < SHORT_WAIT_S:
        return None  # cancelled seconds after the init line: someone's decision, not the end of a wait
    time_limit = any(a.code == "slurm_time_limit" for a in endings)
    long_wait = time_limit or (waited is not None and waited >= LONG_WAIT_S)
    world = LIGHTNING_WORLD.search(text) if stop.emitter == "lightning" else None
    too_big = world is not None and _world_too_big(text, int(world.group("world")), long_wait)
    if stop.emitter == "lightning" and not _lightning_waited(text, too_big, waited, time_limit):
        return None  # a healthy rank prints nothing after Lightning's init: the scheduler's own reading stands
    for a in endings:
        a.severity, a.details["signature"] = "info", None
    if world is not None and too_big:
        remedy, reference = LIGHTNING_SLURM_WORLD.format(world=world.group("world")), LIGHTNING_SLURM_REFERENCE
        kind, confidence = "config_error", "medium"
    else:
        causes = stop_causes(stop.stage, text)
        remedy, reference = WAITED_IN.format(stage=STAGE_INFO[stop.stage].words, causes=causes), ""
        kind, confidence = "hang", "low"
    return Anomaly(
        code="cancelled_in_startup",
        kind=kind,
        level=STALL,
        message=f"the job was cancelled while its ranks waited in {STAGE_INFO[stop.stage].words} "
        f"(last line: '{stop.text}'): they waited for ranks that never joined",
        file=display,
        line=stop.line,
        severity="critical",
        details={"confidence": confidence, "phase": "startup", "remedy": remedy, "reference": reference},
    )


def _lightning_waited(text: str, too_big: bool, waited: float | None, time_limit: bool) -> bool:
    """Evidence that a Lightning job waited at init, where any rank other than 0 prints nothing after it in a healthy
    run too: rank 0's own line (MEMBER: 1/N: once all joined it prints 'All distributed processes registered' and the
    model summary) with a world larger than the tasks or devices the log shows, a wait up to the time limit, or a
    wait its timestamps measure (SHORT_WAIT_S at least; an untimestamped line measures none)."""
    if LIGHTNING_RANK_ZERO.search(text) is None:
        return False
    return too_big or time_limit or (waited is not None and waited >= SHORT_WAIT_S)


def _job_output(between: list[str]) -> bool:
    """A line between the init line and the cancel that is not start-up's own chatter."""
    return any(not STARTUP_CHATTER.search(line) for line in between)


def _seconds_between(first: str, last: str) -> float | None:
    """Seconds from the init line's time to the cancel's ('CANCELLED AT T'); None where either has none."""
    start, end = LINE_TIME.search(first), LINE_TIME.search(last)
    if start is None or end is None:
        return None
    t0, t1 = (datetime.fromisoformat(f"{m.group('date')}T{m.group('time')}") for m in (start, end))
    return (t1 - t0).total_seconds()


def _world_too_big(text: str, world: int, long_wait: bool) -> bool:
    """Evidence that Lightning's world size (SLURM's task count) exceeds the processes that train: more tasks per
    node (SLURM_NTASKS_PER_NODE, or the world over the node count the log states) than the devices the node shows
    (or than any node has), a world that no whole number of such nodes makes; with neither shown, a wait as long as
    the job's time limit (or LONG_WAIT_S)."""
    shown = VISIBLE_DEVICES.search(text)
    devices = len(shown.group("devices").split(",")) if shown is not None else None
    tasks = TASKS_PER_NODE.search(text)
    nodes = NODE_COUNT.search(text)
    per_node = None
    if tasks is not None:
        per_node = int(tasks.group("tasks"))
    elif nodes is not None and int(nodes.group("nodes") or nodes.group("env")) > 0:
        per_node = -(-world // int(nodes.group("nodes") or nodes.group("env")))
    if per_node is not None:
        return per_node > (devices or MAX_GPUS_PER_NODE)
    if devices is not None:
        return world % devices != 0
    return long_wait
