"""The remedy report's judge (benchmarks/remedy_fit.py), on REMEDY lines and printed remedies of real cases as
judged by hand in issue 40's notes."""

from __future__ import annotations

import pytest

from benchmarks.remedy_fit import judge, key_tokens

NCCL_799 = (
    "exclude the broken HCA with NCCL_IB_HCA=^mlx5_3 (or NCCL_IB_DISABLE=1 on a single node); poster confirmed "
    "NCCL_IB_HCA=^mlx5_3 made everything work"
)


def test_the_key_tokens_are_variables_flags_settings_versions_paths_and_identifiers() -> None:
    remedy = (
        "raise the memlock limit (ulimit -l unlimited via /etc/security/limits.conf), start the container with "
        "--shm-size=1g, find_unused_parameters=True, upgrade to NCCL 2.26.2; check with show_gids"
    )
    assert [t.text for t in key_tokens(remedy)] == [
        "memlock",
        "/etc/security/limits.conf",
        "--shm-size",
        "find_unused_parameters",
        "NCCL 2.26.2",
        "show_gids",
    ]


def test_the_evidence_token_decides_between_fit_and_partly() -> None:
    generic = "leave it out with NCCL_IB_HCA=^<name> (the NET/IB : Using line lists the HCAs NCCL picked)."
    assert judge(NCCL_799, generic).verdict == "partly"
    assert judge(NCCL_799, generic.replace("<name>", "mlx5_3")).verdict == "fit"
    assert judge(NCCL_799, "NCCL_IB_DISABLE=1 on one node").verdict == "fit"  # the REMEDY's other alternative


def test_generic_advice_for_another_cause_misses() -> None:
    remedy = "free disk space on the checkpoint volume"
    assert judge(remedy, "Fix the exception raised on the rank (traceback in the evidence).").verdict == "miss"
    assert judge(remedy, "check that the volume has room; free space or save elsewhere").verdict == "fit"


def test_one_alternative_named_whole_is_a_fit() -> None:
    remedy = "start the container with --shm-size=1g (or --ipc=host); NCCL_SHM_DISABLE=1 is a slower alternative"
    assert judge(remedy, "run docker with --ipc=host").verdict == "fit"
    assert judge(remedy, "Give the container a larger /dev/shm").verdict == "fit"  # a synonym of --shm-size


def test_a_version_is_met_by_the_package_near_it_or_near_a_version_word() -> None:
    remedy = "upgrade to NCCL 2.26.2 or later (or rebuild 2.25.1 with the maintainers' interim patch)"
    assert judge(remedy, "Upgrade NCCL (2.26.2 or later for RTX 50xx)").verdict == "fit"
    assert judge(remedy, "try a newer NCCL release").verdict == "fit"
    assert judge(remedy, "Check the GPU's memory").verdict == "miss"
    assert judge("upgrade PyTorch to >= 1.0.1", "Upgrade torch, or use gloo").verdict == "fit"  # torch = PyTorch
    assert judge("install the same NCCL version on every node", "one NCCL version everywhere").verdict == "fit"


def test_what_a_remedy_replaces_or_keeps_is_no_token() -> None:
    remedy = "set NCCL_IB_GID_INDEX=7 (the routable RoCE v2 GID) instead of NCCL_IB_ROCE_VERSION_NUM; the job runs"
    assert [t.text for t in key_tokens(remedy)] == ["NCCL_IB_GID_INDEX"]
    assert [t.text for t in key_tokens("enable RDMA, keep NCCL_IB_DISABLE=0")] == ["rdma"]


def test_the_posters_own_variables_and_files_count_only_where_the_log_names_them() -> None:
    remedy = "derive EP_WORLD_SIZE / NUM_EXPERTS from the number of GPUs in run_moe_train.sh"
    printed = "set the expert parallel size (ep_size) to a divisor of 4"
    assert judge(remedy, printed, log="AssertionError: 4 is not divisible by 8").verdict == "unscored"
    assert judge(remedy, printed, log="EP_WORLD_SIZE=8 bash run_moe_train.sh").verdict == "miss"
    assert judge(remedy, printed).verdict == "miss"  # without the log every token counts


@pytest.mark.parametrize(
    ("printed", "verdict"),
    [("use fewer parameters", "miss"), ("give the job more host RAM", "fit"), ("a RAM-hungry loader", "miss")],
)
def test_words_match_whole(printed: str, verdict: str) -> None:
    assert judge("give the job more RAM", printed).verdict == verdict


def test_words_that_describe_the_problem_do_not_meet_the_action() -> None:
    assert judge("reduce the batch size", "rank 3 got a batch of another shape").verdict == "miss"
    printed = "The checkpoint is truncated or corrupt: a save that was cut off (a full volume, a job killed)"
    assert judge("free disk space on the checkpoint volume", printed).verdict == "miss"


def test_a_word_inside_a_longer_name_stays_a_token_of_its_own() -> None:
    remedy = "raise the timeout and set TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=1800"
    assert [t.text for t in key_tokens(remedy)] == ["timeout", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"]
    remedy = "use MPI with OMPI_MCA_btl_tcp_if_include=eth0"
    assert [t.text for t in key_tokens(remedy)] == ["mpi", "OMPI_MCA_btl_tcp_if_include"]


def test_what_the_printed_remedy_quotes_from_the_log_is_not_the_fix() -> None:
    log = "[rank7]: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=1200000) ran for 1200002 milliseconds"
    printed = "The waiting ranks gave up after 20 min ('Timeout(ms)=1200000'). Dump the stack of the late rank."
    assert judge("raise the process-group timeout", printed, log).verdict == "miss"
    assert judge("raise the process-group timeout", printed + " Raise timeout=.", log).verdict == "fit"
    summary = "A collective timed out (WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=1200000) ran for 1200002"
    assert judge("raise the process-group timeout", summary + " milliseconds)", log).verdict == "miss"


def test_a_token_quoted_in_the_remedys_own_sentence_still_counts() -> None:
    log = "./run.sh\nRuntimeError: CUDA error: invalid device ordinal"
    printed = "Start one process per GPU in the launch command (./run.sh): torchrun --nproc_per_node"
    assert judge("set --nproc_per_node to the GPU count in run.sh", printed, log).verdict == "fit"


def test_a_remedy_with_no_key_token_or_none_is_not_scored() -> None:
    assert judge("none (healthy control)", "anything").verdict == "unscored"
    assert judge("", "anything").verdict == "unscored"
    assert judge("be patient and try again", "anything").verdict == "unscored"


def test_a_long_identifier_is_met_inside_the_longer_name_of_the_same_setting() -> None:
    remedy = "set train_batch_size to a multiple of micro_batch_size x world_size"
    printed = "train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x world size"
    assert judge(remedy, printed).verdict == "fit"


def test_the_report_judges_the_printed_suggestion_and_a_silent_failing_case_misses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks.diagnose_accuracy import print_remedy_report
    from benchmarks.failure_corpus import Case, Outcome

    remedy = "run the containers with --network=host (or expose the ports NCCL uses)"
    right = Case("a", "log", ("network_fault",), remedy=remedy)
    silent = Case("b", "log", ("hang",), remedy="NCCL_NVLS_ENABLE=0")
    healthy = Case("c", "log", ("healthy",), remedy="none")
    out = print_remedy_report(
        "set",
        [
            Outcome(right, "network_fault", [], 0.0, "summary", None, "run them with --network=host"),
            Outcome(silent, "healthy", [], 0.0),
            Outcome(healthy, "healthy", [], 0.0),
        ],
    )
    assert out["per_case"] == {"a": "fit", "b": "miss"}
    printed = capsys.readouterr().out
    assert "REMEDY:  run the containers with --network=host" in printed and "(no failure finding)" in printed
    assert "fit 1, partly 0, miss 1 of 2 scored" in printed and "of those classified right: fit 1/1" in printed
