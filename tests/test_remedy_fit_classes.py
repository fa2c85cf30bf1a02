"""The remedy for the cause that was chosen, quoting the log's own token: one test per class of miss the remedy
report (benchmarks/remedy_fit.py) found on the tuned sets, each on a real excerpt in tests/data/diagnose_threads/
(README.md there gives the thread and its confirmed cause)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scope.finding import Finding
from tests.helpers import corpus_log, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _top(tmp_path: Path, name: str) -> Finding:
    finding: Finding = top_failure(tmp_path, (THREADS / name).read_text())
    return finding


def test_an_hca_that_answers_no_such_device_is_left_out_by_its_own_name(tmp_path: Path) -> None:
    # NVIDIA/nccl#799: NCCL picked mlx5_3 alone; 'NCCL_IB_HCA=^mlx5_3' fixed it
    top = _top(tmp_path, "nccl_799_modify_qp_no_device.log")
    assert "NCCL_IB_HCA=^mlx5_3" in top.suggestion


def test_an_hca_name_is_not_guessed_where_nccl_listed_several(tmp_path: Path) -> None:
    log = (THREADS / "nccl_799_modify_qp_no_device.log").read_text()
    log = log.replace("Using [0]mlx5_3:1/RoCE ;", "Using [0]mlx5_3:1/RoCE [1]mlx5_4:1/RoCE ;")
    top = top_failure(tmp_path, log)
    assert "NCCL_IB_HCA=^<name>" in top.suggestion and "^mlx5_3" not in top.suggestion


def test_a_checkpoint_save_that_outlasts_the_watchdog_wants_the_timeout_not_the_rank(tmp_path: Path) -> None:
    # ai2cm/ace#851: 'Saving latest checkpoint' on rank 0, rank 7's ALLREDUCE timeout exactly 20 min later
    top = _top(tmp_path, "ace_851_saving_latest_checkpoint.log")
    assert top.kind == "timeout" and "checkpoint save" in top.summary
    assert top.suggestion.startswith("The waiting ranks gave up after 20 min ('Timeout(ms)=1200000'). Raise the ")
    assert "async_save" in top.suggestion and "Find the rank" not in top.suggestion


def test_an_exception_raised_in_torch_save_names_the_checkpoint_file_and_its_volume(tmp_path: Path) -> None:
    # Sachini/ronin#51: torch.save's zip writer could not open the file; a full checkpoint volume
    top = _top(tmp_path, "ronin_51_torch_save_cannot_open.log")
    assert "my_out/checkpoints/checkpoint_0.pt" in top.suggestion
    assert "df -h" in top.suggestion and "free space" in top.suggestion
    assert not top.suggestion.startswith("Fix the exception")


def test_a_launcher_report_whose_only_word_is_exitcode_9_gets_the_oom_killer_checks(tmp_path: Path) -> None:
    # ZhehengJiangLancaster/AMVUR#2: torchrun's ChildFailedError block, its fields run together, exitcode -9
    top = _top(tmp_path, "amvur_2_child_failed_exitcode_9.log")
    assert "'exitcode: -9' is SIGKILL" in top.suggestion and "dmesg" in top.suggestion


def test_a_launcher_teardown_after_a_silent_worker_is_a_kill_from_outside(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed#3160: the launcher's sigkill_handler after the optimizer states were built on the
    # CPU, no rank's own error: the host OOM killer
    top = _top(tmp_path, "deepspeed_3160_sigkill_handler_silent.log")
    assert "killed from outside" in top.suggestion and "OOM kill" in top.suggestion


def test_a_traceback_before_the_teardown_keeps_the_generic_reading(tmp_path: Path) -> None:
    log = (
        'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n'
        + (THREADS / "deepspeed_3160_sigkill_handler_silent.log").read_text()
    )
    top = top_failure(tmp_path, log)
    assert top.suggestion.startswith("Read the first failing rank's own output and exit status")
    assert "killed from outside" not in top.suggestion


@pytest.mark.shared_data
def test_a_first_collective_with_another_count_on_one_rank_gets_the_same_arguments_remedy(tmp_path: Path) -> None:
    # NVIDIA/nccl#147: NCCL's COLL lines, rank 0's Broadcast of another count and dtype
    top = top_failure(tmp_path, corpus_log("NVIDIA-nccl_147"))
    assert top.suggestion.startswith("Rank 0 (host learnfair062) called this collective with another count")


@pytest.mark.shared_data
def test_nvml_unknown_error_in_a_container_is_the_device_cgroup(tmp_path: Path) -> None:
    # NVIDIA/nvidia-docker#1730: 'Failed to initialize NVML: Unknown Error' after a host daemon-reload
    top = top_failure(tmp_path, corpus_log("NVIDIA-nvidia-docker_1730"))
    assert top.kind == "config_error" and "create-dev-char-symlinks --create-all" in top.suggestion


def test_a_refused_connection_names_the_refusing_address_to_look_up(tmp_path: Path) -> None:
    # bigscience jz/slurm README: NCCL's connect to 10.148.3.247 refused; the node behind it had a broken network
    top = _top(tmp_path, "bigscience_jz-slurm-broken-network-node.log")
    assert "getent hosts 10.148.3.247" in top.suggestion and "--exclude" in top.suggestion


@pytest.mark.shared_data
def test_an_interface_variable_the_log_shows_set_is_checked_as_an_interface_not_a_file(tmp_path: Path) -> None:
    # NVIDIA/nccl#1837: 'NCCL_SOCKET_IFNAME set by environment to eth2' and a bootstrap failure on that interface
    top = top_failure(tmp_path, corpus_log("NVIDIA-nccl_1837"))
    assert "NCCL_SOCKET_IFNAME=eth2" in top.suggestion and "eth2 names an interface that is up" in top.suggestion
    assert "point it at a file" not in top.suggestion


def test_a_gpu_index_the_node_lacks_is_the_process_count_of_the_launch_the_log_quotes(tmp_path: Path) -> None:
    # KellerJordan/modded-nanogpt#61: './run.sh' (torchrun --nproc_per_node=8) on a 4-GPU node, set_device fails
    top = _top(tmp_path, "modded_nanogpt_61_invalid_device_ordinal.log")
    assert top.kind == "config_error"
    assert top.suggestion.startswith("Start as many processes per node as it has GPUs")
    assert "in the launch command (./run.sh)" in top.suggestion
    assert "--nproc_per_node" in top.suggestion


def test_a_store_wait_during_rank_0_tokenizing_quotes_the_limit_the_log_states(tmp_path: Path) -> None:
    # axolotl-ai-cloud/axolotl#2684: rank 0's tokenizer bar at 29:58 and rank 1's store socket 'timed out after
    # 1800000ms' on the same console line; the 30-minute default was outlasted
    top = _top(tmp_path, "axolotl_2684_store_wait_during_tokenizing.log")
    assert top.kind == "timeout"
    assert top.suggestion.startswith("The waiting ranks gave up after 30 min ('timed out after 1800000ms').")
    assert "Pre-process once before the job" in top.suggestion


def test_nvml_unknown_error_with_nothing_showing_a_container_also_gets_the_bare_host_checks(tmp_path: Path) -> None:
    top = top_failure(tmp_path, "Failed to initialize NVML: Unknown Error\n")
    assert "In a container:" in top.suggestion and "On a bare host:" in top.suggestion
    assert "A running container lost access" not in top.summary


def test_a_connect_that_timed_out_is_not_worded_as_a_refusal_and_an_ipv6_scope_is_dropped(tmp_path: Path) -> None:
    line = "host1:10:11 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to fe80::1%ib0<43215> failed : "
    top = top_failure(tmp_path, line + "Connection timed out\n")
    assert "'Connection timed out' from one address: nothing answered there" in top.suggestion
    assert "Connection refused" not in top.suggestion and "getent hosts fe80::1)" in top.suggestion


def test_a_launcher_teardown_with_a_plain_return_code_is_no_kill_from_outside(tmp_path: Path) -> None:
    # DeepSpeed's sigkill_handler line ending 'exits with return code = 1': the worker's own error status; the
    # row's meaning names '-9 SIGKILL', which is scope's prose, not the log's
    log = (THREADS / "deepspeed_3160_sigkill_handler_silent.log").read_text().rstrip("\n")
    top = top_failure(tmp_path, log + "'] exits with return code = 1\n")
    assert top.suggestion.startswith("Read that rank's own output before the exit")
    assert "killed from outside" not in top.suggestion and "Killed process" not in top.suggestion


def test_a_torchrun_report_with_a_plain_exitcode_is_the_workers_own_status() -> None:
    from scope.analyzers.diagnose.knowledge.signals import launcher_signal_advice

    text = "train.py FAILED\nFailures:\n  <NO_OTHER_FAILURES>\nRoot Cause (first observed failure):\n  exitcode  : 1\n"
    advice = launcher_signal_advice(text, 0)
    assert advice is not None and advice.startswith("The log's 'exitcode  : 1' is the worker's own exit status")


def test_the_root_cause_blocks_signal_is_read_before_the_other_failures() -> None:
    from scope.analyzers.diagnose.knowledge.signals import launcher_signal_advice

    text = (
        "train.py FAILED\nFailures:\n[1]:\n  exitcode  : -15 (pid: 12)\nRoot Cause (first observed failure):\n"
        "[0]:\n  exitcode  : -9 (pid: 11)\n"
    )
    advice = launcher_signal_advice(text, 0)
    assert advice is not None and advice.startswith("The log's 'exitcode  : -9' is SIGKILL")
