"""Classes the fourth never-seen set of issue 40 (dev50) exposed, each on a public thread's real excerpt in
tests/data/diagnose_threads/ (README.md there gives the URL and the confirmed cause): logs that stop with no
error in a stage a run does not stop in, and NCCL's own allocation failing.
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _log(name: str) -> str:
    return (THREADS / name).read_text()


# ---- NCCL init narrated by several processes, cut off before Init COMPLETE --------------------------------


def test_several_processes_setting_up_channels_and_nothing_after_stopped_in_init(tmp_path: Path) -> None:
    # Lightning#19425: no bootstrap lines quoted, but six processes interleave their P2P channel set-up
    log = _log("lightning_19425_init_stops_in_p2p_channels.log")
    assert where_it_stopped(log).stage == "comm_init"
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and top.metrics["code"] == "stopped_in_comm_init"
    assert "NCCL_P2P_DISABLE=1" in top.suggestion  # the check the thread's fix came from


def test_two_processes_channel_lines_are_still_a_quoted_snippet(tmp_path: Path) -> None:
    # the same excerpt's lines of two processes only: how a healthy run's NCCL lines are often quoted
    lines = _log("lightning_19425_init_stops_in_p2p_channels.log").splitlines()
    two = "\n".join(ln for ln in lines if ":34364:" in ln or ":34310:" in ln) + "\n"
    assert diagnose_failures(tmp_path, two) == []


# ---- a framework's set-up banner as the last line ---------------------------------------------------------


def test_lightning_1x_ddp_banner_and_silence_stopped_in_the_first_collective(tmp_path: Path) -> None:
    # Lightning#9641: 'All DDP processes registered. Starting ddp with 2 processes', then the log ends
    log = _log("lightning_9641_ddp_registered_then_silence.log")
    stop = where_it_stopped(log)
    assert stop.stage == "first_collective" and stop.emitter == "lightning" and not stop.ends
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and "stuck in the first collective" in top.summary
    assert "NCCL_P2P_DISABLE=1" in top.suggestion and "PL_TORCH_DISTRIBUTED_BACKEND=gloo" in top.suggestion


def test_lightning_banner_followed_by_its_model_summary_is_no_stop(tmp_path: Path) -> None:
    log = _log("lightning_9641_ddp_registered_then_silence.log") + (
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]\n\n  | Name  | Type   | Params\n"
        "---------------------------------\n0 | layer | Linear | 66    \n"
        "Epoch 0:  10%|█         | 6/64 [00:00<00:02, 25.15it/s, loss=1.2, v_num=0]\n"
    )
    assert where_it_stopped(log).stage == "steps"
    assert diagnose_failures(tmp_path, log) == []


# ---- dataset pre-processing part-way ------------------------------------------------------------------


def test_a_tokenizer_progress_bar_part_way_is_a_stop_in_pre_processing(tmp_path: Path) -> None:
    # LlamaFactory#2656: one line, the tokenizer at 12% of 3.6 M examples; the run died at the 30-min timeout
    log = _log("llamafactory_2656_tokenizer_part_way.log")
    assert where_it_stopped(log).stage == "data_prep"
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and top.metrics["code"] == "stopped_in_data_prep"
    assert "422,000 of 3,643,454 done" in top.summary
    assert "--ddp_timeout" in top.suggestion and "pre-process once" in top.suggestion


def test_a_finished_pre_processing_bar_is_no_stop(tmp_path: Path) -> None:
    log = "Running tokenizer on dataset (num_proc=8): 100%|██████████| 5000/5000 [00:12<00:00, 401.3 examples/s]\n"
    assert where_it_stopped(log).stage == "data_prep"
    assert diagnose_failures(tmp_path, log) == []


# ---- a connect retry loop as the last lines, on a loopback bootstrap ---------------------------------------


def test_connect_retries_to_the_end_on_a_loopback_bootstrap_name_the_interface(tmp_path: Path) -> None:
    # pytorch#52916: NCCL_SOCKET_IFNAME=lo on a two-node job; rank 1 retries a refused connect until the log ends
    log = _log("pytorch_52916_connect_retries_on_lo.log")
    stop = where_it_stopped(log)
    assert stop.stage == "comm_init" and stop.alone
    top = top_failure(tmp_path, log)
    assert top.kind == "hang" and "stuck in communicator init" in top.summary
    assert "lo:127.0.0.1" in top.suggestion and "NCCL_SOCKET_IFNAME" in top.suggestion


def test_a_retry_followed_by_init_complete_is_no_stop(tmp_path: Path) -> None:
    # one refused connect at start-up is normal: init going on after it ends the reading
    log = _log("pytorch_52916_connect_retries_on_lo.log").rsplit("\n", 2)[0] + (
        "\nGPU9:10330:10399 [0] NCCL INFO comm 0x7f0 rank 1 nranks 2 cudaDev 0 busId 3000 - Init COMPLETE\n"
    )
    assert where_it_stopped(log).stage == "first_collective"
    assert diagnose_failures(tmp_path, log) == []


# ---- NCCL's own buffers failing to allocate ---------------------------------------------------------------


def test_nccls_own_allocation_failure_gets_the_buffer_remedy_not_the_batch_one(tmp_path: Path) -> None:
    # NCCL#962: include/alloc.h 'Cuda failure out of memory' under an 'internal error' from all_gather_object
    top = top_failure(tmp_path, _log("nccl_962_nccl_buffer_oom.log"))
    assert top.kind == "oom" and top.metrics["code"] == "nccl_buffer_oom"
    assert "NCCL_BUFFSIZE" in top.suggestion and "NCCL's buffers" in top.suggestion


# ---- a start-up where one rank number is printed by two processes ------------------------------------------


def test_global_ranks_printed_twice_with_others_missing_are_ranks_assigned_twice(tmp_path: Path) -> None:
    # Lightning#4389: srun with one task per node, each spawning 4: global ranks 0-3 twice, 4-7 never
    top = top_failure(tmp_path, _log("lightning_4389_ranks_assigned_twice.log"))
    assert top.kind == "config_error" and top.metrics["code"] == "startup_rank_assigned_twice"
    assert "--ntasks-per-node" in top.suggestion and "0..7 must exist once" in top.suggestion


def test_every_rank_printed_once_with_some_missing_stays_missing_ranks(tmp_path: Path) -> None:
    # the same start-up with each rank's line once: ranks 4-7 never started (a node's share), no double assignment
    lines = _log("lightning_4389_ranks_assigned_twice.log").splitlines()
    once: list[str] = []
    for ln in lines:
        if "GLOBAL_RANK" in ln and ln in once:
            continue
        once.append(ln)
    top = top_failure(tmp_path, "\n".join(once) + "\n")
    assert top.kind == "missing_rank" and top.ranks == [4, 5, 6, 7]
