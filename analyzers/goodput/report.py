"""The goodput report: the job's wall time by bucket, attempts, checkpoints, cadence, and what could not be
computed; with its JSON form (the `goodput` key of the analysis contract) and its tables."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from scope.analyzers.goodput.cadence import Cadence, cadence
from scope.analyzers.goodput.formats import TRAINING_CLOCK_ROWS
from scope.analyzers.goodput.states import BUCKETS, FAILED_ENDS, Accounting, Attempt
from scope.analyzers.goodput.times import BAR_SQUEEZED

if TYPE_CHECKING:
    import pandas as pd

    from scope.finding import Finding
    from scope.goodput_result import GoodputResult

_UNSEEN = "training_unseen"
# Lines that say training was asked for or ran: a step, a training loop's start or end line (a log with none of
# them and an evaluation line only evaluated: evaluation_only)
_TRAINING_KINDS = frozenset({"step", "train_begin", "train_end"})
# A step this much slower than the ideal (median) step is a slow step.
SLOW_STEP_FACTOR = 1.5
SLOW_STEPS_LISTED = 10

BUCKET_MEANING = {
    "productive": "training steps (at whatever speed they ran)",
    "warmup": "an attempt's first steps beyond the ideal step time (compilation, autotuning, caches filling)",
    "training_unseen": "inside training (after an attempt's training-start line) in a log with no step line: what "
    "it did is not shown; productive time is at most this (productive_at_most_s)",
    "initialization": "process start to the first training step (launch, imports, model build, data loaders)",
    "checkpoint_save": "checkpoint saves that blocked training, and checkpoint work with no line of its own",
    "checkpoint_load": "loading a checkpoint to resume",
    "evaluation": "validation / evaluation passes (blocking)",
    "redone": "work lost to a rollback: steps past the checkpoint the next attempt resumed from",
    "failure_to_restart": "from a failure to the next attempt's first line (detection, teardown, rescheduling)",
    "queued": "from an attempt that ended by itself or was stopped from outside (a planned exit, Ctrl-C, a cancel, "
    "a time limit, a preemption) to the next one's first line",
    "between_jobs": "from one run's end by itself or from outside (completed, stopped, interrupted; never a "
    "failure) to the launch of a new run from step 0 after a silence, or of any run from step 0 more than 8 h "
    "later: the time between two jobs (queued or idle), not the job's; goodput leaves it out",
    "hung": "no progress while the job still ran",
    "data_stall": "waiting for input data (only where a log or the hook measures it)",
    "unexplained": "time no line accounts for",
}


@dataclass
class Checkpoint:
    op: str  # save | load
    step: int | None
    start: float | None
    blocking_s: float | None
    ended: bool
    evidence: str
    bytes: int | None = None
    background_s: float | None = None  # an async save's time after it stopped blocking

    @property
    def throughput_bps(self) -> float | None:
        if self.bytes and self.blocking_s:
            return self.bytes / self.blocking_s
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "step": self.step,
            "start": self.start,
            "blocking_s": self.blocking_s,
            "background_s": self.background_s,
            "bytes": self.bytes,
            "throughput_bytes_per_s": self.throughput_bps,
            "ended": self.ended,
            "evidence": self.evidence,
        }


@dataclass
class GoodputReport:
    path: str
    clock: str  # own | bar | derived | none | records
    inputs: list[str]
    acc: Accounting
    checkpoints: list[Checkpoint]
    cadence: Cadence
    cannot: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)  # last step per rank per attempt (records)

    @property
    def wall_s(self) -> float:
        return self.acc.wall_s

    @property
    def timed(self) -> bool:
        return self.clock != "none" and self.acc.wall_s > 0

    @property
    def steps_untimed(self) -> bool:
        """Every step line took its time from another line (no timestamp, bar clock or step-time field of its
        own: PaddleNLP's `train epoch: 0 - step: 10 (total: 1814) - loss: ...` between launch lines): when the
        steps ran, and so the productive time, is unknown though the wall time is not."""
        steps = [m for a in self.acc.attempts for m in a.marks if m.kind == "step"]
        return bool(steps) and all(m.t_src == "filled" for m in steps)

    @property
    def steps_unseen(self) -> bool:
        """No step line recognised, yet a training loop ran: its end line says steps ran (HF Trainer with
        logging_strategy=no: `Training completed.` an hour after `Running training`), or time went by after a
        training-start line (training_unseen: `Starting training!`, then 7 min to the exit line): the
        productive time is unknown, not 0 (a bound: productive_at_most_s)."""
        if self.acc.steps_completed is not None:
            return False
        if self.acc.buckets.get("training_unseen", 0.0) > 0:
            return True
        return any(m.kind == "train_end" for a in self.acc.attempts for m in a.marks)

    @property
    def evaluation_only(self) -> str:
        """The launches only evaluated, tested or predicted (HF Trainer with do_eval alone, Lightning's
        trainer.validate / test / predict, the lightning-hydra-template's eval.py: `Starting testing!`): no
        step line, no training-start or training-end line anywhere, and some evaluation line. No training is no
        zero goodput: what the log holds, said in words ('' where training was asked for or shown)."""
        if self.acc.steps_completed is not None or self.steps_unseen:
            return ""
        marks = [m for a in self.acc.attempts for m in a.marks]
        if not marks or any(m.kind in _TRAINING_KINDS for m in marks):
            return ""
        if not any(m.kind in ("eval_begin", "eval_end") for m in marks):
            return ""
        n = len(self.acc.attempts)
        took = self.acc.buckets.get("evaluation", 0.0)
        spent = f", {took:,.1f} s of evaluation" if self.timed and took > 0 else ""
        return f"{n} launch{'es' if n != 1 else ''}, evaluation only, no training step or training-start line{spent}"

    @property
    def productive_at_most_s(self) -> float | None:
        """Where the steps are unseen (steps_unseen): the most the productive time can be, every second inside
        training (training_unseen) besides what steps show; None where the productive time is known or untimed."""
        if not self.timed or not self.steps_unseen or not self._unseen_placed():
            return None
        b = self.acc.buckets
        return b["productive"] + b["warmup"] + b.get("training_unseen", 0.0)

    def _unseen_placed(self) -> bool:
        """Every attempt whose loop's end line says steps ran (`Training completed.`, train_runtime) shows where
        that training began (its training-start line): only then is the time inside training, and so the bound,
        known. A log cut before the start line places none of it: no bound (never `at most 0%`)."""
        return all(
            a.training_start is not None for a in self.acc.attempts if any(m.kind == "train_end" for m in a.marks)
        )

    @property
    def wall_is_lower_bound(self) -> bool:
        """Every step line is timed by a training clock alone (TRAINING_CLOCK_ROWS: modded-nanoGPT's cumulative
        `train_time`, stopped for validation and saves), none by a timestamp of its own: the wall time is that
        clock's span, at least; the validations, the saves and the start-up are outside it, how long unknown."""
        steps = [m for a in self.acc.attempts for m in a.marks if m.kind == "step"]
        return bool(steps) and all(m.row in TRAINING_CLOCK_ROWS and m.t_src != "own" for m in steps)

    def untimed_outside_clock(self) -> tuple[int, int]:
        """(validations, saves) a training-clock log shows outside its clock (wall_is_lower_bound)."""
        marks = [m for a in self.acc.attempts for m in a.marks]
        evals = sum(1 for m in marks if m.kind == "eval_end")
        return evals, len(self.saves())

    @property
    def goodput_pct_at_most(self) -> float | None:
        """The goodput's bound where it is unknown for unseen steps: productive_at_most_s over the held time, the
        wall less the time between jobs (goodput_pct's denominator: that time is neither job's); where the wall
        is a lower bound (wall_is_lower_bound), the productive time over it."""
        bound = self.acc.buckets["productive"] if self.timed and self.wall_is_lower_bound else self.productive_at_most_s
        held = self.acc.wall_s - self.acc.buckets["between_jobs"]
        return 100.0 * bound / held if bound is not None and held > 0 else None

    @property
    def goodput_pct(self) -> float | None:
        if not self.timed or self.steps_untimed or self.steps_unseen or self.wall_is_lower_bound:
            return None
        if self.evaluation_only:  # (no training asked for or shown: goodput does not apply, never 0%)
            return None
        held = self.acc.wall_s - self.acc.buckets["between_jobs"]  # (the time between two jobs is neither's)
        return 100.0 * self.acc.buckets["productive"] / held if held > 0 else None

    def slow_steps(self) -> list[tuple[int, float]]:
        ideal = self.acc.ideal_step_s
        if not ideal:
            return []
        slow = [(s, d) for s, d in self.acc.step_times if d > SLOW_STEP_FACTOR * ideal]
        return sorted(slow, key=lambda x: -x[1])

    def saves(self) -> list[Checkpoint]:
        return [c for c in self.checkpoints if c.op == "save"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of its typed result (scope.goodput_result)."""
        return self.result().to_dict()

    def result(self) -> GoodputResult:
        """The typed result every command shows: what this report found, without its working parts."""
        from scope.goodput_result import GoodputResult

        result = GoodputResult.from_dict(self._contract())
        result.findings = list(self.findings)
        return result

    def _contract(self) -> dict[str, Any]:
        acc = self.acc
        slow = self.slow_steps()
        return {
            "path": self.path,
            "clock": self.clock,
            "inputs": self.inputs,
            "wall_s": acc.wall_s if self.timed else None,
            "wall_is_lower_bound": self.timed and self.wall_is_lower_bound,
            "start": acc.start,
            "end": acc.end,
            "goodput_pct": self.goodput_pct,
            # (where goodput_pct is null for steps the log does not show: the bounds; null otherwise)
            "productive_at_most_s": self.productive_at_most_s,
            "goodput_pct_at_most": self.goodput_pct_at_most,
            # (why goodput_pct is null where the launches only evaluated: what the log holds; '' otherwise)
            "evaluation_only": self.evaluation_only,
            "buckets": {b: (acc.buckets[b] if self.timed else None) for b in BUCKETS},
            "bucket_meaning": BUCKET_MEANING,
            "steps_completed": acc.steps_completed,
            "steps_redone": acc.steps_redone,
            "steps_redone_is_lower_bound": acc.redone_is_bound,
            "steps_completed_is_lower_bound": acc.completed_is_bound,
            "iterations_completed": acc.iterations_completed,
            "steps_discarded": acc.steps_discarded,
            "attempts": [self._attempt_dict(a) for a in acc.attempts],
            "restarts": max(0, len(acc.attempts) - 1),
            "failures": sum(1 for a in acc.attempts if a.ended in FAILED_ENDS),
            "membership_changes": sum(1 for a in acc.attempts if a.ended == "membership_change"),
            "ideal_step_s": acc.ideal_step_s,
            "slow_step_factor": SLOW_STEP_FACTOR,
            "slow_steps": len(slow),
            "slowest_steps": [{"step": s, "seconds": d} for s, d in slow[:SLOW_STEPS_LISTED]],
            "checkpoints": [c.to_dict() for c in self.checkpoints],
            "cadence": self.cadence.to_dict(),
            "timeline": [
                {"start": iv.start, "end": iv.end, "bucket": iv.bucket, "attempt": iv.attempt} for iv in acc.intervals
            ],
            "ranks": [{"rank": r, **v} for r, v in sorted(self.ranks.items())],
            "cannot": self.cannot,
            "warnings": self.warnings,
        }

    def _attempt_dict(self, a: Attempt) -> dict[str, Any]:
        """An attempt's JSON, with its time inside training whose steps no line shows (training_unseen_s:
        None where it has none)."""
        unseen = sum(iv.end - iv.start for iv in self.acc.intervals if iv.attempt == a.index and iv.bucket == _UNSEEN)
        return {**a.to_dict(), "training_unseen_s": unseen if unseen > 0 else None}

    def tables(self) -> dict[str, pd.DataFrame]:
        """`goodput` (one row per bucket), `attempts`, `checkpoints`, `goodput_timeline` (the strip)."""
        import pandas as pd

        acc = self.acc
        wall = acc.wall_s if self.timed else None
        rows = [
            {
                "bucket": b,
                "seconds": acc.buckets[b] if self.timed else None,
                "share_pct": 100.0 * acc.buckets[b] / wall if wall else None,
                "meaning": BUCKET_MEANING[b],
            }
            for b in BUCKETS
        ]
        timeline = [
            {"start": iv.start, "end": iv.end, "bucket": iv.bucket, "attempt": iv.attempt} for iv in acc.intervals
        ]
        return {
            "goodput": pd.DataFrame(rows),
            "attempts": pd.DataFrame([_table_row(self._attempt_dict(a)) for a in acc.attempts]),
            "checkpoints": pd.DataFrame([c.to_dict() for c in self.checkpoints]),
            "goodput_timeline": pd.DataFrame(timeline),
        }


def _table_row(attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempt as a flat table row (Parquet): per-rank exit codes and signals are in `end_state`, the
    failed ranks a comma list."""
    row = {k: v for k, v in attempt.items() if k not in ("exit_codes", "signals")}
    row["failed_ranks"] = ",".join(str(r) for r in attempt.get("failed_ranks") or [])
    return row


def checkpoints_of(acc: Accounting) -> list[Checkpoint]:
    out: list[Checkpoint] = []
    for op, spans in (("save", acc.saves), ("load", acc.loads)):
        for begin, end, span in spans:
            mark = end or begin
            step = next((m.step for m in (end, begin) if m is not None and m.step is not None), None)
            out.append(
                Checkpoint(
                    op,
                    step,
                    begin.t,
                    span,
                    end is not None,
                    f"{begin.where()}: {begin.text}",
                    getattr(mark, "bytes", None),
                )
            )
    return sorted(out, key=lambda c: c.start if c.start is not None else 0.0)


def used_interval(saves: list[Checkpoint]) -> tuple[float | None, float | None]:
    """The median time and step distance between consecutive completed saves."""
    done = [c for c in saves if c.ended and c.start is not None]
    gaps = [
        b.start - a.start
        for a, b in pairwise(done)
        if a.start is not None and b.start is not None and b.start > a.start
    ]
    steps = [
        b.step - a.step for a, b in pairwise(done) if a.step is not None and b.step is not None and b.step > a.step
    ]
    return (statistics.median(gaps) if gaps else None, statistics.median(steps) if steps else None)


def build_report(
    path: str,
    clock: str,
    inputs: list[str],
    acc: Accounting,
    checkpoints: list[Checkpoint] | None = None,
    mtbf_s: float | None = None,
    warnings: list[str] | None = None,
) -> GoodputReport:
    cps = _finite_checkpoints(checkpoints if checkpoints is not None else checkpoints_of(acc))
    saves = [c for c in cps if c.op == "save" and c.blocking_s]
    cost = statistics.median(c.blocking_s for c in saves if c.blocking_s) if saves else None
    failures = sum(1 for a in acc.attempts if a.ended in FAILED_ENDS)
    interval_s, interval_steps = used_interval([c for c in cps if c.op == "save"])
    # the observed MTBF over the time the jobs held (goodput_pct's denominator): no job runs, and none fails,
    # between two jobs (between_jobs: an exit, hours idle, a run from scratch)
    held = acc.wall_s - acc.buckets.get("between_jobs", 0.0)
    cad = cadence(cost, held, failures, interval_s, interval_steps, mtbf_s=mtbf_s)
    if cost is None and acc.buckets.get("checkpoint_save", 0.0) > 0.0:
        cad.note = _untimed_save_note(acc.buckets["checkpoint_save"])
    report = GoodputReport(path, clock, inputs, acc, cps, cad, warnings=list(warnings or []))
    report.cannot = cannot_compute(report)
    return report


def _untimed_save_note(bucket_s: float) -> str:
    """The cadence's note where the timeline gave saves time (checkpoint_save: the gap after a save line
    with no end line, mmcv's 2 s before its evaluation bar) but no save's own lines time it: the buckets and
    the cadence say the same, a cost that is the timeline's reading, not a measured blocking save."""
    return (
        f"no save's blocking time is timed by its own lines (the {bucket_s:.1f} s of checkpoint_save are the "
        "timeline's reading of the silence at save lines): the checkpoint cost is unknown, so no interval "
        "is recommended"
    )


def _finite_checkpoints(cps: list[Checkpoint]) -> list[Checkpoint]:
    """A duration that is NaN, infinite or negative, or a size that is no count of bytes, is unknown."""
    for c in cps:
        for name in ("blocking_s", "background_s", "start"):
            v = getattr(c, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and (name == "start" or v >= 0)):
                setattr(c, name, None)
        if c.bytes is not None and not (isinstance(c.bytes, int) and not isinstance(c.bytes, bool) and c.bytes >= 0):
            c.bytes = None
    return cps


def cannot_compute(report: GoodputReport) -> list[str]:
    acc = report.acc
    out: list[str] = []
    if not report.timed:
        out.append(
            "no timestamps and no elapsed-time fields: wall time, goodput and every time bucket are unknown; "
            "steps, attempts and rollbacks are counted from the step numbers alone"
        )
    if report.evaluation_only:
        out.append(
            f"no training in this log: {report.evaluation_only}; goodput does not apply (unknown, not 0%), "
            "and no training loss or step time is read"
        )
    elif acc.steps_completed is None:
        out.append("no training-progress line recognised: steps, slow steps and rollbacks are unknown")
    if report.timed and report.steps_unseen:
        bound = report.productive_at_most_s
        out.append(
            "no step line shows what the training did (a training-start line, then time, or its end line): the "
            "productive time and goodput are unknown, "
            + (
                f"at most {bound:,.1f} s productive (training_unseen: the time after each training-start line)"
                if bound is not None
                else "with no bound (no training-start line shows where the training its end line reports began)"
            )
        )
    if (
        report.timed
        and acc.attempts
        and acc.attempts[0].resume_step is None
        and acc.attempts[0].first_step not in (None, 0, 1)
    ):
        out.append(
            f"the log starts mid-run (step {acc.attempts[0].first_step}) with no checkpoint load line: "
            "the time before it, and its initialization, are not in the log"
        )
    if report.timed and report.steps_untimed:
        out.append(
            "the step lines carry no time of their own (no timestamp, no step-time field): when they ran, the "
            "productive time and goodput are unknown; the wall time and the gaps are the other lines' timestamps"
        )
    if report.timed and report.wall_is_lower_bound:
        evals, saves = report.untimed_outside_clock()
        out.append(
            "the step lines' only clock is the run's cumulative training time, stopped for validation and "
            f"checkpoint saves: the wall time is at least {report.wall_s:,.1f} s, the goodput at most "
            f"{report.goodput_pct_at_most or 0.0:.1f}%; the start-up, {evals} validation(s) and {saves} "
            "checkpoint save(s) the log shows took time it does not say, and when the run ended is unknown"
        )
    if report.timed and not any(c.op == "save" for c in report.checkpoints):
        out.append("no checkpoint save (line or record): checkpoint cost and cadence are unknown")
    # a bar run squeezed under the next timestamp (times._align_bars): its steps' times are estimates
    out += [w for w in report.warnings if BAR_SQUEEZED in w]
    measured = any(m.data_s is not None for a in report.acc.attempts for m in a.marks if m.kind == "step")
    if report.clock != "records" and not report.acc.buckets.get("data_stall") and not measured:
        # (where the step lines state their data wait, they measured it: none beyond the steady level)
        out.append(
            "data stalls are not measured from these logs (they stay inside productive time; Megatron's "
            "batch-generator timer, --timing-log-level 1, gives them)"
        )
    return out
