"""Hangs whose log holds no error line (issue 40's classes still missed on never-seen logs): stack dumps that
show where each process waits, and a program's last line before a call that never returned.

Real excerpts are in tests/data/diagnose_threads/ (README.md there gives each one's URL and cause).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose.readers import stacks
from scope.analyzers.diagnose.reasoning import lockstep
from scope.analyzers.diagnose.reasoning.stages import MAX_TRAILING, where_it_stopped

from tests.conftest import shared_data
from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"
EVAL_HANG = THREADS / "bigscience_tr11-176B-eval-hang-py-spy.log"
PYNCCL_LAST = THREADS / "hami_2641_vllm_pynccl_last_line.log"


# ---- stack dumps: most processes in a collective, one elsewhere --------------------------------------


def test_py_spy_dumps_pasted_without_process_lines_are_one_dump_a_process() -> None:
    dumps = stacks.parse_stacks(EVAL_HANG.read_text())
    states = {d.pid: stacks.where(d)["state"] for d in dumps}
    # four headers listed together share the stack under them; 688514 waits on its DataLoader
    assert states[688510] == states[599213] == "in_collective"
    assert [pid for pid, s in states.items() if s == "elsewhere"] == [688514]
    assert len(states) == 8


def test_a_dataloader_wait_among_ranks_in_broadcast_is_the_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, EVAL_HANG.read_text())
    assert top.kind == "hang", top.summary
    assert "688514" in top.summary and "DataLoader" in top.summary and "broadcast" in top.summary
    assert "during evaluation (eval_batch)" in top.summary  # DeepSpeed's eval_batch called the loader
    assert "num_workers=0" in top.suggestion


def test_dumps_of_processes_all_in_a_collective_name_no_culprit(tmp_path: Path) -> None:
    # the same dump with the DataLoader stack left out: every process waits in broadcast, nobody stands apart
    lines = EVAL_HANG.read_text().split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688514"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688515"))
    found = diagnose_failures(tmp_path, "\n".join(lines[:start] + lines[end:]))
    assert found and not any("outside any collective" in f.summary for f in found)
    # still a hang, worded as one: they all wait in broadcast for a peer whose stack the log lacks
    assert found[0].kind == "hang" and "broadcast" in found[0].summary, found[0].summary
    assert "every rank's stack" in found[0].suggestion


# ---- a program's last line before a call that never returned ----------------------------------------


def test_vllms_pynccl_line_alone_is_a_stop_in_communicator_init(tmp_path: Path) -> None:
    log = PYNCCL_LAST.read_text()
    stop = where_it_stopped(log)
    assert stop is not None and (stop.stage, stop.emitter) == ("comm_init", "vllm")
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and "ncclCommInitRank" in top.suggestion


def test_vllm_going_on_after_its_pynccl_line_is_no_stop(tmp_path: Path) -> None:
    # the pynccl line of a start that went on (the custom all-reduce's P2P check, then the weights): no more lines
    # than a stop allows after it (stages.MAX_TRAILING), so vLLM's own closing lines must tell it apart
    log = (
        PYNCCL_LAST.read_text().rstrip("\n")
        + "\n(Worker pid=960) INFO 08-12 20:26:10 [custom_all_reduce_utils.py:244] reading GPU P2P access cache from "
        + "/root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json\n"
        + "(Worker pid=960) INFO 08-12 20:26:12 [model_runner.py:1060] Starting to load model\n"
        + "(Worker pid=960) INFO 08-12 20:26:40 [model_runner.py:1071] Loading model weights took 14.99 GB\n"
    )
    assert len(log.strip().split("\n")) - len(PYNCCL_LAST.read_text().strip().split("\n")) <= MAX_TRAILING
    assert not diagnose_failures(tmp_path, log)


def test_vllms_p2p_test_as_the_last_line_is_a_stop_on_peer_to_peer(tmp_path: Path) -> None:
    log = (THREADS / "vllm_6895_p2p_access_cache.log").read_text()
    top = top_failure(tmp_path, log)
    assert (
        top.kind == "hang" and "NCCL_P2P_DISABLE=1" in top.suggestion and "disable-custom-all-reduce" in top.suggestion
    )


# sglang's model_runner.py brackets init_process_group with these lines (the format only, from its source)
SGLANG_BEGIN = (
    "[2025-01-23 19:35:14 TP0] Init torch distributed begin.\n[2025-01-23 19:35:14 TP1] Init torch distributed begin.\n"
)


def test_sglangs_distributed_init_begun_and_never_ended_is_a_stop(tmp_path: Path) -> None:
    stop = where_it_stopped(SGLANG_BEGIN)
    assert stop is not None and (stop.stage, stop.emitter) == ("comm_init", "sglang")
    assert top_failure(tmp_path, SGLANG_BEGIN).kind == "hang"


def test_sglangs_distributed_init_that_ended_is_no_stop(tmp_path: Path) -> None:
    log = SGLANG_BEGIN + (
        "[2025-01-23 19:35:15 TP0] Init torch distributed ends. mem usage=0.41 GB\n"
        "[2025-01-23 19:35:15 TP0] Load weight begin. avail mem=78.81 GB\n"
        "[2025-01-23 19:35:16 TP0] Using model weights format ['*.safetensors']\n"
    )
    assert not diagnose_failures(tmp_path, log)


def test_one_pasted_dump_waiting_on_its_dataloader_is_a_low_confidence_hang(tmp_path: Path) -> None:
    lines = EVAL_HANG.read_text().split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688514"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688515"))
    top = top_failure(tmp_path, "\n".join(lines[start:end]))
    assert top.kind == "hang" and top.metrics["confidence"] == "low" and "from the stack dump" in top.summary
    assert "DataLoader" in top.summary and "num_workers=0" in top.suggestion


def test_pasted_dumps_all_in_a_collective_ask_for_the_other_ranks_stacks(tmp_path: Path) -> None:
    lines = EVAL_HANG.read_text().split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688510"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("Thread 688514"))
    top = top_failure(tmp_path, "\n".join(lines[start:end]))
    assert top.kind == "hang" and "broadcast" in top.summary and "every rank's stack" in top.suggestion


# ---- ranks printing in lockstep, then parting -------------------------------------------------------

RTDETR = THREADS / "rtdetr_242_ranks_part_mid_step.log"


def test_two_ranks_lines_in_lockstep_then_one_alone_is_the_other_ranks_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, RTDETR.read_text())
    assert top.kind == "hang" and top.metrics["code"] == "ranks_out_of_step", top.summary
    assert "loss compute done" in top.summary and "TORCH_DISTRIBUTED_DEBUG=DETAIL" in top.suggestion


def test_the_same_lockstep_log_cut_anywhere_before_the_parting_is_no_failure(tmp_path: Path) -> None:
    lines = RTDETR.read_text().rstrip("\n").split("\n")
    parted = next(i for i, ln in enumerate(lines) if "loss backward done" in ln and i > len(lines) - 8)
    for end in range(parted - 6, parted + 2):  # the partner of each message still follows within the cut
        assert lockstep.out_of_step("\n".join(lines[:end]), "job.log") is None, end


@pytest.mark.shared_data
def test_one_ranks_own_step_lines_are_not_lockstep() -> None:
    # real training logs of one console (a step counter per line, one rank): no partner lines, no parting
    logs = sorted(shared_data("training_logs").glob("*.txt"))
    assert logs, "no training logs in the shared data"
    for log in logs:
        assert lockstep.out_of_step(log.read_text(errors="replace"), log.name) is None, log.name


def test_faulthandlers_dump_of_a_crash_is_the_crash_not_a_hang(tmp_path: Path) -> None:
    # faulthandler's own format: the fatal error, a blank line, then the crashing process's threads
    log = (
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f06b6639200 (most recent call first):\n"
        '  File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 2050 in all_reduce\n'
        '  File "train.py", line 88 in train_step\n'
    )
    assert [d.reason for d in stacks.parse_stacks(log)] == ["fatal"]
    assert top_failure(tmp_path, log).kind == "crash"
