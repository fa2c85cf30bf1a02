"""Two classes of the ninth never-seen set: NCCL's own topology failures (an NCCL bug, fixed by a release, not the
user's PCI view) and Open MPI's runtime messages (wire-up, daemons, its signal handler's block, variables not
exported with -x). Each on lines NCCL or Open MPI print (their format strings, knowledge/nccl_warns.py and the
sources knowledge/open_mpi.py names) or short excerpts of the public threads named beside them."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.knowledge.nccl_own_topology import own_topology_failure

from tests.helpers import corpus_log, diagnose_failures, top_failure

# NCCL 2.25 / 2.26's NET id fallback (NVIDIA/nccl#1748): graph/search.cc's recovered WARN, graph/topo.h's WARN
# (which returns ncclInternalError) and c10d's report of that internal error, as NCCL and torch print them.
NET_ID = (
    "node1:100:200 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple "
    "order\n"
    "node1:100:200 [0] graph/topo.h:230 NCCL WARN Could not find NET with id 0\n"
    "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:3376, internal error - please report this issue to the NCCL developers, NCCL version "
    "2.26.2\n"
)


def test_nccl_net_id_fallback_is_an_nccl_bug_fixed_by_a_release(tmp_path: Path) -> None:
    found = top_failure(tmp_path, NET_ID)
    assert found.kind == "nccl_error"
    # the release the log runs and the one that fixed it, not the PCI view
    assert "2.26.2" in found.suggestion and "2.27" in found.suggestion
    assert "nccl/issues/1748" in found.suggestion and "PCI" not in found.suggestion


def test_a_topology_file_the_user_set_stays_the_first_suspect(tmp_path: Path) -> None:
    log = "node1:100:100 [0] NCCL INFO NCCL_TOPO_FILE set by environment to /opt/topo/ndv4.xml\n" + NET_ID
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error"
    assert "NCCL_TOPO_FILE=/opt/topo/ndv4.xml" in found.suggestion


def test_a_net_plugin_that_hands_nccl_its_topology_gets_one_consistent_fix(tmp_path: Path) -> None:
    # review log D: aws-ofi-nccl loaded; its topology is the first suspect, and nothing then calls the failure
    # NCCL's own bug "not the node's set-up"
    log = "node1:100:200 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v7)\n" + NET_ID
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "aws-ofi-nccl" in found.suggestion
    assert "not the node's set-up" not in found.suggestion and "upgrade to NCCL 2.27" not in found.suggestion


def test_a_log_already_past_the_fixing_release_is_told_to_report_a_regression(tmp_path: Path) -> None:
    # review log E: NCCL 2.28.3 is past 2.27; "upgrade to 2.27" would send the user backwards
    found = top_failure(tmp_path, NET_ID.replace("2.26.2", "2.28.3"))
    assert found.kind == "nccl_error" and "upgrade to NCCL 2.27" not in found.suggestion
    assert "already runs NCCL 2.28.3" in found.suggestion and "github.com/NVIDIA/nccl/issues" in found.suggestion


def test_nccls_own_dictionary_failing_is_its_bug_and_its_later_fallback_is_no_failure(tmp_path: Path) -> None:
    # graph/xml.h kvConvertToStr: WARN then ncclInternalError (v2.18-v2.28); NCCL 2.6's kvConvertToInt did the
    # same (NVIDIA/nccl#326)
    warn = "node1:100:200 [0] graph/xml.h:102 NCCL WARN KV Convert to str : could not find value 7 in dictionary\n"
    found = top_failure(tmp_path, warn)
    assert found.kind == "nccl_error" and "newer NCCL release" in found.suggestion
    # the later releases' INFO line goes on with a default (NVIDIA/nccl-tests#233)
    info = (
        "iv-yd9wibvbpc5i3z3c67ow:1539966:1539989 [1] NCCL INFO KV Convert to int : could not find value of "
        "'0x060000' in dictionary, falling back to 1\n"
    )
    assert own_topology_failure(info) is None
    assert diagnose_failures(tmp_path, info) == []


def test_a_topology_warn_of_the_users_view_stays_a_configuration_error(tmp_path: Path) -> None:
    # graph/xml.cc: the node's PCI view (a VM's vmbus path), NCCL's table kind config_error (NVIDIA/nccl#573)
    line = (
        "bfclient02:14681:14750 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
        "/sys/class/pci_bus/0000:0d/../../0000:0d:00.0\n"
        "bfclient02:14681:14750 [0] graph/xml.cc:999 NCCL WARN Attribute busid of node nic not found\n"
    )
    assert top_failure(tmp_path, line).kind != "nccl_error"


def test_internal_errors_of_the_corpus_keep_their_causes(tmp_path: Path) -> None:
    # an interface name missing on one host (nccl-tests#219) and mixed NCCL versions (nccl#1267): both end in
    # 'internal error - please report', neither is a topology bug
    assert top_failure(tmp_path, corpus_log("NVIDIA-nccl-tests_219")).kind == "config_error"
    assert top_failure(tmp_path, corpus_log("NVIDIA-nccl_1267")).kind in ("config_error", "nccl_error")
    assert "1748" not in top_failure(tmp_path, corpus_log("NVIDIA-nccl_1267")).suggestion


# ---- Open MPI ------------------------------------------------------------------------------------------------

# https://github.com/NVIDIA/nccl/issues/291 (a segfault in libnccl.so.2, an NCCL bug in graph/topo.cc)
OMPI_SEGV = """\
[tb2b03210:78142] *** Process received signal ***
[tb2b03210:78142] Signal: Segmentation fault (11)
[tb2b03210:78142] Signal code: Address not mapped (1)
[tb2b03210:78142] Failing at address: 0x8
[tb2b03210:78142] [ 0] /lib64/libpthread.so.0(+0x115d0)[0x7f8eaaf0e5d0]
[tb2b03210:78142] [ 1] /usr/local/cuda-10.0/targets/x86_64-linux/lib/libnccl.so.2(+0x3533c)[0x7f8eab35933c]
[tb2b03210:78142] [ 2] /usr/local/cuda-10.0/targets/x86_64-linux/lib/libnccl.so.2(+0x2508e)[0x7f8eab34908e]
[tb2b03210:78142] [ 7] /lib64/libpthread.so.0(+0x76ca)[0x7f8eaaf046ca]
[tb2b03210:78142] [ 8] /lib64/libc.so.6(clone+0x5f)[0x7f8eaa213edf]
"""


def test_open_mpis_signal_block_with_nccl_frames_is_an_nccl_crash_naming_the_library(tmp_path: Path) -> None:
    found = top_failure(tmp_path, OMPI_SEGV)
    assert found.kind == "nccl_error"
    assert "signal 11 (Segmentation fault)" in found.summary and "libnccl.so.2" in found.summary
    assert "newer NCCL release" in found.suggestion
    # the same block with no NCCL frame is a crash of the program
    other = "\n".join(line for line in OMPI_SEGV.split("\n") if "libnccl" not in line)
    plain = top_failure(tmp_path, other)
    assert plain.kind == "crash" and "libnccl" not in plain.summary
    # cut right after the handler's first line: still a process that died of a signal
    cut = top_failure(tmp_path, OMPI_SEGV.split("\n", 1)[0] + "\n")
    assert cut.kind == "crash" and "signal" in cut.summary


def test_a_fault_in_the_cuda_driver_below_nccl_is_the_drivers_not_nccls(tmp_path: Path) -> None:
    # review log O: the handler's frame, then libcuda.so.1 faulting, called from libnccl.so.2
    driver = OMPI_SEGV.replace(
        "[tb2b03210:78142] [ 1] /usr/local/cuda-10.0/targets/x86_64-linux/lib/libnccl.so.2(+0x3533c)[0x7f8eab35933c]\n",
        "[tb2b03210:78142] [ 1] /lib64/libcuda.so.1(+0x2a1b3c)[0x7f8e9b2a1b3c]\n"
        "[tb2b03210:78142] [ 2] /usr/local/cuda-10.0/targets/x86_64-linux/lib/libnccl.so.2(+0x3533c)[0x7f8eab35933c]\n",
    )
    found = top_failure(tmp_path, driver)
    assert found.kind == "crash" and "inside libcuda.so.1" in found.summary and "libnccl" not in found.summary


def test_ucx_and_open_mpi_handlers_read_the_same_fault_the_same_way(tmp_path: Path) -> None:
    # NVIDIA/nccl#1996's UCX block (libucs handler frames, then libnccl.so) and Open MPI's block above: both a
    # segfault inside NCCL, one kind for the one fact
    lines = corpus_log("NVIDIA-nccl_1996").split("\n")
    start = next(i for i, ln in enumerate(lines) if "Caught signal 11" in ln)
    ucx = "\n".join(lines[start : start + 11]) + "\n"
    assert "Caught signal 11" in ucx and "libucs" in ucx
    from_ucx, from_ompi = top_failure(tmp_path, ucx), top_failure(tmp_path, OMPI_SEGV)
    assert from_ucx.kind == from_ompi.kind == "nccl_error"
    assert "inside libnccl.so" in from_ucx.summary and "inside libnccl.so.2" in from_ompi.summary


def test_open_mpis_tcp_wire_up_failure_names_the_interfaces_to_pin(tmp_path: Path) -> None:
    # the help text of ORTE / PRRTE oob_tcp_connection.c, as Open MPI users posted it (Open MPI 1.8.4)
    log = (
        "------------------------------------------------------------\n"
        "A process or daemon was unable to complete a TCP connection\n"
        "to another process:\n"
        "  Local host:    fehg-node-0\n"
        "  Remote host:   10.104.5.40\n"
        "This is usually caused by a firewall on the remote host. Please\n"
        "check that any firewall (e.g., iptables) has been disabled and\n"
        "try again.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "network_fault"
    assert "oob_tcp_if_include" in found.suggestion and "btl_tcp_if_include" in found.suggestion


def test_open_mpis_other_wire_up_messages_are_configuration(tmp_path: Path) -> None:
    # https://github.com/jbornschein/mpi4py-examples/issues/12 (fixed with --mca btl_tcp_if_include)
    ident = (
        "[pi01][[24145,1],0][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_recv_connect_ack] received unexpected "
        "process identifier [[24145,1],3]\n"
    )
    found = top_failure(tmp_path, ident)
    assert found.kind == "config_error" and "btl_tcp_if_include" in found.suggestion
    # orte/mca/plm/base/help-plm-base.txt after 'bash: orted: command not found'
    daemons = "bash: orted: command not found\nORTE was unable to reliably start one or more daemons.\n"
    found = top_failure(tmp_path, daemons)
    assert found.kind == "config_error" and "--prefix" in found.suggestion


# (settings mpirun does not forward: tests/test_diagnose_stop_stages.py)


# ---- a third class: CUDA IPC refused by the kernel's ptrace policy ---------------------------------------------


def test_cuda_ipc_refused_by_ptrace_scope_names_the_sysctl_and_the_capability(tmp_path: Path) -> None:
    # https://github.com/pytorch/pytorch/issues/165685 (expandable_segments:True on the sender, in a container)
    log = (
        '  File "/usr/local/lib/python3.12/dist-packages/torch/multiprocessing/reductions.py", line 181, in '
        "rebuild_cuda_tensor\n"
        "RuntimeError: pidfd_getfd: Operation not permitted\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error"
    assert "kernel.yama.ptrace_scope=0" in found.suggestion and "SYS_PTRACE" in found.suggestion


# ---- a fourth class: a launcher's option written after the script -----------------------------------------------


def test_a_launchers_option_after_the_script_is_put_before_it(tmp_path: Path) -> None:
    # https://github.com/rosinality/ocr-pytorch/issues/1 ("use python -m torch.distributed.launch train.py")
    found = top_failure(
        tmp_path, "train.py: error: unrecognized arguments: -m torch.distributed.launch --nproc_per_node 2\n"
    )
    assert found.kind == "config_error" and "before the script" in found.suggestion
    assert "goes before train.py" in found.suggestion
    # https://github.com/FreedomIntelligence/HuatuoGPT/issues/25 (accelerate launch's own option)
    huatuo = (
        "$ accelerate launch --config_file ds_config.yaml finetune.py --deepspeed_multinode_launcher standard\n"
        "finetune.py: error: unrecognized arguments: --deepspeed_multinode_launcher standard\n"
    )
    assert "accelerate launch --num_processes" in top_failure(tmp_path, huatuo).suggestion
    # the rank argument the launcher itself passes keeps its own row (torch >= 2.0 '--local-rank')
    rank = top_failure(tmp_path, "train.py: error: unrecognized arguments: --local-rank=0\n")
    assert "LOCAL_RANK" in rank.suggestion and "before the script" not in rank.suggestion
    # an option of the script's own that it does not know is no launcher's
    own = diagnose_failures(tmp_path, "train.py: error: unrecognized arguments: --lr-warmup 5\n")
    assert not any("before the script" in f.suggestion for f in own)
    # a launcher-looking option of a script run with no launcher (review log C) is the script's own
    alone = "usage: train.py [-h] [--ngpus NGPUS]\ntrain.py: error: unrecognized arguments: --num_gpus 2\n"
    assert not any(f.metrics.get("code") == "launcher_option_after_script" for f in diagnose_failures(tmp_path, alone))
    # the same line under a launcher's command is the launcher's option
    launched = "$ deepspeed train.py --num_gpus 2\n" + alone
    assert top_failure(tmp_path, launched).metrics["code"] == "launcher_option_after_script"


def test_a_store_asking_for_libuv_on_a_build_without_it_names_the_old_backend(tmp_path: Path) -> None:
    # https://github.com/pytorch/pytorch/issues/139990 (PyTorch 2.5 on Windows)
    log = (
        '  File "C:\\hostedtoolcache\\windows\\Python\\3.12.7\\x64\\Lib\\site-packages\\torch\\'
        "distributed\\"
        'rendezvous.py", line 189, in _create_c10d_store\n'
        "    return TCPStore(\n"
        "RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "use_libuv=False" in found.suggestion
    assert "USE_LIBUV=0" in found.suggestion and "2.3" in found.suggestion
