"""Review of the collective libraries beside NCCL (knowledge/hccl_errors.py, cann_codes.py, other_collectives.py):
the wordings those rows missed, on lines written in the emitting program's format.

- CANN 8 prints a registry code after its title, 'Communication_Error_Get_Socket(EI0006): ...' (hicann/hcomm's
  error registry: errTitle, ErrCode), and the registry's messages changed between releases (EI0002's 'A timeout
  occurs when the Notify register waits for execution. Waiting peer rank: N', EI0001's 'Value V for environment
  variable X is invalid'); it added EI0009 and EI0017-EI0020 (EI0020: the NPU socket's port already bound).
- torch_npu's task queue raises a device fault as '<label>, <CANN message>' (NPUQueue.cpp ThrowDeviceError /
  MakeSureQueueEmpty: 'HCCS LINK ERROR, ...'), not only as 'NPU function error: <label>'.
- MindIE's own HCCL check prints 'HCCL function error :HcclGetRootInfo(&hcclID), error code is N'.
- 'No CUDA GPUs are available' on an NVIDIA node names NVIDIA's settings, 'No HIP GPUs' AMD's.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

TITLED_SOCKET = """\
[rank3]: RuntimeError: allreduce:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3810 HCCL function error: \
HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream()), error code is 9
[rank3]: [ERROR] 2025-12-01-08:11:09 (PID:4410, Device:3, RankID:3) ERR02200 DIST call hccl api failed.
[rank3]: Communication_Error_Get_Socket(EI0006): Getting socket times out. Reason: Remote rank did not send the \
connection request within the timeout period.
"""
NEW_NOTIFY_TIMEOUT = """\
Communication_Error_Timeout(EI0002): A timeout occurs when the Notify register waits for execution. Waiting peer \
rank: 11; task information: [streamID:2]; communication operator information: HcclAllGather; communicator: group_4.
RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the current \
working operator name is HcclAllGather.
"""
NPU_PORT_BOUND = """\
RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:140 HCCL function error: \
hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 7
[ERROR] 2026-02-11-10:02:33 (PID:88120, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.
Communication_Error_Bind_IP_Port(EI0020): Failed to enable listening for the NPU network adapter socket. Reason: \
The IP address 10.20.0.7 and port 16666 have already been bound.
"""
NEW_ENV_INVALID = """\
RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:140 HCCL function error: \
hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 1
Config_Error_Invalid_Environment_Variable(EI0001): Value 9000 for environment variable HCCL_BUFFSIZE is invalid. \
Expected value: [1, 4096].
"""


def test_cann_codes_in_cann_8s_titled_form_and_newer_wordings_name_the_cause(tmp_path: Path) -> None:
    sock = top_failure(tmp_path, TITLED_SOCKET)
    assert sock.kind == "network_fault" and "HCCL_CONNECT_TIMEOUT" in sock.suggestion
    notify = top_failure(tmp_path, NEW_NOTIFY_TIMEOUT)
    assert notify.kind == "timeout"
    assert "HCCL_EXEC_TIMEOUT" in notify.suggestion and "remote rank 11" in notify.suggestion
    port = top_failure(tmp_path, NPU_PORT_BOUND)
    assert port.kind == "config_error" and "HCCL_NPU_SOCKET_PORT_RANGE" in port.suggestion
    env = top_failure(tmp_path, NEW_ENV_INVALID)
    assert env.kind == "config_error" and "HCCL_BUFFSIZE" in env.suggestion


def test_the_old_untitled_form_still_reads() -> None:
    # the row of a code reads it with its title or without (CANN 6-7: 'EI0006: [PID: n] <time> <message>')
    from scope.analyzers.diagnose.readers.signature_scan import match_text

    for line in (
        "EI0006: [PID: 2210] 2025-03-30-14:12:40.118.442 Getting socket times out. Reason: x",
        "Communication_Error_Get_Socket(EI0006): srcRank[10.0.0.2/0] connect destRank[10.0.0.3/1] fail",
    ):
        hit = match_text(line)
        assert hit is not None and hit.sig.id == "cann_ei0006", line
    # a word that only looks like a code is no CANN code
    assert match_text("checkpoint SEI0006: saved shard 3") is None


def test_a_device_fault_raised_by_torch_npus_task_queue_is_the_fault(tmp_path: Path) -> None:
    link = top_failure(
        tmp_path,
        "[rank6]: RuntimeError: HCCS LINK ERROR, The error from device(chipId:6, dieId:0), link error occurred."
        "[ERROR] 2026-01-09-02:44:17 (PID:9331, Device:6, RankID:6) ERR00100 PTA call acl api failed.\n",
    )
    assert link.kind == "hardware_fault" and "HCCS" in link.summary
    remote = top_failure(
        tmp_path,
        "RuntimeError: SUSPECT REMOTE ERROR, [ERROR] 2026-01-09-02:44:17 (PID:9111, Device:2, RankID:2) ERR00100 "
        "PTA call acl api failed.\n",
    )
    assert remote.kind == "network_fault"
    uce = top_failure(tmp_path, "RuntimeError: UCE ERROR, [ERROR] 2026-01-09 ERR00100 PTA call acl api failed.\n")
    assert uce.kind == "hardware_fault"


def test_mindies_hccl_check_wording_reads_as_hcclresult(tmp_path: Path) -> None:
    top = top_failure(tmp_path, "RuntimeError: HCCL function error :HcclGetRootInfo(&hcclID), error code is 11\n")
    assert top.kind == "network_fault" and "HcclGetRootInfo returned 11" in top.suggestion


def test_no_gpu_names_the_vendors_settings_the_log_runs(tmp_path: Path) -> None:
    cuda = top_failure(tmp_path, "RuntimeError: No CUDA GPUs are available\n")
    assert cuda.kind == "config_error"
    assert "CUDA_VISIBLE_DEVICES" in cuda.suggestion and "nvidia-smi" in cuda.suggestion
    assert "ROCR_VISIBLE_DEVICES" not in cuda.suggestion and "/dev/kfd" not in cuda.suggestion
    hip = top_failure(tmp_path, "RuntimeError: No HIP GPUs are available\n")
    assert hip.kind == "config_error"
    assert "HIP_VISIBLE_DEVICES" in hip.suggestion and "/dev/kfd" in hip.suggestion
    assert "nvidia-smi" not in hip.suggestion
