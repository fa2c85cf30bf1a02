"""A CUDA error that ProcessGroupNCCL's watchdog saw first: the lines that say so, and NCCL's transports to bisect.

c10d's watchdog thread polls each collective's completion (WorkNCCL::isCompleted -> finishedGPUExecutionInternal,
a cudaEventQuery on the collective's end event); a sticky CUDA error from any kernel on the device makes that query
fail, and the thread ends with 'Process group watchdog thread terminated with exception: CUDA error: ...' (torch
1.13 to 2.2: 'NCCL watchdog thread terminated ...'), rethrown as c10::DistBackendError, which std::terminate prints
under 'what():' and which aborts the process (SIGABRT, exit -6). Where no compute op raised the error first (no
Python exception line naming it before the watchdog's) and the ranks' watchdogs report it together, the faulting
kernel is most likely a collective's: on single-node multi-GPU workstations NCCL's peer transports are a known
cause (P2P over PCIe without working peer access, the SHM transport, IB / RoCE loopback: isaac-sim/IsaacLab#4011,
whose runs passed with NCCL_SHM_DISABLE=1, and NCCL_IB_DISABLE=1 / NCCL_ALGO=Ring beyond two GPUs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROCESS_GROUP_NCCL = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
NCCL_PCI_ACS = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
)

# The CUDA errors of a kernel's fault that a later CUDA call reports (cudaErrorIllegalAddress,
# cudaErrorLaunchFailure, cudaErrorMisalignedAddress): the errors of the cuda_illegal_memory_access row
KERNEL_FAULT = re.compile(
    r"CUDA error: (?P<cuda_error>an illegal memory access was encountered|unspecified launch failure|misaligned "
    r"address)"
)


@dataclass(frozen=True)
class WatchdogMark:
    pattern: str
    what: str
    source: str


# A line that says the watchdog thread saw the error: its own exit line, or a frame of its check. Searched in the
# error's line and in the C++ stack printed under it (the lines a c10::Error carries: 'Exception raised from ...',
# 'frame #N: ...').
WATCHDOG_MARKS: tuple[WatchdogMark, ...] = (
    WatchdogMark(
        r"(?:Process group|NCCL) watchdog thread terminated with exception",
        "the watchdog thread's exit line",
        PROCESS_GROUP_NCCL + " (ncclCommWatchdog; Watchdog::run in torch 2.8+: 'Process group watchdog thread "
        "terminated with exception: ', 'NCCL watchdog thread' before torch 2.3)",
    ),
    WatchdogMark(
        r"Exception raised from (?:ncclCommWatchdog|watchdogHandler|workCleanupLoop|runLoop|run) at \S*"
        r"ProcessGroupNCCL\.cpp",
        "the watchdog's rethrow",
        PROCESS_GROUP_NCCL + " (the DistBackendError built in the watchdog's catch)",
    ),
    WatchdogMark(
        r"c10d::ProcessGroupNCCL::(?:WorkNCCL::(?:finishedGPUExecutionInternal|finishedGPUExecution|isCompleted|"
        r"checkAndSetException|isStarted|startedGPUExecutionInternal)|watchdogHandler|ncclCommWatchdog|"
        r"workCleanupLoop|Watchdog::runLoop|Watchdog::run)\(",
        "the frames of the watchdog's work-status check",
        PROCESS_GROUP_NCCL + " (WorkNCCL::isCompleted -> finishedGPUExecutionInternal -> cudaEventQuery, called "
        "by watchdogHandler / workCleanupLoop / Watchdog::runLoop)",
    ),
)
WATCHDOG_SAW = re.compile("|".join(m.pattern for m in WATCHDOG_MARKS))
# The rethrow's stack without the exit line (a paste that kept the stack): counted as another report of the watchdog
WATCHDOG_STACK = re.compile(WATCHDOG_MARKS[1].pattern.replace("(?:ncclCommWatchdog", "(?P<loop>ncclCommWatchdog", 1))
# The lines of one C++ error under its first line: CUDA's notes, the stack's header and frames, blanks (under any
# '[rankN]:' tag); the first other line ends the error
ERROR_TAIL = re.compile(
    r"^\s*(?:\[rank\d+\]:\s*)?(?:$|CUDA kernel errors might|For debugging consider|Compile with|Exception raised from|"
    r"frame #\d+:|terminate called after|\s*what\(\):)"
)
TAIL_LINES = 40  # the most lines of one error's stack read under it


@dataclass(frozen=True)
class Transport:
    name: str
    shown: str  # regex of the NCCL INFO words that show NCCL used it ('via P2P/IPC', 'via SHM/direct/direct')
    setting: str  # the setting that turns it off
    what: str
    source: str


# One at a time, in this order unless the log shows which NCCL used: peer-to-peer between the GPUs, shared memory
# through the host, the IB / RoCE network (loopback on one node), then the algorithm.
TRANSPORTS: tuple[Transport, ...] = (
    Transport(
        "P2P",
        r"via P2P/",
        "NCCL_P2P_DISABLE=1",
        "GPU peer-to-peer over PCIe or NVLink",
        NCCL_ENV + "#nccl-p2p-disable",
    ),
    Transport(
        "SHM", r"via SHM/", "NCCL_SHM_DISABLE=1", "shared memory through the host", NCCL_ENV + "#nccl-shm-disable"
    ),
    Transport(
        "IB",
        r"via NET/IB|NET/IB : Using|Using network IB",
        "NCCL_IB_DISABLE=1",
        "the InfiniBand / RoCE network, loopback between the GPUs of one node",
        NCCL_ENV + "#nccl-ib-disable",
    ),
    Transport("Ring", r"(?!)", "NCCL_ALGO=Ring", "Ring as the only algorithm: no Tree, NVLS or CollNet", NCCL_ENV),
)

# How many GPUs the run used, for nccl-tests' -g: the launch's processes per node, NCCL's nranks
GPU_COUNT = re.compile(r"--nproc[_-]per[_-]node[= ](?P<n>\d+)|--num_processes[= ](?P<p>\d+)|\bnranks (?P<r>\d+)")

MEANING = (
    "A CUDA error that NCCL's watchdog reported first on several ranks together: its poll of the collectives' "
    "completion meets any kernel's sticky error, so it alone names no kernel, but ranks faulting at once (where a "
    "compute fault on one rank leaves its peers waiting) point at a collective's kernel"
)
# One rank's watchdog report: the watchdog polls every few hundred ms and often meets a compute kernel's fault
# before the main thread syncs (vllm-project/vllm#9308, #21110: attention kernels; sgl-project/sglang#8296), so the
# kernel search leads and the transports come after it
ONE_REPORT_NOTE = (
    "The fault was reported by ProcessGroupNCCL's watchdog ({seen}), which meets any kernel's sticky error in its "
    "poll, so that does not name the kernel; if every rank reports it at once and the kernel search finds nothing, "
    "bisect NCCL's transports one at a time: {settings}."
)
REMEDY = (
    "CUDA's '{cuda_error}' was first seen by ProcessGroupNCCL's watchdog ({seen}), not raised by a compute op: "
    "bisect NCCL's transports first, one setting at a time, exported in the launch's environment (before torchrun "
    "/ python -m torch.distributed.run, so every rank inherits it): {settings}; the one that makes the run pass "
    "names the transport (keep it set). Reproduce without the program with nccl-tests on the same GPUs "
    "(all_reduce_perf -b 8 -e 256M -f 2 -g {gpus}). For GPU peer-to-peer over PCIe, check that peer access works: "
    "ACS on the PCIe switches and the IOMMU (`lspci -vvv | grep ACSCtl`: SrcValid+ ReqRedir+ where ACS is on; boot "
    "with iommu=pt) and `nvidia-smi topo -p2p r`. If every transport fails the same way, find the kernel: rerun "
    "with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer, suspect custom or fused kernels and mismatched "
    "torch / CUDA / NCCL / driver versions, and look for an Xid 13/31/43 in dmesg at the same time."
)
REFERENCE = NCCL_PCI_ACS
