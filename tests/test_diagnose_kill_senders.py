"""Who ended a process (knowledge/kill_senders.py) and whether a framework's refusal ended the run
(reasoning/setting_refused.py): the review of diag52's signal kinds, on the logs it reproduced them with
(tests/data/diagnose_threads/README.md says where each comes from)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _log(name: str) -> str:
    return (THREADS / name).read_text()


# ---- SIGABRT after training steps: the watchdog only in a collective job with no abort of the rank's own ----


def test_a_glibc_assertion_before_the_abort_keeps_it_a_crash(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_sigabrt_glibc_assert_one_worker.log"))
    assert top.kind == "crash" and "watchdog, which aborts" not in top.summary
    assert "Assertion `num_layers > 0' failed" in top.summary and top.metrics["signal"]["own_abort"] == 6


def test_a_single_process_abort_after_steps_is_no_timeout(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_single_process_aborted_core_dumped.log"))
    assert top.kind == "crash" and "watchdog" not in top.summary


def test_the_same_abort_among_several_workers_with_no_message_is_the_watchdog(tmp_path: Path) -> None:
    # the assertion line removed and another worker stopped by torchrun: the D-FINE#311 shape again
    lines = _log("review_sigabrt_glibc_assert_one_worker.log").splitlines(keepends=True)
    stop = "W0301 12:00:30.000000 140 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 142 "
    log = "".join(lines[:5]) + stop + "closing signal SIGTERM\n" + "".join(lines[6:])
    assert top_failure(tmp_path, log).kind == "timeout"


# ---- SIGKILL: the OOM killer only with memory evidence or no other sender ----------------------------------


def test_srun_killing_the_step_after_an_mpi_abort_is_no_oom(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, _log("cray_srun_killed_after_mpi_abort.log"))
    assert found and all(f.kind != "oom" for f in found)


def test_a_runners_kill_of_a_stuck_step_is_no_oom(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("srun_killed_by_runner_stuck.log"))
    assert top.kind == "crash"


def test_srun_killed_tasks_before_another_tasks_bad_exit_are_no_oom(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, _log("review_srun_killed_before_bad_exit.log"))
    assert found and all(f.kind != "oom" for f in found)


def test_srun_killed_with_slurmstepds_oom_kill_event_is_oom(tmp_path: Path) -> None:
    # slurmstepd's cgroup report (src/plugins/task/cgroup) before srun's line
    log = (
        "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.\nsrun: error: gpu-node-01: task 0: Killed\n"
    )
    assert any(f.kind == "oom" for f in diagnose_failures(tmp_path, log))


def test_kubernetes_137_after_a_failed_liveness_probe_is_no_oom(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_k8s_137_liveness_probe.log"))
    assert top.kind == "crash" and top.metrics["signal"]["killed_by"].startswith("Kubernetes")


def test_kubernetes_137_with_reason_oomkilled_is_oom(tmp_path: Path) -> None:
    log = _log("review_k8s_137_liveness_probe.log").replace("Reason:       Error", "Reason:       OOMKilled")
    log = "\n".join(x for x in log.splitlines() if "iveness" not in x) + "\n"
    assert top_failure(tmp_path, log).kind == "oom"


# ---- a framework's refusal counts only where it ended the run ---------------------------------------------


def test_a_handled_refusal_in_a_chained_traceback_yields_to_the_oom_that_ended_it(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, _log("review_xformers_handled_then_oom.log"))
    assert found[0].kind == "oom"
    assert all(f.metrics.get("code") != "framework_setting_refused" or f.severity == "info" for f in found)


def test_a_refusal_logged_as_a_warning_and_run_past_is_not_the_cause(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_warning_refusal_then_timeout.log"))
    assert top.kind == "timeout"


def test_a_specific_row_outranks_the_generic_refusal(tmp_path: Path) -> None:
    # both raised, neither handled: the OOM names the failure better than the generic refusal
    log = (
        "[rank1]: ValueError: fused rope is not supported on this device\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.10 GiB of which 1.06 GiB is free.\n"
    )
    assert top_failure(tmp_path, log).kind == "oom"


def test_an_os_errors_not_supported_is_no_framework_refusal(tmp_path: Path) -> None:
    log = "RuntimeError: The server socket has failed to bind (errno: 97 - Address family not supported by protocol).\n"
    found = diagnose_failures(tmp_path, log)
    assert all(f.metrics.get("code") != "framework_setting_refused" for f in found)


def test_the_shells_report_of_the_launcher_killed_is_no_oom(tmp_path: Path) -> None:
    # QIU023/torchtitan_attention_residual: a second wrapper session started while the first ran; both torchruns
    # 'Killed' by job control (the user's or wrapper's kill, the file's own account)
    found = diagnose_failures(tmp_path, _log("launcher_killed_by_job_control.log"))
    killed = [f for f in found if f.metrics.get("code") == "process_killed"]
    assert killed and all(f.kind == "crash" for f in killed)


# ---- srun --label: the label is the rank ---------------------------------------------------------------------


def test_interleaved_srun_labelled_stack_dumps_are_read_per_task(tmp_path: Path) -> None:
    # rank 0 waits in all_reduce, rank 1 is in the DataLoader: rank 1 is the one outside the collective
    top = top_failure(tmp_path, _log("review_srun_label_interleaved_stacks.log"))
    assert top.kind == "hang" and top.ranks == [1] and "Rank 1 never joined" in top.summary
    assert "rank  " not in top.summary


def test_the_best_guess_keeps_the_srun_label_as_its_rank(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_srun_label_unknown_error.log"))
    assert "FATAL: data shard" in top.summary and top.ranks == [3]


def test_loguru_lines_keep_their_time_in_the_quote(tmp_path: Path) -> None:
    # lyuwenyu/RT-DETR#242: loguru's 'YYYY-MM-DD hh:mm:ss.fff | LEVEL | ...' is the program's format, not a
    # collector's prefix: the quote keeps the time, and no stray bar opens it
    top = top_failure(tmp_path, (THREADS / "rtdetr_242_ranks_part_mid_step.log").read_text())
    assert "17:23:57.635 | INFO" in top.summary and "'| INFO" not in top.summary


def test_the_watchdogs_own_terminate_is_no_abort_of_the_ranks_own() -> None:
    from scope.analyzers.diagnose.knowledge.kill_senders import own_abort_after

    steps = "step 1 loss 2.3\nstep 2 loss 2.2\n"
    # ProcessGroupNCCL's watchdog ends the process by std::terminate: its words name it
    watchdog = (
        "terminate called after throwing an instance of 'c10::DistBackendError'\n  what():  [PG 0 Rank 1] Process "
        "group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout\n"
    )
    assert own_abort_after(steps + watchdog, 2) is None
    assert own_abort_after(steps + "terminate called after throwing an instance of 'std::bad_alloc'\n", 2) == (
        3,
        "terminate called after throwing an instance of 'std::bad_alloc'",
    )


def test_a_log_viewers_bar_after_the_iso_time_is_stripped_with_it(tmp_path: Path) -> None:
    # Lightning-AI/litData#340: '2024-08-23T22:22:50.870Z | [rank6]:[E ProcessGroupNCCL.cpp:563] ...': the quote
    # opens with no stray bar, and rank 6's tag is read
    top = top_failure(tmp_path, _log("litdata_340_viewer_time_bar.log"))
    assert top.kind == "timeout" and "(|" not in top.summary and top.ranks == [6]


def test_an_eviction_for_memory_pressure_is_memory_evidence() -> None:
    from scope.analyzers.diagnose.knowledge.kill_senders import other_sender

    evicted = "  Warning  Evicted  12m  kubelet  The node was low on resource: memory.\nExit Code:    137\n"
    assert other_sender(evicted) is None
    assert other_sender(evicted.replace("memory", "ephemeral-storage")) is not None


# ---- the merged branches' review: the sender's check replaces the OOM killer's, on every SIGKILL reading ----------


def test_a_kill_with_another_sender_gets_that_senders_check_not_the_oom_checklist(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_k8s_137_liveness_probe.log"))
    assert top.kind == "crash" and "kubectl describe pod shows the probe" in top.suggestion
    assert "dmesg" not in top.suggestion.split("kubectl describe pod shows the probe")[0]
    top = top_failure(tmp_path, _log("srun_killed_by_runner_stuck.log"))
    assert top.suggestion.startswith("The log shows srun tearing the step down, not an out-of-memory kill.")


def test_a_launchers_sigkill_report_under_srun_tearing_the_step_down_is_no_oom(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_deepspeed_sigkill_under_srun_teardown.log"))
    assert top.kind == "crash" and top.metrics["signal"]["killed_by"] == "srun tearing the step down"
    assert "srun killed the step's other tasks" in top.suggestion


def test_a_sigabrt_read_as_the_watchdogs_timeout_gets_the_timeouts_check_first(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _log("review_hf_steps_then_sigabrt.log"))
    assert top.kind == "timeout"
    assert top.suggestion.startswith("Find the rank that never reached the collective")


def test_terminate_without_an_active_exception_is_named_as_a_thread_met_by_the_exit(tmp_path: Path) -> None:
    # Recorded here: torch's own exit after DDP on gloo aborting with no error before it (README: 3 of 45 runs).
    # No step line shows, so the abort the rank printed is read from the start of the log.
    top = top_failure(tmp_path, _log("scope_ddp_gloo_exit_abort.log"))
    assert top.kind == "crash" and top.metrics["signal"]["name"] == "SIGABRT"
    assert top.metrics["signal"]["own_abort"] == 2 and "no exception in flight" in top.summary
    assert top.suggestion.startswith("The exit status -6 in the log is signal 6, SIGABRT. If the job's work was done")
    assert "dist.destroy_process_group()" in top.suggestion
