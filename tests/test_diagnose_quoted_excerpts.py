"""Starts quoted up to a line a hang also ends on: NCCL's init lines quoted in parts after a rank printed 'Init
COMPLETE' (the others' completions may be among the lines left out: no stop), the same without a completion shown
(init hangs are quoted with cuts too: still a stop), and a progress bar at 0, with or without the first step's own
warning on its line (tqdm draws without a newline; a warning shows the first step began, not that it finished).
Short logs written in NCCL's, the HF Trainer's and tqdm's formats.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures

QUOTED_INIT = """\
hostA:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
hostA:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
hostB:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
hostB:200:200 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>
[... cut ...]
hostA:100:110 [1] NCCL INFO Channel 00 : 1[1000] -> 2[2000] [send] via NET/Socket/0
hostB:200:210 [1] NCCL INFO Channel 00 : 3[1000] -> 0[2000] [send] via NET/Socket/0
[... cut ...]
hostB:200:211 [0] NCCL INFO Channel 01 : 1[1000] -> 2[2000] [receive] via NET/Socket/0
hostA:100:111 [0] NCCL INFO Channel 01 : 3[1000] -> 0[2000] [receive] via NET/Socket/0
"""


def test_init_lines_quoted_in_parts_after_a_completion_are_no_stop(tmp_path: Path) -> None:
    log = QUOTED_INIT.replace(
        "[... cut ...]\nhostB:200:211",
        "hostA:100:110 [1] NCCL INFO comm 0x1 rank 1 nranks 4 - Init COMPLETE\n[... cut ...]\nhostB:200:211",
    )
    assert diagnose_failures(tmp_path, log) == []


def test_init_lines_quoted_in_parts_with_no_completion_still_stop_in_init(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, QUOTED_INIT)
    assert found and found[0].kind == "hang"


def test_the_same_init_lines_unbroken_still_stop_in_init(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, QUOTED_INIT.replace("[... cut ...]\n", ""))
    assert found and found[0].kind == "hang"


# ---- a progress bar at 0 that the first step's own output follows ----------------------------------------------

TRAINING_START = """\
[INFO|trainer.py:2128] 2024-01-01 10:00:00,000 >> ***** Running training *****
[INFO|trainer.py:2129] 2024-01-01 10:00:00,000 >>   Num examples = 1,000
[INFO|trainer.py:2136] 2024-01-01 10:00:00,000 >>   Total optimization steps = 250
"""
BAR_AT_ZERO = "  0%|          | 0/250 [00:00<?, ?it/s]"
STEP_WARNING = "/env/lib/python3.10/site-packages/torch/utils/checkpoint.py:90: UserWarning: None of the inputs have"


def test_a_warning_printed_onto_the_bar_at_zero_still_reads_as_a_stop(tmp_path: Path) -> None:
    # tqdm draws without a newline: the first step's warning lands on the bar's line; the step began, and may hang
    found = diagnose_failures(tmp_path, TRAINING_START + BAR_AT_ZERO[:-4] + STEP_WARNING + "\n")
    assert found and found[0].kind == "hang"


def test_a_bar_at_zero_alone_still_reads_as_a_hang_in_the_first_step(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, TRAINING_START + BAR_AT_ZERO + "\n")
    assert found and found[0].kind == "hang" and "progress bar at 0" in found[0].summary
