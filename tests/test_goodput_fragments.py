"""Goodput on real training-log fragments of the classes issue 40 found missed (time bases, iteration lines
in seconds, Ctrl-C, warm-up, bounds, a relaunch's steps) and on logs whose clock misbehaves (issue 41 item 8).

Inputs are the real logs of ../shared/data/training_logs, cut and re-assembled the way the class shows it (each
test says how), and short lines quoted from public logs (URL beside each)."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput.parse import Mark
from scope.analyzers.goodput.timeline import account

from scope.cli import main
from scope.render.goodput import render_goodput
from tests.conftest import shared_data
from tests.helpers import assert_sane_goodput, write_log

MEGATRON = "liguodongiot-llm-action_megatron-deepspeed-llama-note.txt"
FAIRSEQ = "tianxiexiaozhu77-syngec_bash-english_exp-1.txt"
_STAMP = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")

# BigScience Megatron-DeepSpeed iteration lines (seconds, not ms), as JUWELS' benchmark README quotes them:
# https://github.com/bigscience-workshop/Megatron-DeepSpeed (training.py training_log: "elapsed time per iteration
# (s)"); lines from the MLPerf-like JUBE benchmark's job.out (log interval 10).
BIGSCIENCE = (
    "[default3]: iteration       {step}/ 3125000 | consumed samples:          {samples} | elapsed time per "
    "iteration (s): {sec} | learning rate: 4.438E-07 | global batch size:    96 | lm loss: 1.010967E+01 | loss "
    "scale: 4096.0 | grad norm: 178.553 | number of skipped iterations:   0 | number of nan iterations:   0 | "
    "samples per second: 13.276 | TFLOPs: 101.54 |"
)


def _real(name: str) -> list[str]:
    """The real log's lines, without its `# KEY:` header."""
    lines = shared_data("training_logs", name).read_text().splitlines()
    return [ln for ln in lines if not ln.startswith("#")]


def _shift(line: str, seconds: float) -> str:
    """The line with its timestamp moved by `seconds` (the date too)."""

    def move(m: re.Match[str]) -> str:
        t = dt.datetime.fromisoformat(f"{m.group(1)} {m.group(2)}") + dt.timedelta(seconds=seconds)
        return t.strftime("%Y-%m-%d %H:%M:%S")

    return _STAMP.sub(move, line, count=1)


# ---- time bases (issue 40: "relative times that start at zero joined with wall-clock dates") --------------


def _planned_exit_then_relaunch(days: float) -> list[str]:
    """The real Megatron-DeepSpeed run, stopped by a planned exit after iteration 3 (Megatron's
    --exit-interval: save, then `[exiting program at iteration N]`), relaunched `days` later from that
    checkpoint. Its iteration lines carry no date (their times are their own elapsed fields); the setup
    and DeepSpeed lines do."""
    real = _real(MEGATRON)
    first_iters = [ln for ln in real if ln.startswith(" iteration ")][:3]
    setup_end = next(i for i, ln in enumerate(real) if "[before the start of training step]" in ln)
    attempt1 = [*first_iters, "saving checkpoint at iteration       3 to ./tmp"]
    attempt1 += ["  successfully saved checkpoint at iteration       3 to ./tmp"]
    attempt1 += ["[exiting program at iteration 3] datetime: 2023-08-15 06:31:46 "]
    gap = days * 86400
    relaunch = [_shift(ln, gap) for ln in real[: setup_end + 1] if "datetime:" in ln or "time to initialize" in ln]
    relaunch.append(_shift("[2023-08-15 06:31:38,900] successfully loaded checkpoint from ./tmp at iteration 3", gap))
    for ln in real[setup_end + 1 :]:  # every counter goes on from the checkpoint: Megatron's and DeepSpeed's
        ln = re.sub(r"(iteration +)(\d+)(/| to)", lambda m: f"{m[1]}{int(m[2]) + 3:8d}{m[3]}", ln)
        ln = re.sub(r"(step=|steps: |global_step)(\d+)", lambda m: f"{m[1]}{int(m[2]) + 3}", ln)
        relaunch.append(_shift(ln, gap))
    return attempt1 + relaunch


def test_undated_steps_before_a_planned_exit_are_not_placed_in_1970(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, _planned_exit_then_relaunch(days=3), "job.log"))
    assert_sane_goodput(r)
    assert r.acc.start is not None and r.acc.start > 1.6e9  # nothing on a clock that starts at 0 (1970)
    first, second = r.acc.attempts
    assert first.ended == "completed" and first.last_step == 3 and second.resume_step == 3
    assert r.acc.steps_completed == 2503 and r.acc.steps_redone == 0
    # the three days between the planned exit and the relaunch are a queue gap: not a save, not a failure
    assert r.acc.buckets["queued"] == pytest.approx(3 * 86400 - 10.6, abs=15)
    assert r.acc.buckets["checkpoint_save"] < 60 and r.acc.buckets["failure_to_restart"] == 0
    assert r.wall_s < 3 * 86400 + 3100  # never years
    assert not [f for f in r.findings if f.severity == "critical"]


def test_a_log_with_relative_times_only_beside_a_dated_log_is_not_joined_to_1970(tmp_path: Path) -> None:
    """Two logs of one job: the first attempt's (no dates at all: times from its elapsed fields, from 0) and
    the relaunch's (dated). The first is placed just before the second; the gap is unknown and said so."""
    lines = _planned_exit_then_relaunch(days=3)
    cut = next(i for i, ln in enumerate(lines) if "exiting program" in ln)
    write_log(tmp_path, lines[:cut], "a_attempt0.log")
    write_log(tmp_path, lines[cut + 1 :], "b_attempt1.log")
    r = goodput(tmp_path)
    assert_sane_goodput(r)
    assert r.wall_s < 4000  # 51 years before
    assert any("relative to its own start" in w for w in r.warnings)
    assert r.acc.steps_completed == 2503


# ---- iteration lines in seconds, read by structure ----------------------------------------------------------


def _bigscience(stall_s: float) -> list[str]:
    lines = []
    for n, sec in ((10, "7.2310"), (20, "5.3551"), (30, "5.6192"), (40, "5.3291"), (50, "5.3247")):
        lines.append(BIGSCIENCE.format(step=n, samples=n * 96, sec=sec))
    # ten more iterations, one of which sat for `stall_s` (the interval's mean elapsed time shows it)
    lines.append(BIGSCIENCE.format(step=60, samples=60 * 96, sec=f"{(9 * 5.33 + stall_s) / 10:.4f}"))
    lines.append(BIGSCIENCE.format(step=70, samples=70 * 96, sec="5.3312"))
    return lines


def test_megatron_deepspeed_iteration_in_seconds_is_read_and_its_stall_reported(tmp_path: Path) -> None:
    log = write_log(tmp_path, _bigscience(stall_s=7200), "job.log")
    assert main(["goodput", "--no-diagnose", str(log)]) == 0  # exit 3 (refused) before
    r = goodput(log)
    assert r.acc.steps_completed == 60 and len(r.acc.attempts) == 1  # shown: from iteration 10 to 70
    assert r.acc.ideal_step_s == pytest.approx(5.35, abs=0.05)
    assert r.acc.buckets["hung"] == pytest.approx(7200, rel=0.02)
    assert any(f.kind == "no_progress" for f in r.findings)
    assert_sane_goodput(r)


def test_an_unknown_iteration_format_is_read_by_its_structure(tmp_path: Path) -> None:
    """No row knows this trainer's line; an increasing counter with a per-step time (unit in the field's
    name) is enough to account for it, and the report says the lines were read by structure."""
    lines = [
        f"2024-05-02 10:00:{s:02d} | train | step {n} | loss 2.{n} | step_time_ms: 1010.0"
        for n, s in zip(range(1, 40), range(1, 40), strict=True)
    ]
    r = goodput(write_log(tmp_path, lines, "job.log"))
    assert r.acc.steps_completed == 39 and r.acc.ideal_step_s == pytest.approx(1.0, abs=0.05)
    assert any("by their structure" in w for w in r.warnings)
    assert_sane_goodput(r)


# ---- endings, warm-up, bounds ---------------------------------------------------------------------------------


def test_warm_up_step_is_split_out_of_productive_time() -> None:
    """The real Megatron-DeepSpeed run: iteration 1 took 4.22 s against a median of ~1.21 s."""
    r = goodput(shared_data("training_logs", MEGATRON))
    assert r.acc.buckets["warmup"] == pytest.approx(4.22 - 1.23, abs=0.3)
    assert_sane_goodput(r)


def test_warm_up_inside_a_first_line_of_many_steps_is_split_out() -> None:
    """The real fairseq run logs every 100 updates: its first line covers 85 updates in 47 s against a median
    of 0.46 s per update; the ~8 s beyond are warm-up, the rest productive."""
    r = goodput(shared_data("training_logs", FAIRSEQ))
    assert r.acc.buckets["warmup"] == pytest.approx(47 - 85 * 0.46, abs=1.5)
    assert_sane_goodput(r)


def test_ctrl_c_ends_the_attempt_as_interrupted_not_failed(tmp_path: Path) -> None:
    real = _real(MEGATRON)
    stop = next(i for i, ln in enumerate(real) if ln.startswith(" iteration        3/"))
    lines = [
        *real[: stop + 1],
        "^CTraceback (most recent call last):",
        '  File "pretrain_gpt.py", line 340, in <module>',
        "KeyboardInterrupt",
        "[2023-08-15 06:31:47,100] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGINT "
        "death signal, shutting down workers",
    ]
    r = goodput(write_log(tmp_path, lines, "job.log"))
    (a,) = r.acc.attempts
    assert a.ended == "interrupted" and "KeyboardInterrupt" in a.end_evidence
    assert r.to_dict()["failures"] == 0
    assert r.acc.buckets["warmup"] > 2.5  # iteration 1's 4.2 s is not all productive
    # iteration 1 at its ideal 1.34 s, then 06:31:42.452 -> 06:31:45.481 by the DeepSpeed lines' dates
    assert r.acc.buckets["productive"] == pytest.approx(1.34 + 3.03, abs=0.1)
    assert r.acc.buckets["unexplained"] == pytest.approx(1.62, abs=0.1)  # stopped mid-step: not productive
    assert_sane_goodput(r)


def test_redone_work_without_a_resume_line_is_a_lower_bound(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Iterations 1-3 of the real run, a crash, and a relaunch whose first line is iteration 2 again with no
    checkpoint-load line: it resumed at step 1 at the latest, so at least 2 steps were redone."""
    real = _real(MEGATRON)
    begin = next(i for i, ln in enumerate(real) if "[before the start of training step]" in ln)
    stop = next(i for i, ln in enumerate(real) if ln.startswith(" iteration        3/"))
    attempt = real[begin : stop + 1]
    crash = ["Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access"]
    again = [_shift(ln, 600) for ln in attempt if not re.search(r"iteration +1/|step=1,|steps: 1 ", ln)]
    log = write_log(tmp_path, attempt + crash + again, "job.log")
    r = goodput(log)
    assert len(r.acc.attempts) == 2 and r.acc.redone_is_bound and r.acc.steps_redone == 2
    # the undated traceback came before the 10 minutes to the relaunch: a failed attempt and a restart gap,
    # not 10 minutes hung
    assert r.acc.attempts[0].ended == "failed" and r.acc.buckets["hung"] == 0
    assert r.acc.buckets["failure_to_restart"] == pytest.approx(600 - 7.5, abs=3)
    assert not any(f.kind == "no_progress" for f in r.findings)
    main(["goodput", "--no-diagnose", str(log)])
    assert "at least 2 redone" in capsys.readouterr().out


def test_a_relaunchs_training_steps_are_not_restart_time(tmp_path: Path) -> None:
    """The real fairseq run (its first progress line comes 85 updates, 47 s, into training), crashed and run
    again 90 s later: failure to training start is ~150 s, under the slow-restart norm (before, the 47 s
    of training counted as restart time and made it `restart_slow`)."""
    real = _real(FAIRSEQ)
    crash = ["Traceback (most recent call last):", "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191"]
    span = 1564 + 90
    r = goodput(write_log(tmp_path, real + crash + [_shift(ln, span) for ln in real], "job.log"))
    assert len(r.acc.attempts) == 2 and r.acc.attempts[1].resume_step == 40015
    assert not [f for f in r.findings if f.kind == "restart_slow"]
    assert r.acc.steps_redone == 2818 and not r.acc.redone_is_bound  # the load line names the resume step
    assert_sane_goodput(r)


def test_log_without_dates_is_never_printed_with_1970(capsys) -> None:  # type: ignore[no-untyped-def]
    main(["goodput", "--no-diagnose", str(Path(__file__).parent / "data" / "goodput" / "megatron_no_timestamps.log")])
    out = capsys.readouterr().out
    assert "1970" not in out and "relative times" in out


# ---- clocks that step (issue 41 item 8) ------------------------------------------------------------------------


def _megatron_with_clock_step(seconds: float) -> list[str]:
    """The real run with the wall clock stepped by `seconds` right after iteration 2 (NTP, a time-zone
    change): every later timestamp moves, the iteration lines' own elapsed fields do not."""
    real = _real(MEGATRON)
    at = next(i for i, ln in enumerate(real) if ln.startswith(" iteration        2/"))
    return real[: at + 1] + [_shift(ln, seconds) for ln in real[at + 1 :]]


@pytest.mark.parametrize("step_s", [3600.0, -3600.0])
def test_a_clock_step_is_a_warning_not_a_hang_nor_over_100_percent(tmp_path: Path, step_s: float) -> None:
    r = goodput(write_log(tmp_path, _megatron_with_clock_step(step_s), "job.log"))
    assert_sane_goodput(r)
    assert r.acc.buckets["hung"] == 0 and not any(f.kind == "no_progress" for f in r.findings)
    assert r.wall_s == pytest.approx(3073, rel=0.05)  # the span the timestamps give, less the step
    assert any("clock stepped" in w for w in r.warnings)
    assert r.acc.steps_completed == 2500


def test_shuffled_lines_keep_every_share_in_range(tmp_path: Path) -> None:
    lines = _real(FAIRSEQ)
    body = lines[40:]
    random.Random(7).shuffle(body)
    r = goodput(write_log(tmp_path, lines[:40] + body, "job.log"))
    assert_sane_goodput(r)
    assert any("clock stepped" in w or "out of time order" in w for w in r.warnings)


# ---- any input: shares in 0-100%, parts sum to wall (issue 41 "Fuzzing") -------------------------------------

KINDS = ("step", "step", "step", "save_begin", "save_end", "load_end", "eval_begin", "eval_end", "failure")
KINDS += ("restart", "init_begin", "train_begin", "train_end", "interrupt", "clock", "init_dur", "save_dur")
_TIMES = st.one_of(
    st.none(),
    st.floats(min_value=-1e10, max_value=2e10, allow_nan=False),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, 1.7e9]),
)
_MARK = st.builds(
    lambda kind, step, t, step_s, dur: Mark(
        kind, 1, "f.log", "x", step=step, t=t, t_src="own", step_s=step_s, dur_s=dur
    ),
    st.sampled_from(KINDS),
    st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)),
    _TIMES,
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_MARK, max_size=40))
def test_any_marks_give_shares_in_range_that_sum_to_wall(marks: list[Mark]) -> None:
    acc = account(marks)
    wall = acc.wall_s
    assert all(v >= 0 for v in acc.buckets.values())
    if wall > 0:
        assert sum(acc.buckets.values()) == pytest.approx(wall, rel=1e-6, abs=1e-6)
        assert all(v <= wall * (1 + 1e-9) + 1e-6 for v in acc.buckets.values())
    else:
        assert sum(acc.buckets.values()) == 0


# ---- NaN and Infinity (issue 41 item 7) ------------------------------------------------------------------------


def test_nan_and_infinite_times_never_crash_nor_print_inf(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "ranks" / "0").mkdir(parents=True)
    (run / "ranks" / "0" / "attempts.jsonl").write_text(
        '{"event": "start", "attempt": 0, "time_ns": 1700000000000000000, "pid": 1}\n'
        '{"event": "end", "attempt": 0, "state": "completed", "time_ns": Infinity, "global_step": 3}\n'
    )
    (run / "ranks" / "0" / "progress.jsonl").write_text(
        '{"global_step": 1, "t_ns": 1700000001000000000}\n{"global_step": 2, "t_ns": NaN}\n'
        '{"global_step": 3, "t_ns": 1700000003000000000, "data_ns": -Infinity}\n'
    )
    (run / "ranks" / "0" / "checkpoints.jsonl").write_text(
        '{"op": "save", "global_step": 2, "start_ns": 1700000002000000000, "blocking_ns": NaN, "bytes": 1e400}\n'
    )
    r = goodput(run)
    text = render_goodput(r.result()).split("\n", 1)[1]  # (the first line names the folder)
    assert not re.search(r"\b(?:inf|nan)\b", text, re.IGNORECASE), text
    assert_sane_goodput(r)
    assert main(["goodput", "--no-diagnose", str(run)]) in (0, 4)


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0", "x"])
def test_mtbf_must_be_positive_hours(value: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["goodput", "--mtbf", value, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--mtbf" in err and "Traceback" not in err


# ---- the analysis' text (issue 41 item 15) ---------------------------------------------------------------------


@pytest.mark.parametrize(("wall", "want"), [(6.6, "of 6.60 s"), (5400.0, "of 1.50 h"), (float("inf"), "unknown")])
def test_analyze_goodput_line_has_a_human_duration(wall: float, want: str) -> None:
    from scope.goodput_result import SECTION, GoodputResult
    from scope.render.text import goodput_lines
    from scope.result import Analysis

    result = GoodputResult(
        "x.log",
        "own",
        wall_s=wall,
        goodput_pct=34.7,
        steps_completed=12,
        buckets={"productive": 2.3, "initialization": 4.3},
    )
    text = "\n".join(goodput_lines(Analysis(sections={SECTION: result})))
    assert want in text and "inf" not in text and "0.00 h" not in text, text


def test_a_launcher_log_without_years_shares_the_clock_of_the_dated_log_beside_it(tmp_path: Path) -> None:
    """torchrun's agent prints glog stamps (no year); the trainer's own log is dated. Side by side in one
    folder they are one clock (before: the agent's log sat in 1970, 55 years before the training)."""
    whole = (Path(__file__).parent / "data" / "goodput" / "torchrun_elastic_membership.log").read_text().splitlines()
    write_log(tmp_path, [ln for ln in whole if not ln.startswith("[rank0]")], "agent.log")
    write_log(tmp_path, [ln for ln in whole if ln.startswith("[rank0]")], "train.log")
    r = goodput(tmp_path)
    one = goodput(Path(__file__).parent / "data" / "goodput" / "torchrun_elastic_membership.log")
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(one.wall_s) and len(r.acc.attempts) == len(one.acc.attempts) == 2
    assert r.acc.start is not None and r.acc.start > 1.7e9


def test_a_rollback_to_before_the_log_began_never_reads_0_completed(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The real fairseq run (updates 40015-42833), a crash, and a relaunch that loads an older checkpoint
    (30000 updates: the last one was damaged) and trains on: the first attempt's 2,818 updates are lost,
    the relaunch's kept; the count is never 0 beside hours of productive time."""
    real = _real(FAIRSEQ)

    def older(line: str) -> str:
        line = re.sub(r"(num_updates[= ])(\d+)", lambda m: f"{m[1]}{int(m[2]) - 10015}", line)
        return re.sub(r"(@ )(\d+)( updates)", lambda m: f"{m[1]}{int(m[2]) - 10015}{m[3]}", line)

    crash = ["Traceback (most recent call last):", "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191"]
    log = write_log(tmp_path, real + crash + [older(_shift(ln, 1700)) for ln in real], "job.log")
    r = goodput(log)
    assert [a.resume_step for a in r.acc.attempts] == [40015, 30000]
    assert r.acc.steps_completed == 2818 and r.acc.steps_redone == 42833 - 30000
    main(["goodput", "--no-diagnose", str(log)])
    assert "Steps: 2,818 completed, 12,833 redone" in capsys.readouterr().out
    assert_sane_goodput(r)


def test_blocks_written_out_of_order_never_stretch_the_wall_time(tmp_path: Path) -> None:
    """Two writers flushing in turn (buffered output): the real fairseq log with every two blocks of ten
    lines swapped. Many steps back in time, none of them a clock that keeps running behind: the wall time
    stays the span the timestamps give (1,564 s), never the sum of the steps back, and the step counter
    going back with the clock is the writers' order, not rollbacks (before: 6 attempts, 2,033 s redone)."""
    lines = _real(FAIRSEQ)
    head, body = lines[:40], lines[40:]
    chunks = [body[i : i + 10] for i in range(0, len(body), 10)]
    for i in range(0, len(chunks) - 1, 2):
        chunks[i], chunks[i + 1] = chunks[i + 1], chunks[i]
    r = goodput(write_log(tmp_path, head + [ln for c in chunks for ln in c], "job.log"))
    assert_sane_goodput(r)
    assert r.wall_s == pytest.approx(1564, rel=0.05)
    # read in the order of their timestamps: the job's own run, no rollback, no restart
    assert any("out of time order" in w for w in r.warnings)
    assert len(r.acc.attempts) == 1 and r.acc.steps_completed == 2818 and r.acc.steps_redone == 0


def test_a_progress_line_printed_again_after_the_end_is_not_a_new_attempt(tmp_path: Path) -> None:
    """The real Megatron-DeepSpeed run's last iteration line printed once more after "[after training is
    done]" (a bar's or a second stream's late flush): still one attempt."""
    real = _real(MEGATRON)
    last = next(ln for ln in reversed(real) if ln.startswith(" iteration "))
    done = next(i for i, ln in enumerate(real) if "[after training is done]" in ln)
    r = goodput(write_log(tmp_path, [*real[: done + 1], last, *real[done + 1 :]], "job.log"))
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed"


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_analyze_mtbf_hours_must_be_positive_and_finite(value: str, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["analyze", str(tmp_path), f"--mtbf-hours={value}"]) == 2
    err = capsys.readouterr().err
    assert "mtbf-hours" in err and "Traceback" not in err


@pytest.mark.parametrize("said_done", [True, False])
def test_a_relaunch_days_after_the_last_save_is_a_gap_not_a_save(tmp_path: Path, said_done: bool) -> None:
    """The real Megatron-DeepSpeed run up to a save, then, two days later, a relaunch that shows only its
    checkpoint load and its iterations (its start lines not in the log): the two days are a queue gap
    between two attempts, never a save that blocked for 48 h (nor a CRITICAL checkpoint_stall). Either
    the whole run to its final save (it says "[after training is done]"), or the same save moved to right
    after iteration 3 (no line says the run ended: the log just goes silent)."""
    real = _real(MEGATRON)
    saved = next(i for i, ln in enumerate(real) if "successfully saved checkpoint" in ln)
    if said_done:
        upto, at = real[: saved + 1], 2500
    else:
        third = next(i for i, ln in enumerate(real) if ln.startswith(" iteration        3/"))
        save_from = next(i for i, ln in enumerate(real) if ln.startswith("saving checkpoint at iteration"))
        block = [re.sub(r"2500", "3", _shift(ln, -3045)) for ln in real[save_from : saved + 1]]
        upto, at = real[: third + 1] + block, 3
    first_iters = [ln for ln in real if ln.startswith(" iteration ")][:3]
    gap = 2 * 86400
    relaunch = [_shift(f"[2023-08-15 07:22:40,000] successfully loaded checkpoint from ./tmp at iteration {at}", gap)]
    for stamp, ln in zip(["07:22:44,452", "07:22:46,231", "07:22:47,481"], first_iters, strict=True):
        n = int(ln.split()[1].split("/")[0])
        relaunch.append(_shift(f"[2023-08-15 {stamp}]" + ln.replace(f"{n:8d}/", f"{n + at:8d}/"), gap))
    r = goodput(write_log(tmp_path, upto + relaunch, "job.log"))
    assert_sane_goodput(r)
    first, second = r.acc.attempts
    assert first.ended == ("completed" if said_done else "stopped") and second.resume_step == at
    assert r.acc.buckets["checkpoint_save"] < 60 and r.acc.buckets["queued"] > gap - 3000
    assert not any(f.kind == "checkpoint_stall" for f in r.findings)
    assert r.acc.steps_completed == at + 3


def test_hours_without_a_line_after_a_save_are_never_a_blocking_save(tmp_path: Path) -> None:
    """The real NeMo window (saves to a network file system, ~100 s of checkpoint work after each without a
    line, which count as the save) with its last step line moved 30 hours later (nothing says why): those
    hours are unexplained, never a save that blocked for a day."""
    lines = _real("skypilot-org-skypilot_perf-storage_0724-juicefs-nemo-2node.txt")
    tail = [re.sub(r"\[3:5(\d)", r"[33:5\1", ln) for ln in lines[-2:]]
    r = goodput(write_log(tmp_path, lines[:-2] + tail, "job.log"))
    assert_sane_goodput(r)
    assert r.acc.buckets["checkpoint_save"] < 1800 + 1300
    assert r.acc.buckets["unexplained"] > 25 * 3600


def test_a_throughput_column_reads_as_a_rate_not_a_time() -> None:
    """Issue 41 item 15: `throughput_bytes_per_s` printed "45,351,209 s" (its `_s` read as seconds)."""
    from scope import units

    assert units.quantity("throughput_bytes_per_s", 45_351_209.0) == "43.3 MiB/s"
    assert units.label("throughput_bytes_per_s") == "throughput"
    assert units.quantity("blocking_s", 6.6) == "6.60 s"


def test_testing_the_best_checkpoint_after_fit_is_not_a_relaunch(tmp_path: Path) -> None:
    """Lightning's fit, then `trainer.test(ckpt_path="best")`: "Restoring states from the checkpoint path"
    after "`Trainer.fit` stopped" is the same job going on, not a second attempt."""
    fit = (Path(__file__).parent / "data" / "goodput" / "lightning_epochs_no_timestamps.log").read_text().splitlines()
    then_test = [
        "Restoring states from the checkpoint path at /ckpt/epoch=1-step=200.ckpt",
        "Loaded model weights from the checkpoint at /ckpt/epoch=1-step=200.ckpt",
        "Testing DataLoader 0: 100%|██████████| 10/10 [00:02<00:00,  4.01it/s]",
    ]
    r = goodput(write_log(tmp_path, fit + then_test, "job.log"))
    assert len(r.acc.attempts) == 1 and r.acc.attempts[0].ended == "completed"
    assert r.to_dict()["restarts"] == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_real_lines_in_any_order_and_any_clock_keep_shares_in_range(data: st.DataObject) -> None:
    """The real Megatron-DeepSpeed log's lines, a sample of them in any order, some with their clock moved by
    up to a day either way: the whole pipeline (parse, clock, account) keeps every share within 0-100% and
    the parts summing to the wall time."""
    from scope.analyzers.goodput.parse import parse_text

    real = _real(MEGATRON)
    picks = data.draw(st.lists(st.integers(0, len(real) - 1), min_size=1, max_size=80))
    moves = data.draw(st.lists(st.floats(-86400, 86400), min_size=len(picks), max_size=len(picks)))
    lines = [_shift(real[i], m) if j % 3 == 0 else real[i] for j, (i, m) in enumerate(zip(picks, moves, strict=True))]
    acc = account(parse_text("\n".join(lines), "job.log").marks)
    if acc.wall_s > 0:
        assert sum(acc.buckets.values()) == pytest.approx(acc.wall_s, rel=1e-6)
        assert all(0 <= v <= acc.wall_s * (1 + 1e-9) for v in acc.buckets.values())
