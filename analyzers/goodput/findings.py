"""Findings about the job's life: saves that block too long, work redone after rollbacks, slow restarts,
hung time. Each names the lost seconds (`metrics.time_lost_us`) and the remedy; the link rule in its
record (analyzers/goodput_spec.py) hangs them under the failure the diagnosis found.

`checkpoint_stall` here is about the job's wall time (saves as the job's log or the hook records them);
a per-step trace analysis may report the same kind from trace evidence: same kind, `metrics.scope` says
which ("job" here).
"""

from __future__ import annotations

import re
import statistics
from itertools import pairwise
from typing import TYPE_CHECKING

from scope.analyzers.goodput.drift import step_time_drift as drift_of
from scope.analyzers.goodput.formats import by_name
from scope.analyzers.goodput.formats.step_logging import remedy_for
from scope.analyzers.goodput.launches import between, lowest_first_step, shown
from scope.analyzers.goodput.states import FAILED_ENDS
from scope.analyzers.goodput.timeline import FINAL_FLUSH_ROW, final_flush_end

from scope.finding import Finding

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import GoodputReport
    from scope.analyzers.goodput.states import Attempt

# Norms. A blocking save that costs this share of the job is worth acting on (async checkpointing
# brings it to the staging copy only: a few seconds for most models); a quarter of the job is critical.
STALL_SHARE_WARN = 0.05
STALL_SHARE_CRITICAL = 0.25
# Work redone worth a finding (share of wall time, or seconds when the wall time is unknown).
ROLLBACK_SHARE = 0.01
ROLLBACK_MIN_S = 60.0
# A restart is slow when failure-to-first-step is this many times the first attempt's initialization
# and at least this many seconds more (nvidia-resiliency-ext measures the same interval per cycle).
RESTART_RATIO = 2.0
RESTART_EXCESS_S = 120.0
HUNG_MIN_S = 300.0
# A step line's loss printed as not a number (Python's float repr: nan, inf; torch's tensor(nan)): the
# training diverged; the steps after it change the weights into nothing useful.
LOSS_NOT_FINITE = re.compile(r"\bloss\b[^|,;]{0,12}?[:=]?\s*(?:tensor\()?[-+]?(?:nan|inf)\b", re.IGNORECASE)

ASYNC_REMEDY = (
    "make the save asynchronous so training blocks only for the copy to host memory "
    "(torch.distributed.checkpoint.async_save; Megatron --async-save; NeMo async_save; torchtitan "
    "checkpoint.async_mode; DeepSpeed's nebula/async engine), write to node-local storage and upload "
    "in the background, keep fewer copies per save (NeMo's .nemo beside the .ckpt, save_top_k), and "
    "check the storage bandwidth"
)

# Lines that say the saves are already asynchronous (NeMo 2's `Scheduled async checkpoint save`; the final flush
# of the saves still pending, NeMo's and Megatron-LM's): the remedy is no more "make it asynchronous"
ASYNC_SAVE_ROWS = frozenset({"nemo2_async_scheduled", FINAL_FLUSH_ROW})
_ALREADY_ASYNC_REMEDY = (
    "finalize each save in the background while training goes on (NeMo's AsyncFinalizerCallback, Megatron-LM's "
    "non-blocking maybe_finalize_async_save), leave fewer saves pending at the end (no save due just before "
    "the last step), write to node-local storage and upload in the background, and check the storage bandwidth"
)
ALREADY_ASYNC_REMEDY = "the saves are already asynchronous: " + _ALREADY_ASYNC_REMEDY
# ... with the final flush's measured time (from its line to its last end line)
FINAL_FLUSH_REMEDY = (
    "the saves are already asynchronous: {flush} of this is the final flush, training over and the job "
    "waiting for the saves still being written; " + _ALREADY_ASYNC_REMEDY
)


def _fmt_s(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def _share(seconds: float, wall: float) -> str:
    return f" ({100 * seconds / wall:.1f}% of the job's {_fmt_s(wall)})" if wall > 0 else ""


def goodput_findings(report: GoodputReport) -> list[Finding]:
    if not report.timed:
        return []
    found = (
        checkpoint_stall(report),
        rollback_loss(report),
        no_progress(report),
        loss_not_finite(report),
        step_time_drift(report),
        steps_not_logged(report),
    )
    out = [f for f in found if f is not None]
    out += restart_slow(report)
    return out


def checkpoint_stall(report: GoodputReport) -> Finding | None:
    wall = report.wall_s
    blocked = report.acc.buckets["checkpoint_save"]
    share = blocked / wall if wall > 0 else 0.0
    if share < STALL_SHARE_WARN:
        return None
    every = report.saves()
    saves = [c for c in every if c.blocking_s]
    median = statistics.median(c.blocking_s for c in saves if c.blocking_s) if saves else None
    sized = [c for c in saves if c.bytes and c.blocking_s]
    rate = sum(c.bytes or 0 for c in sized) / sum(c.blocking_s or 0.0 for c in sized) if sized else None
    logged = sum(c.blocking_s or 0.0 for c in saves)
    # the count is of every save the bucket rests on, timed or not (never "0 saves" beside seconds of saving)
    parts = [_saves_counted(len(every), len(saves)) + (f", median {_fmt_s(median)} each" if median else "")]
    if sized and rate is not None:
        parts.append(f"{sum(c.bytes or 0 for c in sized) / len(sized) / 1e9:.2f} GB per save at {rate / 1e9:.2f} GB/s")
    if blocked > logged * 1.2:
        if logged:
            parts.append(f"{_fmt_s(blocked - logged)} of it after the timed saves ended, before training went on")
        else:  # (the whole figure above, not time beside it)
            parts.append("that time is the span the save lines bound, less the steps' own time")
    summary = f"Checkpoint saves blocked training for {_fmt_s(blocked)}{_share(blocked, wall)}: " + "; ".join(parts)
    if rate is not None:
        summary += ": storage bandwidth is the suspect"
    cad = report.cadence
    flush = _final_flush_s(report)
    suggestion = ASYNC_REMEDY if not _already_async(report) else ALREADY_ASYNC_REMEDY
    if flush is not None:
        suggestion = FINAL_FLUSH_REMEDY.format(flush=_fmt_s(flush))
    if cad.young_s:
        suggestion += f"; and save every {_fmt_s(cad.young_s)} (Young/Daly for this cost and failure rate)"
    return Finding(
        kind="checkpoint_stall",
        severity="critical" if share >= STALL_SHARE_CRITICAL else "warning",
        summary=summary,
        steps=[c.step for c in every if c.step is not None][:50],
        evidence=[c.evidence for c in every[:8]],
        metrics={
            "scope": "job",
            "time_lost_us": blocked * 1e6,
            "share_pct": 100 * share,
            "saves": len(every),
            "median_save_s": median,
            "logged_save_s": logged,
            "bytes_per_save": (sum(c.bytes or 0 for c in sized) / len(sized)) if sized else None,
            "throughput_bytes_per_s": rate,
            "norm_share_pct": 100 * STALL_SHARE_WARN,
        },
        suggestion=suggestion,
    )


def _already_async(report: GoodputReport) -> bool:
    """A line says the saves are asynchronous already (ASYNC_SAVE_ROWS)."""
    return any(m.row in ASYNC_SAVE_ROWS for a in report.acc.attempts for m in a.marks)


def _final_flush_s(report: GoodputReport) -> float | None:
    """The seconds the final flush of the pending async saves took (from its line to its last end line:
    timeline.final_flush_end), or None where no flush was measured (none, or none with an end line)."""
    marks = [m for a in report.acc.attempts for m in a.marks]
    total: float | None = None
    for i, m in enumerate(marks):
        end = final_flush_end(marks, i)
        if end is not None and end.t is not None and m.t is not None:
            total = (total or 0.0) + max(0.0, end.t - m.t)
    return total


def _saves_counted(saves: int, timed: int) -> str:
    """`N saves`, and how many of them a line times where not all: the count the bucket rests on."""
    text = f"{saves} save" + ("" if saves == 1 else "s")
    if timed == saves:
        return text
    return f"{text} (no line times {'it' if saves == 1 else 'them'})" if not timed else f"{text} ({timed} timed)"


def rollback_loss(report: GoodputReport) -> Finding | None:
    acc, wall = report.acc, report.wall_s
    lost = acc.buckets["redone"]
    if acc.steps_redone <= 0 or lost < min(ROLLBACK_MIN_S, ROLLBACK_SHARE * wall if wall else ROLLBACK_MIN_S):
        return None
    rollbacks = [
        (a, b)
        for a, b in pairwise(shown(acc.attempts))  # (the pairs mark_redone counted)
        if a.last_step is not None and b.resume_step is not None and b.resume_step < a.last_step and not b.new_run
    ]
    cad = report.cadence
    change = ""
    if cad.young_s and cad.interval_used_s:
        change = f"; checkpointing every {_fmt_s(cad.young_s)} instead of every {_fmt_s(cad.interval_used_s)}"
        if cad.hours_per_week_saved:
            change += f" would save about {cad.hours_per_week_saved:.1f} h per week of this job"
    unit = "iteration" if acc.iterations_completed is not None else "step"  # (litgpt counts both: redone in iterations)
    evidence = [
        f"attempt {b.index} resumed {_resumed(b, unit)} after attempt {a.index} reached {unit} "
        f"{a.last_step} ({a.end_evidence or a.ended})"
        for a, b in rollbacks
    ]
    return Finding(
        kind="rollback_loss",
        severity="warning",
        summary=f"{'At least ' if acc.redone_is_bound else ''}{acc.steps_redone} {unit}s were redone after "
        f"{len(rollbacks)} rollback{'s' if len(rollbacks) != 1 else ''}: {'at least ' if acc.redone_is_bound else ''}"
        f"{_fmt_s(lost)} of work lost{_share(lost, wall)}"
        + (f" (the {unit} the relaunch resumed from is not in the log)" if acc.redone_is_bound else ""),
        steps=[b.resume_step for _, b in rollbacks if b.resume_step is not None],
        evidence=evidence,
        metrics={
            "scope": "job",
            "time_lost_us": lost * 1e6,
            "steps_redone": acc.steps_redone,
            "steps_redone_is_lower_bound": acc.redone_is_bound,
            "rollbacks": len(rollbacks),
            "interval_used_s": cad.interval_used_s,
            "interval_best_s": cad.young_s,
        },
        suggestion=_rollback_remedy(rollbacks) + change,
    )


def _resumed(a: Attempt, unit: str = "step") -> str:
    """The step an attempt resumed from, as the log shows it: named by a load line, else a bound."""
    if a.resume_known or a.first_step is None:
        return f"from {unit} {a.resume_step}"
    return f"at {unit} {a.first_step - 1} at the latest (no line names the {unit} it loaded)"


def _rollback_remedy(rollbacks: list[tuple[Attempt, Attempt]]) -> str:
    if rollbacks and all(a.ended == "membership_change" for a, _ in rollbacks):
        return (
            "the restarts were elastic membership changes (nodes joined or left), not failures: save when the "
            "group is stopped for one (torchrun sends SIGTERM first; or keep an in-memory checkpoint) so the new "
            "group resumes where the old one stopped, and checkpoint at the Young/Daly interval"
        )
    if rollbacks and all(a.ended == "stopped" for a, _ in rollbacks):
        # a cancel, a time limit or a preemption: no failure to fix, the work since the last save was lost (no
        # Young/Daly interval here: the cadence's rate counts failures, and a stop is none)
        return (
            "the attempts were stopped from outside (a cancel, a time limit, a preemption), not by a failure: "
            "save on the stop signal before exiting (SLURM `--signal=USR1@120` or SIGTERM's grace period, "
            "Lightning's auto-requeue, torchrun's SIGTERM to the workers) so the next attempt resumes where this one "
            "stopped"
        )
    return "fix the failure that forced the restart (see its diagnosis), and checkpoint at the Young/Daly interval"


def _queued_within(report: GoodputReport, start: float, end: float) -> float:
    """The time a scheduler's report says the job waited in its queue between two instants: not restart time."""
    ivs = [iv for iv in report.acc.intervals if iv.bucket == "queued" and iv.why.startswith("in the scheduler")]
    return sum(max(0.0, min(iv.end, end) - max(iv.start, start)) for iv in ivs)


def _hung_in_training(a: Attempt) -> bool:
    """Silent after it trained, then relaunched: a hang that a watchdog or the scheduler killed, the usual
    cause (its ending lines are on other ranks' logs): the relaunch's delay is restart time to judge."""
    return a.unknown_end and a.last_step is not None


def _end_of(a: Attempt) -> str:
    return "the attempt before's last line (no line says how it ended)" if a.unknown_end else "the failure"


def _started_at(a: Attempt) -> str:
    """What the restart's time runs to: its first step, or, where no step line shows one, its training start."""
    return "its first step" if a.first_step is not None else "its training start (no step line)"


def restart_slow(report: GoodputReport) -> list[Finding]:
    attempts = report.acc.attempts
    if len(attempts) < 2:
        return []
    first = attempts[0]
    init0 = (
        (first.training_start - first.start) if first.training_start is not None and first.start is not None else None
    )
    out = []
    for prev, nxt in pairwise(attempts):
        # to the next attempt's training start (its first progress line less the steps it covers): a
        # relaunch's own training steps are not restart time
        begin = nxt.training_start if nxt.training_start is not None else nxt.first_step_t
        if prev.end is None or begin is None or init0 is None or prev.ended not in FAILED_ENDS:
            continue
        gap = begin - prev.end - _queued_within(report, prev.end, begin)
        kind = between(prev, nxt, gap, lowest_first_step(attempts))
        if kind == "queued" or (kind != "failure_to_restart" and not _hung_in_training(prev)):
            continue  # (down time before a launch from scratch, or an end not known: no restart time to judge)
        if gap < RESTART_RATIO * init0 or gap - init0 < RESTART_EXCESS_S:
            continue
        out.append(
            Finding(
                kind="restart_slow",
                severity="warning",
                summary=f"Attempt {nxt.index} took {_fmt_s(gap)} from {_end_of(prev)} to {_started_at(nxt)}, "
                f"{gap / max(init0, 1e-9):.1f}x the first attempt's {_fmt_s(init0)} of initialization",
                evidence=[f"attempt {prev.index} ended: {prev.end_evidence or prev.ended}"],
                metrics={
                    "scope": "job",
                    "time_lost_us": (gap - init0) * 1e6,
                    "failure_to_first_step_s": gap,
                    "initialization_s": init0,
                },
                suggestion="detect failures sooner (a shorter collective timeout, heartbeat-based hang detection), "
                "keep spare nodes warm, restart in place (torchrun --max-restarts, in-process restart) instead of "
                "requeueing, and "
                "cache the container image, the dataset index and compiled kernels",
            )
        )
    return out


def no_progress(report: GoodputReport) -> Finding | None:
    hung = report.acc.buckets["hung"]
    if hung < HUNG_MIN_S:
        return None
    spans = [iv for iv in report.acc.intervals if iv.bucket == "hung"]
    return Finding(
        kind="no_progress",
        severity="critical" if hung >= 3600 else "warning",
        summary=f"No training progress for {_fmt_s(hung)} while the job still ran{_share(hung, report.wall_s)}",
        evidence=[f"attempt {iv.attempt}: {_fmt_s(iv.end - iv.start)} without a step" for iv in spans[:8]],
        metrics={"scope": "job", "time_lost_us": hung * 1e6, "stalls": len(spans)},
        suggestion="detect hangs from progress, not from the collective timeout: a heartbeat watchdog (scope run, "
        "nvidia-resiliency-ext) that dumps stacks and restarts after a few step times without progress; lower "
        "the process-group timeout",
    )


def loss_not_finite(report: GoodputReport) -> Finding | None:
    """The loss turned NaN (or inf) and stayed so to the attempt's last step line: every step from the first
    such line on trained nothing, however productive its time looks."""
    for a in report.acc.attempts:
        steps = [m for m in a.marks if m.kind == "step" and m.step is not None]
        bad = [LOSS_NOT_FINITE.search(m.text) is not None for m in steps]
        if not bad or not bad[-1]:
            continue
        first = len(bad) - next(i for i, b in enumerate(reversed(bad)) if not b) if not all(bad) else 0
        since, last = steps[first], steps[-1]
        lost = (last.t - since.t) + (since.step_s or 0.0) if last.t is not None and since.t is not None else None
        return Finding(
            kind="loss_not_finite",
            severity="warning",
            summary=f"The loss is NaN/inf from step {since.step} to the last step line ({last.step}) of attempt "
            f"{a.index}: {len(steps) - first} step line(s) trained nothing"
            + (f", {_fmt_s(lost)}{_share(lost, report.wall_s)}" if lost else ""),
            evidence=[f"{since.where()}: {since.text.strip()[:160]}", f"{last.where()}: {last.text.strip()[:160]}"],
            metrics={"scope": "job", "first_step": since.step, "last_step": last.step}
            | ({"time_lost_us": lost * 1e6} if lost else {}),
            suggestion="stop on a non-finite loss instead of training on (a check that raises or skips the step), "
            "resume from the last checkpoint before it with a lower learning rate or longer warm-up, gradient "
            "clipping, and bf16 or a loss scaler in place of plain fp16",
        )
    return None


def step_time_drift(report: GoodputReport) -> Finding | None:
    """The steps of an attempt grew steadily slower (drift.step_time_drift: each tenth's pace as time over
    steps, grown gradually and clearly): not a stall (no gap), time lost all along (a leak, a growing dataset
    cache, a throttled GPU, fragmentation); the first attempt to drift is reported."""
    for a in report.acc.attempts:
        d = drift_of(a.marks)
        if d is None:
            continue
        growth = 100 * (d.last_s / d.first_s - 1)
        return Finding(
            kind="step_time_drift",
            severity="warning",
            summary=f"Steps slowed {growth:.0f}% over attempt {a.index}: {d.first_s:.3g} s a step early on "
            f"(steps {d.first_steps[0]}..{d.first_steps[1]}), {d.last_s:.3g} s in its last tenth "
            f"(steps {d.last_steps[0]}..{d.last_steps[1]}); about {_fmt_s(d.lost_s)} over the early pace"
            f"{_share(d.lost_s, report.wall_s)}",
            evidence=[f"attempt {a.index}: {d.samples} intervals between step lines, the pace of each tenth"],
            metrics={"scope": "job", "time_lost_us": d.lost_s * 1e6, "first_s": d.first_s, "last_s": d.last_s},
            suggestion="find what grows with the run: host or GPU memory (a leak, an allocator fragmenting), a "
            "cache or a dataset that grows, logging or metrics kept per step, clocks throttled as the GPU heats "
            "(scope's counters); compare a profile of an early step with a late one",
        )
    return None


def steps_not_logged(report: GoodputReport) -> Finding | None:
    """No step line in the log, yet its attempts trained after their training-start line (training_unseen):
    what that time did is not shown, so the goodput is unknown, with its bound; the remedy is the setting that
    makes the program that printed the start line log its steps (formats/step_logging.py)."""
    unseen = report.acc.buckets.get("training_unseen", 0.0)
    bound, pct = report.productive_at_most_s, report.goodput_pct_at_most
    if unseen <= 0 or bound is None:
        return None
    starts = [m for a in report.acc.attempts for m in a.marks if m.kind == "train_begin"]
    trained = sorted({iv.attempt for iv in report.acc.intervals if iv.bucket == "training_unseen"})
    rows = by_name()
    frameworks = list(dict.fromkeys(rows[m.row].framework for m in starts if m.row in rows))
    said = f" (`{_message_of(starts[0].text)}`, {frameworks[0]})" if starts and frameworks else ""
    between = report.acc.buckets.get("between_jobs", 0.0)  # (out of the bound's denominator, as the goodput's)
    held = f" of the wall time less {_fmt_s(between)} between jobs" if between > 0 else ""
    share = f", goodput at most {pct:.1f}%{held}" if pct is not None else ""
    return Finding(
        kind="steps_not_logged",
        severity="warning",
        summary=f"No step line in the log: {len(trained)} attempt(s) spent {_fmt_s(unseen)} inside training after "
        f"the training-start line{said} with nothing to show what they did; goodput is unknown "
        f"(at most {_fmt_s(bound)} productive{share})",
        evidence=[f"{m.where()}: {m.text.strip()[:160]}" for m in starts[:8]],
        metrics={
            "scope": "job",
            "training_unseen_s": unseen,
            "productive_at_most_s": bound,
            "goodput_pct_at_most": pct,
            "attempts_in_training": len(trained),
        },
        suggestion="; ".join(dict.fromkeys(remedy_for(f) for f in frameworks or [""])),
    )


def _message_of(text: str) -> str:
    """A log line past its timestamp and logger prefix (`[2026-06-09 17:18:04,645][__main__][INFO] - [rank: 0]
    Starting training!` -> `Starting training!`; HF's examples' `[INFO|trainer.py:2134] 2025-02-03 09:01:10,500 >>
    ***** Running training *****`, transformers' logging format `... %(asctime)s >> %(message)s`): the words the
    program printed."""
    return re.split(r"\]\s*(?:-\s*)?|\s-\s|\s>>\s", text.strip())[-1].strip()[:80]
