"""Signature rows for a launch whose rank count does not fit the parallel layout the program was given: the
frameworks' own checks that the world size equals (or is a multiple of) tensor x pipeline (x context) parallel.
Each is a configuration error whose numbers are on the line; the remedy quotes them (`{name}` slots,
readers/signature_scan.fill_remedy) and says to launch as many ranks as the layout needs, or to rebuild the layout
for the GPUs there are. Never 'fix the exception': the program is right to refuse.

Sources (where each message is raised):
- TensorRT-LLM cpp/tensorrt_llm/runtime/worldConfig.cpp, WorldConfig::mpi: TLLM_CHECK(mpiSize == tp * pp) (releases
  up to 0.9, printed 'Assertion failed: mpiSize == tp * pp'), then TLLM_CHECK_WITH_INFO(..., "MPI size %d != TP size
  %d * PP size %d" [" * CP Size %d"]): the MPI world of the launch against the engine's mapping.
- TensorRT-LLM tensorrt_llm/mapping.py, Mapping.__init__: 'world_size must equal to tp_size * pp_size * cp_size, but
  got N != T * P * C' (older: 'pp_size * tp_size').
- Megatron-LM megatron/core/parallel_state.py, initialize_model_parallel, as main has it now: 'world_size (N) is not
  divisible by M' (M = tensor x pipeline x context parallel size, a bare number). Older releases and the forks
  (megatron/mpu/initialize.py before core; Megatron-DeepSpeed's parallel_state.py, backquoted '`world_size`') name
  the sizes: 'world_size (N) is not divisible by tensor_model_parallel_size (T) x pipeline_model_parallel_size (P)'
  [' x context_parallel_size (C)'] [' x sequence_parallel_size (S)']; megatron/arguments.py's older 'world size (N)
  is not divisible by tensor model parallel size (T) times pipeline model parallel size (P)'.
- vLLM vllm/distributed/parallel_state.py (and SGLang's copy), initialize_model_parallel: 'world_size (N) is not equal
  to tensor_model_parallel_size (T) x pipeline_model_parallel_size (P)'; vllm/config/parallel.py: 'World size (N) is
  larger than the number of available GPUs (G) in this node'.
- torchtitan torchtitan/distributed/parallel_dims.py, ParallelDims._validate: 'Invalid parallel dims:
  dp_replicate(a) * dp_shard(b) * cp(c) * tp(d) * pp(e) != WORLD_SIZE(N)'.
- DeepSpeed deepspeed/runtime/pipe/module.py, PipelineModule.__init__: 'num_stages (P) must divide distributed world
  size (N)'.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

TRTLLM_WORLD = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/cpp/tensorrt_llm/runtime/worldConfig.cpp"
# main's wording is the bare product; the sizes named are older releases' and the forks' (the docstring above)
MEGATRON_PS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/parallel_state.py"
VLLM_PS = "https://github.com/vllm-project/vllm/blob/main/vllm/distributed/parallel_state.py"
VLLM_PARALLEL = "https://github.com/vllm-project/vllm/blob/main/vllm/config/parallel.py"
TITAN_DIMS = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/distributed/parallel_dims.py"
DS_PIPE = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/pipe/module.py"

# The launch commands that set the rank count, named in every remedy below.
_LAUNCH_COUNT = (
    "mpirun -n / srun --ntasks, torchrun --nproc_per_node x --nnodes, deepspeed --num_gpus x hosts, "
    "CUDA_VISIBLE_DEVICES"
)

PARALLEL_LAYOUT_SIGNATURES: tuple[Signature, ...] = (
    row(
        "trtllm_mpi_size_layout",
        ("mpiSize == tp", "MPI size"),
        (r"Assertion failed: mpiSize == tp \* pp", r"MPI size \d+ != TP size \d+ \* PP size \d+"),
        era="TensorRT-LLM (WorldConfig::mpi: the C++ runtime's check of the MPI world against the engine's mapping)",
        cause="configuration",
        meaning="The engine was built for tp x pp ranks and this launch started another number of MPI processes: "
        "TensorRT-LLM needs exactly one MPI rank per engine rank.",
        remedy=(
            "Launch one MPI rank per engine rank: mpirun -n <tp x pp>, the engine's tensor x pipeline parallel "
            "size ({tp|tp_size} x {pp|pp_size}; this launch had {world|another number of} MPI processes), e.g. "
            "mpirun -n 4 --allow-run-as-root python run.py for "
            "engines built with tp_size 4 (one rank<N>.engine file each); a plain 'python run.py' is one rank. Or "
            "rebuild the engines with --tp_size / --pp_size whose product is the GPUs you run on."
        ),
        reference=TRTLLM_WORLD,
        fields_re=r"MPI size (?P<world>\d+) != TP size (?P<tp>\d+) \* PP size (?P<pp>\d+)",
    ),
    # the Python side's own check (tensorrt_llm/mapping.py Mapping.__init__), its sizes in the message's order
    row(
        "trtllm_mapping_world_size",
        "world_size must equal to",
        r"world_size must equal to (?:tp|pp|cp)_size \* ",
        era="TensorRT-LLM (tensorrt_llm Mapping: 'world_size must equal to tp_size * pp_size [* cp_size]')",
        cause="configuration",
        meaning="The world size TensorRT-LLM was given (the MPI ranks launched, or the world_size passed) is not "
        "the product of the tensor, pipeline (and context) parallel sizes the model or engine was built for.",
        remedy=(
            "Launch one MPI rank per engine rank ({check|world size against tp_size x pp_size}): mpirun -n <tp x pp "
            "x cp> (trtllm-serve / trtllm-llmapi-launch the same), or rebuild / convert the checkpoint with "
            "--tp_size / --pp_size whose product is the GPUs you run on."
        ),
        reference="https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/mapping.py",
        fields_re=r"(?P<check>world_size must equal to [^,]+, but got [\d *!=]+\d)",
    ),
    row(
        "world_size_not_layout_multiple",
        ("is not divisible by", "is not equal to"),
        (
            # Megatron-LM core / mpu and Megatron-DeepSpeed ('world_size (N)', backquoted in some forks)
            # (newer Megatron arguments.py compares it with 'total_model_size', encoder + decoder model sizes)
            # (megatron/arguments.py before 2023: 'tensor parallel size (T) times pipeline parallel size (P)')
            r"`?world[_ ]size`? \(\d+\) is not (?:divisible by|equal to) "
            r"(?:tensor[_ ](?:model[_ ])?parallel|total_model)",
            # current Megatron-LM core: the product alone ('is not divisible by 16')
            r"\bworld_size \(\d+\) is not divisible by \d+\s*$",
        ),
        era="Megatron-LM initialize_model_parallel (core and mpu), megatron/arguments.py; vLLM / SGLang "
        "initialize_model_parallel ('is not equal to')",
        cause="configuration",
        meaning="The number of ranks launched does not fit the parallel layout: the world size must be a multiple "
        "of tensor x pipeline (x context) parallel size (vLLM: exactly their product), so the groups cannot be built.",
        remedy=(
            "Launch as many ranks as the layout needs{_arith| }, {_launch|tensor x pipeline (x context) x data "
            "parallel} (the check: '{check|the sizes the error names}'): " + _LAUNCH_COUNT + "; or set "
            "--tensor-model-parallel-size / --pipeline-model-parallel-size (vLLM: tensor_parallel_size x "
            "pipeline_parallel_size) so that their product divides the GPUs you have. Under vLLM, launching the "
            "script with torchrun gives the engine torchrun's world: run it with plain python, or use "
            "distributed_executor_backend='external_launcher'."
        ),
        reference=MEGATRON_PS + "; " + VLLM_PS,
        # the check's own words, its numbers with them (tensor, pipeline, context / sequence, total model sizes);
        # bounded, so a long line that repeats the words is read in linear time (the lazy run scanned to its end
        # from every start: 1.5 s on 136,000 characters)
        fields_re=r"(?P<check>`?world[_ ]size`? \(\d+\) is not (?:divisible by|equal to) (?:[^\n]{0,300}?\)|\d+))"
        r"\.?\s{0,40}$",
        derive="dense_layout",
    ),
    row(
        "vllm_world_size_over_gpus",
        "is larger than the number of available GPUs",
        r"World size \(\d+\) is larger than the number of available GPUs",
        era="vLLM (ParallelConfig's check of tensor x pipeline parallel against this node's GPUs)",
        cause="configuration",
        meaning="vLLM was asked for more ranks (tensor_parallel_size x pipeline_parallel_size) than this node has "
        "GPUs, with an executor that runs on this node alone.",
        remedy=(
            "Set --tensor-parallel-size x --pipeline-parallel-size to the GPUs this node has ({gpus|the count "
            "nvidia-smi -L shows}; world size {world|N} was asked), or check CUDA_VISIBLE_DEVICES lists them all; "
            "across nodes use --distributed-executor-backend ray (or --nnodes with multiprocessing)."
        ),
        reference=VLLM_PARALLEL,
        fields_re=r"World size \((?P<world>\d+)\) is larger than the number of available GPUs \((?P<gpus>\d+)\)",
    ),
    row(
        "torchtitan_parallel_dims",
        "Invalid parallel dims",
        r"Invalid parallel dims: .+ != (?:WORLD_SIZE|world_size)\(\d+\)",
        era="torchtitan (ParallelDims._validate), its forks",
        cause="configuration",
        meaning="The parallel degrees the job config asks for (data replicate x shard x context x tensor x "
        "pipeline) do not multiply to the number of ranks launched.",
        remedy=(
            "Make the degrees multiply to the ranks launched ({dims|the degrees} against world size {world|N}): "
            "set --parallelism.data_parallel_shard_degree -1 to take the rest, or change the tensor / pipeline / "
            "context degrees, or launch that many ranks (torchrun --nproc_per_node x --nnodes, NGPU=...)."
        ),
        reference=TITAN_DIMS,
        fields_re=r"Invalid parallel dims: (?P<dims>.+?) != (?:WORLD_SIZE|world_size)\((?P<world>\d+)\)",
    ),
    row(
        "deepspeed_pipe_stages_world",
        "must divide distributed world size",
        r"num_stages \(\d+\) must divide distributed world size \(\d+\)",
        era="DeepSpeed pipeline parallel (PipelineModule.__init__ without a topology)",
        cause="configuration",
        meaning="The pipeline's stage count does not divide the ranks launched, so DeepSpeed cannot lay out "
        "pipeline x data parallel.",
        remedy=(
            "Launch a multiple of {stages|num_stages} ranks (deepspeed --num_gpus / --num_nodes, the hostfile's "
            "slots; this launch has {world|another number}), or give PipelineModule a num_stages that divides "
            "{world|the world size}."
        ),
        reference=DS_PIPE,
        fields_re=r"num_stages \((?P<stages>\d+)\) must divide distributed world size \((?P<world>\d+)\)",
    ),
)
