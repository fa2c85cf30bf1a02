"""Signature rows (knowledge/runtime_errors.py's fourth theme): the GPU driver, NVML in a container, the CUDA
runtime and its libraries (cuBLAS, cuDNN)."""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

CUDA_RUNTIME_API = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"

CUDA_SIGNATURES: tuple[Signature, ...] = (
    # ---- the GPU driver and the CUDA runtime -------------------------------------------------------------
    row(
        "nvidia_driver_too_old",
        ("driver on your system is too old", "found no nvidia driver", "couldn't communicate with the"),
        (
            r"NVIDIA driver on your system is too old",
            r"Found no NVIDIA driver on your system",
            r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        ),
        era="all torch releases (torch/cuda/__init__.py's check of cudaDriverGetVersion); nvidia-smi",
        cause="configuration",
        meaning="The GPU driver is missing, not loaded, or older than the CUDA version PyTorch was built with.",
        remedy=(
            "Install a driver that supports the build's CUDA version (nvidia-smi shows the driver{driver| }, "
            "torch.version.cuda the build's; the CUDA release notes' driver table) or a PyTorch build for an "
            "older CUDA (pip install torch --index-url https://download.pytorch.org/whl/cu118); in a "
            "container, start it with --gpus all / the NVIDIA runtime; if the driver vanished mid-run, look for "
            "Xid 79 in dmesg."
        ),
        reference="https://docs.nvidia.com/deploy/cuda-compatibility/",
        fields_re=r"found version (?P<driver>\d+)",
    ),
    # NVIDIA/nvidia-docker#1730 (maintainer's notice, also nvidia-container-toolkit#48): under the systemd cgroup
    # driver a host `systemctl daemon-reload` rewrites the container's device cgroup without the NVIDIA nodes
    row(
        "nvml_unknown_error_in_container",
        "Failed to initialize NVML: Unknown Error",
        r"Failed to initialize NVML: Unknown Error",
        era="NVIDIA container toolkit with runc and the systemd cgroup driver (cgroup v1 and v2), 2022 on",
        cause="configuration",
        meaning="NVML could not reach the GPUs. In a container that had them, the usual cause: with systemd "
        "managing its cgroups, a daemon-reload on the host drops the NVIDIA device nodes (no /dev/char symlinks).",
        remedy=(
            "In a container: create the /dev/char symlinks of the NVIDIA devices at boot (sudo nvidia-ctk system "
            "create-dev-char-symlinks --create-all, or its udev rule; GPU Operator >= 22.9.2 does it), or run the "
            "container runtime with the cgroupfs driver, then restart the affected containers or pods. On a bare "
            "host: check that the driver is loaded and matches its NVML library (nvidia-smi, dmesg; reboot after "
            "a driver upgrade)."
        ),
        reference="https://github.com/NVIDIA/nvidia-docker/issues/1730",
    ),
    row(
        "cuda_devices_unavailable",
        "busy or unavailable",
        r"all CUDA-capable devices are busy or unavailable",
        era="all CUDA releases (cudaErrorDevicesUnavailable)",
        cause="configuration",
        meaning="The GPU refused a new context: it is in EXCLUSIVE_PROCESS compute mode and another process "
        "holds it, or several ranks were given the same GPU.",
        remedy=(
            "Give each rank its own GPU (torch.cuda.set_device(local_rank) before any CUDA call; "
            "CUDA_VISIBLE_DEVICES per rank), stop the process that holds it (nvidia-smi), or set the compute "
            "mode back to DEFAULT (nvidia-smi -c DEFAULT)."
        ),
        reference=CUDA_RUNTIME_API,
    ),
    row(
        "cuda_device_side_assert",
        ("device-side assert", "assertion `"),
        (r"device-side assert(?:ion)? triggered", r"Assertion `[^`]+` failed"),
        era="all torch releases (a CUDA kernel's assert, reported at the next CUDA call)",
        cause="application",
        meaning="A CUDA kernel's own check failed, almost always an index out of range: a class label >= the "
        "number of classes, a token id >= the embedding size, a negative label without ignore_index.",
        remedy=(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 (or on CPU) to get the failing op{assertion| }; check the labels "
            "against the number of classes (num_labels) and token ids against the embedding size "
            "(resize_token_embeddings after adding tokens)."
        ),
        reference="https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution",
        fields_re=r"Assertion `(?P<assertion>[^`]{1,80})` failed",
    ),
    row(
        "cuda_illegal_memory_access",
        ("illegal memory access", "misaligned address", "unspecified launch failure"),
        r"an illegal memory access was encountered|misaligned address|unspecified launch failure",
        era="all CUDA releases (cudaErrorIllegalAddress, cudaErrorMisalignedAddress, cudaErrorLaunchFailure)",
        cause="application",
        meaning="A CUDA kernel accessed memory it does not own; later CUDA calls only report it.",
        remedy=(
            "Find the kernel: rerun with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer; suspect custom or "
            "fused kernels (flash-attention, apex, TransformerEngine, torch.compile) and versions of torch, CUDA, "
            "NCCL and the driver that do not match; dmesg shows an Xid 13/31/43 for the same time. If an NCCL "
            "or InfiniBand error comes first in the log, that error is the cause."
        ),
        reference="https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html",
        confidence="medium",
        cuda_named=True,
    ),
    row(
        "cublas_alloc_failed",
        ("cublas_status_alloc_failed", "cudnn_status_alloc_failed"),
        r"CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED",
        era="all torch releases (cuBLAS / cuDNN handle or workspace allocation)",
        kind="oom",
        cause="application",
        meaning="cuBLAS or cuDNN could not allocate its workspace: the GPU's memory was already full.",
        remedy=(
            "Free GPU memory: check that no other process or second rank uses this GPU (nvidia-smi; "
            "torch.cuda.set_device(local_rank) before init), lower the batch size; "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation."
        ),
        reference="https://docs.nvidia.com/cuda/cublas/index.html#cublasstatus-t",
    ),
    row(
        "cudnn_not_initialized",
        "cudnn_status_not_initialized",
        r"CUDNN_STATUS_NOT_INITIALIZED",
        era="all torch releases",
        cause="configuration",
        meaning="cuDNN could not start: a cuDNN library that does not match the CUDA runtime or driver, or no "
        "GPU memory left for its handle.",
        remedy=(
            "Use the cuDNN that ships with the PyTorch wheel (remove other libcudnn from LD_LIBRARY_PATH; "
            "torch.backends.cudnn.version()), check the driver against torch.version.cuda, and that the GPU "
            "is not already full (nvidia-smi)."
        ),
        reference="https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html",
    ),
    row(
        "cublas_cudnn_failed",
        ("cublas_status_", "cudnn_status_", "cudnn error"),
        (r"CUBLAS_STATUS_\w+", r"CUDNN_STATUS_\w+"),
        era="all torch releases (cuBLAS / cuDNN return codes)",
        cause="application",
        meaning="A cuBLAS or cuDNN call failed; the status is often a memory error or a kernel fault earlier in "
        "the step reported late.",
        remedy=(
            "Rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing call and its shapes (an index out of range or "
            "a shape mismatch earlier in the step often surfaces here); check GPU memory headroom and that the "
            "dtype is supported on this GPU (bf16 needs sm_80+); set torch.backends.cudnn.benchmark=False for "
            "cuDNN, and match torch, CUDA and driver versions."
        ),
        reference="https://docs.nvidia.com/cuda/cublas/index.html#cublasstatus-t",
        confidence="medium",
    ),
    # One process touching two GPUs in one op (aten's device check in TensorIterator and the ops' argument
    # checks): the model spread over GPUs by nn.DataParallel - which the HF Trainer applies by itself when one
    # plain `python` process sees several GPUs - or by device_map="auto", with an input left on another GPU
    row(
        "tensors_on_two_gpus",
        "Expected all tensors to be on the same device",
        r"Expected all tensors to be on the same device, but found at least two devices, cuda:\d+ and cuda:\d+",
        era="all torch releases (the device check of aten's TensorIterator and op arguments)",
        kind="crash",
        cause="application",
        confidence="medium",
        meaning="One process used tensors on two GPUs in one operation: the model was spread over several GPUs "
        "in one process (nn.DataParallel, which the HF Trainer applies when a plain python process sees several "
        "GPUs, or device_map='auto') while an input stayed on another GPU.",
        remedy=(
            "Run one process per GPU for data-parallel training: torchrun --nproc_per_node=<GPUs> (or accelerate "
            "launch) instead of plain python, or make one GPU visible (CUDA_VISIBLE_DEVICES=0); with a model split "
            "by device_map, move the inputs to the device of its first layer."
        ),
        reference="https://github.com/FlagOpen/FlagEmbedding/issues/85",
    ),
)
