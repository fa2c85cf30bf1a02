"""Step lines of a format no row of formats/ lists, read by their structure: an increasing step counter
with a per-step time field whose unit the line states. Kept only when a log has enough of them, the counter
mostly increasing, and no known row gave a step line; the report says the lines were read this way."""

from __future__ import annotations

import re
from itertools import pairwise

from scope.analyzers.goodput.formats.structural_words import words
from scope.analyzers.goodput.log_interval import log_interval
from scope.analyzers.goodput.mark import Mark

# A progress line no row knows, by its structure: a step counter and a per-step time field with a unit.
# (Each run of blanks has one quantifier only: a long run of them before no number fails in linear time.)
_COUNTER = re.compile(
    r"\b(?:global[ _]step|iteration|iter|step|update|batch)s?\b(?:\s*[:=#])?(?:\s*\[)?\s*(?P<step>\d{1,12})"
    # (a counter kept as a float prints `step=1.0000`: mlprof / ezpz's metrics)
    # (the run's planned steps after it: `step: 1810 (total: 1814)`, PaddleNLP's examples' loops)
    r"(?:\.0+(?![\d.]))?(?:\s*/\s*(?P<total>\d{1,12})|\s*\(\s*total\s*[:=]\s*(?P<total_of>\d{1,12})\s*\))?(?![\d.])",
    re.IGNORECASE,
)
_TIME_FIELD = re.compile(
    # (`dt`: the step's own time as nanoGPT-derived loops and ezpz's metrics name it)
    r"(?P<key>\b[\w /]{0,40}?(?:time|elapsed|duration|latency|\bdt\b)[\w /]{0,20}?(?:\s*\((?P<kunit>ms|s|sec)\))?)"
    # (a value followed by `:NN` is a time of day or an h:mm:ss clock, no duration)
    r"(?:\s*[:=]\s*|\s+)(?P<val>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?![\d.]|:\d)\s*"
    r"(?P<unit>ms|s|sec|secs|seconds|min|mins|minutes)?\b",
    re.IGNORECASE,
)
# A rate in steps: `2.48 s/it`, `1.45it/s` are tqdm's (https://github.com/tqdm/tqdm/blob/master/tqdm/std.py,
# format_meter: `{rate}{unit}/s`, inverted to `s/{unit}` below one per second); `0.8 steps/s`, `3.1 sec/step` are
# hand-written loops' (no one source: read because the unit names the step itself). Tokens/s or samples/s give no
# step time without the tokens or samples per step, so they are not read here.
_RATE = re.compile(
    r"(?<![\w.])(?P<val>\d+(?:\.\d+)?)\s*(?P<unit>s/it|sec/it|s/step|sec/step|it/s|its/s|steps?/s(?:ec)?)\b",
    re.IGNORECASE,
)
# A counter within an epoch, bracketed: `Epoch [3][50/7330]`, `Epoch(train) [3][ 50/1000]` (mmcv, MMEngine:
# epochs count from 1), `Train: 2 [  50/1251 (  4%)]` (timm: from 0), `Iter(train) [ 50/90000]` (MMEngine by
# iteration). The step is the epoch's offset plus the iteration; their `time` field is seconds per iteration.
_EPOCH_COUNTER = re.compile(
    r"\b(?:(?P<mm>Epoch(?:\(train\))?)\s*\[\s*(?P<mm_epoch>\d+)\s*\]|(?P<timm>Train):\s*(?P<timm_epoch>\d+))"
    r"\s*\[\s*(?P<step>\d{1,9})\s*/\s*(?P<total>\d{1,9})\b"
    r"|\bIter\(train\)\s*\[\s*(?P<iter>\d{1,12})\s*/\s*(?P<iter_total>\d{1,12})\]"
)
# Hand-written loops: `Epoch [2/5], Step [100/600], Loss: 0.23`, `Epoch:[1/2](459800/850049) loss:2.03`: the
# epoch of a stated number of epochs (from 1), then the step of a stated number per epoch.
_EPOCH_OF = re.compile(
    r"\bEpoch:?(?:\s*\[)?\s*(?P<epoch>\d{1,6})\s*/\s*(?P<epochs>\d{1,6})(?:\s*\])?[\s,:]*"
    r"(?:\(|(?:Step|Iter(?:ation)?|Batch|it)s?:?(?:\s*\[)?)\s*(?P<step>\d{1,9})\s*/\s*(?P<total>\d{1,9})",
    re.IGNORECASE,
)
# A progress line without a time field still counts where the line's timestamp times it and it reports
# training (a loss or a learning rate) or its throughput (samples/s, tokens/s: a rate in samples or tokens
# gives no step time without the batch): `2024-06-01 12:00:00 INFO step=100 loss=2.31`,
# `global_step=4500, RunningAvgSamplesPerSec=16.1` (DeepSpeed), `5092/261 tok/s` (OpenNMT).
_TRAINING_WORDS = re.compile(
    r"(?i)\bloss\b|\blr\b|learning[ _]rate|\bppl\b|perplexity"
    r"|samples?(?:/s|/sec|_per_sec|PerSec)|tok(?:en)?s?(?:/s|/sec|_per_sec|PerSec)|\b[wu]ps\b|throughput"
)
# The epoch beside a counter that may restart every epoch: `Epoch: [3], step: [100]` (VinVL-Paddle's loop),
# `epoch=2.0000 step=50.0000` (mlprof / ezpz), `epoch 3 iter 100`, or of a stated count: `epoch:[  3/100] train
# step:20` (PaddleVideo's log_batch, paddlevideo/utils/record.py), `Epoch: 3/100, iter: 10/989` (PaddleGAN).
# (Each run of blanks has one quantifier only: a long run of them before no number fails in linear time.)
_EPOCH = re.compile(
    r"\bepoch\b(?:\s*[:=])?(?:\s*\[)?\s*(?P<epoch>\d{1,6})(?:\.0+)?(?:\s*/\s*\d{1,6}(?:\s*\])?)?(?![\d./])",
    re.IGNORECASE,
)
# The words beside the counter (formats/structural_words.py, each row with its source): an evaluation ran
# (`Eval at Epoch [3]!`), its result (`[TEST] Accuracy: 71%`), a save (`Saving trained model to DIR`), an epoch's
# end (`Epoch [1] done!`), litgpt's optimizer step after its iteration (`iter 1760 | step 220`) and its
# validation's time (`val time: 3778.02 ms`).
_EVAL = words("eval")
_EVAL_RESULT = words("eval_result")
_EPOCH_END = words("epoch_end")
_SAVE = words("save")
_OPTIMIZER_STEP = words("optimizer_step")
_EVAL_TIME = words("eval_time")
# Pipe-separated fields with no names for the counter or the time: `40 | loss 6.6875 | lr 3.0e-04 | 13808.97ms`
# (a hand-written loop: modded-llama2's train.py); the counter opens the line, the time is a field of its own
# whose unit follows the number.
_BARE_COUNTER = re.compile(r"^\s*(?P<step>\d{1,12})(?:\s*/\s*(?P<total>\d{1,12}))?\s*\|")
_BARE_TIME = re.compile(r"\|\s*(?P<val>\d+(?:\.\d+)?)\s*(?P<unit>ms|s)\s*(?:\||$)")
# An epoch line that reports training (`Epoch [3/50], Train Loss: 0.01, Val Loss: 0.02`) is that epoch's step even
# when it carries the validation's result too (formats/structural_words.py's epoch_train row).
_TRAIN = words("epoch_train")
# A loop that counts only epochs of a stated number (`Epoch [3/650], Train Loss: 0.0136`): each epoch is a step.
_EPOCH_ONLY = re.compile(r"\bEpoch\s*\[?\s*(?P<step>\d{1,6})\s*/\s*(?P<total>\d{1,6})\s*\]?", re.IGNORECASE)
# ... or of no stated number, its fields pipe-separated (`Epoch 3 |   Train Loss: 10.74 | ... | Val Loss: 10.66`:
# B777B2056-2/machine_translation_en2zh's train.py); (the `total` group never matches: no number stated)
_EPOCH_PIPE = re.compile(r"^\s*Epoch\s+(?P<step>\d{1,6})\s*\|(?P<total>(?!))?", re.IGNORECASE)
# Fewer such lines than this, or a counter that does not mostly increase, is not a training log's progress.
STRUCTURAL_MIN_LINES = 3


def structural_step(line: str, stamped: bool = False) -> tuple[int, int | None, float | None] | None:
    """(step, total, seconds per step) of a line of a format no row lists: a step counter, then a per-step
    time whose unit is stated (in the field's name, `(ms)`, `_ms`, or after the number). A line with a
    wall-clock timestamp (`stamped`) that reports training needs no time field: its time is the clock's."""
    found = _counter(line)
    if found is None or (
        _EPOCH_ONLY.search(line) and not _COUNTER.search(line) and structural_eval(line) and not _TRAIN.search(line)
    ):
        return None  # (an epoch's validation line beside its training line is no second step)
    step, total, end = found
    for field_m in _TIME_FIELD.finditer(line, end):
        key = field_m.group("key").lower()
        unit = (field_m.group("kunit") or field_m.group("unit") or "").lower()
        if not unit:
            unit = "ms" if key.rstrip().endswith(("_ms", " ms")) else "s" if key.rstrip().endswith("_s") else ""
        # a bare `time` beside a counter is seconds in every framework seen printing it (detectron2,
        # maskrcnn-benchmark, mmcv, timm, scepter): milliseconds are labelled; a growing one is the run's
        # clock (_per_step_times)
        if not unit and key.split()[-1:] in (["time"], ["dt"]):
            unit = "s"
        if not unit or "total" in key or "eta" in key.split() or "data" in key:
            continue
        value = float(field_m.group("val")) * (0.001 if unit == "ms" else 60.0 if unit.startswith("min") else 1.0)
        return step, total, value
    bare = _BARE_TIME.search(line, end - 1)  # (from the counter's own `|`)
    if bare is not None:
        return step, total, float(bare.group("val")) * (0.001 if bare.group("unit") == "ms" else 1.0)
    rate = _RATE.search(line, end)
    if rate is not None and float(rate.group("val")) > 0:
        value, unit = float(rate.group("val")), rate.group("unit").lower()
        return step, total, value if unit.startswith(("s/", "sec/")) else 1.0 / value
    if _TRAINING_WORDS.search(line):  # timed by the line's timestamp (`stamped`), or counted without time
        return step, total, None
    return None


def structural_eval(line: str) -> bool:
    """The line says an evaluation ran (at an epoch or a step), or gives its result."""
    return _EVAL.search(line) is not None or _EVAL_RESULT.search(line) is not None


def structural_eval_time(line: str) -> float | None:
    """Seconds a validation pass took, where the line states it beside a counter (_EVAL_TIME), else None."""
    m = _EVAL_TIME.search(line)
    if m is None or _counter(line) is None:
        return None
    return float(m.group("val")) * (0.001 if m.group("unit").lower() == "ms" else 1.0)


# Words before the save phrase that say no save happens now: a negation (`not saving the model to s3: no
# credentials`, `we do not save model to x`, `Skipping save`) or a plan (`Will save the model to ./exp at the
# end of each epoch`, printed once at start-up)
_NOT_SAVING_NOW = re.compile(
    r"\b(?:not|no|never|don'?t|doesn'?t|didn'?t|won'?t|cannot|can'?t|skip(?:s|ped|ping)?|will|would|shall|"
    r"going\s+to|to\s+be)\b",
    re.IGNORECASE,
)


# Words after the save phrase, in its clause, that say the save did not happen (`Saving model to s3
# skipped: no credentials`, `Saving checkpoint to s3 disabled`)
_NOT_SAVED_AFTER = re.compile(r"\b(?:not|never|skip(?:s|ped|ping)?|disabled|cancell?ed|aborted)\b", re.IGNORECASE)
# Where a clause ends: `;` or `,`, or `.` / `:` before a space or the line's end (not a path's `./exp`, `s3://`)
_CLAUSE_END = re.compile(r"[;,]|[.:](?=\s|$)")


def structural_save(line: str) -> bool:
    """The line says a save begins, naming where it writes (_SAVE), and nothing in the phrase's own clause
    says it does not or will later: no word before it from the clause's start (_NOT_SAVING_NOW; `No
    improvement for 2 epochs; saving checkpoint to ...` and `val loss did not improve. Saving checkpoint to`
    are saves), none after it to the clause's end (_NOT_SAVED_AFTER)."""
    found = _SAVE.search(line)
    if found is None:
        return False
    start = max((m.end() for m in _CLAUSE_END.finditer(line, 0, found.start())), default=0)
    after = _CLAUSE_END.search(line, found.end())
    end = after.start() if after is not None else len(line)
    return (
        _NOT_SAVING_NOW.search(line, start, found.start() + 1) is None
        and _NOT_SAVED_AFTER.search(line, found.end(), end) is None
    )


def structural_epoch_end(line: str) -> bool:
    """The line says an epoch's training is over (_EPOCH_END)."""
    return _EPOCH_END.search(line) is not None


def structural_epoch(line: str) -> int | None:
    """The epoch number a progress line states beside its counter, if any."""
    m = _EPOCH.search(line)
    return int(m.group("epoch")) if m else None


def structural_optimizer_step(line: str) -> int | None:
    """The optimizer step a progress line states after its iteration counter (_OPTIMIZER_STEP), if any."""
    m = _OPTIMIZER_STEP.search(line)
    return int(m.group("opt")) if m else None


def _counter(line: str) -> tuple[int, int | None, int] | None:
    """(step, total, where the counter ends) of the line's counter."""
    m = _EPOCH_OF.search(line)
    if m is not None:
        epoch, per_epoch = int(m.group("epoch")), int(m.group("total"))
        return max(0, epoch - 1) * per_epoch + int(m.group("step")), None, m.end()
    m = _EPOCH_COUNTER.search(line)
    if m is not None:
        if m.group("iter"):
            return int(m.group("iter")), int(m.group("iter_total")), m.end()
        per_epoch = int(m.group("total"))
        epoch = int(m.group("mm_epoch") or 1) - 1 if m.group("mm") else int(m.group("timm_epoch") or 0)
        return max(0, epoch) * per_epoch + int(m.group("step")), None, m.end()
    counter = (
        _COUNTER.search(line) or _BARE_COUNTER.search(line) or _EPOCH_ONLY.search(line) or _EPOCH_PIPE.search(line)
    )
    if counter is None:
        return None
    total = counter.group("total") or (counter.groupdict().get("total_of"))
    return int(counter.group("step")), int(total) if total else None, counter.end()


def _per_step_times(marks: list[Mark]) -> None:
    """A time field that grows with the counter line after line is the run's elapsed clock, not a step's
    time: each step's time is then the growth over the steps between two lines."""
    pairs = list(pairwise(marks))
    ahead = [(a, b) for a, b in pairs if (b.step or 0) > (a.step or 0)]
    # a clock never goes back and mostly moves (a coarse one may repeat a value: '1613.0min' twice); a
    # per-step time goes up and down, or stays the same
    never_back = sum(1 for a, b in ahead if (b.step_s or 0.0) >= (a.step_s or 0.0))
    grows = sum(1 for a, b in ahead if (b.step_s or 0.0) > (a.step_s or 0.0))
    if len(ahead) < 2 or never_back < 0.8 * len(ahead) or grows < 0.5 * len(ahead):
        return
    clock = [m.step_s for m in marks]
    # a clock read at step 0 is the training's start (modded-nanogpt's `step:0/7500 ... train_time:0ms`)
    marks[0].step_s = clock[0] if marks[0].step == 0 else None
    for (a, b), (ta, tb) in zip(pairs, pairwise(clock), strict=True):
        d = (b.step or 0) - (a.step or 0)
        if d <= 0 or ta is None or tb is None:
            b.step_s = None
        elif tb >= ta:
            b.step_s = (tb - ta) / d
        else:
            # the timer was reset while the counter went on (modded-nanogpt restarts train_time after its
            # compile warm-up steps): it has run at most these d steps, the time before stays where it was
            b.step_s = tb / d


def _increasing(marks: list[Mark]) -> bool:
    steps = [m.step for m in marks if m.step is not None]
    ups = sum(1 for a, b in pairwise(steps) if b > a)
    return len(steps) >= STRUCTURAL_MIN_LINES and ups >= 0.8 * (len(steps) - 1)


def structural_per_epoch(line: str) -> tuple[int, int] | None:
    """(the run's epochs, the steps of one epoch) a line states beside its per-epoch counter (`Epoch: 3/100,
    iter: 10/989`: 100 epochs of 989), if any."""
    m = _EPOCH_OF.search(line)
    return (int(m.group("epochs")), int(m.group("total"))) if m else None


def _per_epoch_counter(marks: list[Mark], breaks: list[int]) -> bool:
    """A counter that restarts every epoch while the epoch number goes up is progress, not a restart
    (`epoch:[  2/100] train step:0` after `epoch:[  1/100] train step:20`): each step becomes cumulative. Where
    the line states the epoch's steps (`Epoch [2/5], Step [100/600]`) the step is global already, and only a
    counter that wrapped before its epoch field moved is mended (_lagging_epochs). `breaks`: the lines of the
    log that end or start a launch (a failure, a start-up), across which no counter is read as going on."""
    if not marks or any(m.epoch is None for m in marks):
        return False
    if all(m.per_epoch for m in marks):
        return _lagging_epochs(marks, breaks)
    if not _restarts_each_epoch(marks):
        return False
    _count_across_epochs(marks)
    return True


def _restarts_each_epoch(marks: list[Mark]) -> bool:
    """The counter goes back where the epoch number goes up, and never grows across a new epoch (`epoch=2
    step=5100` after `epoch=1 step=5000` is a counter of the whole run that names its epoch too). A drop within
    one epoch, or to an earlier epoch, is a relaunch: it does not make the counter a per-epoch one, nor stop it
    being one (each run is counted with the same offsets; the timeline sees the drop). Only the next epoch's
    first line after the one before's last tells: across epochs with none of their lines between (a log cut
    from epoch 2's start to epoch 4's end) the counter goes up, whichever it is; into the next epoch across a
    cut it goes up too, but a per-epoch counter never past the counts seen before."""
    ups: list[int] = []
    beyond = 0  # epoch turns onto a line past every count before it: a counter of the whole run's
    reached = 0
    for a, b in pairwise(marks):
        reached = max(reached, a.step or 0)
        if (b.epoch or 0) == (a.epoch or 0) + 1:
            ups.append((b.step or 0) - (a.step or 0))
            beyond += (b.step or 0) > reached
    # (an epoch whose only line is its `step:0` after the one before's: the same counter, restarted too). A
    # counter that goes up into the next epoch but stays within the counts already seen is a cut across the
    # epochs' turn (epoch 2's step 300, then epoch 3's step 400 of 500), not a counter of the whole run; one
    # past them is too where more turns drop than go past (a cut early in the log, from epoch 1's step 200
    # to epoch 2's 400, before the counts reached 500)
    return sum(up < 0 for up in ups) > beyond


def _count_across_epochs(marks: list[Mark]) -> None:
    """Each step made (epoch - first epoch) x steps per epoch + the counter. The first epoch is one for the
    whole log (1, or 0 where the log prints it: a log that opens at a later epoch resumed there), so that a
    relaunch resuming epoch 5 goes on from epoch 5's steps. The epoch's steps are not printed: they are read
    launch by launch (_runs_by_epoch: a relaunch on 1 GPU instead of 2 has twice the steps an epoch), as the
    counter's span plus one log interval (printed at 0, 20, .., 80: the next epoch's 0 is 20 after its 80; at
    1..N every step: N); a run within one epoch keeps the run's before."""
    first = min(1, *(m.epoch or 0 for m in marks))
    interval = log_interval(marks)
    per_epoch: int | None = None
    for run in _runs_by_epoch(marks):
        raw = [m.step or 0 for m in run]
        if per_epoch is None or len({m.epoch for m in run}) > 1:
            own = any(b > a for a, b in pairwise(raw))  # (its own interval, where it has one)
            per_epoch = max(raw) - min(raw) + (log_interval(run) if own else interval)
        for m, step in zip(run, raw, strict=True):
            m.step = ((m.epoch or first) - first) * per_epoch + step


def _runs_by_epoch(marks: list[Mark]) -> list[list[Mark]]:
    """The marks split where the epoch number goes back, or where the counter goes back within one epoch: a
    relaunch, each one's lines a run of their own."""
    runs: list[list[Mark]] = [marks[:1]]
    for a, b in pairwise(marks):
        if (b.epoch or 0) < (a.epoch or 0) or (b.epoch == a.epoch and (b.step or 0) < (a.step or 0)):
            runs.append([])
        runs[-1].append(b)
    return runs


def _lagging_epochs(marks: list[Mark], breaks: list[int]) -> bool:
    """Steps made global from a stated per-epoch total ((epoch - 1) x total + counter) that go back while the
    epoch does not: the counter wrapped at the total before the epoch field moved (PaddleGAN prints the global
    iteration modulo the epoch's, its epoch from the data loader's count: `Epoch: 10/100, iter: 0/989` follows
    `iter: 979/989`). Only a wrap that advanced by about one log interval, with no launch's end or start
    between (`breaks`), after which the epoch field moves on to the next while the counter goes on without
    wrapping again (_epoch_moves_on), is one: then the step is the previous plus that advance. Any other drop
    is a relaunch and stays (one resuming that epoch's start wraps again at the epoch's end)."""
    interval = log_interval(marks)
    moved = False
    for i, (a, b) in enumerate(pairwise(marks)):
        advance = ((b.step or 0) - (a.step or 0)) % (b.per_epoch or 1)
        if (b.step or 0) >= (a.step or 0) or not 0 < advance <= 2 * interval:
            continue
        if any(a.line < line < b.line for line in breaks) or not _epoch_moves_on(marks[i + 1 :]):
            continue
        b.step, moved = (a.step or 0) + advance, True
    return moved


def _epoch_moves_on(marks: list[Mark]) -> bool:
    """From a wrapped line on, the epoch field moves to the next epoch while the per-epoch counter (the step
    less the epoch's offset) goes on growing: the wrap was the epoch's end, the field lagging behind it. A
    wrapped line that is the counter's last (the run's last iteration, `Epoch: 4/4, iter: 0/25`, or a log cut
    there) has nothing after it to tell: with no failure or start-up line before it, it is taken as a wrap."""
    first = marks[0]
    if len(marks) == 1:
        return True
    per_epoch = first.per_epoch or 1
    prev = first.step or 0
    for m in marks[1:]:
        counter = (m.step or 0) - ((m.epoch or 1) - (first.epoch or 1)) * per_epoch
        if counter <= prev or m.epoch not in (first.epoch, (first.epoch or 0) + 1):
            return False
        if m.epoch != first.epoch:
            return True
        prev = counter
    return False


def _few_known_steps(marks: list[Mark], candidates: list[Mark]) -> list[Mark] | None:
    """The known rows' step lines when they are a stray few beside many structural ones (a data-loading bar
    drawn once, DeepSpeed's `step=0` at its first print): the structure is the log's progress."""
    known = [m for m in marks if m.kind == "step" and m.row != "structural"]
    if not known or (len(known) < STRUCTURAL_MIN_LINES and len(candidates) >= 5 * len(known)):
        return known
    return None


# The marks that end a launch or start one: a step counter is never read as going on across them.
_LAUNCH_BREAKS = frozenset(
    {"failure", "restart", "stop", "interrupt", "train_end", "job_end", "init_begin", "train_begin", "load_begin"}
)


def launch_breaks(marks: list[Mark]) -> list[int]:
    """The lines of the marks that end or start a launch (_LAUNCH_BREAKS)."""
    return [m.line for m in marks if m.kind in _LAUNCH_BREAKS]


def known_rows_across_epochs(marks: list[Mark], file: str) -> list[str]:
    """A known row's counter that restarts every epoch while the line's epoch goes up (_per_epoch_counter), row
    by row: its steps counted across epochs, and a note saying so."""
    rows = {m.row for m in marks if m.kind == "step" and m.row != "structural" and m.epoch is not None}
    breaks = launch_breaks(marks)
    counted = [
        row
        for row in sorted(rows)
        if _per_epoch_counter([m for m in marks if m.kind == "step" and m.row == row], breaks)
    ]
    return [f"{file}: the {row} counter restarts every epoch: steps counted across epochs" for row in counted]


def accept_structural(marks: list[Mark], candidates: list[Mark], file: str) -> tuple[list[Mark], list[str]]:
    """The marks with the structural step lines kept (and a note saying so) when they look like a training
    log's progress and no known row gave more than a stray few step lines, else without them."""
    evals = [m for m in candidates if m.kind != "step"]
    candidates = [m for m in candidates if m.kind == "step"]
    stray = _few_known_steps(marks, candidates)
    per_epoch = bool(candidates) and _per_epoch_counter(candidates, launch_breaks(marks))
    if candidates and stray is not None and _increasing(candidates):
        drop_known = {id(m) for m in stray}  # (kept as plain clock marks: their times still count)
        marks = [
            m if id(m) not in drop_known else Mark("clock", m.line, m.file, "clock", t=m.t, t_src=m.t_src)
            for m in marks
        ]
        marks = [m for m in marks if m.kind != "clock" or m.t is not None]
        # (an evaluation or save line before the first step line is the start-up's, not training's: a plain
        # clock mark, its time still counting, as the log's first line it may be)
        first = candidates[0].line
        early = {id(m) for m in evals if m.line < first}
        marks = [
            m if id(m) not in early else Mark("clock", m.line, m.file, "clock", t=m.t, t_src=m.t_src) for m in marks
        ]
        marks = [m for m in marks if m.kind != "clock" or m.t is not None]
        _per_step_times(candidates)
        how = "; the counter restarts every epoch: steps counted across epochs" if per_epoch else ""
        note = (
            f"{file}: step lines read by their structure (a step counter and a per-step time), no known "
            f"format{how}: {candidates[0].text[:100]}"
        )
        return marks, [note]
    drop = {id(m) for m in candidates + evals}
    return [m for m in marks if id(m) not in drop], []
