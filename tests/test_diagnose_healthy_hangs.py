"""Healthy logs that the hang readers of issue 40 (stack dumps, a program's last line, ranks parting) must not
call a hang: a vLLM server that started, rank 0's own summary in a lockstep console, a dump quoted in a log
that finished, scope's own on-demand dumps, a rank a step ahead at the cut, a single-process DataLoader.

The log formats are the programs' own (vLLM's worker prefix and file:line tags, py-spy dump, scope's dump
headers from collectors/sidecar/attach.py and collectors/hook/dumps.py); the runs are healthy ones.
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.readers import stacks
from scope.analyzers.diagnose.reasoning import lockstep

from tests.helpers import diagnose_failures, top_failure

# ---- vLLM: a start that went on -----------------------------------------------------------------------

VLLM_TP2_START = """\
INFO 08-12 20:25:58 [__init__.py:241] Automatically detected platform cuda.
(VllmWorker TP0 pid=950) INFO 08-12 20:26:09 [pynccl.py:70] vLLM is using nccl==2.26.2
(VllmWorker TP1 pid=951) INFO 08-12 20:26:09 [pynccl.py:70] vLLM is using nccl==2.26.2
(VllmWorker TP0 pid=950) INFO 08-12 20:26:10 [custom_all_reduce_utils.py:246] reading GPU P2P access cache from \
/root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json
(VllmWorker TP1 pid=951) INFO 08-12 20:26:10 [custom_all_reduce_utils.py:246] reading GPU P2P access cache from \
/root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json
(VllmWorker TP0 pid=950) WARNING 08-12 20:26:10 [custom_all_reduce.py:147] Custom allreduce is disabled because \
your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify \
disable_custom_all_reduce=True explicitly.
(VllmWorker TP1 pid=951) WARNING 08-12 20:26:10 [custom_all_reduce.py:147] Custom allreduce is disabled because \
your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify \
disable_custom_all_reduce=True explicitly.
(VllmWorker TP0 pid=950) INFO 08-12 20:26:40 [gpu_model_runner.py:1953] Model loading took 7.1 GiB and 28.9 seconds
(VllmWorker TP1 pid=951) INFO 08-12 20:26:40 [gpu_model_runner.py:1953] Model loading took 7.1 GiB and 29.0 seconds
(APIServer pid=900) INFO 08-12 20:27:20 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
"""


def test_a_vllm_server_that_started_past_the_p2p_warning_is_no_hang(tmp_path: Path) -> None:
    assert not diagnose_failures(tmp_path, VLLM_TP2_START)


def test_vllms_pynccl_line_then_three_lines_of_a_start_that_went_on_is_no_hang(tmp_path: Path) -> None:
    # three lines after the pynccl line: no more than a stop allows, so only vLLM's closing rows tell it apart
    log = (
        "INFO 08-12 20:26:09 [pynccl.py:70] vLLM is using nccl==2.26.2\n"
        "INFO 08-12 20:26:12 [gpu_model_runner.py:1770] Starting to load model meta-llama/Llama-3.1-8B-Instruct...\n"
        "INFO 08-12 20:26:40 [gpu_model_runner.py:1953] Model loading took 7.1 GiB and 28.9 seconds\n"
        "INFO 08-12 20:27:20 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    )
    assert not diagnose_failures(tmp_path, log)


def test_vllms_p2p_warning_alone_is_neither_a_stop_nor_an_error(tmp_path: Path) -> None:
    warning = next(ln for ln in VLLM_TP2_START.splitlines() if "Custom allreduce" in ln).split(") ", 1)[1]
    assert not diagnose_failures(tmp_path, warning + "\n")


# ---- ranks in lockstep: rank 0's own lines, a rank ahead at the cut ---------------------------------


def _two_ranks(messages: list[str], steps: int, t0: float = 0.0) -> list[str]:
    """Two ranks printing each step's messages side by side (no rank tag, as a plain console shows them)."""
    lines, t = [], t0
    for step in range(steps):
        for msg in messages:
            for _ in range(2):
                t += 0.007
                lines.append(f"2024-03-25 17:00:{t:06.3f} | INFO     | engine:{msg.format(step=step)}")
    return lines


STEP = ["data loaded", "model done", "loss compute done", "loss backward done", "optimizer done"]


def test_rank_0s_epoch_summary_after_the_loop_is_no_parting(tmp_path: Path) -> None:
    lines: list[str] = []
    for epoch in range(3):
        lines += _two_ranks(["train: loss 1.{step}0 lr 1.0e-04"], 8, t0=epoch * 5.0)
        lines += [f"2024-03-25 17:00:0{epoch}.900 | INFO     | engine:val accuracy 0.8{epoch}00",
                  f"2024-03-25 17:00:0{epoch}.910 | INFO     | engine:best val accuracy so far 0.8{epoch}00",
                  f"2024-03-25 17:00:0{epoch}.920 | INFO     | engine:epoch time 3{epoch}.2 s"]  # fmt: skip
    assert lockstep.out_of_step("\n".join(lines), "job.log") is None
    assert not diagnose_failures(tmp_path, "\n".join(lines) + "\n")


def test_rank_0s_evaluation_reusing_the_loops_messages_is_no_parting() -> None:
    # rank 0 alone evaluates: data / model / loss lines of the loop, with a message of its own in each batch
    lines = _two_ranks(STEP, 12)
    for batch in range(3):
        lines += [f"2024-03-25 17:00:01.{batch}00 | INFO     | engine:{m}" for m in STEP[:3]]
        lines.append(f"2024-03-25 17:00:01.{batch}50 | INFO     | engine:metric update done")
    assert lockstep.out_of_step("\n".join(lines), "job.log") is None


def test_a_rank_one_stretch_between_collectives_ahead_at_the_cut_is_no_parting() -> None:
    # at the cut rank 0 printed optimizer, data, model, loss past the last shared line; rank 1 is in its step
    lines = _two_ranks(STEP, 12)
    lines += [f"2024-03-25 17:00:09.{i}00 | INFO     | engine:{m}" for i, m in enumerate(STEP[4:] + STEP[:3])]
    assert lockstep.out_of_step("\n".join(lines), "job.log") is None


def test_a_rank_running_on_through_the_loop_alone_is_still_a_parting() -> None:
    # the same loop, both ranks through 'loss compute done', then one rank alone through more than a stretch
    # between collectives (the shape of RT-DETR#242): the finding stays
    lines = _two_ranks(STEP, 12) + _two_ranks(STEP[:3], 1, t0=9.0)
    lines += [f"2024-03-25 17:00:09.{i}00 | INFO     | engine:{m}" for i, m in enumerate(STEP[3:] + STEP[:4])]
    found = lockstep.out_of_step("\n".join(lines), "job.log")
    assert found is not None and found.code == "ranks_out_of_step"


# ---- stack dumps: quoted in a healthy log, taken by scope on demand ---------------------------------

DATALOADER_DUMP = """\
Thread 1234 (active): "MainThread"
    _try_get_data (torch/utils/data/dataloader.py:1133)
    _get_data (torch/utils/data/dataloader.py:1294)
    _next_data (torch/utils/data/dataloader.py:1327)
    __next__ (torch/utils/data/dataloader.py:633)
    train (train.py:50)
    <module> (train.py:99)
"""


def test_a_dump_quoted_in_a_log_that_went_on_to_finish_is_no_hang(tmp_path: Path) -> None:
    steps = [f"2025-03-01 10:00:0{i},000 - INFO - step {100 + i} | loss 2.3{i}00 | lr 1.0e-04" for i in range(6)]
    quote = ["To see where the job spends time I ran py-spy dump --pid 1234:", DATALOADER_DUMP.rstrip("\n")]
    end = "2025-03-01 10:00:07,000 - INFO - Training finished. Saving final model."
    log = "\n".join([*steps[:2], *quote, *steps[2:], end])
    assert not diagnose_failures(tmp_path, log + "\n")
    # the same dump as the log's end is still the best guess of a hang
    assert top_failure(tmp_path, "\n".join(steps[:2]) + "\n" + DATALOADER_DUMP).kind == "hang"


def _attach_dump(pid: int, frames: list[str], reason: str = "request") -> str:
    """A `scope attach` dump file: its header (collectors/sidecar/attach.py), then py-spy dump's output."""
    return (
        f"# py-spy dump --pid {pid} (rank None) at 1733400000000000000 ns on node1; reason: {reason}\n"
        f"Process {pid}: /usr/bin/python3 train.py --epochs 3\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
        f'Thread {pid} (active): "MainThread"\n' + "".join(f"    {f}\n" for f in frames)
    )


IN_ALL_REDUCE = ["all_reduce (torch/distributed/distributed_c10d.py:2050)", "train_step (train.py:88)"]
IN_CONV = ["_conv_forward (torch/nn/modules/conv.py:456)", "forward (model.py:20)", "train_step (train.py:80)"]


def test_scope_attachs_header_is_read_as_its_dump() -> None:
    dumps = stacks.parse_stacks(_attach_dump(4242, IN_ALL_REDUCE))
    assert [(d.pid, d.rank, d.reason, len(d.threads)) for d in dumps] == [(4242, None, "request", 1)]


def test_scope_attachs_on_demand_dumps_of_a_running_job_are_no_hang(tmp_path: Path) -> None:
    for pid, frames in ((4242, IN_ALL_REDUCE), (4243, IN_CONV)):
        folder = tmp_path / "stacks" / str(pid)
        folder.mkdir(parents=True)
        (folder / f"pyspy-{pid}-1733400000000000000.txt").write_text(_attach_dump(pid, frames))
    assert not diagnose_failures(tmp_path / "stacks", "")


def test_scope_hooks_on_demand_dumps_of_a_running_job_are_no_hang(tmp_path: Path) -> None:
    # collectors/hook/dumps.py: ranks 0, 1 in all_reduce and rank 2 in its DataLoader, dumped on request
    for rank in range(3):
        folder = tmp_path / "ranks" / str(rank) / "stacks"
        folder.mkdir(parents=True)
        where = (
            '  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 2050, in all_reduce\n'
            if rank < 2
            else '  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data\n'
        )
        (folder / "001-sigusr2.txt").write_text(
            f"# scope stack dump: reason=sigusr2 rank={rank} pid={100 + rank} time_ns=1733400000000000000\n"
            "Thread MainThread (id 1400, daemon=False), most recent call last:\n"
            '  File "train.py", line 130, in <module>\n  File "train.py", line 88, in train_step\n' + where
        )
    assert not diagnose_failures(tmp_path / "ranks", "")


def test_one_stack_in_a_collective_and_one_elsewhere_is_at_most_a_low_confidence_hang(tmp_path: Path) -> None:
    log = (
        _attach_dump(4242, IN_ALL_REDUCE, reason="x").split("\n", 1)[1] + _attach_dump(4243, IN_CONV).split("\n", 1)[1]
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and top.metrics["confidence"] == "low", top.metrics
    # py-spy's short path of torch's conv.py is a library frame: the job's own frame is named
    assert "model.py:20 in forward" in top.summary, top.summary


def test_a_single_process_loaders_own_dataset_code_is_no_dataloader_wait() -> None:
    # num_workers=0: the main thread runs __getitem__ itself, no queue to wait on
    dump = stacks.parse_stacks(
        'Thread 5150 (active): "MainThread"\n'
        "    read (json/decoder.py:353)\n    __getitem__ (my_dataset.py:41)\n"
        "    fetch (torch/utils/data/_utils/fetch.py:51)\n    _next_data (torch/utils/data/dataloader.py:674)\n"
        "    __next__ (torch/utils/data/dataloader.py:631)\n    train (train.py:50)\n"
    )
    where = stacks.where(dump[0])
    assert where["state"] == "elsewhere" and "waits_for" not in where, where
    assert "waits_for" in stacks.where(stacks.parse_stacks(DATALOADER_DUMP)[0])


def _faulthandler(frames: list[tuple[str, int, str]]) -> str:
    """One process's faulthandler dump (it names no process id): its current thread, innermost frame first."""
    return "Current thread 0x00007f06b6639200 (most recent call first):\n" + "".join(
        f'  File "{file}", line {line} in {func}\n' for file, line, func in frames
    )


def test_faulthandler_dumps_of_several_processes_are_several_stacks(tmp_path: Path) -> None:
    # no pid in faulthandler's format: three processes' dumps must not collapse into the last one
    c10d = ("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2050, "all_reduce")
    loader = ("/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", 1133, "_try_get_data")
    user = ("train.py", 88, "train_step")
    log = "Timeout (0:30:00)!\n" + "\n".join(_faulthandler(f) for f in ([c10d, user], [c10d, user], [loader, user]))
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and "outside any collective" in top.summary and "2 other stacks" in top.summary
    assert "?" not in top.summary.split(" stands ")[0], top.summary  # named by where it was dumped, not 'process ?'
