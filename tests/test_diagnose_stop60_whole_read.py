"""A whole-change read of stop 16's diagnosis: how its rules fit together on logs that mix the new classes.

- A Slurm step whose tasks never started (knowledge/slurm_step.py) and a later step of the same script that trained
  and then failed: srun aborts a step whole when one task does not launch, so the training was another step's, and
  its own failure ends the run whatever its kind (an HCCL link timeout, a c10d watchdog timeout: kinds that are not
  reasoning/setting_refused.RAN_KINDS). The launch stayed the root and folded the real error in as its cascade.
- A step refused because the job was over ('Job/step already completing or completed') after the user's Ctrl-C:
  the run's own end as knowledge/after_the_end.py reads it (a requested stop), not only a stage marker's clean end.
Every log is written in the emitting program's own format (srun / slurmstepd, torch_npu and CANN, c10d), with
values of our own."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure


def _code(finding: object) -> str:
    return str(getattr(finding, "metrics", {}).get("signature") or "")


# ---- a failed launch, a retry that trained, then the retry's own failure ----------------------------------------

PMIX_SETUP_FAILED = (
    "+ srun --nodes=4 --ntasks-per-node=8 --mpi=pmix_v5 python pretrain.py --npu\n"
    "srun: error:  mpi/pmix_v5: pmixp_stepd_init: cn-b17 [0]: mpi_pmix.c:162: pmixp_stepd_init() failed\n"
    "srun: error: task 0 launch failed: Unspecified error\n"
    "srun: error: task 8 launch failed: Unspecified error\n"
    "srun: StepId=60412.0 aborted before step completely launched.\n"
)
RETRY_TRAINS = (
    "+ srun --nodes=4 --ntasks-per-node=8 --mpi=pmi2 python pretrain.py --npu\n"
    "[2025-09-12 03:40:01] iteration 1/5000 | loss 11.02 | lr 3.0e-06\n"
    "[2025-09-12 03:40:17] iteration 2/5000 | loss 10.95 | lr 3.0e-06\n"
)
HCCL_LINK_TIMEOUT = (
    "Traceback (most recent call last):\n"
    '  File "/opt/app/pretrain.py", line 97, in train_step\n'
    "    torch.distributed.all_reduce(buf)\n"
    "RuntimeError: HCCL function error: HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, "
    "hcclReduceOp, comm, stream.stream()), error code is 9\n"
    "EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the "
    "reason for the rank being stuck\n"
    "srun: error: cn-b19: task 21: Exited with exit code 1\n"
)
WATCHDOG_TIMEOUT = (
    "[rank5]:[E912 03:52:40.201337 7711 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=2097152, NumelOut=2097152, Timeout(ms)=600000) ran "
    "for 600118 milliseconds before timing out.\n"
)


def test_a_retry_that_trained_then_failed_on_hccl_is_rooted_in_hccl_not_the_failed_launch(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, PMIX_SETUP_FAILED + RETRY_TRAINS + HCCL_LINK_TIMEOUT)
    assert found, "the run failed"
    assert not _code(found[0]).startswith("slurm_"), (found[0].summary, _code(found[0]))
    assert "HCCL" in found[0].summary or "hccl" in _code(found[0]).lower() or "EI0006" in found[0].summary
    launch = [f for f in found if _code(f) == "slurm_mpi_step_setup_failed"]
    assert launch and launch[0].severity == "warning"  # a clue: that step was replaced by the one that trained


def test_a_retry_that_trained_then_timed_out_is_rooted_in_the_timeout(tmp_path: Path) -> None:
    found = top_failure(tmp_path, PMIX_SETUP_FAILED + RETRY_TRAINS + WATCHDOG_TIMEOUT)
    assert found.kind == "timeout" and not _code(found).startswith("slurm_"), (found.summary, _code(found))


def test_a_failed_launch_that_nothing_followed_stays_the_root(tmp_path: Path) -> None:
    found = top_failure(tmp_path, PMIX_SETUP_FAILED)
    assert found.kind == "config_error" and _code(found) == "slurm_mpi_step_setup_failed"


def test_a_failed_launch_whose_retry_trained_to_its_end_is_no_failure(tmp_path: Path) -> None:
    end = "[2025-09-12 09:11:40] iteration 5000/5000 | loss 2.31\nTraining finished.\n"
    log = PMIX_SETUP_FAILED + RETRY_TRAINS + end
    assert diagnose_failures(tmp_path, log) == []


def test_a_failed_launch_then_training_then_a_timeout_waiting_for_it_keeps_the_launch_when_no_retry_shows(
    tmp_path: Path,
) -> None:
    # no second launch: the step lines are the other tasks' of the same srun (one task never started), and the
    # timeout waiting for the missing task is its consequence: slurmstepd's missing program stays the root
    log = (
        "slurmstepd: error: execve(): /opt/venv/bin/python3: No such file or directory\n"
        "[2025-09-12 03:40:01] iteration 1/5000 | loss 11.02\n" + WATCHDOG_TIMEOUT
    )
    found = top_failure(tmp_path, log)
    assert "python3" in found.summary + found.suggestion


# ---- a step refused because the job was over, after the user stopped the run ----------------------------------

JOB_OVER = "srun: error: Unable to create step for job {job}: Job/step already completing or completed\n"


def test_a_step_refused_after_the_users_ctrl_c_is_no_failure(tmp_path: Path) -> None:
    log = (
        "[2025-09-14 18:02:11] step 2210/40000 loss=1.877\n"
        "^C\n"
        "srun: interrupt (one more within 1 sec to abort)\n"
        "srun: StepId=90177.0 tasks 0-15: running\n"
        "srun: sending Ctrl-C to StepId=90177.0\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n" + JOB_OVER.format(job=90177)
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_step_refused_after_a_keyboard_interrupt_is_no_failure(tmp_path: Path) -> None:
    log = (
        "step 310 | loss 2.410 | 0.51 s/it\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/run.py", line 41, in <module>\n'
        "    loss.backward()\n"
        "KeyboardInterrupt\n" + JOB_OVER.format(job=3301)
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_step_refused_after_a_time_limit_stays_under_the_time_limit(tmp_path: Path) -> None:
    log = (
        "step 880/2000 loss 1.93\n"
        "slurmstepd: error: *** JOB 77120 ON gpu-c03 CANCELLED AT 2025-09-14T06:00:41 DUE TO TIME LIMIT ***\n"
        + JOB_OVER.format(job=77120)
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "timeout" and "TIME LIMIT" in found.summary


def test_a_step_refused_with_nothing_before_it_stays_a_finding(tmp_path: Path) -> None:
    found = top_failure(tmp_path, "step 12/900 loss 3.2\n" + JOB_OVER.format(job=5150))
    assert _code(found) == "slurm_step_create_refused" and "sacct -j 5150" in found.suggestion


# ---- what the remedy quotes -------------------------------------------------------------------------------------


def test_a_messages_own_advice_does_not_run_on_into_the_launchers_next_line(tmp_path: Path) -> None:
    # CANN's EI0006 ends its advice without a period; srun's report of the task follows on the next line, in lower
    # case like a wrapped continuation, but with its own 'srun: ' prefix: it is another program's line
    log = (
        "[2025-09-12 05:01:44] iteration 77/5000 | loss 6.10\n"
        "EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the "
        "reason for the rank being stuck\n"
        "srun: error: cn-b22: task 30: Exited with exit code 1\n"
    )
    found = top_failure(tmp_path, log)
    assert "rank being stuck" in found.suggestion
    assert "stuck srun" not in found.suggestion and "task 30: Exited" not in found.suggestion.split("Then:")[0]


# ---- the docs list the knowledge tables ---------------------------------------------------------------------------

# Knowledge modules no doc named before this guard (older stops'): the guard keeps the list from growing.
UNDOCUMENTED_BEFORE = frozenset(
    {
        "divergence.py",
        "fabric_rates.py",
        "launch_shape.py",
        "launcher_cut.py",
        "launcher_env.py",
        "native_init.py",
        "nccl_own_topology.py",
        "nvshmem_errors.py",
        "oom_messages.py",
        "open_mpi.py",
        "own_words.py",
        "rendezvous_host.py",
        "serving_stages.py",
        "signature_row.py",
        "stage_marker.py",
        "stale_shm.py",
        "stop_causes.py",
        "transport_fallback.py",
        "user_signatures.py",
    }
)


def test_every_new_knowledge_table_is_listed_in_the_docs() -> None:
    import scope.analyzers.diagnose.knowledge as knowledge

    root = Path(__file__).resolve().parent.parent
    docs = (root / "docs" / "diagnose-log-classes.md").read_text() + (root / "docs" / "diagnose.md").read_text()
    modules = {p.name for p in Path(knowledge.__file__).parent.glob("*.py")} - {"__init__.py"}
    missing = {m for m in modules if m not in docs} - UNDOCUMENTED_BEFORE
    assert not missing, f"knowledge tables no doc lists: {sorted(missing)} (docs/diagnose-log-classes.md)"


# ---- the cost of the new rows on a big log ------------------------------------------------------------------------


def test_no_lowered_needle_holds_another_so_each_pass_over_the_log_finds_new_lines() -> None:
    # every needle is one pass over the whole lowered log (readers/scan._trigger_lines); one that holds another
    # finds only lines the other finds: stop 16's rows brought 25 such passes (a 50 MB log: ~1 s)
    from scope.analyzers.diagnose.readers.scan import _lower_needles

    needles = _lower_needles()
    held = [(a, b) for a in needles for b in needles if a != b and b in a]
    assert not held, held[:5]


def test_leaving_out_held_needles_keeps_the_trigger_lines(tmp_path: Path) -> None:
    from scope.analyzers.diagnose.readers import scan

    log = (
        "RuntimeError: HCCL function error: HcclAllGather(x), error code is 7\n"
        "step 3 ok\n"
        "srun: error: task 2 launch failed: Unspecified error\n"
        "wandb: logging\n"
        "pyxis: container start failed with error code: 1\n"
    )
    lines = scan._trigger_lines(log)
    assert {0, 2, 4} <= lines and 1 not in lines


def test_a_log_with_non_ascii_characters_is_scanned_once_a_needle_like_an_ascii_one() -> None:
    # a tqdm bar ('█') or CJK text made the scan search every needle in three spellings over the original text (a
    # 50 MB log: 3x the passes); lowering keeps one character for each there, so the lowered text serves, and a
    # needle in any case is found as in an ASCII log
    from scope.analyzers.diagnose.readers import scan

    ascii_log = "step 5 ok\nsrun: StepId=5.0 Aborted Before Step Completely Launched.\n"
    bar = "Epoch 1:  40%|████      | 200/500 [01:02<01:10,  3.80it/s]\n训练开始\n"
    assert 1 in scan._trigger_lines(ascii_log)
    assert 3 in scan._trigger_lines(bar + ascii_log)  # the same line, as in the ASCII log
    # 'İ' lowers to two characters: the offsets differ, and the spellings' passes still find the lines
    assert 2 in scan._trigger_lines("İstanbul\nstep 5 ok\nNCCL WARN Cuda failure 'out of memory'\n")


def test_rank_reports_are_read_at_their_lines_among_dated_lines() -> None:
    # the reports are read from each '-1' with a rank or size word before it: the line numbers stay the file's
    from scope.analyzers.diagnose.reasoning.no_group_rank import _reports

    text = (
        "[2025-11-03 10:00:01] start\n"
        "rank: -1 world_size: -1\n"
        "[2025-11-03 10:00:02] lr 1e-1\n"
        "\n"
        "my global rank is      -1\n"
        "Namespace(rank=-1, world_size=-1, dist_url='env://')\n"
        "rank -10\n"
        "world_size=-1"
    )
    read = [(lineno, line) for _, lineno, line in _reports(text)]
    assert read == [(2, "rank: -1 world_size: -1"), (5, "my global rank is      -1"), (8, "world_size=-1")]


def test_cann_codes_share_their_modules_needles() -> None:
    # one needle a module ('ei00', 'ej00'), not one a code: 24 passes over a big log became 2
    from scope.analyzers.diagnose.knowledge.cann_codes import CANN_SIGNATURES
    from scope.analyzers.diagnose.readers.scan import _lower_needles

    assert {n for n in _lower_needles() if n[:2] in ("ei", "ej") and n[2:].isdigit()} == {"ei00", "ej00"}
    assert len(CANN_SIGNATURES) >= 20


def test_a_cann_code_still_reads_as_its_own_row(tmp_path: Path) -> None:
    found = top_failure(tmp_path, "EI0006: Getting socket times out. Reason: Remote Rank did not send the data.\n")
    assert _code(found) == "cann_ei0006"
    found = top_failure(tmp_path, "Notify_Wait_Timeout(EI0002): Waiting peer rank: 5\n")
    assert _code(found) == "cann_ei0002" and "5" in found.suggestion
