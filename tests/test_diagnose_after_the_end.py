"""Lines a run prints after its own end (knowledge/after_the_end.py): an experiment tracker's error while it
flushes, worker processes its parent stopped with SIGTERM, a server's orderly shutdown. Each is no failure once
the run has ended, and stays one where it has not. Lines written in each program's own format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

FINISHED_TRAINING = """\
[2025-11-03 14:02:11] step 1200/1200 loss=0.412 lr=1.0e-05
[2025-11-03 14:02:14] Saving model checkpoint to ./runs/sft/checkpoint-1200
Training finished.
"""

SERVER_UP_AND_DOWN = """\
INFO 11-03 09:00:02 [api_server.py:1351] Starting vLLM API server 0 on http://0.0.0.0:8080
INFO:     Started server process [7310]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
INFO:     10.0.0.7:41022 - "POST /v1/chat/completions HTTP/1.1" 200 OK
"""


def test_a_trackers_error_after_training_finished_is_no_failure(tmp_path: Path) -> None:
    log = FINISHED_TRAINING + (
        "wandb: ERROR Failed to sample metric: Not Supported\n"
        "wandb: \nwandb: Run summary:\nwandb:   train/loss 0.412\n"
        "wandb: 🚀 View run sft-7 at: https://wandb.ai/team/proj/runs/q1w2e3\n"
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_trackers_error_before_any_end_is_still_read(tmp_path: Path) -> None:
    # the tracker failing at start-up, with nothing after it: the run never got going
    log = "[2025-11-03 14:00:01] loading model\nwandb: ERROR Run initialization has timed out after 90.0 sec.\n"
    assert top_failure(tmp_path, log) is not None


def test_workers_stopped_by_sigterm_after_the_servers_shutdown_are_no_failure(tmp_path: Path) -> None:
    log = SERVER_UP_AND_DOWN + (
        "^CINFO:     Shutting down\n"
        "INFO:     Waiting for application shutdown.\n"
        "INFO:     Application shutdown complete.\n"
        "INFO:     Finished server process [7310]\n"
        "ERROR 11-03 09:40:12 [multiproc_worker_utils.py:121] Worker VllmWorkerProcess pid 7402 died, exit code: -15\n"
        "INFO 11-03 09:40:12 [multiproc_worker_utils.py:125] Killing local vLLM worker processes\n"
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_worker_killed_by_sigterm_while_serving_is_still_read(tmp_path: Path) -> None:
    # no shutdown asked for: something stopped the worker from outside
    log = SERVER_UP_AND_DOWN + (
        "ERROR 11-03 09:40:12 [multiproc_worker_utils.py:121] Worker VllmWorkerProcess pid 7402 died, exit code: -15\n"
    )
    top = top_failure(tmp_path, log)
    assert top is not None and "-15" in top.summary


def test_a_segfault_after_training_finished_is_still_a_failure(tmp_path: Path) -> None:
    log = FINISHED_TRAINING + "Fatal Python error: Segmentation fault\nSegmentation fault (core dumped)\n"
    assert top_failure(tmp_path, log) is not None


def test_a_server_log_reads_as_serving_then_as_cleanly_ended(tmp_path: Path) -> None:
    # before the uvicorn rows the stage model stopped at 'Starting vLLM API server' (set-up, 'first collective')
    from scope.analyzers.diagnose import diagnose

    (tmp_path / "job.log").write_text(SERVER_UP_AND_DOWN)
    serving = diagnose(tmp_path)
    stopped = serving.sections["stopped"]
    assert stopped["stage"] == "steps" and not stopped["clean_end"]
    (tmp_path / "job.log").write_text(SERVER_UP_AND_DOWN + "INFO:     Application shutdown complete.\n")
    assert diagnose(tmp_path).sections["stopped"]["clean_end"]


WATCHDOG_TIMEOUT = """\
[rank3]:[E0412 03:44:19.501220341 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=2201, OpType=ALLGATHER, NumelIn=4096, NumelOut=32768, Timeout(ms)=1800000) ran for 1800421 \
milliseconds before timing out.
[rank3]:[E0412 03:44:19.502000000 ProcessGroupNCCL.cpp:630] [Rank 3] To avoid data inconsistency, we are taking the \
entire process down.
"""


def test_a_missing_program_of_a_clean_up_step_after_the_failure_is_not_its_cause(tmp_path: Path) -> None:
    # the job script's clean-up ran a tool the node lacks, after the training had timed out
    log = WATCHDOG_TIMEOUT + "run_job.sh: line 87: nvidia-smi: command not found\n"
    found = diagnose_failures(tmp_path, log)
    assert found[0].kind == "timeout"
    assert all(f.kind != "config_error" or f.severity == "warning" for f in found)


def test_a_missing_program_before_the_failure_stays_its_cause(tmp_path: Path) -> None:
    # the launch wrapper's own program missing first: nothing that failed before it
    log = "run_job.sh: line 12: torchrun: command not found\n" + WATCHDOG_TIMEOUT
    assert top_failure(tmp_path, log).kind == "config_error"


def test_training_complete_is_a_clean_end_like_training_completed(tmp_path: Path) -> None:
    # a later srun refused because the job is over, after the script's own 'Training complete.'
    log = (
        "[2025-11-03 14:02:11] step 900/900 loss=0.301\nTraining complete.\n"
        "srun: error: Unable to create step for job 730112: Job/step already completing or completed\n"
    )
    assert diagnose_failures(tmp_path, log) == []
