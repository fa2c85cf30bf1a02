"""Signature rows (knowledge/runtime_errors.py's first theme): the process group's start-up barrier and DDP's
reducer, the errors a training program raises around its process group."""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"

# The call that entered a DDP-wrapped module's forward, in a traceback: the source line right above nn.Module's
# call frames (_call_impl, _wrapped_call_impl) and distributed.py's forward (`enc_out = text_encoder1(ids, ...)` ->
# text_encoder1; `loss = self.model(batch)` -> self.model), in a frame of the program, not of torch (a checkpoint
# function's `CheckpointFunction.apply(` is no module); 3.11+ prints carets under a source line. A line with a call
# inside the call's arguments names no module: in `loss = criterion(model(x), y)` the module is the inner call, in
# `out = model(x.cuda())` the outer one, and the line alone cannot tell (the carets that could are stripped).
_DDP_CALLER = (
    r"(?m)^File \"(?![^\"\n]*/torch/)[^\"\n]*\", line \d+, in [^\n]*\n"  # a frame of the program's own code
    r"(?:[^=\n(]*[^=!<>\n(]=(?!=)\s*)?(?:return\s+|await\s+)?"  # `a, b = ` / `return ` before the call
    r"(?P<ddp_module>[A-Za-z_][\w.]*)\((?![^\n]*[\w)\]]\()[^\n]*\n(?:[\s~^]*\n)?"  # the call (none in it), carets
    r"(?:(?!File \"(?![^\"\n]*torch/nn/modules/module\.py\"))[^\n]*\n)*"  # nn.Module's call frames, their code
    r"File \"[^\"\n]*torch/nn/parallel/distributed\.py\", line \d+, in forward\b"
)
# Activation checkpointing frames: torch's (reentrant CheckpointFunction or not), DeepSpeed's
_CHECKPOINTING = (
    r"File \"[^\"\n]*(?P<checkpointed>torch/utils/checkpoint\.py|deepspeed/runtime/activation_checkpointing/"
    r"checkpointing\.py)\""
)

PROCESS_GROUP_SIGNATURES: tuple[Signature, ...] = (
    # ---- the process group's start-up barrier (init_process_group before torch 2.3 waited in the store) -------
    row(
        "store_based_barrier_timeout",
        "store based barrier",
        r"Timed out initializing process group in store based barrier",
        era="torch 1.8-2.2 (distributed_c10d._store_based_barrier; removed in 2.3)",
        kind="missing_rank",
        cause="configuration",
        meaning="The ranks' check-ins at init_process_group did not add up to world_size within the timeout.",
        remedy=(
            "The store counted {worker_count|a different number of} check-ins for world_size={world_size|N}. "
            "Fewer than world_size: a rank never started or failed before init_process_group (every node's "
            "launcher: --nnodes x --nproc_per_node = WORLD_SIZE, the same MASTER_ADDR/MASTER_PORT, each rank's own "
            "log), or is still busy before it (raise init_process_group(timeout=...)). More than world_size: extra "
            "processes share this store: the script spawns its own workers (mp.spawn) under a launcher that already "
            "starts one per GPU (torchrun, srun -n, deepspeed), or another or an earlier job uses the same "
            "MASTER_PORT (give each job its own port, kill leftover processes)."
        ),
        reference=PT + "torch/distributed/distributed_c10d.py",
        fields_re=r"world_size=(?P<world_size>\d+), worker_count=(?P<worker_count>\d+)",
    ),
    row(
        "monitored_barrier_missing",
        "failed to pass monitoredbarrier",
        r"Ranks? [\d, ]+ failed to pass monitoredBarrier",
        era="torch >= 1.10 (ProcessGroupGloo::monitoredBarrier, dist.monitored_barrier)",
        kind="missing_rank",
        cause="application",
        meaning="dist.monitored_barrier named the ranks that did not reach it within its timeout.",
        remedy=(
            "Read the named ranks' own logs and stacks (py-spy dump --pid): an error or a crash of theirs, long "
            "work of their own (evaluation, pre-processing, a save only on those ranks) or a different code path "
            "that skips the barrier; the barrier's timeout was {timeout_ms|its} ms. "
            "monitored_barrier(wait_all_ranks=True) lists every missing rank, not only the first."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupGloo.cpp",
        ranks_re=r"Ranks? ([\d, ]+) failed to pass monitoredBarrier",
        fields_re=r"monitoredBarrier in (?P<timeout_ms>\d+) ms",
    ),
    # ---- DDP's reducer ----------------------------------------------------------------------------------
    row(
        "ddp_unused_parameters",
        ("finished reduction in the prior iteration", "did not receive grad"),
        (
            r"Expected to have finished reduction in the prior iteration",
            r"Parameter indices which did not receive grad",
            r"Parameters which did not receive grad",
        ),
        era="torch >= 1.1 (DistributedDataParallel reducer; the names with TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL)",
        cause="application",
        meaning="DDP's reducer waited for gradients of parameters that took no part in the loss of this step.",
        remedy=(
            "Some parameters of the DDP-wrapped module{ddp_module? '@'} got no gradient in the step before"
            "{unused_names?: @}{unused? (parameter indices @ in model.parameters() order)}. If they are unused on "
            "purpose (a layer above a hidden state taken from the middle, a head this loss never reads, a "
            "branch switched off), freeze them before wrapping: requires_grad_(False) on those parameters"
            "{ddp_module? of @}. If the unused set changes from step to step (a branch chosen per batch; LayerDrop: "
            "layerdrop / layer_drop / encoder_layerdrop in wav2vec2, HuBERT, WavLM and fairseq configs, or set it to "
            "0 under DDP), pass find_unused_parameters=True to DistributedDataParallel (Lightning: "
            'strategy="ddp_find_unused_parameters_true"; HF Trainer: ddp_find_unused_parameters=True; '
            "accelerate: DistributedDataParallelKwargs(find_unused_parameters=True); SpeechBrain: "
            "--find_unused_parameters=True), at some cost per step.{checkpointed? The traceback runs through "
            "activation checkpointing (@): with the same graph every step, DistributedDataParallel(..., "
            "static_graph=True) (accelerate: DistributedDataParallelKwargs(static_graph=True)) handles its "
            "reentrant backward, or use torch.utils.checkpoint(..., use_reentrant=False).}"
            "{unused_names! TORCH_DISTRIBUTED_DEBUG=DETAIL names the parameters.}"
        ),
        # SpeechBrain takes it as a run option (speechbrain/core.py run_opts '--find_unused_parameters');
        # LayerDrop (Fan et al. 2019; transformers' Wav2Vec2Config.layerdrop) drops whole layers per step
        # (speechbrain/speechbrain#2340: wav2vec2's layer_drop under DDP). The module whose forward raised is the call
        # right above distributed.py's forward frame (kohya-ss/sd-scripts#997: text_encoder1, whose last layer
        # SDXL never reads, frozen by the fix in PR #1000, which also added --ddp_static_graph).
        reference=PT
        + "torch/csrc/distributed/c10d/reducer.cpp; https://github.com/speechbrain/speechbrain/issues/2340; "
        "https://github.com/kohya-ss/sd-scripts/issues/997",
        fields_re=(
            r"Parameter indices which did not receive grad for rank \d+: (?P<unused>\d[\d ,]*)|"
            r"Parameters which did not receive grad for rank \d+: (?P<unused_names>[\w.\[\]]+(?:, [\w.\[\]]+)*)"
        ),
        fields_after=8,
        fields_until=r"Traceback \(most recent call last\)|^\s*$",
        traceback_re=_DDP_CALLER + "|" + _CHECKPOINTING,
    ),
    row(
        "ddp_marked_ready_twice",
        ("ready only once", "marked as ready twice"),
        (r"Expected to mark a variable ready only once", r"has been marked as ready twice"),
        era="torch >= 1.5 (DistributedDataParallel reducer)",
        cause="application",
        meaning="A parameter's gradient reached DDP twice in one step: reentrant activation checkpointing, a "
        "module used twice, or find_unused_parameters with a graph that changes.",
        remedy=(
            "Use non-reentrant checkpointing (torch.utils.checkpoint(..., use_reentrant=False); HF: "
            'gradient_checkpointing_kwargs={"use_reentrant": False}) or, if the graph is the same every step, '
            "DistributedDataParallel(..., static_graph=True); drop find_unused_parameters=True where no "
            "parameter is unused."
        ),
        reference=PT + "torch/csrc/distributed/c10d/reducer.cpp",
    ),
    # Single-process multi-device DDP (DistributedDataParallel(model) with no device_ids, or several, in a process
    # that sees several GPUs) replicates the module with nn.parallel.replicate; torch 1.5 stopped filling the
    # replicas' _parameters (pytorch/pytorch#33907), so DDP's init check (reducer.cpp, called from
    # _ddp_init_helper) found replicas with no parameters. A known 1.5 regression, labelled so in
    # pytorch/pytorch#36268 (the same code runs on 1.4; the fix, #36523 / #36503, missed the 1.5 release).
    row(
        "ddp_replicas_regression",
        "model replicas must have an equal number",
        r"Model replicas must have an equal number of parameters",
        era="torch 1.5 (single-process multi-device DistributedDataParallel; single-process multi-device mode "
        "was removed later)",
        cause="configuration",
        meaning="DistributedDataParallel drove several GPUs from one process, and torch 1.5's module replication "
        "gives the replicas no parameters: a known regression of that release, not a fault of the model.",
        remedy=(
            "Run one process per GPU: launch with torchrun --nproc_per_node=N (or python -m "
            "torch.distributed.launch --nproc_per_node=N on old torch) and wrap with DistributedDataParallel(model, "
            "device_ids=[local_rank]); or keep single-process multi-GPU on a torch release without the regression "
            "(PyTorch 1.4, or 1.6 and later)."
        ),
        reference="https://github.com/pytorch/pytorch/issues/36268",
    ),
    row(
        "collective_size_mismatch",
        ("times input tensor size", "times world size", "tensor list must be", "same number of elements"),
        (
            r"(?i)output tensor size must be equal to world_size times input tensor size",
            r"(?i)input tensor size must be equal to output tensor size times world size",
            r"(?i)tensor list must be same size as world size|tensor lists must have the same number of elements",
        ),
        era="torch >= 1.7 (ProcessGroupNCCL / ProcessGroupGloo argument checks)",
        cause="desync",
        meaning="A collective's input and output sizes do not agree with the world size (all_gather / "
        "reduce_scatter given tensors of the wrong size on this rank).",
        remedy=(
            "Give all_gather_into_tensor / reduce_scatter_tensor an output of world_size x the input's size (a "
            "list of world_size tensors for all_gather), the same shapes on every rank; pad variable-length "
            "tensors to one size first."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
    ),
    # torch.distributed called before any process group exists (distributed_c10d.py _get_default_group; the
    # assertion in _check_default_pg before torch 1.8): a script with distributed-only parts (SyncBN, a
    # distributed sampler, all_reduce of metrics) started as one plain process
    row(
        "default_process_group_missing",
        ("Default process group",),
        r"Default process group (?:has not been|is not) initialized",
        era="all torch releases ('is not initialized' before 1.8, 'has not been initialized, please make sure to "
        "call init_process_group' since)",
        cause="configuration",
        meaning="The script used torch.distributed (a SyncBatchNorm layer, a DistributedSampler, a collective) in a "
        "process that never created a process group: it was started as one plain process, not by a launcher.",
        remedy=(
            "Start it with a launcher that sets up the group (torchrun --nproc_per_node=N, or the project's "
            "distributed train script), or for one GPU create a one-process group first: "
            "dist.init_process_group('gloo', init_method='file:///tmp/pg_init', rank=0, world_size=1); or switch "
            "the distributed-only parts off for a single-GPU run (SyncBN back to BN: norm_cfg type='BN' in "
            "mmcv-style configs, or convert_sync_batchnorm only when distributed)."
        ),
        reference=PT + "torch/distributed/distributed_c10d.py",
    ),
    # ProcessGroupNCCL's _allgather_base / _reduce_scatter_base check the two tensors' dtypes; under ZeRO-3 or
    # FSDP the tensors are the partitioned parameters, so mixed parameter dtypes fail here (fp16 in the config
    # against bf16 / fp32 weights, fp32 LoRA beside a bf16 base, bitsandbytes 4-bit weights)
    row(
        "collective_dtype_mismatch",
        ("same type as input tensor", "same type as the output tensor"),
        r"(?i)output tensor must have the same type as input tensor|input tensor must be the same type as the "
        r"output tensor",
        era="torch >= 1.7 (ProcessGroupNCCL::_allgather_base / _reduce_scatter_base argument checks)",
        cause="configuration",
        meaning="A collective got input and output tensors of different dtypes: under ZeRO-3 / FSDP the tensors "
        "are the sharded parameters, so the model's parameters are not all of the dtype the run trains in.",
        remedy=(
            "Make every parameter one dtype before the engine shards it: the precision in the DeepSpeed / "
            "accelerate config (fp16 vs bf16) must match the model's weights (torch_dtype= in from_pretrained; "
            "update model files that carry another dtype), LoRA adapters in the base's dtype, and no "
            "bitsandbytes-quantized weights under ZeRO-3 (use ZeRO-2 or unquantized weights)."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; "
        "https://github.com/yangjianxin1/Firefly/issues/127",
    ),
    # ProcessGroupNCCL's constructor checks the GPUs the process sees (ProcessGroupNCCL.cpp: 'ProcessGroupNCCL is
    # only supported with GPUs, no GPUs found!'): the worker's own environment has none, most often a launcher that
    # starts workers over ssh / pdsh with only some variables (DeepSpeed's runner exports NCCL_* / PYTHON* / UCX_*
    # and what .deepspeed_env lists, not LD_LIBRARY_PATH: determined-ai/determined#4297), an empty
    # CUDA_VISIBLE_DEVICES, a container without the GPUs, or a CPU-only torch build.
    row(
        "nccl_process_group_no_gpus",
        "no GPUs found",
        r"ProcessGroupNCCL is only supported with GPUs, no GPUs found",
        era="torch 1.x onwards (ProcessGroupNCCL constructor)",
        cause="configuration",
        meaning="The process that created the NCCL process group sees no GPU (torch.cuda.device_count() is 0 in its "
        "environment).",
        remedy=(
            "Check the worker's own environment on that node (python -c 'import torch; "
            "print(torch.cuda.device_count())' started the way the launcher starts it, and nvidia-smi). A launcher "
            "that starts workers over ssh / pdsh passes only some variables: export LD_LIBRARY_PATH (the CUDA "
            "libraries) and CUDA_VISIBLE_DEVICES to them (DeepSpeed: list them in .deepspeed_env; mpirun -x "
            "LD_LIBRARY_PATH). An empty CUDA_VISIBLE_DEVICES, a container started without its GPUs (--gpus all, "
            "the NVIDIA runtime) or a CPU-only torch build do the same; a CPU run takes backend='gloo'."
        ),
        reference=PT + "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; "
        "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/launcher/runner.py (EXPORT_ENVS, "
        ".deepspeed_env); https://github.com/determined-ai/determined/pull/4297",
    ),
)
