"""Goodput classes from the heldout12 training logs (issue 40), each on a few lines written here in the real
programs' formats: LLaMA-Factory's logger prefix before HF Trainer's logs dict, and saves that blocked no
longer than their lines show."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from scope.analyzers.goodput import goodput

from tests.helpers import write_log

_T0 = datetime(2024, 11, 26, 22, 7, 6)
_RUN = "saves/Qwen-7B/lora/train_2024-11-26"


def _lf(s: float, where: str, msg: str) -> str:
    """One line of LLaMA-Factory's logger, S seconds after the first."""
    return f"[INFO|{(_T0 + timedelta(seconds=s)):%Y-%m-%d %H:%M:%S}] {where} >> {msg}"


def _lf_save(s: float, step: int) -> list[str]:
    """HF Trainer's periodic save of a LoRA adapter, its files all written within the second."""
    ckpt = f"{_RUN}/checkpoint-{step}"
    return [
        _lf(s, "trainer.py:3801", f"Saving model checkpoint to {ckpt}"),
        _lf(s, "tokenization_utils_base.py:2646", f"tokenizer config file saved in {ckpt}/tokenizer_config.json"),
        _lf(s, "tokenization_utils_base.py:2655", f"Special tokens file saved in {ckpt}/special_tokens_map.json"),
    ]


def _lf_run(with_loss_lines: bool) -> list[str]:
    """A LoRA run logging every 5 steps (100 s apart), evaluating (10 s) then saving (0 s) every 20 steps; the
    5 steps after each save run 8 s slower than the median (the first batches after the evaluation)."""
    lines = [
        _lf(0, "parser.py:355", "Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: True"),
        _lf(9, "trainer.py:2313", "***** Running training *****"),
        _lf(9, "trainer.py:2321", "  Total optimization steps = 1,000"),
    ]
    s = 9.0
    for n in range(1, 13):  # the n-th loss line is step 5n
        s += 108 if n % 4 == 1 and n > 1 else 100
        if with_loss_lines:
            lines.append(
                _lf(
                    s,
                    "logging.py:157",
                    f"{{'loss': {2.0 - n / 10:.4f}, 'learning_rate': 5.0000e-05, 'epoch': {n * 0.29:.2f}}}",
                )
            )
        if n % 4 == 0:
            lines += [_lf(s, "trainer.py:4117", ""), "***** Running Evaluation *****"]
            lines += [_lf(s, "trainer.py:4119", "  Num examples = 243")]
            s += 10
            lines += _lf_save(s, 5 * n)
    return lines


def test_llamafactory_loss_lines_are_steps_and_its_saves_block_what_their_lines_show(tmp_path: Path) -> None:
    """The logs dict behind LLaMA-Factory's `[INFO|...] logging.py:157 >> ` prefix is read as steps (it was
    not: no step, 94.5% of the run booked as a critical save stall); the 8 s by which the steps after each
    0-s save ran over the median pace is the steps' noise, not the save's."""
    r = goodput(write_log(tmp_path, _lf_run(with_loss_lines=True)))
    assert [(a.first_step, a.last_step) for a in r.acc.attempts] == [(5, 60)], r.acc.attempts
    assert r.acc.steps_completed == 60
    assert r.acc.buckets["checkpoint_save"] < 1.0, r.acc.buckets
    assert r.acc.buckets["evaluation"] == 30.0
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]


def test_with_no_step_line_the_time_after_a_save_is_unexplained_not_a_stall(tmp_path: Path) -> None:
    """The same run with no progress line read: the 5 minutes from each save's last file to the next
    evaluation are not shown to be the save's: unexplained, and no checkpoint_stall finding."""
    r = goodput(write_log(tmp_path, _lf_run(with_loss_lines=False)))
    assert r.acc.buckets["checkpoint_save"] < 1.0, r.acc.buckets
    assert r.acc.buckets["unexplained"] > 600, r.acc.buckets
    assert not [f for f in r.findings if f.kind == "checkpoint_stall"]
