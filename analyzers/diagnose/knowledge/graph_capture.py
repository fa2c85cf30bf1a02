"""A CUDA / HIP call refused because a stream is being captured into a graph ('operation not permitted when
stream is capturing': cudaErrorStreamCaptureUnsupported, hipErrorStreamCaptureUnsupported).

Under the default (global) capture mode of torch.cuda.graph / CUDAGraph::capture_begin, an unsafe call from any
thread of the process fails while one stream captures, and so does an event query. Two readers of the one
message: ProcessGroupNCCL's watchdog thread, whose cudaEventQuery on a collective's end event
(WorkNCCL::isCompleted -> finishedGPUExecutionInternal) raced another thread's capture (vLLM / SGLang's graph
capture at start-up, torch.compile mode="reduce-overhead"), so the watchdog throws and aborts the process; and the
capturing thread's own call that a capture forbids (.item(), .cpu(), a synchronize, an allocation outside the
graph's pool), raised in the program's traceback.

Sources: pytorch aten/src/ATen/cuda/CUDAGraph.cpp (CUDAGraph::inc_pending_event_queries: 'Track any outstanding
event queries that could happen e.g., in a NCCL watchdog so that they can be resolved before the capture begins.
Note that event queries are not allowed during a graph capture in the default capture mode'; capture_begin waits
for them), torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (work made during a capture is not enqueued for the
watchdog: enqueue = !coalescing_state_ && capture_status == CaptureStatus::None, pytorch PR 102542; the watchdog's
loop queries under at::cuda::CUDAStreamCaptureModeGuard{cudaStreamCaptureModeThreadLocal}, 'allow watchdog to do
an event query on a side thread', pytorch PR 148594, extended over isStarted by PR 160398 (Aug 2025, PyTorch 2.9);
capture_begin's wait for pending event queries, PR 104487, in 2.1.1 as PR 110665 / 111870); ROCm/hip#3876 and
ROCm/rocm-systems PR 2177 (ROCm 7.0/7.1 hipEventQuery returned hipErrorStreamCaptureUnsupported for another
thread's capture, fixed in ROCm 7.2; vLLM's AMD CI set TORCH_NCCL_BLOCKING_WAIT=1 meanwhile, vllm PR 31259);
CUDA runtime API, cudaStreamCaptureMode.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

CUDA_GRAPH = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/CUDAGraph.cpp"
HIP_ISSUE = "https://github.com/ROCm/hip/issues/3876"
ROCM_FIX = "https://github.com/ROCm/rocm-systems/pull/2177"
CUDA_CAPTURE_MODE = (
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html (cudaStreamBeginCapture, "
    "cudaStreamCaptureMode)"
)

_CAPTURING = r"(?P<vendor>CUDA|HIP) error: operation not permitted when stream is capturing"
_WATCHDOG = r"(?:Process group|NCCL) watchdog thread terminated with exception: " + _CAPTURING

_WATCHDOG_CUDA = (
    "ProcessGroupNCCL's watchdog queried a collective's event (WorkNCCL::isCompleted / isStarted -> cudaEventQuery) "
    "while another thread captured a CUDA graph, which the default (global) capture mode refuses ('{vendor} error: "
    "operation not permitted when stream is capturing'), and the watchdog's exception aborted the process. PyTorch "
    "2.1.1 made a capture wait for the work already queued to the watchdog (CUDAGraph::inc_pending_event_queries, "
    "pytorch PR 104487 / 110665); later releases run the watchdog's event queries in thread-local capture mode, "
    "which another thread's capture does not refuse (pytorch PR 148594; its isStarted query too since PR 160398, "
    "PyTorch 2.9): print torch.__version__ and upgrade. Meanwhile set TORCH_NCCL_BLOCKING_WAIT=1 (the watchdog "
    "then leaves the events alone, as vLLM's CI did for the same race), or on a torch before 2.1.1 let the "
    "watchdog retire the collectives issued before capture (torch.cuda.synchronize() and a pause before capturing)"
)
_WATCHDOG_HIP = (
    "ProcessGroupNCCL's watchdog (RCCL on ROCm) queried a collective's event while another thread captured a HIP "
    "graph, and the HIP runtime refused it ('HIP error: operation not permitted when stream is capturing', "
    "hipErrorStreamCaptureUnsupported): a HIP runtime bug of ROCm 7.0 / 7.1, whose hipEventQuery failed for a "
    "capture on another thread (ROCm/hip#3876). Upgrade to ROCm 7.2 or later (the fix, ROCm/rocm-systems PR "
    "2177); on ROCm 7.0 / 7.1 set TORCH_NCCL_BLOCKING_WAIT=1 so the watchdog does not poll events during the "
    "capture (what vLLM's AMD CI did until ROCm 7.2), or run without graph capture (vLLM --enforce-eager)"
)
_OWN_CALL = (
    "A call the graph capture forbids ran while a stream was being captured ('{vendor} error: operation not "
    "permitted when stream is capturing'): inside the captured region (torch.cuda.graph, torch.compile "
    'mode="reduce-overhead", vLLM / SGLang graph capture), take out anything that synchronizes with the host '
    "(a tensor's item(), cpu() or tolist(), printing a tensor, torch.cuda.synchronize, a data-dependent shape) or "
    "allocates outside the graph's pool; a process group's first collective inside the capture creates its NCCL "
    "communicator there (pass device_id to init_process_group, or run one collective on each group before "
    "capturing); warm the code up on a side stream before capturing; where another "
    "thread's call is the one refused, capture with capture_error_mode='thread_local'"
)

GRAPH_CAPTURE_SIGNATURES: tuple[Signature, ...] = (
    row(
        "watchdog_event_query_during_graph_capture",
        "when stream is capturing",
        _WATCHDOG,
        era="torch with ProcessGroupNCCL's watchdog, under CUDA / HIP graph capture (ROCm 7.0 / 7.1: a HIP bug)",
        cause="configuration",
        kind="crash",
        meaning="ProcessGroupNCCL's watchdog thread's event query was refused while a stream was captured into a "
        "graph, and the watchdog's exception aborted the process.",
        remedy=_WATCHDOG_CUDA,
        remedy_when=((r"HIP error", _WATCHDOG_HIP),),
        reference=f"{CUDA_GRAPH} (inc_pending_event_queries); {HIP_ISSUE}; {ROCM_FIX}",
        fields_re=_CAPTURING,
    ),
    row(
        "call_forbidden_during_graph_capture",
        "when stream is capturing",
        r"(?<!exception: )" + _CAPTURING,
        era="CUDA 10+ / HIP graph capture (cudaErrorStreamCaptureUnsupported, hipErrorStreamCaptureUnsupported)",
        cause="configuration",
        meaning="A call that graph capture forbids ran while a stream was captured into a graph.",
        remedy=_OWN_CALL,
        reference=f"{CUDA_CAPTURE_MODE}; {CUDA_GRAPH}",
        fields_re=_CAPTURING,
        confidence="medium",
    ),
)
