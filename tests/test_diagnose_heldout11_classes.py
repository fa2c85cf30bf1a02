"""Classes that the eleventh held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (gdb's, NCCL's), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# gdb's 'thread apply all bt' of a live process, pasted from its first thread header on (no '(gdb)' prompt): the
# one thread shown polls for the GPU completion of a collective Horovod queued.
GDB_THREADS_WITHOUT_PROMPT = """\
Thread 3 (Thread 0x7f00aa5e7700 (LWP 2201)):
#0  0x00007f00b975c8e7 in sched_yield () at ../sysdeps/unix/syscall-template.S:84
#1  0x00007f00a1a3554d in std::this_thread::yield () at /usr/include/c++/7/thread:270
#2  horovod::common::GPUContext::impl::WaitForEvents(std::queue<CUevent_st*>&) (q=...) at ops/cuda_operations.cc:106
#3  0x00007f00a1a3601a in horovod::common::GPUOpContext::FinalizeGPUQueue() at horovod/common/ops/gpu_operations.cc:61
"""


def test_a_gdb_thread_dump_pasted_without_its_prompt_is_a_hang_in_the_collectives_completion(tmp_path: Path) -> None:
    top = top_failure(tmp_path, GDB_THREADS_WITHOUT_PROMPT)
    assert top.kind == "hang"
    assert "WaitForEvents" in top.summary and "(std::queue" not in top.summary
    assert "newer NCCL release" in top.suggestion


# NCCL's misc/ibvwrap.cc WARN when DMA-BUF registration of a GPU buffer fails (an IB stack without DMA-BUF).
DMABUF_REGISTRATION = """\
node-a:4100:4180 [2] NCCL INFO Channel 00/0 : 2[2] -> 10[2] [send] via NET/IB/1/GDRDMA
node-a:4100:4180 [2] misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Protocol not supported
node-a:4100:4180 [2] NCCL INFO transport/net_ib.cc:1093 -> 2
"""


def test_a_failed_dmabuf_registration_is_a_config_error_with_the_dmabuf_switch(tmp_path: Path) -> None:
    top = top_failure(tmp_path, DMABUF_REGISTRATION)
    assert top.kind == "config_error"
    assert "NCCL_DMABUF_ENABLE=0" in top.suggestion and "nvidia-peermem" in top.suggestion


# NCCL <= 2.3 (sources compiled as .cu) bootstrapped over the selected network: a peer's reset seen in the IB
# transport's connection set-up, carried up through the bootstrap, as NCCL_DEBUG=INFO's return trace prints it.
IB_TRANSPORT_CHAIN_UNDER_BOOTSTRAP = """\
gpu7:3100:3190 [2] include/socket.h:194 WARN Call to recv failed : Connection reset by peer
gpu7:3100:3190 [2] INFO transport/net_ib.cu:537 -> 2
gpu7:3100:3190 [2] INFO transport/net_ib.cu:610 -> 2
gpu7:3100:3190 [2] INFO include/net.h:30 -> 2 [Net]
gpu7:3100:3190 [2] INFO bootstrap.cu:169 -> 2
gpu7:3100:3190 [2] INFO init.cu:400 -> 2
"""


def test_an_ib_transport_trace_under_the_bootstrap_is_the_ib_fabric_not_the_socket_interface(tmp_path: Path) -> None:
    top = top_failure(tmp_path, IB_TRANSPORT_CHAIN_UNDER_BOOTSTRAP)
    assert top.kind == "network_fault"
    assert "NCCL_IB_DISABLE=1" in top.suggestion and "NCCL_SOCKET_IFNAME" not in top.suggestion


# A worker's entry command that the image cannot run (bash -c's own error), then the test harness finding no
# result table; and a launcher missing from the image (dash's form).
MISSING_SSHD = """\
/bin/bash: line 1: /usr/sbin/sshd: No such file or directory
[ERROR] Job allreduce failed: no '# Avg bus bandwidth' line in stdout.txt
"""
MISSING_LAUNCHER = "sh: 1: torchrun: not found\n"


def test_a_program_the_shell_cannot_find_is_a_config_error_naming_it(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MISSING_SSHD)
    assert top.kind == "config_error"
    assert "Install /usr/sbin/sshd" in top.suggestion and "openssh-server" in top.suggestion
    (tmp_path / "dash").mkdir()
    launcher = top_failure(tmp_path / "dash", MISSING_LAUNCHER)
    assert launcher.kind == "config_error" and "Install torchrun" in launcher.suggestion


# A traceback quoted without its exception line whose innermost torch.distributed frame creates a gloo group
# (a data loader's CPU-side group), as Python prints its frames and their source lines.
CUT_IN_GROUP_CREATION = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/mylib/loader.py", line 88, in setup
    self._pg = dist.new_group(backend="gloo", timeout=timedelta(seconds=300))
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3505, in new_group
    pg = _new_process_group_helper(
[... cut ...]
"""


def test_a_cut_traceback_ending_in_process_group_creation_is_a_connection_config_error(tmp_path: Path) -> None:
    top = top_failure(tmp_path, CUT_IN_GROUP_CREATION)
    assert top.kind == "config_error"
    assert "gloo process group" in top.summary and "GLOO_SOCKET_IFNAME" in top.suggestion


# UCX's shared-memory transport (MPI over UCX) failing to map its receive FIFO, then UCX's own signal handler
# reporting the crash that follows, as UCX prints both.
UCX_SHM_THEN_SEGV = """\
[1733462400.123456] [worker-1:77:0]        mm_iface.c:812  UCX  ERROR mm_iface failed to allocate receive FIFO
[worker-1:77 :0:77] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x10)
"""


def test_ucx_shared_memory_failure_before_a_segfault_is_the_short_dev_shm(tmp_path: Path) -> None:
    top = top_failure(tmp_path, UCX_SHM_THEN_SEGV)
    assert top.kind == "config_error"
    assert "/dev/shm" in top.suggestion and "emptyDir" in top.suggestion


# gloo's tcp pair failing to reach a peer that advertised its hostname's loopback address (pair.cc's format).
GLOO_LOOPBACK_PEER = "[/src/gloo/gloo/transport/tcp/pair.cc:799] connect [127.0.1.1]:41234: Connection refused\n"


def test_a_gloo_connect_to_a_loopback_address_names_the_interface_switches_and_etc_hosts(tmp_path: Path) -> None:
    top = top_failure(tmp_path, GLOO_LOOPBACK_PEER)
    assert top.kind == "config_error"
    assert "GLOO_SOCKET_IFNAME" in top.suggestion and "--tcp-device" in top.suggestion
    assert "/etc/hosts" in top.suggestion


# Review of the rows above (fix55b): a shell's 'command not found' for an optional tool the run goes past, a handled
# traceback of group creation the log goes past, and the bash script's own form of the missing program.
STEPS = "".join(f"[2024-05-01 10:00:{i:02d}] step {i * 10} loss {2.5 - i * 0.01:.3f} lr 1e-4\n" for i in range(12))
OOM = (
    'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    loss.backward()\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)


def test_an_optional_tool_the_shell_cannot_find_before_a_healthy_run_is_no_failure(tmp_path: Path) -> None:
    log = "/bin/bash: line 1: nvidia-smi: command not found\nsh: 1: lsb_release: not found\n" + STEPS
    assert diagnose_failures(tmp_path, log) == []


def test_a_missing_optional_tool_ranks_below_the_programs_own_error(tmp_path: Path) -> None:
    assert top_failure(tmp_path, "sh: 1: lsb_release: not found\n" + OOM).kind == "oom"
    (tmp_path / "after").mkdir()
    assert top_failure(tmp_path / "after", OOM + "/bin/bash: line 3: nvidia-smi: command not found\n").kind == "oom"


def test_a_dmabuf_warning_the_run_trained_past_is_no_failure(tmp_path: Path) -> None:
    log = DMABUF_REGISTRATION.splitlines(keepends=True)[1] + STEPS
    assert diagnose_failures(tmp_path, log) == []


def test_a_missing_program_in_a_bash_scripts_own_form_is_a_config_error_naming_it(tmp_path: Path) -> None:
    top = top_failure(tmp_path, "./train_multinode.sh: line 14: torchrun: command not found\n")
    assert top.kind == "config_error" and "Install torchrun" in top.suggestion


def test_a_handled_group_creation_traceback_the_log_goes_past_is_not_a_cut_one(tmp_path: Path) -> None:
    log = (
        "[2024-05-01 10:00:01] WARNING eval group creation failed, falling back to the world group:\n"
        + CUT_IN_GROUP_CREATION.replace("[... cut ...]\n", "")
        + "[2024-05-01 10:00:02] INFO using the world group for evaluation\n"
    )
    assert all(f.kind != "config_error" for f in diagnose_failures(tmp_path, log))
    (tmp_path / "prefixed").mkdir()  # the cut traceback under torchrun's rank prefix is still read
    prefixed = "".join(f"[rank3]: {ln}" for ln in CUT_IN_GROUP_CREATION.splitlines(keepends=True))
    assert "GLOO_SOCKET_IFNAME" in top_failure(tmp_path / "prefixed", prefixed).suggestion
