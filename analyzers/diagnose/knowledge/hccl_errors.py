"""Huawei Ascend's collective library, HCCL, as PyTorch jobs meet it through torch_npu (the 'hccl' backend), as
data: its result codes, the error codes CANN prints beside them, and the device faults torch_npu names.

What a failed HCCL call prints (torch_npu/csrc/distributed/HCCLUtils.hpp HCCL_CHECK_ERROR, 2024 on):
  RuntimeError: <func>:<file>:<line> HCCL function error: <the call as written>, error code is <HcclResult>
  [ERROR] <time> (PID:n, Device:n, RankID:n) ERR02200 DIST call hccl api failed.      (NPUException.cpp)
  <CANN's own message: 'EI0006: Getting socket times out ...', 'EE9999: Inner Error!', 'rtXxx execute failed,
   reason=[...]'>                                                                        (AclGetErrMsg)
Before 2024 it was '[ERROR] HCCL error in: <file>:<line>' with CANN's message below it. The result code is
HcclResult (hccl_types.h, checked against hicann/hcomm include/hccl/hccl_types.h: 1 PARA ... 22 SUSPENDING, 23
OPRETRY_FAIL, 24 OOM); the CANN codes are E<module><4 digits> (EI: HCCL, EJ: HCCP, EE: runtime, EL: memory), their
text from CANN's error registry (hicann/hcomm's HCCL error list: EI0001-EI0017, EJ0001-EJ0004).

One row a code; each becomes a signature row (knowledge/signatures.py splices them in). A row's remedy names the
code's meaning and quotes the call from the line, and the runtime's reason printed below it where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.cann_codes import (
    CANN_CODES,
    CANN_LOGS,
    CANN_SIGNATURES,
    HCCL_CHECK,
    HCCL_TYPES,
    NETWORK,
    NPU_EXCEPTION,
    PLOG,
    TIMEOUT_KNOBS,
    VERSIONS,
)
from scope.analyzers.diagnose.knowledge.signature_row import Signature, row


@dataclass(frozen=True)
class HcclResultCode:
    code: int
    name: str  # HcclResult's name in hccl_types.h
    says: str  # the header's comment
    kind: str
    cause: str
    advice: str  # what to do for a call that returned it


# hccl_types.h HcclResult; kinds as the code says (a link is the network, a memory code the memory), the rest the
# collective library's own failure (nccl_error)
HCCL_RESULTS: tuple[HcclResultCode, ...] = (
    HcclResultCode(
        1,
        "HCCL_E_PARA",
        "parameter error",
        "config_error",
        "configuration",
        "a value the call was given is invalid: the tensors (dtype HCCL supports, same size on every rank, on this "
        "rank's NPU: torch.npu.set_device(local_rank) before init), the group's ranks or the rank table",
    ),
    HcclResultCode(
        2, "HCCL_E_PTR", "empty pointer", "nccl_error", "nccl_bug", "a null pointer inside HCCL: " + VERSIONS
    ),
    HcclResultCode(
        3,
        "HCCL_E_MEMORY",
        "memory error",
        "oom",
        "application",
        "HCCL could not get memory for its buffers: leave NPU memory free for them (a smaller batch, fewer "
        "communicators) or shrink them (HCCL_BUFFSIZE, in MB, 200 by default)",
    ),
    HcclResultCode(4, "HCCL_E_INTERNAL", "internal error", "nccl_error", "nccl_bug", VERSIONS),
    HcclResultCode(
        5,
        "HCCL_E_NOT_SUPPORT",
        "feature not supported",
        "config_error",
        "configuration",
        "this CANN / driver / NPU does not support what was asked (an op, a dtype, a topology): " + VERSIONS,
    ),
    HcclResultCode(
        6,
        "HCCL_E_NOT_FOUND",
        "resource not found",
        "config_error",
        "configuration",
        "a resource HCCL looked for is not there (a device, a rank table entry, a communicator): check the NPUs "
        "this process sees (ASCEND_RT_VISIBLE_DEVICES) and the rank table (RANK_TABLE_FILE)",
    ),
    HcclResultCode(
        7,
        "HCCL_E_UNAVAIL",
        "resource unavailable",
        "config_error",
        "configuration",
        "a resource HCCL needs is held or not ready: an earlier training process still holding the NPUs or their "
        "network (npu-smi info shows its processes; wait for it to exit), or two ranks on one NPU",
    ),
    HcclResultCode(
        8,
        "HCCL_E_SYSCALL",
        "call system interface error",
        "nccl_error",
        "nccl_bug",
        "a system call failed (a socket, a file, a limit): check the host interface HCCL uses (HCCL_SOCKET_IFNAME) "
        "and the process's limits (ulimit -n, -l)",
    ),
    HcclResultCode(
        9,
        "HCCL_E_TIMEOUT",
        "timeout",
        "timeout",
        "stall",
        "a peer did not answer in time: find the rank that failed or started late (its own log says why), then "
        "raise " + TIMEOUT_KNOBS + " if every rank is only slow",
    ),
    HcclResultCode(
        10,
        "HCCL_E_OPEN_FILE_FAILURE",
        "open file fail",
        "config_error",
        "configuration",
        "a file HCCL reads could not be opened: the rank table (RANK_TABLE_FILE) path and its permissions",
    ),
    HcclResultCode(11, "HCCL_E_TCP_CONNECT", "tcp connect fail", "network_fault", "network", NETWORK),
    HcclResultCode(12, "HCCL_E_ROCE_CONNECT", "roce connect fail", "network_fault", "network", NETWORK),
    HcclResultCode(13, "HCCL_E_TCP_TRANSFER", "tcp transfer fail", "network_fault", "network", NETWORK),
    HcclResultCode(14, "HCCL_E_ROCE_TRANSFER", "roce transfer fail", "network_fault", "network", NETWORK),
    HcclResultCode(
        15,
        "HCCL_E_RUNTIME",
        "call runtime api fail",
        "nccl_error",
        "nccl_bug",
        "a CANN runtime call inside HCCL failed (CANN's 'rtXxx execute failed, reason=[...]' line says why): "
        "check the NPUs this process sees (ASCEND_RT_VISIBLE_DEVICES, the container's "
        "/dev/davinci<N> devices) and " + VERSIONS + "; an HCCL init that fails this way on a matching set is a "
        "CANN bug that a newer CANN release fixes",
    ),
    HcclResultCode(
        16,
        "HCCL_E_DRV",
        "call driver api fail",
        "config_error",
        "configuration",
        "a driver call failed: check the NPU driver and firmware (npu-smi info, dmesg) and " + VERSIONS,
    ),
    HcclResultCode(
        17,
        "HCCL_E_PROFILING",
        "call profiling api fail",
        "config_error",
        "configuration",
        "the profiler's call failed: run without profiling, or with a profiler of this CANN release",
    ),
    HcclResultCode(18, "HCCL_E_CCE", "call cce api fail", "nccl_error", "nccl_bug", VERSIONS),
    HcclResultCode(19, "HCCL_E_NETWORK", "call network api fail", "network_fault", "network", NETWORK),
    HcclResultCode(
        20, "HCCL_E_AGAIN", "try again", "nccl_error", "nccl_bug", "HCCL asked to retry and the caller did not"
    ),
    HcclResultCode(
        21,
        "HCCL_E_REMOTE",
        "error cqe",
        "network_fault",
        "network",
        "an RDMA completion came back with an error: the link to the peer dropped or the peer process exited "
        "first (its own log says why); " + NETWORK,
    ),
    HcclResultCode(
        22,
        "HCCL_E_SUSPENDING",
        "error communicator suspending",
        "nccl_error",
        "nccl_bug",
        "the communicator was suspended after a fault on a rank: the first rank's own error is the cause",
    ),
    HcclResultCode(
        23,
        "HCCL_E_OPRETRY_FAIL",
        "retry constraint",
        "network_fault",
        "network",
        "HCCL's retry of the collective after a link fault failed: " + NETWORK,
    ),
    HcclResultCode(
        24,
        "HCCL_E_OOM",
        "out of memory",
        "oom",
        "application",
        "the NPU had no memory left for HCCL: a smaller batch, fewer communicators, or smaller HCCL buffers "
        "(HCCL_BUFFSIZE, in MB, 200 by default)",
    ),
    # newer hccl_types.h (hicann/hcomm, 2025): the error is in the status the call filled in
    HcclResultCode(
        1041,
        "HCCL_E_IN_STATUS",
        "the error information is in the status",
        "nccl_error",
        "nccl_bug",
        "the call's status carries the error: CANN's message below the call and the plog name it",
    ),
)

# torch_npu's 'HCCL function error: <call>, error code is N' (the call as the source wrote it, arguments and all);
# MindIE's own check prints 'HCCL function error :HcclGetRootInfo(&hcclID), error code is N'
_HCCL_FUNCTION_ERROR = (
    r"HCCL function error ?: ?(?P<hccl_call>[A-Za-z_][\w:.]*)(?:\(.{0,800}?\))?, error code is {code}\b"
)
# what CANN printed below it: the runtime call that failed and why, or a CANN error code (read into the remedy)
_CANN_BELOW = (
    r"(?P<runtime_failure>\brt\w+ execute failed, reason=\[[^\]]{1,120}\])"
    r"|\b(?P<cann_code>E[A-Z]\d{4})\)?: (?P<cann_says>(?!Inner Error)[^\[\n]{1,160})"
)


def _named_codes() -> str:
    """The CANN codes with a row of their own (CANN_CODES), as a regex: printed under an HCCL call, they say more."""
    return r"\b(?:" + "|".join(c.code for c in CANN_CODES) + r")\)?: "  # both forms (cann_codes.cann_code)


def _hccl_result_row(r: HcclResultCode) -> Signature:
    pattern = _HCCL_FUNCTION_ERROR.replace("{code}", str(r.code))
    return row(
        f"hccl_{r.name.lower().removeprefix('hccl_e_')}",
        "HCCL function error",
        pattern,
        era="torch_npu 2.1 and later with CANN 7-8 (HCCLUtils.hpp HCCL_CHECK_ERROR)",
        kind=r.kind,
        cause=r.cause,
        meaning=f"Ascend's collective library HCCL (torch_npu's hccl backend) failed a call with error code "
        f"{r.code}, {r.name} ({r.says}).",
        remedy=(
            f"HCCL's {{hccl_call}} returned {r.code}, {r.name} ({r.says})"
            f"{{runtime_failure| }}{{cann_code| }}{{cann_says| }}: {r.advice}. {PLOG}."
        ),
        reference=f"{HCCL_TYPES}; {HCCL_CHECK}",
        fields_re=f"{pattern}|{_CANN_BELOW}",
        fields_after=12,
        fields_until=r"^\S*\s*Traceback \(most recent call last\)|HCCL function error",
        yields_to=_named_codes(),
    )


@dataclass(frozen=True)
class DeviceFault:
    id: str
    words: str  # torch_npu's name for it (NPUException.cpp handle*) or the runtime's reason string
    # torch_npu's label for it alone (NPUQueue.cpp deviceErrorMap): its task queue raises '<label>, <CANN's
    # message>' (ThrowDeviceError, MakeSureQueueEmpty) and logs '<label> happened'
    label: str
    kind: str
    cause: str
    meaning: str
    remedy: str


# The device faults torch_npu names ('NPU function error: HBM MULTI BIT ECC ERROR, error code is N') and the CANN
# runtime's reasons for them ('rtXxx execute failed, reason=[hbm Multi-bit ECC error]', runtime errcode_manage.cc)
DEVICE_FAULTS: tuple[DeviceFault, ...] = (
    DeviceFault(
        "npu_hbm_ecc",
        r"HBM MULTI BIT ECC ERROR|reason=\[?hbm Multi-bit ECC error",
        r"HBM MULTI BIT ECC ERROR",
        "hardware_fault",
        "hardware",
        "The NPU's memory (HBM) reported an uncorrectable multi-bit ECC error.",
        "The NPU's HBM failed: take the device out of service (npu-smi info -t health; the node's device log under "
        "/var/log/npu) and restart the job without it; from a checkpoint.",
    ),
    DeviceFault(
        "npu_mem_error",
        r"\bUCE ERROR\b|SUSPECT MEM ERROR|reason=\[?(?:suspect )?device (?:local )?mem error",
        r"UCE ERROR|SUSPECT MEM ERROR",
        "hardware_fault",
        "hardware",
        "The NPU reported an uncorrectable memory error (UCE) on the device.",
        "A device memory fault on the NPU: check its health (npu-smi info -t health), drain it if it repeats, and "
        "resume from a checkpoint.",
    ),
    DeviceFault(
        "npu_link_error",
        r"\b(?:HCCS|UB) LINK ERROR\b|reason=\[?(?:device network )?link error\]",
        r"HCCS LINK ERROR",
        "hardware_fault",
        "hardware",
        "The NPUs' interconnect (HCCS / UB link) between devices failed.",
        "An NPU interconnect link failed: check the node's device log (/var/log/npu) and npu-smi info -t health; "
        "drain the node if it repeats and resume from a checkpoint.",
    ),
    DeviceFault(
        "npu_remote_error",
        r"SUSPECT REMOTE ERROR|reason=\[?(?:suspect remote error|device remote mem error)",
        r"SUSPECT REMOTE ERROR",
        "network_fault",
        "network",
        "An NPU saw an error on the remote side of a transfer: the peer's device or the link to it.",
        "The fault is on the peer's side: read the other ranks' logs for the first device or link error, and "
        "check the link (hccn_tool -i <device> -link -g).",
    ),
    DeviceFault(
        "npu_op_retry_failed",
        r"HCCL OP RETRY FAILED|reason=\[?hccl op retry failed",
        r"HCCL OP RETRY FAILED",
        "network_fault",
        "network",
        "HCCL retried a collective after a link fault and the retry failed.",
        "The link stayed down through HCCL's retry: " + NETWORK + ".",
    ),
)


def _fault_row(f: DeviceFault) -> Signature:
    return row(
        f.id,
        ("NPU function error", "reason=", *(w.lower() for w in f.label.split("|"))),
        (
            rf"NPU function error: (?:{f.words})|execute failed, (?:{f.words})",
            rf"(?:Error: |^\W*)(?:{f.label})(?:, | happened)",  # the task queue's '<label>, <message>'
        ),
        era="torch_npu 2.1 and later (NPUException.cpp getDeviceErrorMessage); the CANN runtime's reasons",
        kind=f.kind,
        cause=f.cause,
        meaning=f.meaning,
        remedy=f"{f.remedy} {PLOG}.",
        reference=NPU_EXCEPTION,
    )


HCCL_SIGNATURES: tuple[Signature, ...] = (
    *(_fault_row(f) for f in DEVICE_FAULTS),
    *(_hccl_result_row(r) for r in HCCL_RESULTS),
    *CANN_SIGNATURES,
    # torch_npu before 2024: '[ERROR] HCCL error in: <file>:<line>' with no result code; CANN's message follows
    row(
        "hccl_error_in",
        "HCCL error in:",
        r"HCCL error in: (?P<hccl_site>\S+?:\d+)",
        era="torch_npu 1.11-2.1 (HCCLUtils.hpp HCCL_CHECK_ERROR before the result code was printed)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="Ascend's collective library HCCL (torch_npu's hccl backend) failed a call.",
        remedy=(
            "HCCL failed at {hccl_site|the place named}{runtime_failure| }{cann_code| }{cann_says| }: "
            f"{PLOG}; {VERSIONS}."
        ),
        reference=HCCL_CHECK,
        fields_re=rf"HCCL error in: (?P<hccl_site>\S+?:\d+)|{_CANN_BELOW}",
        fields_after=12,
        fields_until=r"^\S*\s*Traceback \(most recent call last\)",
        confidence="medium",
    ),
    # torch_npu's error code after a DIST failure (ERR02<code> DIST <words>, formatErrorCode): it follows the
    # message that names the call, so it counts only alone
    row(
        "torch_npu_dist_error",
        " DIST ",
        r"\bERR02(?P<dist_code>\d{3}) DIST (?P<dist_says>[a-z ]+)",
        era="torch_npu 2.1 and later (NPUException.cpp formatErrorCode, SubModule DIST)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="torch_npu's distributed module (the hccl backend) failed.",
        remedy=f"torch_npu's distributed module failed ({{dist_says|DIST error}}): the line above it names the call; "
        f"{PLOG}.",
        reference=NPU_EXCEPTION,
        echo=True,
        confidence="medium",
    ),
    # CANN's inner error: 'E<module>9999: Inner Error!' (torch_npu: 'CANN Inner Error. Please rectify the fault
    # based on the error information in the ascend log.'); the runtime's reason lines follow it
    row(
        "cann_inner_error",
        "9999",
        r"\bE[A-Z0-9]9999: (?:\[PID: \d+\] )?(?:[\d:.-]+ )?Inner Error",
        era="CANN 6-8",
        kind="crash",
        cause="application",
        meaning="CANN reported an inner error; the lines after it and the plog say where.",
        remedy=f"CANN reported an inner error{{runtime_failure| }}: {PLOG}; {VERSIONS}.",
        reference=f"{NPU_EXCEPTION} (c10_npu_check_error_message); {CANN_LOGS}",
        fields_re=_CANN_BELOW,
        fields_after=8,
        echo=True,
        confidence="medium",
    ),
    # torch_npu's report of an error its task queue met asynchronously (NPUQueue.cpp): the error is the one above
    row(
        "npu_inner_error_above",
        "inner error is reported as above",
        r"The Inner error is reported as above\. The process exits for this inner error"
        r"(?:, and the current working operator name is (?P<npu_operator>\w+))?",
        era="torch_npu 2.1 and later (NPUQueue.cpp)",
        kind="crash",
        cause="application",
        meaning="torch_npu stopped after an error the NPU reported asynchronously; the error printed above it is "
        "the cause.",
        remedy=(
            "Read the error printed above this line (a CANN code such as EI0002, or an 'NPU function error'); the op "
            "running was {npu_operator|named in the message}. ASCEND_LAUNCH_BLOCKING=1 makes the stack point at "
            f"the failing op; {PLOG}."
        ),
        reference="https://github.com/Ascend/pytorch/blob/master/torch_npu/csrc/core/npu/NPUQueue.cpp",
        fields_re=r"current working operator name is (?P<npu_operator>\w+)",
        echo=True,
        confidence="medium",
    ),
    # the runtime's 'device id error' (rtGetDeviceIndexByPhyId, rtSetDevice): which NPU the process asked for
    row(
        "npu_device_id_error",
        "device id error",
        r"(?P<rt_call>\brt\w+) execute failed, reason=\[(?:device id error|driver error:invalid device)\]",
        era="CANN 6-8 runtime (errcode_manage.cc RT_ERROR_DEVICE_ID)",
        kind="config_error",
        cause="configuration",
        meaning="The CANN runtime rejected the NPU id it was asked for.",
        remedy=(
            "The CANN runtime's {rt_call|call} rejected the device id: check the NPUs this process sees "
            "(ASCEND_RT_VISIBLE_DEVICES, the container's /dev/davinci<N> devices, torch.npu.set_device(local_rank)) "
            f"and {VERSIONS}; {PLOG}."
        ),
        reference=f"{NPU_EXCEPTION}; CANN runtime errcode_manage.cc (RT_ERROR_DEVICE_ID 'device id error')",
        echo=True,
        confidence="medium",
    ),
)
