"""Each remedy row names its class's knobs in the order the confirmed fixes of its threads ran: one test per row
changed, on a real excerpt in tests/data/diagnose_threads/ (README.md there gives the thread and its confirmed
cause) or a corpus case."""

from __future__ import annotations

from pathlib import Path

import pytest

from scope.finding import Finding
from tests.helpers import corpus_log, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _top(tmp_path: Path, name: str) -> Finding:
    finding: Finding = top_failure(tmp_path, (THREADS / name).read_text())
    return finding


def test_an_nccl_internal_error_names_the_release_then_the_topology_files(tmp_path: Path) -> None:
    # NVIDIA/nccl#1726: 'internal error' at ncclCommInitRank; a malformed topology file of the net plugin
    top = _top(tmp_path, "nccl_1726_init_internal_error.log")
    text = top.suggestion
    assert top.kind == "nccl_error" and text.startswith("NCCL returned an internal error: the NCCL release is")
    assert "newer NCCL release" in text and "same version on every node" in text
    assert "NCCL_TOPO_FILE" in text and "NCCL_GRAPH_FILE" in text and "aws-ofi-nccl" in text
    assert text.index("newer NCCL release") < text.index("NCCL_TOPO_FILE")
    assert "failing system call" not in text  # a system error's advice, not an internal error's
    assert "An internal error at communicator init can come from a topology" in text  # stands alone
    assert "other usual cause" not in text


# NVIDIA/nccl#1092's headline: with NCCL 2.18 every network error reads 'internal error' (its maintainer)
NCCL_218_INTERNAL = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, "
    "internal error - please report this issue to the NCCL developers, NCCL version 2.18.1\n"
)


def test_an_internal_error_of_nccl_2_18_gets_the_network_advice_not_the_release(tmp_path: Path) -> None:
    text = top_failure(tmp_path, NCCL_218_INTERNAL).suggestion
    assert text.startswith("NCCL 2.18 reports network errors as internal errors") and "NCCL_SOCKET_IFNAME" in text
    assert "first suspect" not in text and "NCCL_TOPO_FILE" not in text


def test_an_internal_error_of_another_release_at_a_collective_gets_no_topology_advice(tmp_path: Path) -> None:
    # the same line from NCCL 2.14 at a collective: the release first, and no communicator-init topology clause
    text = top_failure(tmp_path, NCCL_218_INTERNAL.replace("2.18.1", "2.14.3")).suggestion
    assert text.startswith("NCCL returned an internal error: the NCCL release is") and "NCCL_TOPO_FILE" not in text


def test_an_internal_error_after_a_peer_crashed_sends_the_user_to_the_peer_and_network_first(tmp_path: Path) -> None:
    # NVIDIA/nccl#795: a remote rank segfaulted; 'Broken pipe' / 'Connection closed by remote peer' then
    # ncclInternalError; its maintainers: the network should not be blamed, the peer is
    text = _top(tmp_path, "nccl_795_peer_crashed_internal_error.log").suggestion
    assert text.startswith("An internal error that comes with a lost peer") and "the rank that failed first" in text
    assert "NCCL_SOCKET_IFNAME" in text and "NCCL_TOPO_FILE" not in text
    assert text.index("the rank that failed first") < text.index("NCCL release")


def test_an_nccl_system_error_keeps_its_own_advice(tmp_path: Path) -> None:
    # the same line with the system error's result: the internal error's topology advice must not appear
    log = (THREADS / "nccl_1726_init_internal_error.log").read_text()
    log = log.replace("internal error", "unhandled system error")
    top = top_failure(tmp_path, log)
    assert "failing system call" in top.suggestion and "NCCL_TOPO_FILE" not in top.suggestion


def test_an_nccl_check_failing_with_a_cuda_error_wants_the_nccl_built_for_that_cuda(tmp_path: Path) -> None:
    # NVIDIA/caffe#492: 'result == ncclSuccess (1 vs. 0) unhandled cuda error' - libnccl2 for another CUDA
    top = _top(tmp_path, "caffe_492_nccl_check_unhandled_cuda.log")
    assert top.kind == "nccl_error"
    assert top.suggestion.startswith("Install the NCCL build made for the CUDA version the framework was built")
    assert "libnccl2=VERSION+cudaX.Y" in top.suggestion and "usual fix" not in top.suggestion


@pytest.mark.shared_data
def test_an_unhandled_cuda_error_inside_nccl_puts_the_node_before_the_nccl_build(tmp_path: Path) -> None:
    # vllm-project/vllm#7896: ncclUnhandledCudaError on one node of a Ray cluster (a faulty node, removed)
    top = top_failure(tmp_path, corpus_log("vllm-project-vllm_7896"))
    text = top.suggestion
    assert top.metrics.get("code") == "nccl_cuda_error"
    assert text.startswith("A CUDA call failed inside NCCL") and "usual fix" not in text
    assert "NCCL build made for the CUDA version" in text and "dmesg" in text and "exclude or drain" in text
    assert text.index("'Cuda failure' WARN") < text.index("dmesg") < text.index("exclude or drain")
    assert text.index("exclude or drain") < text.index("NCCL build made for the CUDA version")


@pytest.mark.shared_data
def test_a_geforce_log_keeps_peer_to_peer_off_rather_than_fixing_acs(tmp_path: Path) -> None:
    # NVIDIA/nccl-tests#117: two GeForce RTX 4090 hang in the first all_reduce; NCCL_P2P_DISABLE=1 was the fix
    text = top_failure(tmp_path, corpus_log("NVIDIA-nccl-tests_117")).suggestion
    assert "NCCL_P2P_DISABLE=1" in text and "fix the path rather than keep P2P off" not in text
    assert "GeForce / consumer cards or a driver known to misreport P2P keep NCCL_P2P_DISABLE=1" in text
    assert text.startswith("This log names GeForce / consumer GPUs") and "keep it if the run passes" in text
    assert text.index("keep it if the run passes") < text.index("disable ACS in the BIOS")


def test_a_timeout_at_the_first_collective_changes_one_setting_per_rerun(tmp_path: Path) -> None:
    # RLHFlow/Online-RLHF#22: the first ALLGATHER timed out; NCCL_P2P_DISABLE=1 with NCCL_IB_DISABLE=1 fixed it -
    # advised one at a time, IB only across nodes, so that a passing rerun names the path
    top = _top(tmp_path, "online-rlhf_22_first_allgather_timeout.log")
    text = top.suggestion
    assert top.kind == "timeout" and "one setting per rerun" in text
    assert "NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1" not in text and "On one node" not in text
    assert "across nodes, NCCL_IB_DISABLE=1 as a rerun of its own" in text
    assert text.index("NCCL_P2P_DISABLE=1") < text.index("NCCL_IB_DISABLE=1")
    assert "ACS" in text and "iommu=pt" in text


def test_a_first_collective_timeout_on_one_named_host_gets_no_infiniband_advice(tmp_path: Path) -> None:
    # the same line from two ranks of one host (the c10d prefix names it): IB is not on the path
    line = (THREADS / "online-rlhf_22_first_allgather_timeout.log").read_text().splitlines()[0]
    init = "gpu-node-1:{p}:{p} [{r}] NCCL INFO comm 0x5f{r} rank {r} nranks 2 cudaDev {r} busId {r}000 - Init COMPLETE"
    log = "".join(init.format(p=100 + r, r=r) + "\n" for r in (0, 1))
    log += "".join(f"[rank{r}]:" + line.replace("Rank 1", f"Rank {r}") + "\n" for r in (0, 1))
    text = top_failure(tmp_path, log).suggestion
    assert "NCCL_P2P_DISABLE=1" in text and "NCCL_IB_DISABLE" not in text


def test_a_download_read_timeout_gets_no_process_group_timeout_advice(tmp_path: Path) -> None:
    # datalab-to/marker#308: huggingface_hub's download timed out; the guess must not sell collective knobs
    line = (
        "ReadTimeout: (ReadTimeoutError(\"HTTPSConnectionPool(host='cdn-lfs-us-1.hf.co', port=443): Read timed out.\n"
    )
    top = top_failure(tmp_path, line)
    assert top.kind == "timeout" and top.suggestion.startswith("Find what timed out - a connection or a download")
    assert "init_process_group" not in top.suggestion and "--ddp_timeout" not in top.suggestion


def test_a_watchdog_timeout_leads_with_the_search_and_the_environment_then_the_usual_causes(tmp_path: Path) -> None:
    # ecmwf/WeatherGenerator#360: collective #52 across nodes, no rank's own error and no late work in the log; an
    # environment differing between nodes was the cause: its check comes before the work / timeout paragraph
    top = _top(tmp_path, "weathergenerator_360_multinode_timeout.log")
    text = top.suggestion
    assert top.kind == "timeout" and text.startswith("Find the rank that never reached this collective")
    assert "init_process_group(timeout=timedelta(...))" in text and "run that work on every rank" in text
    assert text.index("Flight Recorder") < text.index("same torch and NCCL versions") < text.index("own long work")
    assert text.index("same torch and NCCL versions") < text.index("init_process_group(timeout=timedelta(...))")
    assert "/work/ab0995" not in text  # the poster's own path is never knowledge


@pytest.mark.shared_data
def test_an_unreadable_peer_address_asks_for_one_nccl_version_in_words_not_a_quote(tmp_path: Path) -> None:
    # NVIDIA/nccl#1267: 'with family 0' - ranks ran different NCCL versions
    top = top_failure(tmp_path, corpus_log("NVIDIA-nccl_1267"))
    assert top.suggestion.startswith("Install the same NCCL version on every node")
    assert "'NCCL version'" not in top.suggestion


def test_a_stop_at_rendezvous_names_the_master_port_and_each_launchers_flag_first(tmp_path: Path) -> None:
    # RLHFlow/Online-RLHF#11: DeepSpeed's init_distributed lines, then nothing; 'main_process_port: 0' (config)
    top = _top(tmp_path, "online-rlhf_11_deepspeed_init_stops.log")
    text = top.suggestion
    assert top.kind == "hang" and text.startswith("Known causes of a stop here: the master port")
    assert "main_process_port" in text and "--master_port" in text and "EADDRINUSE" in text
    assert text.index("master port") < text.index("never started")


def test_a_stop_at_rendezvous_with_a_real_port_in_the_log_leads_with_the_address(tmp_path: Path) -> None:
    # pytorch/pytorch#52848's shape: the log prints its environment with 'MASTER_PORT': '29500', then stops at
    # rendezvous; port 0 or a busy port (that fails with EADDRINUSE) is not what stopped it
    env = "{'MASTER_ADDR': '148.251.86.243', 'MASTER_PORT': '29500', 'WORLD_SIZE': '2'}\n"
    text = top_failure(tmp_path, env + (THREADS / "online-rlhf_11_deepspeed_init_stops.log").read_text()).suggestion
    assert text.startswith("Known causes of a stop here: MASTER_ADDR:MASTER_PORT not reachable")
    assert "main_process_port" not in text and "ss -ltnp" not in text


def test_a_stop_in_communicator_init_with_one_gpu_per_host_names_no_peer_to_peer(tmp_path: Path) -> None:
    # NVIDIA/nccl#447's shape: two nodes, one GPU each, sockets over eth0, then nothing; the confirmed cause was a
    # driver differing between the nodes - GPU peer-to-peer is not on the path
    init = "node-{h}:21{h}9:21{h}9 [{h}] NCCL INFO {msg}\n"
    log = "".join(
        init.format(h=h, msg=msg)
        for h in (0, 1)
        for msg in (f"Bootstrap : Using [0]eth0:10.0.0.3{h}<0>", "NET/IB : No device found.", "Using network Socket")
    )
    log += "node-0:2109:2250 [0] NCCL INFO Channel 00/02 :    0   1\n" * 4
    text = top_failure(tmp_path, log).suggestion
    assert "build that differs between nodes" in text and "inter-node TCP" in text
    assert "NCCL_P2P_DISABLE" not in text and "ACS" not in text and "=lo on one node" not in text


def test_a_stop_in_communicator_init_names_peer_to_peer_before_the_bootstrap_tcp(tmp_path: Path) -> None:
    # NVIDIA/nccl#417: two GPUs of one VM narrate NCCL init and stop at a P2P/IPC channel
    text = _top(tmp_path, "nccl_417_init_without_host_prefix.log").suggestion
    assert "NCCL_P2P_DISABLE=1" in text and "iommu=pt" in text and "Istio" in text
    assert text.index("NCCL_P2P_DISABLE=1") < text.index("bootstrap's local or inter-node TCP")


def test_a_stop_in_tokenization_names_the_hf_trainers_timeout_knob(tmp_path: Path) -> None:
    # hiyouga/LLaMA-Factory#2656: the tokenizer's progress bar part-way on the main process, then nothing; the
    # bar ('Running tokenizer on dataset') is the HF Trainer scripts': their knob alone (knowledge/timeout_knobs.py)
    text = _top(tmp_path, "llamafactory_2656_tokenizer_part_way.log").suggestion
    assert "--ddp_timeout" in text
    for knob in ("InitProcessGroupKwargs", "DDPStrategy(timeout=", "--distributed-timeout-minutes"):
        assert knob not in text
    assert "save_to_disk" in text  # and the other fix: pre-process once


def test_every_peer_to_peer_stop_gives_the_same_confirm_then_fix_order(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#19425: NCCL init stops in its P2P channel set-up; one sentence for the class
    from scope.analyzers.diagnose.knowledge.remedies import P2P_BLOCKED
    from scope.analyzers.diagnose.reasoning.progress import FIRST_COLLECTIVE_REMEDY

    text = _top(tmp_path, "lightning_19425_init_stops_in_p2p_channels.log").suggestion
    assert P2P_BLOCKED in text and P2P_BLOCKED in FIRST_COLLECTIVE_REMEDY
    assert text.index("NCCL_P2P_DISABLE=1") < text.index("disable ACS in the BIOS") < text.index("iommu=pt")


@pytest.mark.shared_data
def test_a_bus_error_inside_nccl_names_both_container_flags_and_the_shm_switch(tmp_path: Path) -> None:
    # msr-fiddle/pipedream#76: NCCL 'Caught signal 7 (Bus error)' in a container; docker run --shm-size fixed it
    top = top_failure(tmp_path, corpus_log("msr-fiddle-pipedream_76"))
    assert top.kind == "crash"
    for knob in ("--shm-size", "--ipc=host", "NCCL_SHM_DISABLE=1", "emptyDir"):
        assert knob in top.suggestion


def test_an_nccl_error_return_chain_gets_only_its_codes_class_fix(tmp_path: Path) -> None:
    # pytorch/pytorch#37004 cut to its return-chain line ('include/shm.h:41 -> 2'): code 2 is a system call,
    # here /dev/shm; the row quotes the code and names each code's class knobs
    line = next(x for x in (THREADS / "pytorch_37004_shm_not_writable.log").read_text().splitlines() if "-> 2" in x)
    top = top_failure(tmp_path, line + "\n")
    assert top.metrics.get("signature") == "nccl_error_return"
    assert "Code 2 (system)" in top.suggestion and "--shm-size" in top.suggestion
    assert "NCCL_TOPO_FILE" not in top.suggestion and "NCCL build made for" not in top.suggestion


def test_an_nccl_error_return_chain_through_socket_code_names_the_peer_not_the_topology(tmp_path: Path) -> None:
    # modelscope/ms-swift#10183's chain ('misc/socket.cc:81 -> 3'): a peer rank had failed, not the topology
    line = "worker-0:229:558816 [3] NCCL INFO misc/socket.cc:81 -> 3\n"
    top = top_failure(tmp_path, line)
    assert top.metrics.get("signature") == "nccl_error_return"
    assert "the peer that failed first" in top.suggestion and "NCCL_TOPO_FILE" not in top.suggestion
    assert "By its code" not in top.suggestion


def test_a_fingerprint_mismatch_names_the_op_and_the_same_shape_fix_for_a_gather(tmp_path: Path) -> None:
    # xljh0520/JOTR#4: ALLGATHER of [41, ...] on rank 0 against [40, ...] on rank 1 (samples dropped per rank)
    top = _top(tmp_path, "jotr_4_allgather_shape_mismatch.log")
    assert top.kind == "collective_mismatch"
    assert top.suggestion.startswith("Ranks called all_gather with different sizes or types")
    assert "pad each rank's tensor" in top.suggestion and "all_gather_object" in top.suggestion


def test_a_fingerprint_mismatch_of_a_reduction_gets_no_gather_advice(tmp_path: Path) -> None:
    log = (THREADS / "jotr_4_allgather_shape_mismatch.log").read_text().replace("ALLGATHER", "ALLREDUCE")
    top = top_failure(tmp_path, log)
    assert top.suggestion.startswith("Ranks called all_reduce with different") and "pad each" not in top.suggestion


def test_a_timeout_line_no_row_knows_gets_the_timeout_class_order(tmp_path: Path) -> None:
    # axolotl-ai-cloud/axolotl#2684 cut to the TCPStore client's 'waitForInput ... timed out after 1800000ms' line
    # (rank 0 was tokenizing): the guess for a timeout names the work and the timeout knobs before the search
    log = (THREADS / "axolotl_2684_store_wait_during_tokenizing.log").read_text()
    line = next(x for x in log.splitlines() if "waitForInput" in x and "timed out after" in x)
    top = top_failure(tmp_path, line + "\n")
    assert top.kind == "timeout" and top.metrics.get("code") == "unmatched_error"
    text = top.suggestion
    # one line that names no framework: torch's own timeout knob, before the search
    assert "run that work on every rank" in text and "init_process_group(timeout=" in text
    assert "--ddp_timeout" not in text
    assert text.index("init_process_group(timeout=") < text.index("py-spy dump")


def test_a_launcher_summary_with_exit_code_1_asks_for_the_ranks_traceback_and_record(tmp_path: Path) -> None:
    # hiyouga/ChatGLM-Efficient-Tuning#75: torchrun's summary alone, exitcode 1 and error_file <N/A>
    top = _top(tmp_path, "chatglm-efficient-tuning_75_exitcode_1_no_traceback.log")
    assert top.kind == "crash" and top.suggestion.startswith("Exit code 1 is the rank's own error")
    assert "@record" in top.suggestion and "torch.distributed.elastic.multiprocessing.errors" in top.suggestion
    assert "faulthandler" not in top.suggestion  # a crash's advice, not an exception's


def test_a_launcher_summary_with_another_exit_code_promises_no_traceback(tmp_path: Path) -> None:
    # the same summary with exitcode 3 (a real torchrun run of sys.exit(3) prints the same form): no traceback
    # exists and @record writes no error file for a SystemExit, so neither is promised
    log = (THREADS / "chatglm-efficient-tuning_75_exitcode_1_no_traceback.log").read_text()
    top = top_failure(tmp_path, log.replace("exitcode  : 1", "exitcode  : 3"))
    assert top.kind == "crash" and top.suggestion.startswith("Exit code 3 is a status the rank's program chose")
    assert "sys.exit(3)" in top.suggestion and "traceback is in" not in top.suggestion
    assert "@record" not in top.suggestion


@pytest.mark.shared_data
def test_a_collective_timeout_without_a_seqnum_gets_the_group_then_the_timeout_class(tmp_path: Path) -> None:
    # flagos-ai/vllm-plugin-FL#348: a vendor NCCL's 'Timeout 600 seconds has been reached in ncclAllReduce'; the
    # all_reduce ran on the default group instead of the tensor-parallel one
    top = top_failure(tmp_path, corpus_log("flagos-ai-vllm-plugin-FL_pr348"))
    text = top.suggestion
    assert top.kind == "timeout" and "NCCL_TIMEOUT" in text and "init_process_group(timeout=" in text
    assert "--ddp_timeout" not in text  # a vLLM plugin's log: no Trainer in it
    assert "group= argument" in text and text.index("group= argument") < text.index("init_process_group(timeout=")


def test_a_store_timeout_for_the_nccl_id_names_the_logs_frameworks_timeout_knob(tmp_path: Path) -> None:
    # SpongebBob/Finetune-ChatGLM2-6B#13: a rank waited in the store for the NCCL id while the root tokenized
    # ('Running tokenizer on train dataset': the HF Trainer script's bar): the Trainer's knob, not every one
    text = _top(tmp_path, "chatglm2_13_unique_id_store_timeout.log").suggestion
    assert "--ddp_timeout" in text
    assert "Megatron-LM --distributed-timeout-minutes" not in text and "InitProcessGroupKwargs" not in text


def test_nccls_hang_detector_gets_the_shared_peer_to_peer_order(tmp_path: Path) -> None:
    # NCCL's own hang detector line (init.cc, NVIDIA/nccl#257's era): a mismatch first, then peer-to-peer
    from scope.analyzers.diagnose.knowledge.remedies import P2P_BLOCKED

    line = (
        "host:1:1 [0] init.cc:1259 NCCL WARN Your program may be hanging, this may be caused by a collective "
        "mismatch around rank 3. Please check your collective calls at and around this rank."
    )
    text = top_failure(tmp_path, line + "\n").suggestion
    # the line's own advice first, quoted (knowledge/own_advice.py), then scope's order
    assert text.startswith("The error message's own advice: \"Please check your collective calls at and around")
    assert "Then: Compare the collectives of the named rank" in text and P2P_BLOCKED in text


def test_a_stop_in_communicator_init_ends_with_the_rarer_causes_nvlink_and_a_gpu_sharing_layer(tmp_path: Path) -> None:
    # Project-HAMi/HAMi#2641: vLLM's pynccl line, then nothing; HAMi's libvgpu.so deadlocked ncclCommInitRank
    text = _top(tmp_path, "hami_2641_vllm_pynccl_stops.log").suggestion
    assert "CUDA_DISABLE_CONTROL=true" in text and "nvidia-smi nvlink -s" in text
    assert text.index("NCCL_P2P_DISABLE=1") < text.index("NVLink bridge") < text.index("CUDA_DISABLE_CONTROL")
