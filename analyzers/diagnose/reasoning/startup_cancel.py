"""A job cancelled (or ended at its time limit) while its log stood in rendezvous or process-group init: the ranks
waited for members that never came, so the wait is the finding and the scheduler's cancel is its end
(knowledge/scheduler_wait.py)."""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.scheduler_wait import (
    LIGHTNING_SLURM_REFERENCE,
    LIGHTNING_SLURM_WORLD,
    LIGHTNING_WORLD,
    SCHEDULER_ENDINGS,
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
    if PROGRESS.search(text):
        return None  # a step or an epoch after start-up: the run got past it
    for a in endings:
        a.severity, a.details["signature"] = "info", None
    world = LIGHTNING_WORLD.search(text) if stop.emitter == "lightning" else None
    if world is not None:
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
