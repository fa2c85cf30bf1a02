"""Where a log stopped (the stage model) and the classes of issue 40 on real excerpts.

Corpus excerpts are read from ../shared/data/failure_corpus (never copied); the public threads the corpus
lacks are short excerpts in tests/data/diagnose_threads/ (README.md there gives each one's URL and cause).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge import signals
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from benchmarks.failure_corpus import Case, Outcome
from tests.helpers import corpus_log, diagnose_failures

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


_corpus = corpus_log
_failures = diagnose_failures


# ---- the stage model: one real excerpt that stops in each stage ----------------------------------------


def test_a_log_that_is_only_its_launch_command_stopped_at_launch(tmp_path: Path) -> None:
    log = (THREADS / "nccl-tests_200_command_only.log").read_text()
    assert where_it_stopped(log).stage == "launch"
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["code"] == "stopped_in_launch"
    assert "only the command" in top.summary and "If the job is still running, it is stuck in launch" in top.summary
    assert "OFED" in top.suggestion and "ucx_info" in top.suggestion  # the stage's known cause (HPC-X vs OFED)


def test_a_launch_then_one_line_of_the_job_and_silence_stopped_in_rendezvous(tmp_path: Path) -> None:
    # the launch written as `python3 .../torch/distributed/launch.py` after `export X=Y ;` statements
    log = (THREADS / "pytorch_52848_launch_then_silence.log").read_text()
    assert where_it_stopped(log).stage == "launch"
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["confidence"] == "low"
    assert "1 line after the launch" in top.summary and "stuck in rendezvous" in top.summary


def test_nccl_init_quoted_without_its_host_prefix_stopped_in_comm_init(tmp_path: Path) -> None:
    # '[0] NCCL INFO Bootstrap ...' and '[1] ...': each device's bootstrap line stands for its process
    log = (THREADS / "nccl_417_init_without_host_prefix.log").read_text()
    assert where_it_stopped(log).stage == "comm_init"
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and "stuck in communicator init" in top.summary


def test_one_nccl_process_line_prefix_less_is_still_a_healthy_snippet(tmp_path: Path) -> None:
    # one device's bootstrap alone is how a healthy run's NCCL lines are often quoted: no stop
    log = "[0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.1<0>\n[0] NCCL INFO Channel 00/02 :    0   1\n"
    assert not _failures(tmp_path, log)


@pytest.mark.shared_data
def test_a_store_barrier_still_waiting_before_a_cut_stopped_in_rendezvous(tmp_path: Path) -> None:
    log = _corpus("Lightning-AI-pytorch-lightning_4420")
    stop = where_it_stopped(log)
    assert stop.stage == "rendezvous" and stop.cut
    top = _failures(tmp_path, log)[0]  # every rank printed its wait twice: the cut hides no completion
    assert top.kind == "missing_rank" and top.ranks == [4] and "rank 4 never started" in top.summary


@pytest.mark.shared_data
def test_a_log_ending_in_the_middle_of_nccl_init_stopped_in_comm_init(tmp_path: Path) -> None:
    log = _corpus("NVIDIA-nccl_447")
    assert where_it_stopped(log).stage == "comm_init"
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["confidence"] == "low"
    assert "If the job is still running, it is stuck in communicator init" in top.summary
    assert "driver" in top.suggestion  # a driver / CUDA / NCCL build that differs between nodes


@pytest.mark.shared_data
def test_an_nccl1_table_header_with_no_row_stopped_in_the_first_collective(tmp_path: Path) -> None:
    log = _corpus("NVIDIA-nccl_104")  # NCCL 1.x tests: no '#' before the header, quoted with '>'
    assert where_it_stopped(log).stage == "first_collective"
    top = _failures(tmp_path, log)[0]
    assert top.kind == "hang" and "first collective" in top.summary and "ACSCtl" in top.suggestion


@pytest.mark.shared_data
def test_a_healthy_log_cut_during_training_stopped_in_steps_and_is_no_failure(tmp_path: Path) -> None:
    log = _corpus("pytorch-torchtitan_pr3393")
    stop = where_it_stopped(log)
    assert stop.stage == "steps" and not stop.clean
    assert _failures(tmp_path, log) == []


@pytest.mark.shared_data
def test_a_log_whose_last_stage_line_is_an_evaluation_stopped_in_evaluation() -> None:
    assert where_it_stopped(_corpus("cfzd-Ultra-Fast-Lane-Detection-v2_119")).stage == "evaluation"


def test_a_log_ending_as_a_save_begins_stopped_in_checkpoint() -> None:
    # the first line of the accelerate#2000 log: where the job sat for 80 minutes before the watchdog fired
    first = (THREADS / "accelerate_2000_fsdp_save_timeout.log").read_text().splitlines()[0]
    stop = where_it_stopped(first + "\n")
    assert stop.stage == "checkpoint" and not stop.ends and stop.emitter == "frameworks"


@pytest.mark.shared_data
def test_a_benchmark_that_printed_its_summary_ended_cleanly(tmp_path: Path) -> None:
    log = _corpus("NVIDIA-nccl-tests_119")
    stop = where_it_stopped(log)
    assert stop.stage == "exit" and stop.clean
    assert _failures(tmp_path, log) == []


# ---- the classes of issue 40 ---------------------------------------------------------------------------


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("case", "work", "words"),
    [
        ("hiyouga-LlamaFactory_2424", "preprocessing", ("ddp_timeout", "Pre-process once")),
        ("cfzd-Ultra-Fast-Lane-Detection-v2_119", "evaluation", ("Run evaluation on every rank", "timeout")),
        ("IGNF-myria3d_123", "preprocessing", ("single-process run", "timeout")),
    ],
)
def test_a_timeout_is_explained_by_what_the_late_rank_was_doing(
    tmp_path: Path, case: str, work: str, words: tuple[str, ...]
) -> None:
    top = _failures(tmp_path, _corpus(case))[0]
    assert top.kind == "timeout", top.summary  # myria3d: the SLURM cancel after the timeouts is their teardown
    assert top.metrics["late_work"]["work"] == work and "The timeout is the symptom" in top.summary
    assert all(w in top.suggestion for w in words) and "Find the rank" not in top.suggestion


def test_a_timeout_after_a_save_on_the_main_process_names_the_save(tmp_path: Path) -> None:
    top = _failures(tmp_path, (THREADS / "accelerate_2000_fsdp_save_timeout.log").read_text())[0]
    assert top.kind == "timeout" and top.metrics["late_work"]["work"] == "checkpoint"
    assert "Raise the process-group timeout" in top.suggestion and "every rank" in top.suggestion
    assert "Find the rank" not in top.suggestion


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("failed (exitcode: -7) local_rank: 0 (pid: 5275) of binary: /usr/bin/python", "SIGBUS"),
        ("[launch.py:315:sigkill_handler] ... exits with return code = -9", "SIGKILL"),
        ("srun: error: node7: task 5: Exited with exit code 139", "SIGSEGV"),
        ("APPLICATION TERMINATED WITH THE EXIT STRING: Bus error (signal 7)", "SIGBUS"),
        ("command terminated with exit code 134", "SIGABRT"),
    ],
)
def test_exit_statuses_of_every_launcher_name_their_signal(line: str, name: str) -> None:
    found = signals.status_in_line(line)
    assert found is not None and found[1].name == name and found[1].check


def test_a_sigbus_exit_as_the_only_word_is_the_containers_dev_shm(tmp_path: Path) -> None:
    # torchrun's own report, in the line format of NVIDIA/Megatron-LM#516 (tests/data/diagnose_threads/README.md)
    log = (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 (pid: 5275) of "
        "binary: /usr/bin/python\n"
    )
    top = _failures(tmp_path, log)[0]
    assert top.kind == "config_error" and "SIGBUS" in top.summary and "--shm-size" in top.suggestion


@pytest.mark.shared_data
def test_an_illegal_access_after_an_ib_completion_error_is_its_consequence(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(_corpus("NVIDIA-nccl-tests_24"))
    findings = diagnose(tmp_path).findings
    top = findings[0]
    assert top.kind == "network_fault" and top.metrics["code"] == "nccl_ib_completion_error"
    assert "NCCL_IB_GID_INDEX" in top.suggestion  # error 12 at once on RoCE: the GID index
    illegal = next(f for f in findings if "illegal memory access" in f.summary)
    assert illegal.caused_by == top.id and illegal.id in top.explains
    assert "A consequence of the earlier error" in illegal.summary


def test_benign_plugin_and_libibverbs_lines_of_a_healthy_run_are_no_failure(tmp_path: Path) -> None:
    assert _failures(tmp_path, (THREADS / "nccl-tests_82_healthy_sockets.log").read_text()) == []


@pytest.mark.shared_data
def test_p2p_slower_than_host_staged_copies_is_the_failure(tmp_path: Path) -> None:
    top = _failures(tmp_path, _corpus("stas00-ml-engineering_1"))[0]
    assert top.kind == "config_error" and top.metrics["code"] == "p2p_slower_than_host"
    assert top.metrics["details"]["p2p_gbps"] < 3 < 10 < top.metrics["details"]["staged_gbps"]
    assert "iommu" in top.suggestion.lower() and "ACSCtl" in top.suggestion


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("NVIDIA-Megatron-LM_878", "shm_semaphore_no_space", ("--shm-size", "/dev/shm")),
        ("databrickslabs-dolly_139", "checkpoint_disk_full", ("checkpoint volume", "df -h")),
        ("h2oai-h2o-llmstudio_214", "checkpoint_disk_full", ("checkpoint volume",)),
        ("NVIDIA-nccl_1240", "nccl_topology_error", ("NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml",)),
    ],
)
def test_the_remedy_quotes_the_evidence_and_fits_the_cause(
    tmp_path: Path, case: str, code: str, words: tuple[str, ...]
) -> None:
    top = _failures(tmp_path, _corpus(case))[0]
    assert top.metrics["code"] == code
    assert all(w in top.suggestion for w in words), top.suggestion
    assert not top.suggestion.startswith("Fix the exception")


def test_a_crash_after_training_finished_says_so_and_where_the_stack_is(tmp_path: Path) -> None:
    top = _failures(tmp_path, (THREADS / "deepspeech_528_segfault_after_training.log").read_text())[0]
    assert top.kind == "crash" and top.summary.startswith("Training finished (job.log:3")
    assert "at exit" in top.summary and "SIGSEGV" in top.summary
    assert top.metrics["after_training"]["finished"] == "job.log:3"
    assert "no stack" in top.suggestion and "destroy_process_group" in top.suggestion


def test_remedy_fit_needs_every_group_of_the_cases_row() -> None:
    case = Case("NVIDIA-nccl_1240", "", ("config_error",))
    topo = Outcome(case, "config_error", [], 0.0, "x", None, "check NCCL_TOPO_FILE")
    graph = Outcome(case, "config_error", [], 0.0, "x", None, "unset NCCL_GRAPH_FILE")
    assert topo.remedy_fit is False and graph.remedy_fit is True
    two = Case("huggingface-accelerate_314", "", ("timeout",))
    assert Outcome(two, "timeout", [], 0.0, "", None, "raise the timeout").remedy_fit is False
    assert Outcome(two, "timeout", [], 0.0, "", None, "raise the timeout or pre-process once").remedy_fit is True
    assert Outcome(Case("x", "", ("healthy",)), "healthy", [], 0.0).remedy_fit is None


def test_an_allocator_failure_after_a_peer_closed_is_no_memory_problem(tmp_path: Path) -> None:
    top = _failures(tmp_path, (THREADS / "nccl_844_rem_allocator.log").read_text())[0]
    assert top.kind == "nccl_error" and top.metrics["code"] == "nccl_rem_allocator_failed"
    assert "newer NCCL" in top.suggestion and "Not a memory problem" in top.suggestion
    assert "NCCL_SOCKET_IFNAME" not in top.suggestion and "batch size or sequence" not in top.suggestion


def test_every_rank_printing_its_start_up_line_and_nothing_after_is_a_stop(tmp_path: Path) -> None:
    # the shape of the 64-rank gloo start-up of issue 40 (no public thread of it found: a constructed console)
    lines = ["torchrun --nnodes 8 --nproc_per_node 8 train.py"]
    lines += [f"[rank{r}]: rank {r} initialized the gloo process group, world size 64" for r in range(64)]
    top = _failures(tmp_path, "\n".join(lines) + "\n")[0]
    assert top.kind == "hang" and "64 ranks each printing the same start-up line" in top.summary
    # a later line of any kind is progress past it: no stop
    assert _failures(tmp_path, "\n".join([*lines, "[rank0]: step: 1 loss 2.3"]) + "\n") == []


@pytest.mark.shared_data
def test_every_diagnosis_says_where_the_log_stopped(tmp_path: Path) -> None:
    from scope.render.diagnosis import render_diagnosis

    (tmp_path / "job.log").write_text(_corpus("pytorch-torchtitan_pr3393"))
    analysis = diagnose(tmp_path)
    stopped = analysis.sections["stopped"]
    assert stopped["stage"] == "steps" and stopped["file"] == "job.log" and not stopped["clean_end"]
    text = render_diagnosis(analysis, width=200)
    assert "No failure found. The log ends in steps (job.log:" in text and "if the job is still running" in text
    (tmp_path / "job.log").write_text(_corpus("NVIDIA-nccl-tests_119"))
    assert "The log ends cleanly (exit" in render_diagnosis(diagnose(tmp_path), width=200)


def test_the_accuracy_benchmark_prints_remedy_fit_per_case(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.diagnose_accuracy import print_scores
    from benchmarks.failure_corpus import Scores

    case = Case("NVIDIA-nccl_1240", "", ("config_error",))
    scores = Scores([Outcome(case, "config_error", [], 0.01, "x", None, "check NCCL_TOPO_FILE")])
    print_scores("t", scores, verbose=True)
    out = capsys.readouterr().out
    assert "remedy fit (benchmarks/remedy_expectations.py, every failing case): 0/1" in out
    assert "NVIDIA-nccl_1240: expected config_error got config_error remedy does not fit" in out
    assert "remedy unfit NVIDIA-nccl_1240: needs NCCL_GRAPH_FILE" in out
    assert scores.to_dict()["remedy_fit_per_case"] == {"NVIDIA-nccl_1240": False}


# ---- IB asked for, sockets used ------------------------------------------------------------------------

_FALLBACK = (THREADS / "llamafactory_6111_ib_asked_socket_used.log").read_text()


def test_ib_asked_for_and_sockets_used_is_a_network_fault(tmp_path: Path) -> None:
    top = _failures(tmp_path, _FALLBACK)[0]
    assert top.kind == "network_fault" and top.metrics["code"] == "nccl_ib_requested_socket_used"
    assert "NCCL_IB_HCA set to mlx5_0:1" in top.summary and "eth0" in top.summary
    assert "ibv_devices" in top.suggestion and "Using network IB" in top.suggestion


def test_sockets_without_ib_asked_for_or_with_ib_found_are_no_failure(tmp_path: Path) -> None:
    not_asked = "\n".join(ln for ln in _FALLBACK.splitlines() if "set" not in ln)
    assert _failures(tmp_path, not_asked) == []
    found = _FALLBACK.replace("NET/IB : No device found.", "NET/IB : Using [0]mlx5_0:1/IB")
    assert _failures(tmp_path, found.replace("Using network Socket", "Using network IB")) == []


# ---- the remedy for the class the log shows (threads scored before any change: issue 40's fresh set) -------


@pytest.mark.parametrize(
    ("excerpt", "code", "words"),
    [
        (
            "deepspeed_3810_zero_world_size",
            "deepspeed_zero_checkpoint_world_size",
            ("32 data-parallel", "128", "universal"),
        ),
        ("fambench_103_ep_not_divisible", "parallel_size_not_divisible", ("4 is not divisible by 8", "ep_size")),
        ("pytorch_37004_shm_not_writable", "shm_not_writable", ("chmod 1777 /dev/shm",)),
        ("nccl_799_modify_qp_no_device", "ib_qp_connect_failed", ("NCCL_IB_HCA=^", "NCCL_IB_GID_INDEX")),
        ("bigscience_tr8b-104B-lr-resume-mismatch", "megatron_scheduler_mismatch", ("--override-lr-scheduler",)),
        ("refdiff_2_param_strides", "ddp_param_layout_mismatch", ("torch / CUDA build", "parameters())[182]")),
    ],
)
def test_the_remedy_fits_the_class_the_excerpt_shows(
    tmp_path: Path, excerpt: str, code: str, words: tuple[str, ...]
) -> None:
    top = _failures(tmp_path, (THREADS / f"{excerpt}.log").read_text())[0]
    assert top.metrics["code"] == code, top.summary
    assert all(w in top.suggestion for w in words), top.suggestion


def test_a_megatron_batch_division_is_not_taken_for_a_parallel_size(tmp_path: Path) -> None:
    line = (
        "AssertionError: global batch size (30) is not divisible by micro batch size (4) times data parallel size (2)"
    )
    assert _failures(tmp_path, line)[0].metrics["code"] == "megatron_batch_not_divisible"


def test_a_timeout_while_rank_0_scans_the_dataset_is_the_timeout_not_the_watchdog_abort(tmp_path: Path) -> None:
    # torch < 2.2's watchdog ends the process with a std::runtime_error; with its what() cut off, the bare
    # 'terminate called' line is the teardown of the timeouts above it, not a crash of its own
    top = _failures(tmp_path, (THREADS / "yolov5_4400_cache_scan_timeout.log").read_text())[0]
    assert top.kind == "timeout", top.summary
    assert "pre-processing a dataset" in top.summary and "images and labels" in top.summary
    assert "raise the process-group timeout" in top.suggestion


def test_a_bare_runtime_error_abort_without_a_timeout_stays_a_crash(tmp_path: Path) -> None:
    log = "step 3 loss 2.1\nterminate called after throwing an instance of 'std::runtime_error'\n"
    assert _failures(tmp_path, log)[0].kind == "crash"


def test_internode_busbw_without_rdma_on_gh200_nodes_is_a_network_fault(tmp_path: Path) -> None:
    top = _failures(tmp_path, (THREADS / "cscs_gh200_allreduce_cxi_hook_off.log").read_text())[0]
    assert top.kind == "network_fault" and top.metrics["code"] == "internode_busbw_without_rdma"
    assert "2 nodes" in top.summary and "5.5 GB/s" in top.summary
    assert "Using network" in top.suggestion and "libfabric" in top.suggestion
    assert _failures(tmp_path, (THREADS / "cscs_gh200_allreduce_reference.log").read_text()) == []


def test_a_few_gb_s_between_ethernet_v100_hosts_is_healthy(tmp_path: Path) -> None:
    # the GPU class decides: PCIe cloud GPUs on plain Ethernet give a few GB/s when healthy
    assert _failures(tmp_path, (THREADS / "nccl-tests_82_healthy_sockets.log").read_text()) == []
    gh200 = (THREADS / "cscs_gh200_allreduce_cxi_hook_off.log").read_text()
    one_node = re.sub(r"on\s+nid\d+", "on  nid005471", gh200)
    assert _failures(tmp_path, one_node) == []


@pytest.mark.parametrize(
    ("excerpt", "kind", "code", "words"),
    [
        (
            "bigscience_jz-slurm-broken-network-node",
            "network_fault",
            "nccl_socket_connect",
            ("getent hosts", "--exclude"),
        ),
        ("bigscience_tr11-176B-2022-03-21-gpu-crash", "hardware_fault", "cuda_unknown_error", ("Xid", "drain")),
        ("bigscience_tr1-13B-faulty-node-relaunch-oom", "oom", "cuda_oom_before_training", ("Not the batch size",)),
    ],
)
def test_the_cause_a_training_team_confirmed_outranks_its_symptom(
    tmp_path: Path, excerpt: str, kind: str, code: str, words: tuple[str, ...]
) -> None:
    top = _failures(tmp_path, (THREADS / f"{excerpt}.log").read_text())[0]
    assert (top.kind, top.metrics["code"]) == (kind, code), top.summary
    assert all(w in top.suggestion for w in words), top.suggestion


def test_an_oom_in_a_training_step_keeps_the_batch_remedy(tmp_path: Path) -> None:
    log = 'step 12 loss 2.3\n  File "train.py", line 80, in forward\nRuntimeError: CUDA error: out of memory\n'
    top = _failures(tmp_path, log)[0]
    assert top.metrics["code"] == "cuda_oom" and "micro-batch" in top.suggestion


def test_a_store_timeout_waiting_for_the_nccl_id_is_a_timeout_not_a_stop(tmp_path: Path) -> None:
    # the log also names tokenization: the timeout line, not a pre-processing stop, is the finding
    top = _failures(tmp_path, (THREADS / "chatglm2_13_unique_id_store_timeout.log").read_text())[0]
    assert (top.kind, top.metrics["code"]) == ("timeout", "nccl_unique_id_store_timeout"), top.summary
    assert "raise the process-group timeout" in top.suggestion


def test_ib_asked_for_on_a_single_node_job_is_no_failure(tmp_path: Path) -> None:
    # NCCL prints 'No device found' and 'Using network Socket' on one node too, where it never uses the network
    p2p = (
        "[0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n[1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n"
    )
    assert _failures(tmp_path, _FALLBACK + p2p) == []
    assert _failures(tmp_path, _FALLBACK + "[0] NCCL INFO comm 0x5 rank 0 nRanks 2 nNodes 1 localRanks 2\n") == []
    net = "[0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0\n"
    assert _failures(tmp_path, _FALLBACK + net)[0].metrics["code"] == "nccl_ib_requested_socket_used"


def test_a_division_a_log_mentions_is_not_a_parallel_size_error(tmp_path: Path) -> None:
    log = "WARNING dataset: number of samples 10001 is not divisible by 8\nstep 10 loss 2.0\nTraining completed\n"
    assert all(f.metrics.get("code") != "parallel_size_not_divisible" for f in _failures(tmp_path, log))


def test_an_oom_in_a_barrier_during_training_keeps_the_batch_remedy(tmp_path: Path) -> None:
    log = (
        " iteration      200/ 1000 | elapsed time per iteration (ms): 900.1\n"
        '  File "megatron/checkpointing.py", line 210, in save_checkpoint\n'
        "    torch.distributed.barrier()\n"
        '  File "torch/distributed/distributed_c10d.py", line 2420, in barrier\n'
        "RuntimeError: CUDA error: out of memory\n"
    )
    assert _failures(tmp_path, log)[0].metrics["code"] == "cuda_oom"


def test_a_stop_finding_says_it_rests_on_where_the_log_stops(tmp_path: Path) -> None:
    top = _failures(tmp_path, (THREADS / "nccl_417_init_without_host_prefix.log").read_text())[0]
    assert top.summary.startswith("Best guess, from where the log stops: The log ends in communicator init")
    assert "no known signature" not in top.summary
