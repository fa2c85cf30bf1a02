"""Collective libraries beside NCCL failing (knowledge/hccl_errors.py, other_collectives.py): Ascend's HCCL through
torch_npu and CANN, Intel's oneCCL, Habana's device acquire, AMD's RCCL and the HIP runtime. Each on short lines
written in the emitting program's format (torch_npu's HCCL_CHECK_ERROR, CANN's error registry, oneCCL's log.hpp,
RCCL's checks.h, torch's hipified messages), never a thread's own text; and the lines these libraries print in a
healthy run, which must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# torch_npu's HCCL_CHECK_ERROR on a communicator init whose runtime call rejected the device id, CANN's message
# below it (its runtime reason), under torchrun's rank tags
HCCL_RUNTIME = """\
[rank5]: Traceback (most recent call last):
[rank5]:   File "/srv/job/pretrain.py", line 88, in <module>
[rank5]:     dist.barrier()
[rank5]: RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:127 HCCL function error: \
hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 15
[rank5]: [ERROR] 2025-09-14-22:05:51 (PID:77120, Device:5, RankID:5) ERR02200 DIST call hccl api failed.
[rank5]: EE9999: Inner Error!
[rank5]: EE9999: [PID: 77120] 2025-09-14-22:05:51.331.207 get error: phyid:5 realDeviceId:5 is err:0x7010003\
[FUNC:GetDeviceIndexByPhyId][FILE:api_error.cc][LINE:1918]
[rank5]:         TraceBack (most recent call last):
[rank5]:        rtGetDeviceIndexByPhyId execute failed, reason=[device id error]\
[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:53]
"""
# the compact form (TORCH_NPU_COMPACT_ERROR_OUTPUT): no function and file, the same words
HCCL_ROCE = """\
RuntimeError:  HCCL function error: HcclAllGather(inputPtr, outputPtr, numel, dataType, comm, stream), error code \
is 12 .
"""
# an all-reduce whose HCCL call failed with a code that says little, CANN's registry code below it saying more
HCCL_SOCKET_TIMEOUT = """\
RuntimeError: allreduce:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:3422 HCCL function error: \
HcclAllReduce(inputDataPtr, outputDataPtr, numel, hcclType, hcclReduceOp, comm, stream.stream()), error code is 9
[ERROR] 2025-03-30-14:12:40 (PID:2210, Device:1, RankID:9) ERR02200 DIST call hccl api failed.
EI0006: [PID: 2210] 2025-03-30-14:12:40.118.442 Getting socket times out. Reason: Remote rank did not send the \
connection request within the timeout period.
"""
# torch_npu's queue reporting an asynchronous error, CANN's notify-wait timeout printed above it
HCCL_EXEC_TIMEOUT = """\
EI0002: [PID: 5120] 2025-11-02-03:44:10.902.771 The wait execution of the Notify register times out. Reason: The \
Notify register has not received the Notify record from remote rank: [6]. base information: [streamID:[3], \
taskID[12], taskType[Notify Wait]]. task information: [].
RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the current \
working operator name is HcclAllreduce.
"""
# HCCP could not start while the previous job's process still ran; torch_npu's call error after it
HCCP_BUSY = """\
EJ0001: 2025-07-07-09:00:12.442.001 Failed to initialize the HCCP process. Reason: Maybe the last training \
process is running.
RuntimeError: create_config:torch_npu/csrc/distributed/HCCLUtils.cpp:127 HCCL function error: \
hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 4
"""
# a device fault torch_npu names in its NPU function error
NPU_HBM = """\
RuntimeError: synchronize:torch_npu/csrc/core/npu/NPUFunctions.cpp:210 NPU function error: HBM MULTI BIT ECC \
ERROR.time is 1720000000, error code is 507054
"""
# a healthy Ascend run: CANN's own INFO lines on the terminal (ASCEND_SLOG_PRINT_TO_STDOUT=1), torch_npu's warning
NPU_HEALTHY = """\
[INFO] HCCL(40211,python3):2025-05-02-10:00:01.221.120 [hccl_communicator.cc:315][40211]HcclCommInitRootInfo \
success, take time [2103]us, rankNum[8], rank[3]
[W compiler_depend.ts:51] Warning: CAUTION: The operator 'aten::_foreach_norm' is not currently supported on the \
NPU backend and will fall back to run on the CPU. (function npu_cpu_fallback)
step 200/200 loss 1.842 lr 3.0e-05
Training finished.
"""


def test_an_hccl_call_error_reads_as_the_collective_library_failing_with_its_code_and_call(tmp_path: Path) -> None:
    top = top_failure(tmp_path, HCCL_RUNTIME)
    assert top.kind == "nccl_error"
    assert "HCCL" in top.summary and "HCCL_E_RUNTIME" in top.summary
    # the call from the line, the code's meaning, and the runtime's reason printed below it
    assert "hcclCommInitRootInfoConfig returned 15" in top.suggestion
    assert "call runtime api fail" in top.suggestion
    assert "reason=[device id error]" in top.suggestion
    assert "ASCEND_RT_VISIBLE_DEVICES" in top.suggestion and "CANN" in top.suggestion
    # another library's failure: no NCCL release advice
    assert "nvidia-nccl" not in top.suggestion and "NCCL release" not in top.suggestion
    roce = top_failure(tmp_path, HCCL_ROCE)
    assert roce.kind == "network_fault"
    assert "HcclAllGather returned 12" in roce.suggestion and "hccn_tool" in roce.suggestion
    # CANN's INFO lines and torch_npu's warnings of a healthy run are no failure
    assert diagnose_failures(tmp_path, NPU_HEALTHY) == []


def test_a_cann_code_below_the_hccl_error_names_the_cause(tmp_path: Path) -> None:
    top = top_failure(tmp_path, HCCL_SOCKET_TIMEOUT)
    assert top.kind == "network_fault"
    assert "HCCL_CONNECT_TIMEOUT" in top.suggestion
    ex = top_failure(tmp_path, HCCL_EXEC_TIMEOUT)
    assert ex.kind == "timeout"
    assert "HCCL_EXEC_TIMEOUT" in ex.suggestion and "remote rank 6" in ex.suggestion
    busy = top_failure(tmp_path, HCCP_BUSY)
    assert busy.kind == "config_error" and "earlier training process" in busy.suggestion
    hbm = top_failure(tmp_path, NPU_HBM)
    assert hbm.kind == "hardware_fault" and "HBM" in hbm.summary


# oneCCL's log lines (log.hpp: '<date>:(<pid>) |CCL_<LEVEL>| <file>:<line> <function>: ...')
CCL_WARNINGS = """\
2025:10:21-08:14:02:(61880) |CCL_WARN| value of CCL_ATL_TRANSPORT changed to be ofi (default:mpi)
2025:10:21-08:14:02:(61880) |CCL_WARN| could not get local_idx/count from environment variables, trying to get \
them from ATL
"""
CCL_KVS_TIMEOUT = (
    CCL_WARNINGS
    + """\
2025:10:21-08:16:02:(61880) |CCL_ERROR| internal_kvs.cpp:611 init_main_server_by_string: connection time (120) \
>= limit (120)
RuntimeError: oneCCL: atl_ofi_comm.cpp:44 atl_ofi_comm: EXCEPTION: init transport failed
"""
)
CCL_NO_IFACE = """\
2025:02:10-17:40:33:(904) |CCL_ERROR| internal_kvs.cpp:325 fill_local_host_ip: can't find interface ib7 to get \
host IP
"""
CCL_MPI_MODE = """\
2025:06:01-11:02:09:(3317) |CCL_ERROR| internal_kvs.cpp:42 kvs_set_value: condition can_use_internal_kvs() failed
internal kvs should be used with pmi kvs mode or ofi transport
"""
CCL_HEALTHY = (
    CCL_WARNINGS
    + """\
2025:10:21-08:14:03:(61880) |CCL_INFO| process launcher: none, local_proc_idx: 0, local_proc_count: 8
Epoch 3: 100%|##########| 500/500 [02:11<00:00, loss=0.214]
"""
)


def test_oneccl_errors_read_as_the_library_failing_with_the_setting_that_decides_it(tmp_path: Path) -> None:
    kvs = top_failure(tmp_path, CCL_KVS_TIMEOUT)
    assert kvs.kind == "network_fault" and "oneCCL" in kvs.summary
    assert "CCL_KVS_IFACE" in kvs.suggestion and "CCL_KVS_CONNECTION_TIMEOUT" in kvs.suggestion
    iface = top_failure(tmp_path, CCL_NO_IFACE)
    assert iface.kind == "config_error" and "(ib7)" in iface.suggestion and "CCL_KVS_IFACE" in iface.suggestion
    mode = top_failure(tmp_path, CCL_MPI_MODE)
    assert mode.kind == "config_error" and "CCL_ATL_TRANSPORT=ofi" in mode.suggestion
    # a |CCL_ERROR| no row names is still the library's failure, not a bare crash
    other = top_failure(tmp_path, "2025:01:01-00:00:00:(12) |CCL_ERROR| sched.cpp:90 start: unexpected state 7\n")
    assert other.kind == "nccl_error" and "CCL_LOG_LEVEL=debug" in other.suggestion
    # its |CCL_WARN| and |CCL_INFO| lines in a run that trained are no failure
    assert diagnose_failures(tmp_path, CCL_HEALTHY) == []


def test_habana_device_acquire_is_a_config_error_naming_the_status(tmp_path: Path) -> None:
    log = (
        '  File "/usr/local/lib/python3.10/dist-packages/habana_frameworks/torch/hpu/__init__.py", line 41, in init\n'
        "RuntimeError: synStatus=20 [Device already acquired] Device acquire failed.\n"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error"
    assert "synStatus 20: Device already acquired" in top.suggestion and "HABANA_VISIBLE_DEVICES" in top.suggestion


# RCCL prints NCCL's words with its own banner and 'HIP failure' for 'Cuda failure' (src/include/checks.h)
RCCL_BUFFER_OOM = """\
RCCL version 2.19.4+hip6.1 HEAD:7a1c2d3
gpu-node4:2301:2301 [2] NCCL INFO Bootstrap : Using ens51:172.20.3.4<0>
gpu-node4:2301:2388 [2] include/alloc.h:125 NCCL WARN HIP failure 'out of memory'
gpu-node4:2301:2388 [2] NCCL INFO init.cc:1310 -> 1
"""
RCCL_INTERNAL = """\
RCCL version : 2.21.5-HEAD:c3f9e21
gpu-node1:77:140 [0] enqueue.cc:1533 NCCL WARN Unknown pattern 4
torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2036, \
internal error - please report this issue to the NCCL developers, NCCL version 2.21.5
"""


def test_rccl_lines_read_as_nccls_and_its_release_advice_names_rccl(tmp_path: Path) -> None:
    oom = top_failure(tmp_path, RCCL_BUFFER_OOM)
    assert oom.kind == "oom" and "NCCL's buffers" in oom.suggestion
    internal = top_failure(tmp_path, RCCL_INTERNAL)
    assert internal.kind == "nccl_error"
    assert "runs RCCL 2.21.5)" in internal.suggestion and "ROCm" in internal.suggestion
    assert "nvidia-nccl" not in internal.suggestion


def test_hip_runtime_errors_read_like_their_cuda_counterparts(tmp_path: Path) -> None:
    oom = top_failure(
        tmp_path,
        "RuntimeError: HIP error: out of memory\nHIP kernel errors might be asynchronously reported at some other "
        "API call, so the stacktrace below might be incorrect.\n",
    )
    assert oom.kind == "oom"
    for line in ("RuntimeError: No HIP GPUs are available\n", "RuntimeError: HIP error: hipErrorNoDevice\n"):
        none = top_failure(tmp_path, line)
        assert none.kind == "config_error" and "HIP_VISIBLE_DEVICES" in none.suggestion
