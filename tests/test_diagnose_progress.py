"""Progress models for silence (analyzers/diagnose/reasoning/progress.py, topology.py): a log that ends inside a stage,
with no error, is a hang in that stage, with that stage's checks; an excerpt marker means the log goes on.

Each model is tested on a real log from ../shared/data/failure_corpus that stops in that stage, and on the
same log cut short by an excerpt marker (no conclusion then).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from benchmarks.failure_corpus import strip_header
from scope.finding import FAILURE_KINDS
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


def _failures(path: Path) -> list:
    return [f for f in diagnose(path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


def _log(name: str) -> str:
    return strip_header(shared_data("failure_corpus", name).read_text())[1]


def _diagnosed(tmp_path: Path, text: str) -> list:
    (tmp_path / "job.log").write_text(text)
    return _failures(tmp_path)


@pytest.mark.parametrize(
    ("case", "phase", "words"),
    [
        # NCCL init: every rank's last line is 'NVLS Bind mem' (NVLS multicast registration never returned)
        ("NVIDIA-nccl-tests_216.txt", "nvls", "NCCL_NVLS_ENABLE=0"),
        # nccl-tests under mpirun --tag-output: banner, bootstrap lines, nothing more (Envoy sidecar ate TCP)
        ("NVIDIA-nccl_1638.txt", "bootstrap", "NCCL_SOCKET_IFNAME"),
        # nccl-tests: rows up to 2 KiB, then silence (P2P on patched RTX 4090 driver)
        ("tinygrad-open-gpu-kernel-modules_45.txt", "benchmark_sizes", "NCCL_P2P_DISABLE=1"),
        # vLLM: NCCL init completes, the progress bar never leaves 0 (ACS / IOMMU)
        ("vllm-project-vllm_9920.txt", "first_step", "ACSCtl"),
    ],
)
def test_a_log_that_ends_inside_a_stage_hangs_in_that_stage(tmp_path: Path, case: str, phase: str, words: str) -> None:
    top = _diagnosed(tmp_path, _log(case))[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == phase, top.summary
    assert words in top.suggestion


@pytest.mark.parametrize(
    "case", ["NVIDIA-nccl-tests_216.txt", "tinygrad-open-gpu-kernel-modules_45.txt", "vllm-project-vllm_9920.txt"]
)
def test_an_excerpt_marker_at_the_end_means_the_log_goes_on(tmp_path: Path, case: str) -> None:
    assert _diagnosed(tmp_path, _log(case).rstrip("\n") + "\n[... cut ...]\n") == []


def test_a_benchmark_that_printed_every_size_is_not_a_hang_without_its_summary(tmp_path: Path) -> None:
    log = _log("tinygrad-open-gpu-kernel-modules_45.txt")
    banner = "# nThread 1 nGpus 1 minBytes 8 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20\n"
    assert _diagnosed(tmp_path, banner + log) == []


def test_a_topology_given_alone_with_pcie_host_bridge_paths_is_a_low_confidence_acs_suspect(tmp_path: Path) -> None:
    top = _diagnosed(tmp_path, _log("NVIDIA-nccl_2079.txt"))[0]
    assert top.kind == "config_error" and top.severity == "warning" and "ACSCtl" in top.suggestion
    nvlink = "        GPU0    GPU1    CPU Affinity\nGPU0     X      NV4     0-63\nGPU1    NV4      X      0-63\n"
    assert _diagnosed(tmp_path, nvlink) == []


def test_a_shortened_quote_keeps_its_decisive_words() -> None:
    from scope.analyzers.diagnose.readers.quote import shorten

    line = (
        "RuntimeError: the communicator for ProcessGroupNCCL on rank 3 could not be created: the library found is "
        "version 2.14.3 and this build of PyTorch was compiled against another one, and the NCCL_PROTO=LL128 "
        "setting requires NCCL 2.19.3 or newer on this GPU."
    )
    short = shorten(line, 160)
    assert len(short) <= 170 and short.endswith("or newer on this GPU.") and "NCCL_PROTO" in short
    assert "2.14.3" in short and shorten("short line", 160) == "short line"


def test_the_accuracy_benchmark_scores_whether_the_suggestion_names_the_remedy() -> None:
    from benchmarks.failure_corpus import Case, Outcome, remedy_actions

    remedy = "disable PCIe ACS (BIOS / setpci on the PCIe switches); NCCL_NET_GDR_LEVEL=0 as a slow workaround"
    assert ("NCCL_NET_GDR_LEVEL",) in remedy_actions(remedy) and ("acs", "acsctl") in remedy_actions(remedy)
    case = Case("x", "", ("config_error",), remedy=remedy)
    assert Outcome(case, "config_error", [], 0.0, "s", None, "check ACSCtl with lspci").remedy_match is True
    assert Outcome(case, "config_error", [], 0.0, "s", None, "Set NCCL_SOCKET_IFNAME").remedy_match is False
    assert Outcome(Case("y", "", ("healthy",), remedy="none needed"), "healthy", [], 0.0).remedy_match is None


BARRIER = (
    "INFO:root:Waiting in store based barrier to initialize process group for rank: {r}, key: "
    "store_based_barrier_key:1 (world_size={w}, worker_count={c}, timeout=0:30:00)"
)


def test_a_store_barrier_that_never_fills_names_the_rank_that_never_came(tmp_path: Path) -> None:
    # as in Lightning-AI/pytorch-lightning#4420: ranks 0-3 and 5-7 wait, 7 of 8 joined
    log = "\n".join(BARRIER.format(r=r, w=8, c=7) for r in (0, 6, 2, 1, 7, 3, 5, 0)) + "\n"
    top = _diagnosed(tmp_path, log)[0]
    assert top.kind == "missing_rank" and top.ranks == [4] and "--nnodes" in top.suggestion
    done = log + "INFO:root:Rank 0: Completed store-based barrier for key:store_based_barrier_key:1 with 8 nodes.\n"
    assert _diagnosed(tmp_path, done) == []


def test_more_workers_than_the_world_size_is_two_jobs_on_one_store(tmp_path: Path) -> None:
    # as in ultralytics/yolov5#4574: world_size=4, worker_count=8
    top = _diagnosed(tmp_path, "\n".join([BARRIER.format(r=0, w=4, c=8)] * 3) + "\n")[0]
    assert top.kind == "config_error" and "MASTER_PORT" in top.suggestion


def test_lightning_members_that_never_printed_are_the_missing_ranks(tmp_path: Path) -> None:
    member = "Initializing distributed: GLOBAL_RANK: {g}, MEMBER: {m}/4"
    log = "\n".join(member.format(g=g, m=g + 1) for g in (0, 1, 3)) + "\n"
    top = _diagnosed(tmp_path, log)[0]
    assert top.kind == "missing_rank" and top.ranks == [2]
    registered = "All distributed processes registered. Starting with 4 processes\n"
    every = log + member.format(g=2, m=3) + "\n" + registered
    first_step = "Epoch 0:  10%|█         | 6/64 [00:00<00:02, 25.15it/s, loss=1.2, v_num=0]\n"
    assert _diagnosed(tmp_path, every + first_step) == []
    # every member printed; ending on the banner (Lightning prints its model summary next) is a stop in DDP's
    # first collective, no missing rank (Lightning#9641)
    stopped = _diagnosed(tmp_path, every)
    assert [f.metrics["code"] for f in stopped] == ["stopped_in_first_collective"]
    # one rank's own file cannot name the others
    assert _diagnosed(tmp_path, member.format(g=1, m=2) + "\n") == []


def test_a_p2p_copy_test_that_stops_at_its_copy_hangs_in_p2p(tmp_path: Path) -> None:
    # CUDA samples simpleP2P as it prints: the copy line, then nothing (ACS / IOMMU on PCIe bridges)
    log = (
        "[./simpleP2P] - Starting...\nChecking for multiple GPUs...\nCUDA-capable device count: 2\n"
        "Checking GPU(s) for support of peer to peer memory access...\n"
        "> Peer access from NVIDIA RTX A6000 (GPU0) -> NVIDIA RTX A6000 (GPU1) : Yes\n"
        "Enabling peer access between GPU0 and GPU1...\nAllocating buffers (64MB on GPU0, GPU1 and CPU Host)...\n"
        "Creating event handles...\ncudaMemcpyPeer / cudaMemcpy between GPU0 and GPU1: "
    )
    top = _diagnosed(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "p2p_copy" and "ACSCtl" in top.suggestion
    assert _diagnosed(tmp_path, log + "13.20GB/s\nPreparing host buffer and memcpy to GPU0...\n") == []


def test_nccl_ranks_that_never_printed_their_communicator_line_are_missing(tmp_path: Path) -> None:
    line = "node{h}:{p}:{p} [{d}] NCCL INFO comm 0x5a{d} rank {r} nranks 8 cudaDev {d} busId 1{d}000 - Init START"
    log = "\n".join(line.format(h=0, p=100 + r, d=r, r=r) for r in range(4)) + "\n"
    top = _diagnosed(tmp_path, log)[0]
    assert top.kind == "missing_rank" and top.ranks == [4, 5, 6, 7]


def test_old_nccl_tests_rows_without_a_root_column_are_rows(tmp_path: Path) -> None:
    # NCCL 2.4-2.10 era table (as NVIDIA/nccl#606 shows it): no root column; rows stop at 4 KiB
    row = "{:>12} {:>13}     float     sum     7.98    0.26    0.26  0e+00     7.97    0.26    0.26  0e+00   "
    rows = "\n".join(row.format(s, s // 4) for s in (8, 16, 2048, 4096)) + "\n"
    # under the run's banner (the log shows the test from its start); rows quoted alone are an excerpt
    banner = "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n"
    top = _diagnosed(tmp_path, banner + rows)[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "benchmark_sizes"
    assert _diagnosed(tmp_path, rows) == []


def test_collectives_enqueued_once_and_never_again_hang_in_the_first(tmp_path: Path) -> None:
    # NCCL_DEBUG_SUBSYS=COLL as in NVIDIA/nccl#997: Init COMPLETE, every rank's opCount 0, then silence
    init = "64:{p}:6{d}0 [{d}] NCCL INFO comm 0x4d{d} rank {d} nranks 2 cudaDev {d} busId {d}5000 - Init COMPLETE"
    coll = (
        "64:{p}:{p} [{d}] NCCL INFO AllReduce: opCount {op} sendbuff 0x7f78 recvbuff 0x7f78 count 1 datatype 1 op 0 "
        "root 0 comm 0x4d{d} [nranks=2] stream 0xb1a7570"
    )
    lines = [init.format(p=200 + d, d=d) for d in range(2)] + [coll.format(p=200 + d, d=d, op=0) for d in range(2)]
    top = _diagnosed(tmp_path, "\n".join(lines) + "\n")[0]
    assert top.kind == "hang" and top.metrics["details"]["phase"] == "first_collective"
    later = lines + [coll.format(p=200 + d, d=d, op=1) for d in range(2)]
    assert _diagnosed(tmp_path, "\n".join(later) + "\n") == []


def test_a_one_node_torchrun_whose_ranks_never_all_printed_names_the_missing(tmp_path: Path) -> None:
    cmd = "$ torchrun --nnodes=1 --nproc_per_node=8 train.py --config llama.yaml\n"
    tagged = "".join(f"[rank{r}]:[titan] 2025-10-15 10:37:01,391 - root - INFO - Building model\n" for r in range(4))
    top = _diagnosed(tmp_path, cmd + tagged)[0]
    assert top.kind == "missing_rank" and top.ranks == [4, 5, 6, 7]
    # a multi-node job's console shows its node's ranks only: no conclusion
    assert _diagnosed(tmp_path, cmd.replace("--nnodes=1", "--nnodes=2") + tagged) == []


def test_mpirun_ranks_whose_tag_never_appears_are_missing(tmp_path: Path) -> None:
    cmd = "mpirun -np 4 --tag-output ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1\n"
    tagged = "".join(
        f"[1,{r}]<stdout>:node1:{100 + r}:{100 + r} [0] NCCL INFO cudaDriverVersion 12040\n" for r in (0, 1)
    )
    top = _diagnosed(tmp_path, cmd + tagged)[0]
    assert top.kind == "missing_rank" and top.ranks == [2, 3]


def test_a_warning_the_run_trained_past_is_no_best_guess(tmp_path: Path) -> None:
    # a real fairseq log (../shared/data/training_logs): an errno 99 connect warning at start, then 10 epochs
    log = shared_data("training_logs", "tianxiexiaozhu77-syngec_bash-english_exp-1.txt").read_text()
    assert _diagnosed(tmp_path, log) == []
    # the same warning as the last thing the run printed is still a guess
    head = "\n".join(ln for ln in log.split("\n") if "epoch" not in ln.lower() and "step" not in ln.lower())
    assert [f.kind for f in _diagnosed(tmp_path, head)][:1] == ["network_fault"]
