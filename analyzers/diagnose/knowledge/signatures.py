"""Known error signatures, as data: what a line means, what class of cause it is, and how to fix it.

One row per signature. Adding an error type is adding a row here and a case to the corpus. The scanner
(readers/signature_scan.py) looks for a row's `needles` (plain substrings, cheap) and then its `patterns`
(regexes, case-sensitive unless written with (?i)); rows are tried in order, the first that matches a
line wins, so specific rows come before generic ones. `BENIGN` lines are never errors.

Fields:
  id         stable name; the anomaly code and the key of `scope diagnose --signatures`
  needles    substrings, one of which must be on the line before any pattern is tried
  patterns   regexes; one must match the line (the message after launcher/timestamp prefixes)
  era        the releases or eras the message occurs in
  kind       the Finding kind (one of the diagnose record's kinds)
  cause      hardware | network | configuration | application | nccl_bug | desync | stall
  meaning    what it means, one sentence
  remedy     the concrete fix: env var, docker flag, kernel parameter, driver or hardware action
  reference  the public page where the meaning is confirmed
  confidence high when the line names its cause, medium when it usually does
  ranks_re   optional: a regex on the next lines whose numbers are the culprit ranks ('3-5' is a range)
  ranks_ready the numbers ranks_re finds are the ranks that were ready: the culprits are the others (ranks
             count from 0, so every rank below the highest ready one that is not ready)
  before_re  optional: a regex one of the 4 preceding lines must match (context of a stack frame)
  before_lines optional: before_re only in the N lines right above the match (3: the innermost frame, its source
             line and carets)
  fields_re  optional: a regex whose named groups are kept as details (numbers the message states)
  context_re optional: the same, on the nearest line before the match that it matches, of the match's own process
             where NCCL's prefix names it (host:pid) (a name an earlier INFO line states: the one HCA NCCL picked); the
             line's own fields win
  context_needed the row fires only where context_re finds its line: a message whose cause is what an earlier
             line states (aws-ofi-nccl's WARN after it picked libfabric's tcp provider)
  context_requires with context_needed: a regex the nearest context line must match too (context_re finds any
             provider, so a nearer 'provider is efa' stops the search; this requires tcp)
  platform_re optional: the row fires only where an earlier line of the match's own process (NCCL's host:pid)
             matches it (aws-ofi-nccl's '-aws' build: the EFA advice is for AWS only)
  went_on_re optional: a later line of the match's own process that shows the run went on ('Init COMPLETE'):
             there the finding is a warning, not a root cause
  traceback_re optional: a regex on the match's open traceback (frames and source lines, one a line) whose named
             groups are kept for the remedy (the call that entered DDP's forward, a checkpointing frame)
  yields_to  optional: a regex of a line among the fields_after lines that names the cause better; where one is
             there the match is an echo (torch_npu's 'HCCL function error' above CANN's 'EI0006: ...')
  min_count  the row fires only from its N-th matching line in a file (a line that is harmless once)
  severity   critical, or warning for a condition that slows a run but does not stop it
  cuda_named the kind is the CUDA error's the line quotes ('invalid resource handle': the program's usage;
             'an illegal memory access': a crash), from emitters.CUDA_ERRORS, when the name is known
  echo       the line echoes an error reported on an earlier line (NCCL's 'file.cc:N -> 2' return chain
             after its WARN): it counts only when no error came before it in the file
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.backend_names import BACKEND_NAME_SIGNATURES
from scope.analyzers.diagnose.knowledge.build_backends import BUILD_BACKEND_SIGNATURES
from scope.analyzers.diagnose.knowledge.deepspeed_launcher import DEEPSPEED_LAUNCHER_SIGNATURES
from scope.analyzers.diagnose.knowledge.device_mesh import DEVICE_MESH_SIGNATURES
from scope.analyzers.diagnose.knowledge.fabric_rows import NVLS_SIGNATURES, NVSHMEM_SIGNATURES
from scope.analyzers.diagnose.knowledge.framework_config import FRAMEWORK_CONFIG_SIGNATURES
from scope.analyzers.diagnose.knowledge.graph_capture import GRAPH_CAPTURE_SIGNATURES
from scope.analyzers.diagnose.knowledge.hccl_errors import HCCL_SIGNATURES
from scope.analyzers.diagnose.knowledge.launch_shape import LAUNCH_SHAPE_SIGNATURES
from scope.analyzers.diagnose.knowledge.launcher_rows import LAUNCHER_SIGNATURES
from scope.analyzers.diagnose.knowledge.layout_arithmetic import LAYOUT_ARITHMETIC_SIGNATURES
from scope.analyzers.diagnose.knowledge.line_shapes import LAUNCH_COMMAND
from scope.analyzers.diagnose.knowledge.node_environment import NODE_ENVIRONMENT_SIGNATURES
from scope.analyzers.diagnose.knowledge.open_mpi import OPEN_MPI_SIGNATURES
from scope.analyzers.diagnose.knowledge.other_collectives import (
    HABANA_SIGNATURES,
    HIP_SIGNATURES,
    ONECCL_SIGNATURES,
)
from scope.analyzers.diagnose.knowledge.parallel_layout import PARALLEL_LAYOUT_SIGNATURES
from scope.analyzers.diagnose.knowledge.ray_failures import RAY_FAILURE_SIGNATURES
from scope.analyzers.diagnose.knowledge.rdma_core import RDMA_CORE_BENIGN
from scope.analyzers.diagnose.knowledge.remedies import (
    LARGER_SHM,
    NCCL_DEBUG_RERUN,
    NCCL_RESULT_FIXES,
    P2P_BLOCKED,
    ROOM_FOR_CHECKPOINTS,
    TIMEOUT_KNOBS,
    WATCHDOG_USUAL_CAUSES,
)
from scope.analyzers.diagnose.knowledge.remote_launch import PASSWORDLESS_SSH, REMOTE_LAUNCH_SIGNATURES
from scope.analyzers.diagnose.knowledge.rendezvous_host import RENDEZVOUS_HOST_SIGNATURES
from scope.analyzers.diagnose.knowledge.runtime_errors import RUNTIME_SIGNATURES
from scope.analyzers.diagnose.knowledge.runtime_loading import LOADING_SIGNATURES
from scope.analyzers.diagnose.knowledge.signature_row import CAUSES, Signature, row
from scope.analyzers.diagnose.knowledge.slurm_step import SLURM_STEP_SIGNATURES
from scope.analyzers.diagnose.knowledge.stale_shm import STALE_SHM_SIGNATURES
from scope.analyzers.diagnose.knowledge.torch_autograd_collectives import TORCH_AUTOGRAD_COLLECTIVE_SIGNATURES

__all__ = ["BENIGN", "CAUSES", "SIGNATURES", "Signature", "by_id"]

NCCL_TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"

# Why a net plugin that is installed did not load, as dlerror() words it after NCCL's 'NET/Plugin' prefix (the
# NET plugin's alone: TUNER / PROFILER / ENV plugins load the same way but the remedy is the network's): a missing
# dependency is a library other than the plugin itself. Bounded (400 characters from the prefix, which is NCCL's
# upper-case subsystem): a long line of repeated '/Plugin ' words made the lazy gap quadratic.
_PLUGIN_LOAD_ERROR = (
    r"\bNET/Plugin\b.{0,400}?(?P<plugin_error>version `[^']+' not found|undefined symbol: \S+|"
    r"wrong ELF class\S*|invalid ELF header|file too short|"
    r"\b(?!libnccl-)lib[\w+-]+\.so[\d.]*: cannot open shared object file)"
)
# The dlerror() reasons above: a dlerror line that names one of them is a plugin that did not load, not benign
_PLUGIN_LOAD_REASON = (
    r"version `[^']+' not found|undefined symbol: |wrong ELF class|invalid ELF header|file too short|"
    r"\b(?!libnccl-)lib[\w+-]+\.so[\d.]*: cannot open shared object file"
)

# aws-ofi-nccl's 'NET/OFI Selected Provider is efa (found 4 nics)' (src/nccl_ofi_net.c; newer releases 'Selected
# provider is efa, fabric is efa-direct'; with a utility provider 'tcp;ofi_rxm'): any provider, so the nearest
# line decides; the generic ones it falls back to when the fabric's own device is not seen.
_OFI_PROVIDER = r"(?i)NET/OFI Selected provider is (?P<ofi_provider>[\w-]+)"
_OFI_FALLBACK_PROVIDER = r"(?i)provider is (?:tcp|sockets|udp)\b"
# AWS's build of the plugin ('NET/OFI Initializing aws-ofi-nccl 1.12.1-aws', the EFA installer's) or its libfabric
# ('Using Libfabric version 1.22.0amzn4.0'): the EFA advice applies
_OFI_ON_AWS = r"NET/OFI Initializing aws-ofi-nccl \S*-aws\b|NET/OFI Using Libfabric version \S*amzn"
# NCCL's own lines after a plugin's failure that show the process went on: it chose another network (its own
# sockets, IB verbs: init.cc / net.cc 'Using network Socket') or finished the communicator's init
_NCCL_WENT_ON = r"NCCL INFO (?:Using network (?:Socket|IB)\b|.*\bInit COMPLETE\b)"


SIGNATURES: tuple[Signature, ...] = (
    # ---- the install and the launch, whose words are their own: a backend this build lacks, an NCCL of another
    # version, a program the compute node's environment lacks, a rank count the parallel layout does not fit.
    # First, so that the generic rows (the store's MASTER_ADDR, an NCCL call's error, a missing program) do not
    # take their lines (knowledge/build_backends.py, node_environment.py, parallel_layout.py)
    *BUILD_BACKEND_SIGNATURES,
    *GRAPH_CAPTURE_SIGNATURES,  # a call refused during a graph capture, the watchdog's first (graph_capture.py)
    *BACKEND_NAME_SIGNATURES,  # a backend name this torch does not know or cannot create (backend_names.py)
    # the deepspeed launcher's resource refusals, the layouts whose remedy does the sums, torch's own autograd
    # collectives' known bug (knowledge/deepspeed_launcher.py, layout_arithmetic.py, torch_autograd_collectives.py)
    *DEEPSPEED_LAUNCHER_SIGNATURES,
    *LAYOUT_ARITHMETIC_SIGNATURES,
    *TORCH_AUTOGRAD_COLLECTIVE_SIGNATURES,
    *NODE_ENVIRONMENT_SIGNATURES,
    *PARALLEL_LAYOUT_SIGNATURES,
    *DEVICE_MESH_SIGNATURES,  # a DeviceMesh dimension the run did not build (device_mesh.py)
    # ---- the collective libraries beside NCCL: Ascend's HCCL (torch_npu, CANN), Intel's oneCCL, Habana's device
    # acquire, a process that sees no GPU (knowledge/hccl_errors.py, other_collectives.py); RCCL reads as NCCL
    *HCCL_SIGNATURES,
    *ONECCL_SIGNATURES,
    *HABANA_SIGNATURES,
    *HIP_SIGNATURES,
    # ---- memory and GPU hardware, first: an OOM or an ECC error inside an NCCL error is that -----------
    # NCCL's own allocation (include/alloc.h ncclCudaCalloc, enqueue.cc) failing is the framework holding the GPU's
    # memory when a communicator or a connection sets up its buffers: the same words as a tensor's OOM, another fix
    Signature(
        id="nccl_buffer_oom",
        needles=("NCCL WARN Cuda failure",),
        patterns=(r"NCCL WARN Cuda failure (?:\d+ )?'out of memory'",),
        era="NCCL 2.x (include/alloc.h ncclCudaCalloc / ncclCudaMalloc, enqueue.cc; NCCL_DEBUG=WARN or INFO)",
        kind="oom",
        cause="application",
        meaning="NCCL could not allocate its own communication buffers on the GPU: the framework's tensors and "
        "cache held the memory when a communicator or a peer connection was set up (the socket closes and "
        "'internal error' after it follow from that, on this rank and its peers).",
        remedy=(
            "NCCL could not allocate its own buffer ({bytes|some} bytes): leave GPU memory free for NCCL's buffers on "
            "that rank: lower the batch or the model's share of the GPU "
            "(torch.cuda.empty_cache() before creating communicators or the first collective, "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), or shrink NCCL's own use (NCCL_BUFFSIZE=2097152, "
            "fewer communicators / process groups)."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/295",
        fields_re=r"Failed to CUDA calloc (?P<bytes>\d+) bytes",
    ),
    row(
        "cuda_oom_before_training",
        ("out of memory",),
        r"CUDA error: out of memory",
        era="all PyTorch releases: c10d's barrier / communicator set-up allocating its first buffers",
        cause="application",
        kind="oom",
        meaning="The GPU ran out of memory in the process group's set-up (its first barrier or communicator), "
        "before the model was built: the memory was not the model's.",
        remedy=(
            "Not the batch size: at a barrier or communicator set-up the job holds almost nothing. Check, on the node "
            "of the failing rank: several ranks on one GPU (torch.cuda.set_device(local_rank) before the first "
            "collective, or device_id= in init_process_group), another process holding the GPU (nvidia-smi: a "
            "leftover of an earlier job), or a faulty GPU (an ECC error or Xid in the kernel log, an earlier crash "
            "on the same node): drain that node and leave it out of the next job (sbatch --exclude=<node>)."
        ),
        reference="https://github.com/bigscience-workshop/bigscience/blob/master/train/tr1-13B-base/chronicles.md",
        # start-up frames only: a barrier later in training (a checkpoint save's) may fail for the model's memory
        before_re=(
            r"in (?:init_process_group|new_group|_compile_dependencies|initialize_megatron|_initialize_distributed)\b"
        ),
        confidence="medium",
    ),
    # vLLM's sleep mode (colocated RL trainers: OpenRLHF, verl) maps its pool back on wake_up through its own
    # allocator, whose CUDA check prints 'CUDA Error: <cudaGetErrorString> at csrc/cumem_allocator.cpp:<line>'
    row(
        "vllm_cumem_wake_up_oom",
        ("cumem_allocator",),
        r"CUDA [Ee]rror: out of memory at \S*cumem_allocator\.cpp",
        era="vLLM >= 0.7 sleep mode (vllm/device_allocator/cumem.py, csrc/cumem_allocator.cpp)",
        cause="application",
        kind="oom",
        meaning="vLLM could not map its memory pool back when it woke up: what the trainer still holds on the GPU "
        "and vLLM's reserved fraction do not fit together.",
        remedy=(
            "Give vLLM a smaller share of the GPU (gpu_memory_utilization: the trainer's --vllm_gpu_memory_utilization "
            "or its equivalent), more vLLM tensor_parallel_size, or free the trainer's GPU memory (offload optimizer "
            "states / model, torch.cuda.empty_cache()) before the engine's wake_up."
        ),
        reference="https://github.com/vllm-project/vllm/blob/main/csrc/cumem_allocator.cpp; "
        "https://github.com/TideDra/lmm-r1/issues/43",
    ),
    Signature(
        id="cuda_oom",
        needles=("out of memory", "OutOfMemoryError"),
        patterns=(
            # 'CUDA Error: out of memory': the same CUDA error string under another program's check macro. Ray's
            # ray.exceptions.OutOfMemoryError is its memory monitor's kill for host RAM (ray_memory_monitor_oom
            # below: real-stanford/flingbot#11, ray-project/ray#28776, OpenRLHF/OpenRLHF#911), not the GPU's, also
            # where it is named bare ('OutOfMemoryError: Task was killed due to the node running low on memory.')
            r"CUDA out of memory|(?<!ray\.exceptions\.)OutOfMemoryError(?!:.*(?:running low on memory|memory "
            r"pressure))|CUDA [Ee]rror: out of memory|HIP out of memory",
            r"(?i)cuda failure (?:\d+ )?'out of memory'",
        ),
        era="all PyTorch releases (torch.cuda.OutOfMemoryError since 1.13, torch.OutOfMemoryError since 2.5)",
        kind="oom",
        cause="application",
        meaning="A rank asked the CUDA caching allocator for more GPU memory than was free.",
        remedy=(
            "Lower the micro-batch size or sequence length, enable activation checkpointing, or shard more "
            "(FSDP/ZeRO); if reserved memory is far above allocated, set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
        ),
        reference="https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf",
        fields_re=r"Tried to allocate (?P<tried_to_allocate>[\d.]+ [KMGT]iB)|GPU (?P<gpu>\d+)",
    ),
    # ---- orchestrators' words for a killed or failed job (Ray, SLURM, Kubernetes) --------------------
    Signature(
        id="ray_memory_monitor_oom",
        needles=("memory pressure", "running low on memory"),
        patterns=(
            r"(?i)killed due to memory pressure \(OOM\)",
            r"(?i)killed due to the node running low on memory",
        ),
        era="Ray >= 2.2 memory monitor (raylet node_manager.cc; ray.exceptions.OutOfMemoryError)",
        kind="oom",
        cause="application",
        meaning="Ray's memory monitor killed worker processes because the node's host memory crossed its "
        "threshold (RAY_memory_usage_threshold, 0.95 by default): the workers used too much CPU RAM.",
        remedy=(
            "Reduce host memory per worker (smaller batches, do not keep all logits/outputs, fewer actors per "
            "node) or give the node more RAM; RAY_memory_usage_threshold moves the kill threshold."
        ),
        reference="https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html",
    ),
    Signature(
        id="slurm_oom_kill",
        needles=("oom-kill", "oom_kill", "Out Of Memory", "OUT_OF_MEMORY"),
        patterns=(
            r"Detected \d+ oom[-_]kill events? in (?:StepId|step)",
            r"srun: error: \S+: tasks? [\d\-,]+: Out Of Memory",
            r"\bOUT_OF_MEMORY\b",
        ),
        era="SLURM with cgroup memory enforcement (slurmstepd / srun), all releases",
        kind="oom",
        cause="application",
        meaning="SLURM's cgroup killed a task for using more host memory than the job's allocation.",
        remedy=(
            "Request more memory (--mem / --mem-per-gpu) or reduce host memory per rank (data-loader workers, "
            "pinned memory, CPU offload); sacct -j JOB -o MaxRSS,ReqMem shows the usage."
        ),
        reference="https://slurm.schedmd.com/cgroup.conf.html",
        ranks_re=r"tasks? ([\d\-,]+): Out Of Memory",
    ),
    Signature(
        id="slurm_time_limit",
        needles=("TIME LIMIT",),
        patterns=(r"CANCELLED AT \S+ DUE TO TIME LIMIT", r"\bJOB \d+ ON \S+ CANCELLED .*TIME LIMIT"),
        era="SLURM slurmstepd (all releases)",
        kind="timeout",
        cause="configuration",
        meaning="SLURM cancelled the job at its time limit; if the log shows no progress before it, the job hung "
        "earlier and the limit only ended it.",
        remedy=(
            "Raise --time or checkpoint and resume; if steps stopped advancing before the limit, diagnose that "
            "hang (the last step line, py-spy dump of each rank)."
        ),
        reference="https://slurm.schedmd.com/sbatch.html#OPT_time",
        confidence="medium",
    ),
    Signature(
        id="slurm_cancelled",
        needles=("CANCELLED AT",),
        patterns=(
            r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT \S+(?: DUE TO (?!TIME LIMIT|NODE FAILURE)[^*]*)? \*\*\*",
        ),
        era="SLURM slurmstepd (all releases): a step or job cancelled without a time-limit or node-failure reason",
        kind="crash",
        cause="application",
        meaning="SLURM cancelled the step: scancel by a user or an admin, preemption, or srun ending the step "
        "after one of its tasks failed (--kill-on-bad-exit); the tasks were then terminated.",
        remedy=(
            "Ask SLURM why (sacct -j JOB -o JobID,State,ExitCode,Reason; scontrol show job): if a task failed "
            "first, read its output; if the job was stuck (no progress before the cancel), find where it waited "
            "(py-spy dump of each rank, the last step line, c10d timeouts)."
        ),
        reference="https://slurm.schedmd.com/scancel.html",
        confidence="low",
    ),
    Signature(
        id="slurm_node_fail",
        needles=("NODE FAILURE", "NODE_FAIL"),
        patterns=(r"DUE TO NODE FAILURE", r"\bNODE_FAIL\b"),
        era="SLURM (all releases): slurmctld lost a node of the allocation",
        kind="hardware_fault",
        cause="hardware",
        meaning="SLURM lost contact with a node of the job (it rebooted, hung, or lost its network), and "
        "cancelled the job.",
        remedy=(
            "Find the node (sacct -j JOB -o NodeList,State; scontrol show node) and its kernel log for Xid, "
            "ECC, MCE or a kernel panic; drain it before resubmitting."
        ),
        reference="https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES",
        confidence="medium",
    ),
    Signature(
        id="slurm_task_killed",
        needles=("Killed",),
        patterns=(r"srun: error: \S+: tasks? [\d\-,]+: Killed",),
        era="SLURM srun (all releases): a task ended by SIGKILL",
        kind="oom",  # SIGKILL's kind (knowledge/signals.py)
        cause="application",
        meaning="SLURM reports a task killed by SIGKILL: the host OOM killer, the job's memory cgroup, or srun "
        "killing the step after another task failed.",
        remedy=(
            "Read the first task that failed (srun --kill-on-bad-exit names it) and the node's kernel log "
            "(dmesg -T | grep -i oom) for an out-of-memory kill; raise --mem or reduce host memory per rank."
        ),
        reference="https://slurm.schedmd.com/srun.html#OPT_kill-on-bad-exit",
        confidence="medium",
        ranks_re=r"tasks? ([\d\-,]+): Killed",
    ),
    Signature(
        id="k8s_oom_killed",
        needles=("OOMKilled",),
        patterns=(r"\bOOMKilled\b",),
        era="Kubernetes (container status reason, kubectl describe pod / PyTorchJob / MPIJob status)",
        kind="oom",
        cause="application",
        meaning="Kubernetes killed a container for exceeding its memory limit (exit code 137).",
        remedy=(
            "Raise the container's resources.limits.memory or reduce host memory per rank (data-loader workers, "
            "pinned memory, /dev/shm use counts against the limit when it is a memory emptyDir)."
        ),
        reference="https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/",
    ),
    Signature(
        id="k8s_evicted",
        needles=("Evicted", "low on resource"),
        patterns=(
            r"The node was low on resource: (?:memory|ephemeral-storage)",
            r"\bReason:\s+Evicted\b",
            r"\bpod \S+ (?:was )?evicted\b",
        ),
        era="Kubernetes kubelet node-pressure eviction",
        kind="oom",
        cause="application",
        meaning="The kubelet evicted the pod because its node ran low on memory or disk.",
        remedy=(
            "Set memory requests equal to limits (Guaranteed QoS) so the pod is not evicted first, reduce host "
            "memory or local disk use, or schedule fewer pods per node."
        ),
        reference="https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/",
        confidence="medium",
    ),
    Signature(
        id="container_exit_137",
        # not the bare number: a needle as common as '137' would make every log line a candidate
        needles=("code 137", "code: 137", "code=137", "status 137", "status: 137", "exitcode: 137"),
        patterns=(
            r"(?i)exit(?:ed)?(?: with)?(?: status)?(?: code)?[ :=]*137\b",
            r"(?i)\bexitcode\s*:\s*137\b",
        ),
        era="Docker / Kubernetes / launchers reporting 128 + SIGKILL(9)",
        kind="oom",  # SIGKILL's kind (knowledge/signals.py)
        cause="application",
        meaning="The process ended with status 137 (128 + SIGKILL): usually the OOM killer or a container memory "
        "limit, else the orchestrator killing it.",
        remedy=(
            "Look for an OOM kill (kubectl describe pod: Reason OOMKilled; dmesg -T | grep -i oom); raise the "
            "memory limit or reduce host memory per rank."
        ),
        reference="https://kubernetes.io/docs/tasks/debug/debug-application/determine-reason-pod-failure/",
        confidence="medium",
    ),
    Signature(
        id="process_killed",
        needles=("Killed",),
        patterns=(r"^Killed\s*$", r"\b\d+ Killed\s+\S"),
        era="any launcher that passes a shell's job messages through (bash 'Killed', mpirun/horovodrun tags)",
        # SIGKILL's kind in knowledge/signals.py: in the threads, the kernel's OOM killer far more often than a
        # scheduler (LambdaLabsML/examples#41, deepspeedai/DeepSpeed#3160, ZhehengJiangLancaster/AMVUR#2)
        kind="oom",
        cause="application",
        meaning="The process was killed with SIGKILL (the shell's 'Killed'): usually the host OOM killer or the "
        "scheduler enforcing a memory or time limit.",
        remedy=(
            "Check the host's kernel log for 'Out of memory: Killed process' (dmesg -T) and the job's memory and "
            "time limits; reduce host memory per rank (data-loader workers, pinned memory) if it was the OOM killer."
        ),
        reference="https://github.com/horovod/horovod/pull/2829",
        confidence="medium",
    ),
    Signature(
        id="cuda_ecc_error",
        needles=("ECC error",),
        patterns=(r"uncorrectable ECC error",),
        era="all CUDA releases (cudaErrorECCUncorrectable)",
        kind="hardware_fault",
        cause="hardware",
        meaning="The GPU's memory returned an uncorrectable error: the GPU is faulty or needs a reset.",
        remedy="Drain the node and check the GPU (nvidia-smi -q -d ECC, row remapping); reset it, RMA if it recurs.",
        reference="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
    ),
    row(
        "cuda_unknown_error",
        "unknown error",
        r"CUDA error: unknown error",
        era="all CUDA releases (cudaErrorUnknown, 999): c10d's watchdog meets it querying a collective's event",
        cause="hardware",
        meaning="The CUDA driver answered with an unknown error: a GPU that stopped responding (an Xid such as "
        "79 'fallen off the bus' or 48 / 63 / 64 memory errors in the kernel log) far more often than a program bug.",
        remedy=(
            "Read the node's kernel log for the GPU's Xid (dmesg -T | grep -i xid) and check it with nvidia-smi; "
            "drain the node and reset or replace the GPU, then resume from the last checkpoint on healthy nodes "
            "(a shorter checkpoint interval bounds what the next such crash costs)."
        ),
        reference="https://docs.nvidia.com/deploy/xid-errors/index.html",
        confidence="medium",
    ),
    Signature(
        id="cuda_nvlink_error",
        needles=("NVLink error",),
        patterns=(r"uncorrectable NVLink error",),
        era="all CUDA releases (cudaErrorNvlinkUncorrectable)",
        kind="hardware_fault",
        cause="hardware",
        meaning="An NVLink link between GPUs reported an uncorrectable error.",
        remedy="Check NVLink state (nvidia-smi nvlink -s -e); reset the GPU, drain the node if it recurs.",
        reference="https://docs.nvidia.com/deploy/xid-errors/index.html",
    ),
    # ---- configuration: the machine or container -------------------------------------------------
    row(
        "shm_not_writable",
        "shm_open",
        r"shm_open failed ?: Permission denied|shm_open.*Permission denied",
        era="NCCL 2.x (shmutils / include/shm.h: 'Call to shm_open failed : <strerror>')",
        cause="configuration",
        meaning="NCCL could not create its shared-memory segment: /dev/shm is not writable by the job's user.",
        remedy=(
            "Make /dev/shm writable: `ls -ld /dev/shm` must show drwxrwxrwt; restore it with `chmod 1777 /dev/shm` "
            "(or remount the tmpfs), and in a container give it a writable /dev/shm (--ipc=host or --shm-size); "
            "NCCL_SHM_DISABLE=1 works around it at some cost within the node."
        ),
        reference="https://github.com/NVIDIA/nccl/blob/master/src/misc/shmutils.cc",
    ),
    *STALE_SHM_SIGNATURES,  # shared memory that killed runs left in /dev/shm (knowledge/stale_shm.py)
    Signature(
        id="shm_too_small",
        needles=("shared memory", "/dev/shm", "shm", "Bus error", "posix_fallocate", "mm_iface"),
        patterns=(
            r"(?i)insufficient shared memory",
            r"(?i)failed to extend /dev/shm",
            r"(?i)/dev/shm.*(?:No space|ENOSPC)",
            r"(?i)Error while creating shared memory segment",
            r"(?i)unable to allocate shared memory",
            r"(?i)shm_open.*failed",
            r"posix_fallocate failed ?: No space left on device",
            r"DataLoader worker \(pid \d+\) is killed by signal: Bus error",
            # UCX's shared-memory transport (uct/sm/mm/base/mm_iface.c) maps its receive FIFO in /dev/shm: MPI over
            # UCX (Open MPI's pml ucx, HPC-X) in a pod without a memory-backed /dev/shm fails there, then crashes
            r"\bmm_iface failed to allocate receive (?:FIFO|descs)",
        ),
        era="all PyTorch and NCCL releases, UCX's shared-memory transport; containers (docker 64 MB /dev/shm "
        "default, Kubernetes pods without a Memory emptyDir at /dev/shm)",
        kind="config_error",
        cause="configuration",
        meaning="The container's /dev/shm is too small for what NCCL, MPI's UCX shared-memory transport or the "
        "DataLoader workers share through it.",
        remedy=LARGER_SHM + "; NCCL_SHM_DISABLE=1 or fewer DataLoader workers work around it.",
        reference="https://github.com/pytorch/pytorch/issues/16979",
    ),
    Signature(
        id="shm_semaphore_no_space",
        needles=("No space left on device", "Errno 28"),
        patterns=(r"No space left on device|\[Errno 28\]",),
        era="Python multiprocessing (DataLoader workers' locks, semaphores and queues live in /dev/shm)",
        kind="config_error",
        cause="configuration",
        meaning="A multiprocessing lock, semaphore or shared-memory block could not be created: /dev/shm (not the "
        "disk) is full or too small, as in a container's 64 MB default.",
        remedy=LARGER_SHM + ", or use fewer DataLoader workers (num_workers); df -h /dev/shm shows it.",
        reference="https://github.com/NVIDIA/Megatron-LM/issues/878",
        before_re=r"SemLock|multiprocessing/(?:synchronize|queues|heap|shared_memory)|_multiprocessing|shm_open|/dev/shm",
    ),
    Signature(
        id="checkpoint_disk_full",
        needles=("No space left on device", "Errno 28", "failed writing file", "file write failed", "unexpected pos"),
        patterns=(
            r"No space left on device|\[Errno 28\]",
            r"PytorchStreamWriter failed writing file|file write failed|unexpected pos \d+ vs \d+",
        ),
        era="all PyTorch releases (torch.save's zip writer, torch.distributed.checkpoint, framework save calls)",
        kind="config_error",
        cause="configuration",
        meaning="Writing a checkpoint failed part-way because its volume is full (ENOSPC from torch.save's writer).",
        remedy="F" + ROOM_FOR_CHECKPOINTS[1:] + "; delete the truncated checkpoint the failed save left before "
        "resuming from it.",
        reference="https://github.com/databrickslabs/dolly/issues/139",
        before_re=r"serialization\.py|torch\.save|\b_save\(|write_record|save_checkpoint|checkpoint|inline_container",
    ),
    Signature(
        # after the /dev/shm and checkpoint rows: an ENOSPC whose context names neither is the disk the job
        # writes its outputs and logs to
        id="disk_full",
        needles=("No space left on device", "Errno 28"),
        patterns=(r"No space left on device|\[Errno 28\]",),
        era="any program (ENOSPC, errno 28, from a write, flush or file creation)",
        kind="config_error",
        cause="configuration",
        meaning="A write failed because its file system is full (ENOSPC): outputs, logs, caches or checkpoints "
        "filled the volume.",
        remedy=(
            "Free space on the volume the job writes to, or point its outputs elsewhere (df -h on the output, log, "
            "checkpoint and cache directories: ~/.cache, /tmp, TMPDIR, HF_HOME); then write less: fewer and rarer "
            "checkpoints (save_total_limit, a larger save interval), fewer saved samples or visualisations."
        ),
        reference="https://man7.org/linux/man-pages/man2/write.2.html",
        confidence="medium",
    ),
    Signature(
        id="port_in_use",
        needles=("in use", "EADDRINUSE", "errno: 98", "failed to bind"),
        patterns=(r"Address already in use", r"EADDRINUSE", r"errno: 98\b", r"(?i)failed to bind to \S+:\d+"),
        era="all torch.distributed releases (TCPStore / c10d rendezvous), torchrun, deepspeed",
        kind="config_error",
        cause="configuration",
        meaning="The rendezvous store could not listen on MASTER_PORT: another process (often an earlier job) has it.",
        remedy=(
            "Port {port|MASTER_PORT} is taken: give this job a free one (torchrun --master_port or --rdzv_endpoint "
            "HOST:PORT, accelerate launch --main_process_port, deepspeed --master_port; MASTER_PORT) or stop the "
            "process that holds it (ss -ltnp | grep {port|PORT}: often a leftover process of an earlier run)."
        ),
        reference="https://github.com/hiyouga/LlamaFactory/issues/162",
        fields_re=r"(?:port: |\]:|0\.0\.0\.0:|\bport )(?P<port>\d{2,5})\b",
    ),
    # ---- the Fabric Manager service itself: its own version check, systemd's report of it -------------------
    Signature(
        id="fabric_manager_version_mismatch",
        needles=("match with driver version", "nvidia-fabricmanager.service"),
        patterns=(
            r"(?i)fabric manager NVIDIA GPU driver interface version \S+ (?:don.t|doesn.t) match with driver version",
            r"nvidia-fabricmanager\.service: (?:Failed with result|Main process exited|Control process exited)",
            r"Job for nvidia-fabricmanager\.service failed",
        ),
        era="NVSwitch systems (HGX/DGX A100, H100, H200, B200): nv-fabricmanager's start-up check, systemd's unit log",
        kind="config_error",
        cause="configuration",
        meaning="NVIDIA Fabric Manager did not start (its version differs from the GPU driver's, or the service "
        "failed): without it the NVSwitch fabric is not set up, so CUDA fails with error 802 or NCCL collectives "
        "between the GPUs hang.",
        remedy=(
            "Install the nvidia-fabricmanager of exactly the driver's version (here Fabric Manager {fm_version|the "
            "installed one} against driver {driver_version|the loaded one}; nvidia-smi shows the driver, "
            "nv-fabricmanager --version the service), hold both packages together (apt-mark hold / versionlock) so "
            "an upgrade cannot split them, then systemctl enable --now nvidia-fabricmanager and check systemctl "
            "status nvidia-fabricmanager is active (running); reset the GPUs or reboot before the next job. "
            "NCCL_P2P_DISABLE=1 only works around the hang, at a large cost in bandwidth."
        ),
        reference="https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",
        fields_re=(
            r"interface version (?P<fm_version>\d+\.\d+(?:\.\d+)?) \S+ match with driver version "
            r"(?P<driver_version>\d+\.\d+(?:\.\d+)?)"
        ),
    ),
    Signature(
        id="fabric_manager_service_failed",
        needles=("Active: failed", "Active: inactive"),
        patterns=(r"^\s*Active: (?:failed|inactive \(dead\))",),
        era="systemctl status nvidia-fabricmanager on NVSwitch systems (HGX/DGX A100, H100, H200, B200)",
        kind="config_error",
        cause="configuration",
        meaning="systemctl shows the NVIDIA Fabric Manager service not running: the NVSwitch fabric is not set "
        "up, so CUDA fails with error 802 or NCCL collectives between the GPUs hang.",
        remedy=(
            "Start Fabric Manager and keep it running: its version must equal the driver's (nvidia-smi vs "
            "nv-fabricmanager --version; install the matching nvidia-fabricmanager package and hold both), then "
            "systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager says why it stopped "
            "('driver interface version ... don't match with driver version ...'). Reset the GPUs or reboot after. "
            "NCCL_P2P_DISABLE=1 only works around the hang."
        ),
        reference="https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",
        before_re=r"nvidia-fabricmanager|nv-fabricmanager|fabric manager service",
    ),
    Signature(
        id="fabric_manager_not_running",
        needles=(
            "not yet initialized",
            "SystemNotReady",
            "abric manager",
            "abric Manager",
            "error 802",
            "error=802",
            "Error 802",
        ),
        patterns=(
            r"system not yet initialized",
            r"cudaErrorSystemNotReady",
            r"(?i)fabric ?manager (?:cannot be started|is not running|failed|not started)",
            r"(?i)error[ =]?802\b",
        ),
        era="NVSwitch systems (HGX/DGX A100, H100, B200, GB200 NVL); any CUDA release",
        kind="config_error",
        cause="configuration",
        meaning="CUDA refuses to start (error 802) because NVIDIA Fabric Manager has not set up the NVSwitch fabric.",
        remedy=(
            "Install the nvidia-fabricmanager matching the driver and start it (systemctl enable --now "
            "nvidia-fabricmanager); on NVL5+ systems load ib_umad first (modprobe ib_umad) and start NVLSM."
        ),
        reference="https://github.com/NVIDIA/nccl-tests/issues/264",
    ),
    Signature(
        id="peer_access_unsupported",
        needles=("peer access", "PeerAccess", "not supported"),
        patterns=(
            r"(?i)peer access is not supported",
            r"cudaErrorPeerAccessUnsupported",
            r"(?i)peer access (?:has not been enabled|is not available)",
            r"(?i)(?:P2P|peer to peer) (?:access )?(?:is )?not supported",
        ),
        era="consumer and PCIe GPUs without peer access (RTX 4090/3090, some cloud VMs); custom all-reduce kernels",
        kind="config_error",
        cause="configuration",
        meaning="A kernel that needs CUDA peer access (custom all-reduce, CUDA IPC) ran on GPUs that cannot reach "
        "each other's memory.",
        remedy=(
            "Turn off the custom all-reduce (vLLM/SGLang --disable-custom-all-reduce, TensorRT-LLM "
            "--use_custom_all_reduce disable) so NCCL is used; check peer access with nvidia-smi topo -p2p r."
        ),
        reference="https://github.com/NVIDIA/TensorRT-LLM/issues/1625",
    ),
    Signature(
        id="too_many_peers",
        needles=("peer mapping resources", "TOO_MANY_PEERS", "TooManyPeers"),
        patterns=(r"peer mapping resources exhausted", r"CUDA_ERROR_TOO_MANY_PEERS", r"cudaErrorTooManyPeers"),
        era="all CUDA releases: one process can map at most 8 peer GPUs",
        kind="config_error",
        cause="configuration",
        meaning="One process drives more GPUs than CUDA lets it map as peers (8), so peer access set-up fails.",
        remedy=(
            "Run one process per GPU (mpirun -np N / torchrun --nproc-per-node N, nccl-tests -g 1) or at most 8 "
            "GPUs per process; NCCL_P2P_DISABLE=1 works around it at a cost."
        ),
        reference="https://github.com/NVIDIA/nccl-tests/issues/324",
    ),
    # a GPU index the node does not have: more processes per node than visible GPUs (HRNet/HRNet-Semantic-
    # Segmentation#171: --nproc_per_node above the GPUs; KellerJordan/modded-nanogpt#61: run.sh's 8 on 4 GPUs)
    row(
        "gpu_index_missing",
        "invalid device ordinal",
        r"invalid device ordinal",
        era="all CUDA releases (cudaErrorInvalidDevice, error 101; 10 in CUDA < 10)",
        cause="configuration",
        meaning="A rank asked for a GPU index this node does not have: more processes were started on the node "
        "than it has GPUs visible (or CUDA_VISIBLE_DEVICES lists fewer).",
        remedy=(
            "Start as many processes per node as it has GPUs, in the launch command{launch| }: torchrun "
            "--nproc_per_node (accelerate "
            "--num_processes, srun --ntasks-per-node) equal to the count nvidia-smi -L shows, and a "
            "CUDA_VISIBLE_DEVICES list at least that long; set_device must take the local rank, not the global one."
        ),
        reference="https://github.com/HRNet/HRNet-Semantic-Segmentation/issues/171",
        context_re=LAUNCH_COMMAND,
    ),
    Signature(
        id="several_ranks_one_gpu",
        needles=("Duplicate GPU", "same device", "same GPU", "both on CUDA device"),
        patterns=(
            r"Duplicate GPU detected",
            # NCCL's own words after its 'Duplicate GPU detected :', as a write-up quotes them without that head
            r"\brank \d+ and rank \d+ both on CUDA device",
            r"(?i)(?:ranks?|processes) (?:\S+ )?(?:use|using|on|share) the same (?:device|GPU)",
        ),
        era="NCCL >= 2.5 (Duplicate GPU detected)",
        kind="config_error",
        cause="configuration",
        meaning="Ranks were mapped to GPUs wrongly: two or more ranks on one GPU.",
        remedy=(
            "Call torch.cuda.set_device(local_rank) before init_process_group (or pass device_id=), and check "
            "CUDA_VISIBLE_DEVICES and --nproc_per_node against the GPUs of each node; enumerate the GPUs the same "
            "way on every node (CUDA_DEVICE_ORDER=PCI_BUS_ID). Ranks of different nodes named together share a "
            "host identity (containers with one hostname: set NCCL_HOSTID per node)."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/1241; "
        "https://www.thomaskalnik.com/posts/deepseek-v3-part-4-nccl-networking-stability (GPU order across nodes)",
    ),
    Signature(
        # the driver-older-than-runtime half of the class below, with its own remedy: the fix is the runtime the
        # process loads (a pip nvidia-cuda-runtime wheel, a framework / NCCL build for a newer CUDA) or the driver
        id="cuda_driver_insufficient",
        needles=("driver version is insufficient", "InsufficientDriver"),
        patterns=(r"(?i)CUDA driver version is insufficient for CUDA runtime version", r"cudaErrorInsufficientDriver"),
        era="any CUDA runtime newer than the installed driver supports (CUDA error 35)",
        kind="config_error",
        cause="configuration",
        meaning="The CUDA runtime the process loaded is newer than the GPU driver supports (CUDA error 35): "
        "every CUDA call, NCCL's first, fails.",
        remedy=(
            "Make the runtime match the driver: nvidia-smi's 'CUDA Version' is the newest CUDA the driver runs. "
            "Either upgrade the driver, or install the runtime and libraries built for the driver's CUDA: pip list "
            "| grep nvidia- shows a newer nvidia-cuda-runtime / nvidia-nccl wheel pulled in by a dependency (pin it "
            "to the driver's CUDA, nvidia-cuda-runtime-cuXX==<the driver's CUDA version>), and a framework or "
            "NCCL build for a newer CUDA (NCCL '+cuda12.x') needs its own CUDA's driver; in containers the CUDA "
            "forward-compatibility package works only on datacenter GPUs."
        ),
        reference="https://docs.nvidia.com/deploy/cuda-compatibility/",
    ),
    Signature(
        id="cuda_stack_incompatible",
        needles=(
            "named symbol",
            "kernel image",
            "driver version",
            "InsufficientDriver",
            "forward compat",
            "unsupported toolchain",
            "not compatible with the current PyTorch",
            "compute capability",
        ),
        patterns=(
            r"named symbol not found",
            r"no kernel image is available",
            r"(?i)CUDA driver version is insufficient",
            r"cudaErrorInsufficientDriver",
            r"forward compatibility was attempted on non supported HW",
            r"PTX was compiled with an unsupported toolchain",
            r"is not compatible with the current PyTorch installation",
            r"(?i)compute capability \S+ (?:is )?not (?:supported|compatible)",
        ),
        era="a new GPU generation with an older CUDA/NCCL build (e.g. sm_120 with CUDA 11.8), or an old driver",
        kind="config_error",
        cause="configuration",
        meaning="The CUDA, NCCL or PyTorch build does not match the GPU or the driver (no kernels for this GPU, "
        "or a driver older than the runtime).",
        remedy=(
            "Install a PyTorch/CUDA/NCCL build that supports this GPU and driver (e.g. PyTorch >= 2.7 with CUDA "
            "12.8 and NCCL >= 2.25 for Blackwell: an older NCCL release has no kernels for the GPU), or upgrade the "
            "driver; check nvidia-smi, torch.version.cuda and torch.cuda.nccl.version()."
        ),
        reference="https://github.com/pytorch/pytorch/issues/152077",
    ),
    Signature(
        id="backend_lacks_operation",
        needles=("does not support", "No backend type"),
        patterns=(
            r"ProcessGroup\w+ does not support \w+",
            r"No backend type associated with device type",
            r"Backend \w+ does not support \w+",
        ),
        era="all torch.distributed releases (old builds lacked ops; NCCL takes CUDA tensors only, gloo CPU ones)",
        kind="config_error",
        cause="configuration",
        meaning="The process-group backend of this torch build does not implement the call for these tensors.",
        remedy=(
            "Upgrade torch, or use a backend that supports the call for the tensor's device (nccl for CUDA tensors, "
            "gloo for CPU tensors; init_process_group(backend='cpu:gloo,cuda:nccl'))."
        ),
        # torch 2.x's ProcessGroup::getBackend (torch/csrc/distributed/c10d/ProcessGroup.hpp) for a tensor whose
        # device has no backend in the group: a CPU tensor in an NCCL-only group, a CUDA one in a gloo-only group
        remedy_when=(
            (
                r"No backend type associated with device type cpu\b",
                "A collective got a CPU tensor, and the group has no CPU backend (init_process_group('nccl') makes "
                "NCCL alone, which takes CUDA tensors): create the group with backend='cpu:gloo,cuda:nccl' (torch "
                ">= 2.0; leaving backend unset makes both), or move the tensor to the GPU before the call "
                "(tensor.cuda()).",
            ),
            (
                r"No backend type associated with device type cuda\b",
                "A collective got a CUDA tensor, and the group has no CUDA backend (init_process_group('gloo') "
                "makes gloo alone here): create the group with backend='cpu:gloo,cuda:nccl', or move the tensor to "
                "the CPU before the call (tensor.cpu()).",
            ),
        ),
        reference="https://github.com/pytorch/pytorch/issues/17848",
    ),
    *NVLS_SIGNATURES,  # NVLink SHARP (multicast) set-up refused (knowledge/fabric_rows.py)
    # c10d's check around ncclCommWindowRegister (NCCL >= 2.27) says 'Failed to window register segment with ptr
    # ...' in two places; the 'NCCL error in: FILE:LINE' line above it says which. ProcessGroupNCCL::registerSegment
    # (window=True: NCCL user buffers, a torch.cuda.MemPool registered with the group) runs on a communicator
    # that is already set up (getNcclComm): what NCCL refuses there is the memory. ncclCommWindowRegister is
    # collective and takes cuMem-backed memory (ncclMemAlloc, NCCL_CUMEM_ENABLE not 0) aligned to its granularity,
    # the same size on every rank (NCCL user guide, 'User Buffer Registration' / 'Window Registration').
    Signature(
        id="nccl_window_register_failed_user_buffer",
        needles=("window register",),
        patterns=(r"Failed to window register segment",),
        before_re=r"NCCL error in: \S*ProcessGroupNCCL\.cpp:\d+",
        era="torch >= 2.8 ProcessGroupNCCL registerSegment(window=True), NCCL >= 2.27 (window registration)",
        kind="nccl_error",
        cause="configuration",
        meaning="NCCL refused to register a user buffer as a window on the process group's communicator "
        "(ProcessGroupNCCL's registerSegment, window=True): the communicator is set up, the memory is what "
        "window registration does not take.",
        remedy=(
            "Register memory that NCCL windows accept: cuMem-backed (leave NCCL_CUMEM_ENABLE at its default 1, "
            "allocate the pool with NCCL's allocator, ncclMemAlloc / torch's NCCL mem pool), aligned to the "
            "allocation granularity, and the same size on every rank (the registration is collective: every rank "
            "of the group must register in the same order). Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=REG to "
            "see NCCL's reason."
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp "
        "(registerSegment); https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/bufferreg.html",
        confidence="medium",
    ),
    # torch's symmetric memory (torch.distributed._symmetric_memory, set_backend("NCCL")) registers its buffer as
    # an NCCL window on the process group's communicator (torch/csrc/distributed/c10d/symm_mem/
    # NCCLSymmetricMemory.cu: 'Failed to window register segment with ptr ...'). That needs a communicator that
    # exists; torch's own check asks for one 'eagerly initialized by filling `device_id` in the
    # `init_process_group` call', and a rendezvous that is the group's first NCCL operation fails with 'invalid
    # argument' where one collective before it succeeds (pytorch/pytorch#188567). Only that line: another NCCL
    # error of the same file (ncclMemAlloc out of memory) is not a registration.
    Signature(
        id="nccl_window_register_failed",
        needles=("window register",),
        patterns=(r"Failed to window register segment",),
        era="torch >= 2.8 symmetric memory with the NCCL backend, NCCL >= 2.27 (window registration)",
        kind="nccl_error",
        cause="configuration",
        meaning="NCCL refused to register memory as a window on the process group's communicator (symmetric "
        "memory's rendezvous): the communicator was not set up for it yet, or this NCCL / driver does not "
        "support window registration.",
        remedy=(
            "Have the communicator fully set up before the first symm_mem.rendezvous(): pass device_id="
            "torch.device('cuda', local_rank) to init_process_group (eager init), or run one ordinary collective "
            "(dist.barrier() or an all_reduce) on that group first; or keep the default CUDA symmetric-memory "
            "backend instead of set_backend('NCCL'). Rerun with NCCL_DEBUG=WARN to see NCCL's reason."
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/symm_mem/"
        "NCCLSymmetricMemory.cu; https://github.com/pytorch/pytorch/issues/188567",
        confidence="medium",
    ),
    # NCCL passes its own arguments to CUDA: a CUDA call of NCCL's refused as 'invalid argument'
    # (cudaErrorInvalidValue) is this NCCL build and the driver disagreeing (a kernel launch or a set-up call the
    # driver does not accept), not the program's device use: a newer or matching NCCL is the fix (nvls.cc's own
    # 'invalid argument', the fabric's, is nvls_setup_failed's above, in NVLS_SIGNATURES)
    Signature(
        id="nccl_cuda_invalid_argument",
        needles=("NCCL WARN Cuda failure",),
        patterns=(r"NCCL WARN Cuda failure (?:\d+ )?'invalid argument'",),
        era="NCCL 2.18-2.26 (enqueue.cc kernel launch, transport/p2p.cc)",
        kind="config_error",
        cause="configuration",
        meaning="A CUDA call NCCL made with its own arguments was refused as 'invalid argument': this NCCL build "
        "does not work with the driver or CUDA under it (a kernel launch or a memory set-up the driver rejects).",
        remedy=(
            "Match NCCL to the driver and CUDA: upgrade NCCL (the libnccl2 package or the nvidia-nccl-cu12 wheel "
            "the framework loads) to a newer release, or update the driver so it supports the NCCL build's CUDA "
            "(nvidia-smi's driver against the +cudaXX.Y of NCCL's version line)."
        ),
        reference="https://github.com/NVIDIA/TensorRT-LLM/issues/4238 (NCCL 2.25.1 -> 2.26.2 fixed it); "
        "https://github.com/pytorch/pytorch/issues/150852 (NCCL 2.26 on a CUDA 12.2 driver)",
    ),
    # ---- configuration: the network set-up ------------------------------------------------------
    Signature(
        id="peer_address_unreadable",
        needles=("with family 0",),
        patterns=(r"connecting to address\s+with family 0\b",),
        era="NCCL >= 2.12 (misc/socket.cc ncclSocketInit)",
        kind="config_error",
        cause="configuration",
        meaning="NCCL was handed an empty peer address (family 0): the address a peer sent in the bootstrap "
        "exchange was not read as sent, which happens when ranks run different NCCL versions (the exchanged "
        "structures differ), not when an interface is missing.",
        remedy=(
            "Install the same NCCL version on every node (compare the version line NCCL_DEBUG=VERSION prints on "
            "each; the same nvidia-nccl-cu12 wheel / libnccl, no second system NCCL found first on "
            "LD_LIBRARY_PATH); then check NCCL_SOCKET_IFNAME."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/1267",
        confidence="medium",
    ),
    Signature(
        id="socket_interface_not_found",
        needles=("IFNAME", "interface", "AF_INET", "Bootstrap : no", "Address family"),
        patterns=(
            r"(?i)no (?:usable )?(?:socket |listening )?interface (?:was )?found",
            r"(?i)NCCL_SOCKET_IFNAME.*(?:not found|no such|does not exist|invalid)",
            r"neither AF_INET\(2\) nor AF_INET6",
            r"(?i)Bootstrap : no socket interface found",
            r"(?i)failed to find (?:a|the|any)? ?(?:network )?interface",
            r"Socket creation failed : Address family not supported",
        ),
        era="all NCCL releases; older ones fail later with an internal check on an empty address",
        kind="config_error",
        cause="configuration",
        meaning="NCCL found no usable network interface for its bootstrap sockets (NCCL_SOCKET_IFNAME names "
        "none that exists, or none is up).",
        remedy="Set NCCL_SOCKET_IFNAME to an interface that exists and is routable on every host (ip -br addr), "
        "or unset it.",
        reference="https://github.com/NVIDIA/nccl/issues/1837",
    ),
    Signature(
        id="nccl_rem_allocator_failed",
        needles=("Rem Allocator",),
        patterns=(r"\[Rem Allocator\] Allocation failed",),
        era="NCCL 2.9-2.12 (bootstrap.cc's remote-allocation service thread)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="NCCL's remote-allocation thread took a connection not meant for it (a peer's socket closed "
        "first) and read random bytes as the size to allocate: the 'out of memory' beside it is not the GPU's "
        "memory running out.",
        remedy=(
            "Not a memory problem: do not lower the batch size for it. Move to a newer NCCL release (the PyTorch "
            "build's bundled NCCL, or NCCL via LD_PRELOAD / the nvidia-nccl wheel) where the remote allocator no "
            "longer misreads a closed connection; if training goes on after the line, it was harmless."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/555",
    ),
    Signature(
        id="bootstrap_failed",
        needles=("bootstrap.c", "ootstrap failed", "ootstrap timed out", "ootstrap timeout"),
        # not NVSHMEM's error macros ('init.cu:990: non-zero status: 7 nvshmem_bootstrap failed'): its own rows
        patterns=(
            r"\bbootstrap\.cc?u?:\d+ -> [2-9]\b",
            r"(?i)^(?![^\n]*(?:non-zero status|nvshmem))[^\n]*?bootstrap\w*[^\n]{0,80}(?:failed|timed out|timeout)",
        ),
        era="NCCL 2.x (error-return traces of NCCL_DEBUG=INFO)",
        kind="config_error",
        cause="network",
        meaning="NCCL's bootstrap (the out-of-band TCP exchange at communicator init) failed: the interface it "
        "picked cannot reach the other ranks.",
        remedy=(
            "Set NCCL_SOCKET_IFNAME to the NIC the hosts reach each other on (not docker0/lo, not an IPoIB port "
            "that the containers cannot route), open the ports between nodes, check MASTER_ADDR."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/1000",
        confidence="medium",
    ),
    # The IB transport's own return trace: its connection set-up (and, in NCCL <= 2.3, whose sources were CUDA
    # files, the bootstrap itself, which ran over the selected network: 'transport/net_ib.cu:537 -> 2' then
    # 'bootstrap.cu:169 -> 2') failed inside the verbs stack, not on a socket interface.
    Signature(
        id="nccl_ib_transport_failed",
        needles=("net_ib.cc:", "net_ib.cu:"),
        patterns=(r"\b(?:[\w/]+/)?net_ib\.(?:cc|cu):\d+ -> [26]\b",),
        era="NCCL 2.x NCCL_DEBUG=INFO error-return traces through the IB transport (net_ib.cu before 2.4)",
        kind="network_fault",
        cause="network",
        meaning="NCCL's InfiniBand / RoCE transport returned a system or remote error while connecting to or "
        "moving data with a peer: the IB path between the ranks failed (a port down, a driver or verbs stack that "
        "does not work, a wrong RoCE GID).",
        remedy=(
            "Run once with NCCL_IB_DISABLE=1 (NCCL then uses sockets): if that works, the IB stack is at fault: "
            "check the HCAs (ibstat, ibv_devinfo port state, the driver / MOFED install), NCCL_IB_HCA, and on RoCE "
            "NCCL_IB_GID_INDEX (show_gids); ib_write_bw between the hosts tests the fabric without NCCL."
        ),
        reference="https://github.com/horovod/horovod/issues/147 (NCCL 2.x bootstrap over IB; NCCLCHECK traces of "
        "NVIDIA/nccl src/transport/net_ib.cc at NCCL_DEBUG=INFO)",
        confidence="medium",
    ),
    Signature(
        id="nccl_net_transport_failed",
        needles=("net.h:", "net.cc:", "net_socket.cc:", "socket.cc:", "p2p_plugin.c"),
        patterns=(r"\b(?:[\w/]+/)?(?:net|net_socket|socket|p2p_plugin)\.(?:cc?|h):\d+ -> [26]\b",),
        era="NCCL 2.x NCCL_DEBUG=INFO error-return traces ('file.cc:line -> 2', no WARN line in some releases)",
        kind="network_fault",
        cause="network",
        meaning="NCCL's network transport returned a system or remote error while connecting to or moving "
        "data with a peer: the socket or IB path between the hosts failed.",
        remedy=(
            "Set NCCL_SOCKET_IFNAME to the NIC the hosts reach each other on: by default NCCL uses every interface "
            "but lo and docker*, bridges (br-*) and veth ones included, which other hosts cannot reach; open the "
            "ports between the nodes; for IB check the HCAs (ibstat) and NCCL_IB_HCA."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/697",
        confidence="medium",
        echo=True,
    ),
    Signature(
        id="socket_connect_retrying",
        needles=("Call to connect returned",),
        patterns=(
            r"Call to connect returned (?:Connection refused|Connection timed out|No route to host|Network is "
            r"unreachable), retrying",
        ),
        era="NCCL >= 2.12 (socket.cc retries a refused connect; once at start-up is normal)",
        kind="network_fault",
        cause="network",
        meaning="A rank keeps failing to open NCCL's bootstrap or proxy socket to a peer: the peer is not "
        "listening on that address, or a firewall or the wrong interface is in the way.",
        remedy=(
            "Set NCCL_SOCKET_IFNAME to the interface the hosts reach each other on, open the ports between nodes "
            "(security groups, firewalls), and check that every rank started."
        ),
        reference=NCCL_TROUBLESHOOTING + "#networking-issues",
        confidence="medium",
        min_count=5,
    ),
    Signature(
        id="gloo_host_unresolved",
        needles=("Unable to find address for",),
        patterns=(r"Unable to find address for:? \S+",),
        era="gloo TCP transport (torch.distributed gloo backend, any release)",
        kind="config_error",
        cause="configuration",
        meaning="Gloo could not turn this host's name into the address of a network interface: the hostname "
        "does not resolve (missing from /etc/hosts or DNS) or resolves to no local interface.",
        remedy=(
            "Set GLOO_SOCKET_IFNAME to the interface the ranks share (e.g. eth0), or make the hostname resolve "
            "to that interface's address in /etc/hosts."
        ),
        reference="https://github.com/msr-fiddle/pipedream/issues/32",
    ),
    Signature(
        id="gloo_connect_failed",
        needles=("Gloo", "gloo"),
        patterns=(
            r"Gloo connectFullMesh failed",
            r"(?i)gloo.*(?:connect|connectFullMesh).*(?:failed|refused|timed out)",
            r"GLOO_SOCKET_IFNAME",
        ),
        era="all torch releases with the gloo backend (also vLLM/Ray CPU groups)",
        kind="config_error",
        cause="network",
        meaning="Gloo could not connect its ranks: it bound an interface the other nodes cannot reach.",
        remedy=(
            "Export GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) to the routable NIC on every node (gloo's own "
            "benchmark and tests take it as --tcp-device IFACE). Where the address it connected to is a loopback "
            "one (127.0.1.1 is where Debian / Ubuntu's /etc/hosts puts the hostname), the peer advertised its "
            "hostname's address: name the interface, or map the hostname to the NIC's address in /etc/hosts."
        ),
        # gloo/transport/tcp/device.cc: with no interface named, a device binds the address the hostname resolves to
        reference="https://github.com/vllm-project/vllm/issues/13121",
    ),
    *RENDEZVOUS_HOST_SIGNATURES,  # a c10d store no node hosts, an IP endpoint renamed (knowledge/rendezvous_host.py)
    Signature(
        id="store_connect_failed",
        needles=("failed to connect to", "while trying to connect to", "DistNetworkError"),
        patterns=(
            r"client socket has (?:failed to connect to|timed out after \S+ while trying to connect to)"
            r"(?![^\n]*errno: 9[79]\b)",
            r"DistNetworkError",
        ),
        era="torch >= 1.13 c10d TCPStore client ('[c10d] The client socket has failed to connect to ...')",
        kind="config_error",
        cause="configuration",
        meaning="A rank could not reach the rendezvous store at MASTER_ADDR:MASTER_PORT: the address is wrong "
        "or unroutable from this node, nothing listens on the port yet, or a firewall drops it.",
        remedy=(
            "Check MASTER_ADDR / --master_addr / --rdzv_endpoint (the master node's routable IP, the same on every "
            "node, rather than a host name that may resolve to an address the others cannot reach; 127.0.0.1 on a "
            "single node) and MASTER_PORT, that the master node started first, and that the port is open between "
            "the nodes (ranks in containers: host networking, docker run --net=host, or the port published)."
        ),
        reference="https://github.com/hiyouga/LlamaFactory/issues/3715",
        confidence="medium",
    ),
    # multi-node launchers (DeepSpeed's runner, pdsh, mpirun) reach each host of their hostfile with ssh before any
    # rank starts: ssh's own 'Could not resolve hostname' is the hostfile's host, not the rendezvous store's
    Signature(
        id="launcher_ssh_host_unresolved",
        needles=("Could not resolve hostname",),
        patterns=(r"ssh: Could not resolve hostname \S+?:",),
        era="OpenSSH's client; DeepSpeed's runner (ssh HOST hostname -I for the master address), pdsh, mpirun",
        kind="config_error",
        cause="configuration",
        meaning="The launcher could not ssh to a host its hostfile lists: the name does not resolve on this machine.",
        remedy=(
            "Host {ssh_host|the host} in the launcher's hostfile (deepspeed --hostfile, /job/hostfile by default; "
            "mpirun --hostfile) does not resolve: list the real host names or IPs; a single-node run needs no hostfile "
            "(deepspeed --num_gpus N, or --include localhost:0,1). Then " + PASSWORDLESS_SSH + "."
        ),
        reference="https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/launcher/runner.py; "
        "https://github.com/thu-coai/EVA/issues/4",
        fields_re=r"Could not resolve hostname (?P<ssh_host>\S+?):",
    ),
    # a Slurm step whose tasks never started: the MPI plugin, pyxis, slurmctld's refusal (knowledge/slurm_step.py);
    # before remote_launch.py's generic 'Task launch for ... failed' row
    *SLURM_STEP_SIGNATURES,
    *REMOTE_LAUNCH_SIGNATURES,  # ssh / pdsh, srun's step launch, the Kubernetes API (knowledge/remote_launch.py)
    Signature(
        id="store_unreachable",
        needles=("Rendezvous", "C10d store", "name resolution", "Name or service", "getaddrinfo", "resolve"),
        patterns=(
            r"RendezvousConnectionError",
            r"connection to the C10d store has failed",
            r"Temporary failure in name resolution",
            r"Name or service not known",
            r"getaddrinfo.*failed",
            r"(?i)failed to resolve (?:the )?(?:host|address)",
        ),
        era="torch.distributed.elastic (torchrun) >= 1.9 and the c10d TCPStore",
        kind="config_error",
        cause="configuration",
        meaning="The ranks could not reach the rendezvous store: the endpoint's host name does not resolve to "
        "the right address, or nothing listens there.",
        remedy=(
            "Use a resolvable --rdzv_endpoint / MASTER_ADDR (an IP, or add the host names to /etc/hosts), check "
            "that the store's node started, and that the port is open; a node whose own host name the others "
            "cannot resolve advertises an address they can reach with torchrun --local_addr (pytorch/pytorch#64990). "
            "On Kubernetes, a worker pod can start before the master's service answers: wait in its init container "
            "until MASTER_ADDR:MASTER_PORT accepts a connection (nc -z), not only until the name resolves."
        ),
        reference="https://github.com/pytorch/pytorch/issues/67547",
        confidence="medium",
    ),
    Signature(
        id="rendezvous_incomplete",
        needles=("clients joined", "waiting for clients", "waiting for workers", "RendezvousTimeout", "wait timeout"),
        patterns=(
            r"clients joined",
            r"waiting for clients",
            r"(?i)timed out waiting for workers",
            r"RendezvousTimeoutError",
            r"wait timeout after \d+ ?ms,? keys",
        ),
        era="c10d TCPStore (torch >= 1.10: 'N/M clients joined'), torchrun rendezvous",
        kind="missing_rank",
        cause="stall",
        meaning="Not every rank reached the rendezvous before its timeout: some never started or could not reach "
        "the store.",
        remedy=(
            "{joined|Not all} of {expected|the} ranks reached the store. Check that every node launched (scheduler "
            "logs, --nnodes / WORLD_SIZE match the nodes started; under SLURM the program must be started with "
            "srun, --ntasks-per-node = processes per node, not plain python in the batch script) and can reach "
            "MASTER_ADDR:MASTER_PORT; when one node's share is missing, that node's own log or launcher never ran; "
            "when a single rank is missing, read its own log for an error before init_process_group. Raise the "
            "rendezvous timeout only for slow-starting nodes."
        ),
        reference="https://pytorch.org/docs/stable/elastic/rendezvous.html",
        fields_re=r"(?P<joined>\d+)/(?P<expected>\d+) clients joined",
    ),
    Signature(
        id="locked_memory_limit",
        needles=("memlock", "locked memory", "receive buffers", "RLIMIT_MEMLOCK", "Cannot allocate memory"),
        patterns=(
            r"(?i)memlock",
            r"(?i)max locked memory",
            r"RLIMIT_MEMLOCK",
            r"Failure to post internal receive buffers",
            r"(?i)(?:libfabric|EFA|ibv_|fi_|rdma|NET/IB|NET/OFI|mlx5).*Cannot allocate memory",
        ),
        era="EFA / libfabric and InfiniBand verbs; containers and Slurm jobs with a low ulimit -l",
        kind="config_error",
        cause="configuration",
        meaning="The process may not pin enough memory for RDMA buffers: the locked-memory limit (ulimit -l) is "
        "too low.",
        remedy=(
            "Raise the locked-memory limit to unlimited: ulimit -l unlimited, docker --ulimit memlock=-1, "
            "memlock unlimited in /etc/security/limits.conf, Slurm PropagateResourceLimits."
        ),
        reference="https://github.com/awslabs/awsome-distributed-ai/issues/647",
    ),
    Signature(
        id="host_oom",
        needles=("allocate memory", "bad_alloc"),
        patterns=(r"can't allocate memory|Cannot allocate memory|std::bad_alloc",),
        era="all releases",
        kind="oom",
        cause="application",
        meaning="A process could not get host memory.",
        remedy=(
            "Reduce host memory per rank (data-loader workers, pinned memory, CPU offload) or raise the "
            "container/cgroup memory limit."
        ),
        reference="https://pytorch.org/docs/stable/data.html#memory-pinning",
        confidence="medium",
    ),
    Signature(
        id="ofi_no_provider",
        needles=("fi_getinfo", "No eligible providers", "optimal provider"),
        patterns=(
            r"fi_getinfo\(\)? (?:call )?failed",
            r"NET/OFI.*(?:No eligible providers|Couldn't find any optimal provider)",
        ),
        era="aws-ofi-nccl (NET/OFI) on EFA or other libfabric providers, all releases",
        kind="config_error",
        cause="configuration",
        meaning="libfabric found no usable provider for the OFI plugin: the EFA / RDMA devices are not visible "
        "to the process (not passed into the container, or the driver is not loaded).",
        remedy=(
            "Pass the devices into the container (docker --device=/dev/infiniband/uverbs0 ... or --privileged; on "
            "Kubernetes request vpc.amazonaws.com/efa), check fi_info -p efa inside it, set FI_PROVIDER only to a "
            "provider that is there."
        ),
        reference="https://github.com/aws/aws-ofi-nccl/issues/1020",
    ),
    # aws-ofi-nccl names the libfabric provider it took ('NET/OFI Selected Provider is efa (found 4 nics)',
    # src/nccl_ofi_net.c; 'Selected provider is efa, fabric is efa-direct' in newer releases). It is made for the
    # fabric's own provider (efa on AWS, cxi on HPE Slingshot); tcp, sockets or udp means libfabric saw no such
    # device (a container started without the /dev/infiniband devices, an instance without EFA), and a WARN of
    # the plugin after that, in the same process, is the plugin failing on a provider it was not made for
    # (aws/aws-ofi-nccl#803: 'Selected Provider is tcp', then 'Disabling shared memory failed: Protocol not
    # available' at init; the EFA devices passed into the container fixed it). The nearest provider line of the
    # process decides (a later run's 'is efa' is not this one's tcp). The provider line alone is no failure: NCCL
    # may run on over TCP; and where that process goes on (NCCL falls back to its own sockets, 'Using network
    # Socket', 'Init COMPLETE') the WARN is a warning. Before ofi_completion_error and libfabric_incompatible on
    # purpose: on tcp their messages are the same missing device (an EFA WARN still gets them).
    # The EFA advice is for AWS's build ('Initializing aws-ofi-nccl 1.12.1-aws', libfabric '...amzn...'); the
    # plugin runs on Slingshot too (cxi provider), where the generic row after this one speaks.
    Signature(
        id="ofi_failed_without_efa",
        needles=("WARN NET/OFI",),
        patterns=(r"WARN NET/OFI\b",),
        era="aws-ofi-nccl (NET/OFI) on AWS EFA instances, all releases",
        kind="config_error",
        cause="configuration",
        meaning="The OFI (EFA) network plugin failed after it took a libfabric provider other than EFA: the "
        "process sees no EFA device, so the plugin runs over TCP and fails where it needs EFA.",
        remedy=(
            "The OFI plugin (aws-ofi-nccl) took libfabric's {ofi_provider|tcp} provider, not efa: make the EFA "
            "devices visible to the process: check the instance type has EFA and it is attached (ls "
            "/dev/infiniband/uverbs*; fi_info -p efa), start the container with them (docker run --gpus all "
            "--network host --ulimit memlock=-1:-1 --device /dev/infiniband/uverbsN for each device, or "
            "--privileged; on Kubernetes request "
            "vpc.amazonaws.com/efa), and use the aws-ofi-nccl the EFA installer ships; NCCL_DEBUG=INFO must then "
            "say 'Selected Provider is efa'."
        ),
        reference="https://github.com/aws/aws-ofi-nccl/issues/803",
        context_re=_OFI_PROVIDER,
        context_needed=True,
        context_requires=_OFI_FALLBACK_PROVIDER,
        platform_re=_OFI_ON_AWS,
        went_on_re=_NCCL_WENT_ON,
    ),
    Signature(
        id="ofi_failed_on_fallback_provider",
        needles=("WARN NET/OFI",),
        patterns=(r"WARN NET/OFI\b",),
        era="aws-ofi-nccl (NET/OFI) on AWS EFA or HPE Slingshot (cxi), all releases",
        kind="config_error",
        cause="configuration",
        meaning="The OFI network plugin failed after libfabric gave it a generic provider (tcp, sockets, udp) "
        "instead of the fabric's own: the process sees no high-speed network device.",
        remedy=(
            "The OFI plugin (aws-ofi-nccl) took libfabric's {ofi_provider|tcp} provider, not the fabric's own (efa "
            "on AWS, cxi on HPE Slingshot): list what libfabric finds inside the job (fi_info -l; fi_info -p cxi, "
            "or -p efa), make the fabric's devices visible to the process (pass them into the container, load the "
            "driver), and set FI_PROVIDER only to a provider that is there; NCCL_DEBUG=INFO must then name that "
            "provider."
        ),
        reference="https://github.com/aws/aws-ofi-nccl/issues/803",
        context_re=_OFI_PROVIDER,
        context_needed=True,
        context_requires=_OFI_FALLBACK_PROVIDER,
        went_on_re=_NCCL_WENT_ON,
    ),
    Signature(
        id="ofi_completion_error",
        needles=("completed with error", "prov_err", "cq_write_tx_error", "cq_write_rx_error"),
        patterns=(
            r"NET/OFI .*completed with error",
            r"(?i)rxr_cq_write_(?:tx|rx)_error|efa_\w*_write_(?:tx|rx)_error",
        ),
        era="aws-ofi-nccl (NET/OFI) over EFA / libfabric, all releases",
        kind="network_fault",
        cause="network",
        meaning="A libfabric (EFA) send or receive completed with an error: the instances cannot exchange "
        "traffic over the fabric (on EC2 most often a security group that does not allow all traffic "
        "between its members).",
        remedy=(
            "On EC2 give the security group inbound and outbound rules allowing all traffic with itself as source "
            "and destination; check fi_info -p efa and run fi_pingpong between the nodes."
        ),
        reference="https://github.com/aws/aws-ofi-nccl/issues/156",
    ),
    Signature(
        id="libfabric_incompatible",
        needles=(
            "Unable to",
            "Invalid argument",
            "incompatible",
            "too old",
            "not supported",
            "version mismatch",
            "Couldn't",
            "Failed to",
        ),
        patterns=(
            r"NET/OFI Unable to register memory",
            r"NET/OFI.*(?:Invalid argument|not supported|incompatible|version)",
            r"(?i)(?:libfabric|OFI plugin).*(?:incompatible|too old|not supported|version mismatch)",
            r"NET/OFI.*(?:Couldn't|Unable to|Failed to) (?:find|open|initialize)",
        ),
        era="aws-ofi-nccl with NCCL >= 2.19 and EFA installers < 1.29; mismatched libfabric / plugin builds",
        kind="config_error",
        cause="configuration",
        meaning="The NCCL OFI (EFA) plugin and the libfabric or NCCL it runs with are incompatible.",
        remedy=(
            "Use an EFA installer >= 1.29 (or set FI_EFA_SET_CUDA_SYNC_MEMOPS=0), or an NCCL that the installed "
            "libfabric supports; keep aws-ofi-nccl, libfabric and NCCL from one release set."
        ),
        reference="https://github.com/aws/aws-ofi-nccl/issues/584",
    ),
    # NCCL dlopen()s its network plugin (libnccl-net.so, or libnccl-net-$NCCL_NET_PLUGIN.so) and logs dlerror()
    # when that fails (src/net.cc: 'NET/Plugin : Plugin load (%s) returned %d : %s' in 2.17-2.18; 'NET/Plugin :
    # dlerror=%s No plugin found (%s), using internal implementation' (errno ENOENT), else 'NET/Plugin : Plugin load
    # returned %d : %s.', in 2.19-2.20; src/plugin/plugin_open.cc '%s/Plugin: %s: %s' later, where %s is the plugin
    # type: NET only here): 'libnccl-net.so: cannot open shared object file' is
    # no plugin installed (a healthy run on one node: BENIGN), but a plugin that is there and does not load names
    # another reason: a symbol version its libfabric lacks ('version `FABRIC_1.7' not found', aws-ofi-nccl 1.9.0
    # against an older EFA libfabric: awslabs/awsome-distributed-training#292), an undefined symbol, a dependency
    # that is missing ('libfabric.so.1: cannot open shared object file'). NCCL then carries on over its own
    # transport: on EFA, TCP sockets at a fraction of the bandwidth, with no error at all.
    Signature(
        id="net_plugin_load_failed",
        needles=("Plugin",),
        patterns=(_PLUGIN_LOAD_ERROR,),
        fields_re=_PLUGIN_LOAD_ERROR,
        era="NCCL 2.x with an external net plugin (aws-ofi-nccl on EFA, nccl-rdma-sharp-plugins, a vendor's)",
        kind="config_error",
        cause="configuration",
        meaning="NCCL found its network plugin but could not load it, and carries on over its internal transport "
        "(on EFA that is TCP sockets): the plugin was built for other libraries than those installed.",
        remedy=(
            "NCCL could not load its net plugin ({plugin_error|see the dlerror}) and fell back to its internal "
            "transport: install the plugin build that matches the libraries it loads against (aws-ofi-nccl: the "
            "version made for the installed libfabric / EFA installer, or upgrade libfabric; check with ldd on "
            "libnccl-net.so and fi_info -p efa), or put the matching libfabric first in LD_LIBRARY_PATH; then "
            "NCCL_DEBUG=INFO must show 'NET/OFI' (or the plugin's own name) as the network."
        ),
        reference="https://github.com/awslabs/awsome-distributed-training/issues/292",
        severity="warning",  # the job runs on, slower: a crash or hang beside it says more
    ),
    Signature(
        id="ib_qp_connect_failed",
        needles=("ibv_modify_qp", "modify QP"),
        patterns=(r"Call to ibv_modify_qp failed", r"Failed to modify QP to RT[RS]"),
        era="NCCL 2.x over InfiniBand / RoCE (ibvwrap.c / ibvwrap.cc), other RDMA stacks",
        kind="network_fault",
        cause="network",
        meaning="Two NICs could not bring up a queue pair: they cannot reach each other over the RDMA fabric "
        "(rail-only topology, wrong RoCE GID, no route or subnet manager).",
        remedy=(
            "On rail-optimised fabrics set NCCL_CROSS_NIC=0; on RoCE pick the RoCEv2 GID (NCCL_IB_GID_INDEX, "
            "show_gids: the index can differ between nodes, so set it per node, e.g. in /etc/nccl.conf) and check "
            "routes/VLANs; on IB check the subnet manager and port state (ibstat). 'No such device' is one HCA "
            "without a usable port or GID: leave it out with NCCL_IB_HCA=^{hca|<name>} (the NET/IB : Using line "
            "lists the HCAs NCCL picked)."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/2013",
        confidence="medium",
        # NCCL's 'NET/IB : Using [0]mlx5_3:1/RoCE ; OOB ...' when it picked one HCA (NVIDIA/nccl#799: that HCA
        # answered 'No such device' and NCCL_IB_HCA=^mlx5_3 fixed it), '[0]mlx5_2:1/RoCE [RO]; OOB' in NCCL >= 2.12
        # (relaxed ordering, net_ib.cc); the nearest Using line decides, and with several HCAs listed none is quoted
        context_re=r"NET/IB : Using (?:\[0\](?P<hca>[\w.-]+):\d+/(?:RoCE|IB)(?: \[RO\])?\s*(?:;|$))?",
    ),
    Signature(
        id="collnet_sharp_unavailable",
        needles=("sharp",),
        # not NCCL's own 'Cannot initialize CollNet, using point-to-point network instead': it recovers
        patterns=(r"SHARP coll init error|Cannot create SHARP job|sharp_plugin\.c:\d+ NCCL WARN",),
        era="NCCL with the SHARP (CollNet) plugin (nccl-rdma-sharp-plugins / HPC-X), all releases",
        kind="config_error",
        cause="configuration",
        meaning="NCCL's CollNet (SHARP in-network reduction) could not start: the fabric or its aggregation "
        "manager does not support SHARP for this job (common on cloud InfiniBand), or the plugin does not match.",
        remedy=(
            "Turn CollNet off where the fabric has no SHARP: NCCL_COLLNET_ENABLE=0 (and drop the SHARP plugin: "
            "unset NCCL_NET_PLUGIN / remove libnccl-net-sharp from LD_LIBRARY_PATH); where SHARP should work, "
            "check the aggregation manager (sharp_am) and SHARP_COLL_* settings with the fabric's admins."
        ),
        reference=NCCL_ENV,
        severity="warning",  # NCCL may fall back to point-to-point: a crash or hang beside it says more
    ),
    # NCCL >= 2.12 registers GPU buffers with the NIC through DMA-BUF (NCCL_DMABUF_ENABLE, on by default) when
    # the driver and CUDA offer it; an IB stack (rdma-core / kernel / MOFED) too old for ibv_reg_dmabuf_mr fails
    # the registration, and releases before NCCL's DMA-BUF back-off fixes do not fall back to nvidia-peermem.
    Signature(
        id="dmabuf_registration_unsupported",
        needles=("ibv_reg_dmabuf_mr",),
        patterns=(r"ibv_reg_dmabuf_mr\b.*(?:fail|error|not supported)",),
        era="NCCL >= 2.12 (DMA-BUF registration) on an InfiniBand / RoCE stack whose verbs lack DMA-BUF support",
        kind="config_error",
        cause="configuration",
        meaning="NCCL registered GPU memory with the NIC through DMA-BUF and the node's InfiniBand verbs stack "
        "(rdma-core, the kernel or the MOFED driver) does not support it: every connection's buffer registration "
        "fails.",
        remedy=(
            "Run with NCCL_DMABUF_ENABLE=0 so NCCL registers GPU memory through nvidia-peermem instead (modprobe "
            "nvidia-peermem for GPUDirect RDMA), or upgrade the rdma-core / MOFED stack to one whose "
            "ibv_reg_dmabuf_mr works; a newer NCCL release also falls back from DMA-BUF by itself."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/778 (NVIDIA/nccl src/misc/ibvwrap.cc: "
        "wrap_ibv_reg_dmabuf_mr's 'Call to ibv_reg_dmabuf_mr failed with error %s'); NCCL_DMABUF_ENABLE in " + NCCL_ENV,
    ),
    Signature(
        id="gdr_disabled",
        needles=("GPU Direct RDMA Disabled", "nv_peer_mem", "peermem"),
        patterns=(
            r"GPU Direct RDMA Disabled for HCA",
            r"(?i)(?:nv_peer_mem|nvidia.peermem).*(?:not loaded|not found|missing)",
        ),
        era="NCCL <= 2.22.3 with nvidia-peermem instead of nv_peer_mem (DGX OS 25.01), or no peer-memory module",
        kind="config_error",
        cause="configuration",
        meaning="GPUDirect RDMA is off: the NIC cannot read GPU memory directly, so inter-node bandwidth drops "
        "several times.",
        remedy=(
            "Load nvidia-peermem (modprobe nvidia-peermem) or use DMA-BUF (NCCL_DMABUF_ENABLE=1 with a recent "
            "driver); upgrade NCCL >= 2.23.4, which detects nvidia-peermem."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/1676",
        confidence="medium",
        severity="warning",
    ),
    *NVSHMEM_SIGNATURES,  # NVSHMEM's init with no transport to a peer (knowledge/fabric_rows.py)
    Signature(
        id="iommu_blocks_p2p",
        needles=("IOMMU", "iommu", "DMAR", "AMD-Vi", "IO_PAGE_FAULT", "ACS"),
        patterns=(
            r"DMAR: \[DMA (?:Read|Write)\].*fault",
            r"DMAR: DRHD: handling fault",
            r"AMD-Vi: Event logged \[IO_PAGE_FAULT",
            r"(?i)IOMMU.*(?:fault|blocks|translat\w* error)",
            r"(?i)ACS (?:is )?enabled.*(?:P2P|peer)",
            # lspci -vvv on a PCIe bridge with ACS redirecting peer requests up to the root complex
            r"ACSCtl:\s+SrcValid\+.*(?:ReqRedir\+|CmpltRedir\+)",
        ),
        era="PCIe systems with the IOMMU (VT-d / AMD-Vi) or PCIe ACS enabled; GPUDirect P2P and RDMA",
        kind="config_error",
        cause="configuration",
        meaning="The IOMMU or PCIe ACS redirects or blocks GPU peer-to-peer traffic, so P2P transfers fault or "
        "never complete.",
        remedy=(
            "Boot with intel_iommu=off or iommu=pt (amd_iommu=on iommu=pt), disable ACS on the PCIe switches; "
            "NCCL_P2P_DISABLE=1 works around it at a cost."
        ),
        reference=NCCL_TROUBLESHOOTING + "#pci-access-control-services-acs",
    ),
    # ---- stalls and desyncs ------------------------------------------------------------------------
    Signature(
        id="nccl_collective_mismatch",
        needles=("mismatch",),
        patterns=(r"collective mismatch error", r"Mismatched collective detected"),
        era="NCCL 2.4-2.x: NET/IB size check, init.cc hang detector ('collective mismatch around rank N')",
        kind="collective_mismatch",
        cause="desync",
        meaning="Ranks posted different collectives or sizes for the same operation, so NCCL's peers disagree "
        "on what to exchange (a desync).",
        remedy=(
            "Find the rank-dependent branch or shape: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL and compare "
            "each rank's opCount lines (scope does), or TORCH_DISTRIBUTED_DEBUG=DETAIL to name the call site."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/296",
        ranks_re=r"(?i)around rank (\d+)",
    ),
    Signature(
        id="nccl_hang_detected",
        needles=("may be hanging",),
        patterns=(r"Your program may be hanging",),
        era="NCCL 2.4-2.x hang detector ('may be caused by a collective mismatch around rank N')",
        kind="hang",
        cause="stall",
        meaning="NCCL saw a peer make no progress: the named rank posted another collective, or its transfers "
        "never complete (P2P blocked by the IOMMU or ACS looks the same).",
        remedy=(
            "Compare the collectives of the named rank with its peers (NCCL_DEBUG_SUBSYS=COLL opCount lines); if "
            "they match, suspect " + P2P_BLOCKED + "."
        ),
        reference="https://github.com/NVIDIA/nccl/issues/257",
        ranks_re=r"mismatch around rank (\d+)",
    ),
    Signature(
        id="fr_not_all_joined",
        needles=("Not all ranks joining collective",),
        patterns=(r"Not all ranks joining collective",),
        era="torch >= 2.5 Flight Recorder analyzer (fr_trace / torchfrtrace) text output",
        kind="missing_rank",
        cause="stall",
        meaning="The Flight Recorder analyzer found a collective that some ranks of the group never issued; the "
        "job hangs waiting for them.",
        remedy=(
            "Look at what the missing ranks did instead (their Flight Recorder entries and py-spy stacks): a "
            "rank-dependent branch, a data-loader stall, or a crash before the call."
        ),
        reference="https://github.com/pytorch/pytorch/pull/140969",
        ranks_re=r"missing ranks: \{([\d, ]+)\}",
    ),
    Signature(
        id="nccl_timeout_reached",
        needles=(
            "has been reached",
            "Watchdog caught collective timeout",
            "Watchdog caught collective operation timeout",
        ),
        patterns=(
            r"(?i)Timeout \d+ (?:seconds|s) has been reached in nccl\w+",
            r"Watchdog caught collective timeout\. last enqueued work",
            # a quoted or cut watchdog line without its WorkNCCL(...) part (readers/logs.py reads the full one)
            r"Watchdog caught collective operation timeout(?!: Work)",
        ),
        era="vendor NCCL forks with NCCL_TIMEOUT; c10d watchdog wording without SeqNum",
        kind="timeout",
        cause="stall",
        meaning="A collective did not finish within the timeout: a rank never joined it or is stuck.",
        # the search and the group a collective runs on (flagos-ai/vllm-plugin-FL#348: an all_reduce on the default
        # group instead of the tensor-parallel one), then the collective-timeout class's usual causes
        # (knowledge/remedies.WATCHDOG_USUAL_CAUSES); a vendor NCCL's own limit is NCCL_TIMEOUT, as its line says
        remedy=(
            "A collective passed its timeout (NCCL_TIMEOUT too, where the line says it is set). Find the rank that "
            "did not join (Flight Recorder: TORCH_FR_BUFFER_SIZE=2000, compare last enqueued work across ranks) and "
            "check that every collective is issued on the right process group (its group= argument: a "
            "tensor-parallel all_reduce on the TP group, not the default group). " + WATCHDOG_USUAL_CAUSES
        ),
        reference="https://github.com/flagos-ai/vllm-plugin-FL/pull/348",
        confidence="medium",
    ),
    row(
        "nccl_unique_id_store_timeout",
        ("retrieving ncclUniqueId",),
        r"retrieving ncclUniqueId from \[\d+\] via c10d key-value store.*(?:Socket Timeout|timed out|Timeout)",
        era="torch 2.x ProcessGroupNCCL::broadcastUniqueNCCLID (a rank waits in the store for the root's NCCL id)",
        cause="stall",
        kind="timeout",
        meaning="A rank waited in the c10d store for the NCCL unique id its root rank publishes when it sets up the "
        "communicator, and the store's timeout passed: the root reached its first collective too late (long work "
        "of its own before it, such as dataset pre-processing) or never (it crashed first).",
        remedy=(
            "Read the root rank's own output before the timeout: if it was busy (tokenizing or pre-processing a "
            "dataset, loading a checkpoint), raise the process-group timeout ("
            + TIMEOUT_KNOBS
            + ") or do that work once before the job; if it crashed, its error is the cause."
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        confidence="medium",
    ),
    Signature(
        id="c10d_watchdog_timeout_stack",
        needles=("checkTimeout",),
        patterns=(r"ProcessGroupNCCL::WorkNCCL::checkTimeout\(",),
        era="torch 2.2 onwards (WorkNCCL::checkTimeout raises the timeout in the watchdog thread: watchdogHandler, "
        "ncclCommWatchdog)",
        kind="timeout",
        cause="stall",
        meaning="c10d's NCCL watchdog raised a collective timeout: the C++ stack of WorkNCCL::checkTimeout under "
        "watchdogHandler / ncclCommWatchdog, posted without its 'Watchdog caught collective operation timeout' "
        "line.",
        remedy=(
            "A collective passed the process-group timeout: find the rank that never joined "
            "(TORCH_FR_BUFFER_SIZE=2000 and scope diagnose on the dumps; py-spy dump --pid on each rank). "
            + WATCHDOG_USUAL_CAUSES
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        confidence="medium",
        echo=True,
    ),
    Signature(
        id="watchdog_stuck_in_cuda",
        needles=("workCleanupLoop", "ncclCommWatchdog", "watchdogHandler"),
        patterns=(r"ProcessGroupNCCL::(?:\w+::)*(?:workCleanupLoop|ncclCommWatchdog|watchdogHandler)\(",),
        era="torch 2.0-2.1 (workCleanupLoop), later ncclCommWatchdog / watchdogHandler",
        kind="hang",
        cause="stall",
        meaning="The NCCL watchdog thread is blocked inside a CUDA call (a kernel waiting for a dead peer holds "
        "the GPU), so it can neither time out nor abort.",
        remedy=(
            "Restart the job and look for the rank that died first; upgrade torch (the watchdog no longer blocks "
            "on CUDA calls) and keep TORCH_NCCL_ASYNC_ERROR_HANDLING=1."
        ),
        reference="https://github.com/pytorch/pytorch/issues/101463",
        before_re=r"\bcu(?:da)?[A-Z]\w+\s*\(",
    ),
    Signature(
        id="deepspeed_launcher_exit",
        needles=("exits with return code",),
        patterns=(r"exits with return code = -?\d+",),
        era="DeepSpeed launcher (deepspeed/launcher/launch.py sigkill_handler), all releases",
        kind="crash",
        cause="application",
        meaning="DeepSpeed's launcher saw a rank's process exit with a non-zero code and killed the others; a "
        "negative code is the signal that ended it (-9 SIGKILL: the OOM killer or the scheduler; -6 SIGABRT: "
        "c10d's take-down after an NCCL error or timeout; -11 SIGSEGV: a native crash).",
        remedy=(
            "Read that rank's own output before the exit; for -9 check the host's kernel log for an OOM kill "
            "(dmesg -T | grep -i oom) and the job's memory limit, for -6 the rank's first NCCL / c10d error."
        ),
        reference="https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/launcher/launch.py",
        confidence="medium",
        ranks_re=r"--local_rank=(\d+)",
        fields_re=r"return code = (?P<exit_code>-?\d+)",
    ),
    Signature(
        id="mpirun_nonzero_exit",
        needles=("exited with non-zero status", "mpirun noticed", "mpirun detected"),
        patterns=(
            r"mpirun (?:noticed|detected) that (?:one or more processes|process rank \d+"
            r"(?: with PID \d+)?(?: on node \S+)?) exited",
        ),
        era="Open MPI mpirun (any release) ending a job after one rank's non-zero exit",
        kind="crash",
        cause="application",
        meaning="A rank exited with a non-zero status and mpirun aborted the whole job; that rank's own output "
        "before the abort holds the reason.",
        remedy=(
            "Read the named rank's output before the abort (rerun with NCCL_DEBUG=INFO and "
            "--output-filename to keep each rank's log); the other ranks were killed by mpirun."
        ),
        reference="https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html",
        confidence="medium",
        ranks_re=r"Process name: \[\[\d+,\d+\],(\d+)\]|process rank (\d+)",
    ),
    # ---- generic NCCL / CUDA failures (after the specific rows) -------------------------------------
    Signature(
        id="horovod_stalled_tensors",
        needles=("stall_inspector", "subset of ranks", "ready ranks:"),
        patterns=(
            r"submitted to be reduced, gathered or broadcasted by subset of ranks",
            r"only subset of ranks is submitting tensors",
            r"\[ready ranks: [\d, ]+\]",
        ),
        era="Horovod >= 0.19 stall inspector (HOROVOD_STALL_CHECK_TIME_SECONDS, 60 s by default); Horovod "
        "<= 0.18 'Stalled ops: NAME [ready ranks: N]' (operations.cc)",
        kind="hang",
        cause="stall",
        meaning="Some ranks submitted collectives that others never did for over the stall-check time: the "
        "ranks run different collectives (a rank-dependent branch) or some stopped calling them; the job hangs.",
        remedy=(
            "Read the 'Missing ranks' lines under it: each names the ranks that have not submitted which tensors; "
            "make every rank submit the same tensors in the same order (a rank-dependent condition or an uneven "
            "last batch is the usual cause)."
        ),
        reference="https://horovod.readthedocs.io/en/stable/troubleshooting_include.html",
        ranks_re=r"\[ready ranks: ([\d, ]+)\]",
        ranks_ready=True,
    ),
    Signature(
        id="nccl_tests_wrong_results",
        needles=("Out of bounds values",),
        patterns=(r"Out of bounds values\s*:\s*[1-9]\d*\s+FAILED",),
        era="nccl-tests (all releases): the data check after each size (-c 1)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="The collective completed but returned wrong data (nccl-tests' check found out-of-bounds "
        "values): an NCCL bug for that size or algorithm, or data corrupted on the way (NVLink / PCIe).",
        remedy=(
            "Upgrade NCCL to a release that fixes it and rerun; narrow it with NCCL_ALGO / NCCL_PROTO=Simple and "
            "check the links (nvidia-smi nvlink -e, dmesg for Xid / AER) if it persists."
        ),
        reference="https://github.com/NVIDIA/nccl-tests/issues/37",
        confidence="medium",
    ),
    Signature(
        id="nccl_kernel_shared_mem",
        needles=("ncclMaxSharedMem",),
        patterns=(r"ncclMaxSharedMem \d+ exceeds device/fn maxSharedMem",),
        era="NCCL 2.25 on Blackwell consumer GPUs (sm_120); any NCCL built for a newer GPU's limits (enqueue.cc)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="This NCCL release's kernels ask for more shared memory than the GPU allows, so its collectives "
        "cannot launch on this GPU: the NCCL version does not support it.",
        remedy="Upgrade NCCL (2.26.2 or later for RTX 50xx / sm_120), or use a PyTorch build that bundles it.",
        reference="https://github.com/NVIDIA/nccl-tests/issues/287",
    ),
    Signature(
        id="nccl_error_return",
        needles=(".cc:", ".cu:", ".h:"),
        patterns=(r"NCCL INFO (?:[\w/]+/)?\w+\.(?:cc|cu|h):\d+ -> [1-6]\b",),
        era="NCCL 2.x NCCL_DEBUG=INFO error-return traces (codes 1-6; 7 is ncclInProgress, not an error)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="An NCCL call returned an error up its call chain (1 CUDA, 2 system, 3 internal, 4 invalid "
        "argument, 5 invalid usage, 6 remote error); the first line of the chain is where it began.",
        # each code's class fix (knowledge/remedies.NCCL_RESULT_FIXES); words/advice.py keeps the one clause of
        # the code the chain names
        remedy=(
            f"{NCCL_DEBUG_RERUN} to see the WARN line that opens the chain. By its code{{nccl_result| }}: "
            + "; ".join(f"{code} ({name}) - {fix}" for code, (name, fix) in NCCL_RESULT_FIXES.items())
            + "."
        ),
        reference=NCCL_TROUBLESHOOTING,
        confidence="low",
        fields_re=r"-> (?P<nccl_result>[1-6])\b",
        echo=True,
    ),
    # TransformerEngine's Userbuffers bootstrap: before the generic wrapped-NCCL-call row below
    Signature(
        id="te_userbuffers_init",
        needles=("userbuffers",),
        patterns=(r"NCCL error \S*userbuffers[-/]\S*\.cpp:\d+",),
        era="TransformerEngine with tp_comm_overlap (Userbuffers; csrc/userbuffers/userbuffers-host.cpp)",
        kind="nccl_error",
        cause="application",
        meaning="TransformerEngine's Userbuffers bootstrap failed in an NCCL call while it built the groups for "
        "tensor-parallel communication overlap.",
        remedy=(
            "Userbuffers builds its groups with torch.distributed.new_group(), which every rank of the world must "
            "enter; with a tensor-parallel size below the world size not all do. Use a TransformerEngine release "
            "with PR #1087 (new_group(..., use_local_synchronization=True)), call init_process_group(device_id="
            "torch.device('cuda', local_rank)) so sub-groups are split from the world communicator, or turn "
            "tp_comm_overlap off."
        ),
        reference="https://github.com/NVIDIA/TransformerEngine/issues/994",
        confidence="medium",
    ),
    Signature(
        id="nccl_test_failure",
        needles=("NCCL failure", "NCCL error"),
        patterns=(r"(?:Test )?NCCL failure \S+:\d+ '", r"Failed, NCCL error \S+:\d+"),
        era="nccl-tests (all versions), libraries that wrap NCCL calls (TransformerEngine userbuffers)",
        kind="nccl_error",
        cause="nccl_bug",
        meaning="An NCCL call returned an error; the quoted text names its class.",
        remedy=f"{NCCL_DEBUG_RERUN} to see the failing step; check that NCCL, CUDA and the driver versions match.",
        reference="https://github.com/NVIDIA/nccl-tests/issues/5",
        confidence="medium",
    ),
    Signature(
        id="cuda_test_failure",
        needles=("CUDA failure", "Cuda failure"),
        patterns=(r"Test CUDA failure \S+:\d+ '", r"Cuda failure (?:\d+ )?'"),
        era="nccl-tests (Test CUDA failure), NCCL WARN Cuda failure",
        kind="crash",
        cause="application",
        meaning="A CUDA runtime call failed; the quoted text names the error.",
        remedy="Check the GPU (nvidia-smi, dmesg for Xid) and that the CUDA runtime matches the driver; rerun "
        "with CUDA_LAUNCH_BLOCKING=1 to find the failing call.",
        reference=NCCL_TROUBLESHOOTING,
        confidence="medium",
        cuda_named=True,
    ),
    *RUNTIME_SIGNATURES,  # the program's own errors around the stack (knowledge/runtime_errors.py)
    *LOADING_SIGNATURES,  # a library or plugin the loader does not find (knowledge/runtime_loading.py)
    *LAUNCHER_SIGNATURES,  # a worker's end as its launcher reports it (knowledge/launcher_rows.py)
    *FRAMEWORK_CONFIG_SIGNATURES,  # frameworks' checks of their own config (knowledge/framework_config.py)
    *LAUNCH_SHAPE_SIGNATURES,  # a launch that does not fit its checkpoint or its hosts (knowledge/launch_shape.py)
    *OPEN_MPI_SIGNATURES,  # Open MPI's runtime starting and wiring up the job (knowledge/open_mpi.py)
    # Ray's summaries and death reports, whose error is elsewhere: last, so the error's own line keeps its row
    *RAY_FAILURE_SIGNATURES,  # (knowledge/ray_failures.py)
)

# Lines that look like errors and are not: never a cause, never the best guess.
BENIGN: tuple[str, ...] = (
    r"Failed to open libibverbs",
    *(b.pattern for b in RDMA_CORE_BENIGN),  # libibverbs' absent providers (knowledge/rdma_core.py)
    # NCCL's net plugin not installed (net.cc 2.19-2.20 'dlerror=... No plugin found'): benign unless dlerror names
    # a reason the plugin that is there did not load (net_plugin_load_failed's, a warning)
    rf"^(?!.*(?:{_PLUGIN_LOAD_REASON})).*(?:No plugin found|dlerror=)",
    r"Could not find real path",
    r"Got async event : (?:client reregistration|port active|GID table change|LID change|SM change|PKey change)",
    r"Topology detection: network path \S+ is not a PCI device",
    r"NVLS multicast support is not available",
    # vLLM custom_all_reduce.py: printed on every healthy start on GPUs without peer-to-peer; the start goes on
    r"Custom allreduce is disabled because",
    r"Connection closed by localRank",
    r"Producer process has been terminated before all shared CUDA tensors released",
    r"(?:User|Future|Deprecation|Runtime)Warning",
    r"warnings\.warn",
    r"to perform barrier as devices used by this process are currently unknown",
    r"Setting OMP_NUM_THREADS",
    r"NCCL_\w+ set by environment",
    r"retrying",
)


def by_id() -> dict[str, Signature]:
    return {s.id: s for s in SIGNATURES}
