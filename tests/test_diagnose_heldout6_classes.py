"""Classes the sixth never-seen set of issue 40 exposed, each on a short excerpt of its public thread
(tests/data/diagnose_threads/README.md gives the URL and the confirmed cause of each file)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _log(name: str) -> str:
    return (THREADS / name).read_text()


# ---- silent failing logs: each now has a failure finding ------------------------------------------------------


def test_a_process_failure_repr_with_a_signal_is_read_as_that_signal(tmp_path: Path) -> None:
    # torch elastic's ProcessFailure(... exitcode=-7, error_file=...) on one line: the error_file field is no
    # reason to skip the line
    found = top_failure(tmp_path, _log("dlrover_1046_process_failure_sigbus.log"))
    assert found.kind == "config_error"
    assert "/dev/shm" in found.suggestion and "SIGBUS" in found.summary


def test_two_torchrun_workers_on_one_device_index_share_a_gpu(tmp_path: Path) -> None:
    text = _log("pytorch_129385_two_workers_one_gpu.log")
    found = top_failure(tmp_path, text)
    assert found.kind == "config_error" and "[0]" in found.summary
    assert "LOCAL_RANK" in found.suggestion and "set_device" in found.suggestion
    # each worker on its own device: nothing shared
    own = text.replace(":4171736:4171736 [0]", ":4171736:4171736 [1]")
    assert not any("share one GPU" in f.summary for f in diagnose_failures(tmp_path, own))


def test_a_traceback_cut_in_the_rendezvous_after_deepspeed_found_no_hostfile(tmp_path: Path) -> None:
    text = _log("gpt_neox_671_rendezvous_cut_no_hostfile.log")
    found = top_failure(tmp_path, text)
    assert found.kind == "config_error" and "rendezvous" in found.summary
    assert "--hostfile" in found.suggestion
    # without the launcher's clue it is still a stop in the rendezvous (ranks that never joined)
    bare = top_failure(tmp_path, text.split("\n", 1)[1])
    assert bare.kind == "missing_rank"


def test_accelerate_refusing_a_quantized_model_on_another_device(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("trl_722_quantized_model_other_device.log"))
    assert found.kind == "config_error" and "local_process_index" in found.suggestion


def test_an_engine_process_that_hit_an_exception_after_its_init_line_is_no_silent_stop(tmp_path: Path) -> None:
    text = _log("sglang_3794_scheduler_exception_in_init.log")
    found = top_failure(tmp_path, text)
    assert found.kind != "hang" and "Scheduler hit an exception" in found.summary
    # the same log cut before the exception: a stop in communicator init after sglang's pynccl line
    stalled = top_failure(tmp_path, text.rsplit("\n", 2)[0] + "\n")
    assert stalled.kind == "hang" and "sglang" in stalled.summary


# ---- false alarms: healthy logs read as failures ------------------------------------------------------------


def test_a_metric_named_error_is_no_failure(tmp_path: Path) -> None:
    text = _log("token_7_top1_error_metric.log")
    assert diagnose_failures(tmp_path, text) == []
    assert diagnose_failures(tmp_path, text + "RuntimeError: CUDA error: an illegal memory access\n")


def test_the_head_of_a_result_table_quoted_alone_is_no_hang(tmp_path: Path) -> None:
    text = _log("bottlerocket_core_kit_141_table_head.log")
    assert diagnose_failures(tmp_path, text) == []
    # the same rows after the run's own init lines (a console capture): a stop in the next size
    init = "host1:100:100 [0] NCCL INFO Connected all rings\nhost1:100:100 [1] NCCL INFO Connected all rings\n"
    rows = "\n".join(ln for ln in text.splitlines() if "#" not in ln) + "\n"
    assert top_failure(tmp_path, init + rows).kind == "hang"


# ---- wrong kinds --------------------------------------------------------------------------------------------


def test_ray_naming_the_remote_dist_backend_error(tmp_path: Path) -> None:
    assert top_failure(tmp_path, _log("slime_45_ray_dist_backend_error.log")).kind == "nccl_error"


def test_an_allgather_of_mixed_dtypes_is_a_configuration(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("firefly_127_allgather_dtype_mismatch.log"))
    assert found.kind == "config_error" and "bf16" in found.suggestion


def test_vllm_cumem_allocator_out_of_memory_on_wake_up(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("lmm_r1_43_vllm_cumem_wake_up_oom.log"))
    assert found.kind == "oom" and "gpu_memory_utilization" in found.suggestion


# ---- remedy among cases classified right -------------------------------------------------------------------


def test_a_serving_engine_named_only_by_the_collectors_prefix_gets_its_timeout_remedy(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("vllm_4653_ray_prefixed_gather_timeout.log"))
    assert found.kind == "timeout"
    assert "--enforce-eager" in found.suggestion and "--disable-custom-all-reduce" in found.suggestion


def test_a_script_refusing_the_launchers_local_rank_argument(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("timm_1724_local_rank_argument.log"))
    assert found.kind == "config_error" and "LOCAL_RANK" in found.suggestion and "train.py" in found.suggestion


def test_a_child_process_error_for_a_signal_is_read_as_that_signal(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("autotrain_456_child_sigkill.log"))
    assert found.kind == "oom" and "host RAM" in found.suggestion
    # the same error for a plain exit status is the child's own error, no kill
    plain = _log("autotrain_456_child_sigkill.log").replace("died with <Signals.SIGKILL: 9>", "returned 1")
    assert top_failure(tmp_path, plain).kind == "crash"


def test_torch_distributed_used_without_a_process_group(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("yolof_11_default_pg_missing.log"))
    assert found.kind == "config_error"
    assert "init_process_group" in found.suggestion and "world_size=1" in found.suggestion


def test_a_framework_that_runs_on_one_gpu_only(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("unsloth_724_single_gpu_only.log"))
    assert found.kind == "config_error" and "CUDA_VISIBLE_DEVICES=0" in found.suggestion


def test_a_dataloader_worker_killed_with_its_pid_elided_is_host_memory(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("mmrotate_501_dataloader_killed_pid_elided.log"))
    assert found.kind == "oom" and "workers_per_gpu" in found.suggestion


def test_a_stuck_watchdog_after_the_exit_warning_is_a_teardown_hang(tmp_path: Path) -> None:
    text = _log("ms_swift_7992_watchdog_stuck_after_exit_warning.log")
    found = top_failure(tmp_path, text)
    assert found.kind == "hang" and "destroy_process_group()" in found.suggestion
    # without c10d's exit warning the same hang gets no teardown reading
    kept = "\n".join(ln for ln in text.splitlines() if "was not called" not in ln) + "\n"
    assert "destroy_process_group()" not in top_failure(tmp_path, kept).suggestion


def test_one_process_with_tensors_on_two_gpus_runs_one_process_per_gpu(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("flagembedding_85_tensors_on_two_gpus.log"))
    assert "--nproc_per_node" in found.suggestion
    # one device named twice is no such case
    same = _log("flagembedding_85_tensors_on_two_gpus.log").replace("cuda:1 and cuda:0", "cuda:0 and cpu")
    assert "--nproc_per_node" not in top_failure(tmp_path, same).suggestion
