"""A traceback cut inside init_process_group's rendezvous is a rank that never found the others; one the
program printed and went past (a retry that then connected, training lines after it) is no stop."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures

# init_process_group waiting in its rendezvous handler, the exception line cut away
CUT = (
    "Traceback (most recent call last):\n"
    '  File "/work/train.py", line 41, in setup\n'
    '    dist.init_process_group("nccl", init_method=f"tcp://{addr}:29500", rank=rank, world_size=world)\n'
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d_logger.py", line 79, in wrapper\n'
    "    return func(*args, **kwargs)\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 1305, in '
    "init_process_group\n"
    "    store, rank, world_size = next(rendezvous_iterator)\n"
)


def codes(tmp_path: Path, log: str) -> list[str]:
    return [f.metrics.get("code") for f in diagnose_failures(tmp_path, log)]


def test_a_traceback_cut_in_the_rendezvous_is_a_stop_there(tmp_path: Path) -> None:
    assert "stopped_in_rendezvous_traceback" in codes(tmp_path, CUT)


def test_a_rendezvous_traceback_the_program_went_past_is_no_stop(tmp_path: Path) -> None:
    # the script logged the failed attempt's stack itself, retried, and trained
    log = (
        "2026-12-07 10:00:01 WARNING connect attempt 1 failed, retrying in 5 s\n"
        + CUT
        + "2026-12-07 10:00:07 INFO process group ready (world size 8)\n"
        + "epoch 0 step 10 loss 2.3012\n"
        + "epoch 0 step 20 loss 2.1877\n"
    )
    assert "stopped_in_rendezvous_traceback" not in codes(tmp_path, log)
