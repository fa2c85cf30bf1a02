"""Training frameworks' own checks of their configuration: the assertions and ValueErrors a framework raises
while it reads its config, before any step. Each is a configuration error whose numbers are on the line;
the remedy quotes them (`{name}` slots, readers/signature_scan.fill_remedy).

Sources: DeepSpeed deepspeed/runtime/config.py (DeepSpeedConfig._batch_assertion,
_set_batch_related_parameters, _do_error_check, _initialize_params), transformers
integrations/deepspeed.py (HfTrainerDeepSpeedConfig.trainer_config_finalize), Megatron-LM
megatron/core/num_microbatches_calculator.py (ConstantNumMicroBatches), TRL trl/trainer/grpo_trainer.py
(GRPOTrainer.__init__'s generation-batch check), accelerate src/accelerate/accelerator.py
(Accelerator.prepare_model's device check of a quantized model), PyTorch torch/csrc/distributed/c10d/reducer.cpp
(verify_params_across_processes: DDP's start-up check of the ranks' parameter counts and shapes).
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

DS_CONFIG = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/config.py"
HF_DS = "https://github.com/huggingface/transformers/blob/main/src/transformers/integrations/deepspeed.py"
MEGATRON_MB = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/num_microbatches_calculator.py"
DS_ZERO = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/stage_1_and_2.py"
DS_GROUPS = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/utils/groups.py"
DDP_VERIFY = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/comm.cpp"
PT_REDUCER = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/reducer.cpp"
DDP_COUNT_FIELDS = (
    r"but Rank (?P<this_rank>\d+) has (?P<mine>\d+) params, while rank (?P<other_rank>\d+) has inconsistent "
    r"(?P<theirs>-?\d+)"
)
# The check's sentence up to the other rank's count (reducer.cpp: 'DDP expects same model across all ranks, but
# Rank <own rank> has <own count> params, while rank <i> has inconsistent <count all-gathered from i> params.'),
# the own rank captured: rank i may be the rank itself, whose slot of the all-gather came back wrong.
_DDP_COUNTS = r"DDP expects same model across all ranks, but Rank (\d+) has \d+ params, while rank "
# What no model's count is: nothing arrived (0: DDP refuses a model without a parameter that needs a gradient
# before this check), a negative number or one no model has (the receive buffer's garbage, at::empty_like)
_NOT_A_COUNT = r"(?:0|-\d+|\d{7,})"
MEGATRON_SCHED = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/optimizer_param_scheduler.py"
TRL_GRPO = "https://github.com/huggingface/trl/blob/main/trl/trainer/grpo_trainer.py"
ACCELERATE_PREPARE = "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py"
VLLM_PARALLEL = "https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py"

# The words of a framework's check of its own settings, raised as an exception before any work: a divisibility
# constraint (vLLM ModelConfig.verify_with_parallel_config 'must be divisible by tensor parallel size', vLLM's
# expert-parallel assert 'must be divisible by ep_size', Megatron / DeepSpeed _ensure_divisibility) or a feature
# the chosen setting lacks ('does not support', 'is not supported', 'only supports'). An NCCL or CUDA error
# quoting 'not supported' is the library's own report, read by its rows, and so is an OS error ('errno: 97 -
# Address family not supported by protocol'). Counted only where it ended the run (reasoning/setting_refused.py).
_CHECK_WORDS = (
    r"(?:must|should) be (?:evenly )?divisible by|(?:is|are) not (?:evenly )?divisible by|"
    r"(?:does|do) not support|(?:is|are) not supported|not supported (?:on|for|with|when|by|in)\b|only supports?\b"
)
# The check's words alone, in a message quoted without its exception's name (a cut traceback's raise line).
CHECK_WORDS = re.compile(_CHECK_WORDS)
# The remedy for a cut traceback whose innermost frame's source line raises such a check's message
# (reasoning/traceback_end.py), with the function and the message it quotes.
CHECK_REMEDY = (
    "The framework refused its configuration in {func}: '{message}'. Change the setting the check names (the "
    "GPUs, nodes or processes it counts: Trainer / launcher num_nodes, devices, --nproc_per_node against what each "
    "node has), or use a release whose check accounts for the setup; the whole error line (the rank's own stderr) "
    "gives the values it compared."
)
_CHECK = (
    r"\b(?:ValueError|AssertionError|NotImplementedError|RuntimeError|Value error,)\s*:?\s*"
    r"(?!.*\b(?:NCCL|CUDA error|CUDA driver|cuDNN|CUDART|cuda runtime error|Triton Error|cuBLAS|CUBLAS_STATUS|"
    r"errno)\b)(?P<check>[^\n]*?(?:" + _CHECK_WORDS + r")[^\n]*)"
)

FRAMEWORK_CONFIG_SIGNATURES: tuple[Signature, ...] = (
    row(
        "deepspeed_batch_size_mismatch",
        "Check batch related parameters",
        r"Check batch related parameters",
        era="DeepSpeed 0.3 onwards (DeepSpeedConfig._batch_assertion)",
        cause="configuration",
        meaning="DeepSpeed's config check failed: train_batch_size is not micro_batch_per_gpu x "
        "gradient_accumulation_steps x world_size.",
        remedy=(
            "DeepSpeed needs train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x "
            "world size; here {train_batch|train_batch_size} != {micro_batch|micro batch} x {grad_acc|accumulation "
            "steps} x {world_size|the world size}. Set train_batch_size to a multiple of {micro_batch|micro batch} x "
            "{world_size|world size} (or leave it out, or 'auto' under the HF Trainer / accelerate, and DeepSpeed "
            "derives it), and check that the world size is the number of GPUs you meant to launch (--num_gpus, "
            "CUDA_VISIBLE_DEVICES, accelerate's num_processes). A world size of 1 on a multi-GPU launch means "
            "DeepSpeed read the config before its process group existed (zero.Init inside from_pretrained, under "
            "Ray Train or a custom launcher): call deepspeed.init_distributed() first, or use an accelerate that "
            "initialises deepspeed.comm (huggingface/accelerate#2578)."
        ),
        reference=DS_CONFIG,
        fields_re=(
            r"world_size\s*(?P<train_batch>\d+) != (?P<micro_batch>\d+) \* (?P<grad_acc>\d+) \* (?P<world_size>\d+)"
        ),
    ),
    row(
        "deepspeed_config_check",
        ("has to be greater than 0", "needs to be provided", "DeepSpeedConfig:", "cannot be simultaneously", "ZeRO"),
        (
            r"(?:Train batch size|Micro batch size per gpu|Gradient accumulation steps): -?\d+ has to be greater "
            r"than 0",
            r"Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
            r"DeepSpeedConfig: \w+ is not defined|DeepSpeedConfig: Maximum supported ZeRO stage is \d+",
            r"bfloat16 and fp16 modes cannot be simultaneously enabled",
            r"(?:Fp16|Bf16)_master_weights_and_grads is only supported with ZeRO Stage",
            r"='sum' is not supported with ZeRO stage 3",
        ),
        era="DeepSpeed 0.3 onwards (DeepSpeedConfig._do_error_check, _batch_assertion, _initialize_params)",
        cause="configuration",
        meaning="DeepSpeed's check of its JSON config failed: a value is missing, out of range, or contradicts "
        "another.",
        remedy=(
            "Fix the DeepSpeed config value the message names (the ds_config JSON or the dict passed to "
            "deepspeed.initialize): batch sizes and gradient_accumulation_steps positive and given, one of fp16 / "
            "bf16 enabled, a ZeRO stage DeepSpeed supports for that option; under the HF Trainer set them to 'auto'."
        ),
        reference=DS_CONFIG,
    ),
    row(
        "hf_deepspeed_config_mismatch",
        "mismatch TrainingArguments values",
        r"DeepSpeed config values that mismatch TrainingArguments values",
        era="transformers 4.x (HfTrainerDeepSpeedConfig.trainer_config_finalize)",
        cause="configuration",
        meaning="The DeepSpeed config and the Trainer's TrainingArguments give different values for the same "
        "setting (batch size, accumulation, precision, learning rate).",
        remedy=(
            "Set the DeepSpeed config values the message lists ('- ds X=... vs hf Y=...') to 'auto' so the Trainer "
            "fills them from TrainingArguments, or make both give the same value."
        ),
        reference=HF_DS,
    ),
    row(
        "megatron_batch_not_divisible",
        "is not divisible by micro batch size",
        r"global batch size \(\d+\) is not divisible by micro batch size \(\d+\) times data parallel size",
        era="Megatron-LM (ConstantNumMicroBatches; megatron/microbatches.py before core)",
        cause="configuration",
        meaning="Megatron's global batch size is not a multiple of micro batch size x data-parallel size.",
        remedy=(
            "Set --global-batch-size to a multiple of --micro-batch-size x data-parallel size (world size / "
            "(tensor x pipeline x context parallel)): {global_batch|global batch} is not divisible by "
            "{micro_batch|micro batch} x {dp|data-parallel size}."
        ),
        reference=MEGATRON_MB,
        fields_re=(
            r"global batch size \((?P<global_batch>\d+)\) is not divisible by micro batch size "
            r"\((?P<micro_batch>\d+)\) times data parallel size \((?P<dp>\d+)\)"
        ),
    ),
    row(
        "deepspeed_zero_checkpoint_world_size",
        "used a DP world size of",
        r"The checkpoint being loaded used a DP world size of \d+ but the current world size is \d+",
        era="DeepSpeed ZeRO stages 1-2 (stage_1_and_2.py: _restore_base_optimizer_state / load_state_dict)",
        cause="configuration",
        meaning="The ZeRO checkpoint's optimizer state is partitioned over another number of data-parallel ranks "
        "than this run has; DeepSpeed cannot re-partition it on load.",
        remedy=(
            "Resume with {saved|the checkpoint's} data-parallel ranks (this run has {now|another number}), or "
            "convert the checkpoint: a universal checkpoint (deepspeed/checkpoint/ds_to_universal.py, then load "
            "with checkpoint.load_universal) re-partitions the optimizer state for any world size; "
            "zero_to_fp32.py in the checkpoint folder keeps the weights only (the optimizer starts afresh)."
        ),
        reference=DS_ZERO,
        fields_re=r"used a DP world size of (?P<saved>\d+) but the current world size is (?P<now>\d+)",
    ),
    row(
        "parallel_size_not_divisible",
        "is not divisible by",
        # the assertion itself (_ensure_divisibility), never a log line that mentions a division
        r"(?:AssertionError|ValueError): \d+ is not divisible by \d+\s*$",
        era="DeepSpeed deepspeed/utils/groups.py and Megatron-LM mpu (_ensure_divisibility), all releases",
        cause="configuration",
        meaning="A parallel size (expert, tensor, pipeline or sequence parallel) does not divide what it splits "
        "(the world size, the experts, the attention heads), so the groups or the layers cannot be built.",
        remedy=(
            "{num|The world size} is not divisible by {den|the parallel size}: set the expert / tensor / pipeline "
            "parallel size (ep_size, --tensor-model-parallel-size, --pipeline-model-parallel-size) to a divisor of "
            "{num|what it splits}; where {num|it} is the world size, launch a multiple of {den|that size} GPUs "
            "instead (--nproc_per_node, --num_gpus, the hostfile's slots)."
        ),
        reference=DS_GROUPS,
        fields_re=r"\b(?P<num>\d+) is not divisible by (?P<den>\d+)",
    ),
    row(
        "megatron_scheduler_mismatch",
        "do not match",
        r"(?:AnnealingLR|OptimizerParamScheduler): class input value \S+ and checkpoint ?value \S+ for .+ do not match",
        era="Megatron-LM (learning_rates.AnnealingLR, then core OptimizerParamScheduler._check_and_set)",
        cause="configuration",
        meaning="The run resumed from a checkpoint whose learning-rate schedule differs from the arguments given "
        "now; Megatron refuses to pick one silently.",
        remedy=(
            "Pass --override-lr-scheduler to take this run's schedule arguments (the change then applies from "
            "the resumed step), or --use-checkpoint-lr-scheduler to keep the checkpoint's; otherwise give the "
            "arguments the checkpoint was trained with ({name|the value named})."
        ),
        reference=MEGATRON_SCHED,
        fields_re=r"checkpoint ?value \S+ for (?P<name>.+?) do not match",
    ),
    # DDP's start-up check (torch/csrc/distributed/c10d/reducer.cpp verify_params_across_processes, torch >= 1.12,
    # pytorch/pytorch#73547) all-gathers each rank's count of parameters that need a gradient before it compares
    # their shapes. 'Rank N has X' is the rank's own count (real: DDP refuses a model without one before); 'rank M
    # has inconsistent Y' is what arrived from rank M: 0, negative or a number no model has is an all-gather that
    # delivered nothing (a network NCCL cannot use between the nodes, an aborted collective), not another model;
    # so is any count in the rank's own slot (M = N: its own count, all-gathered, came back other than it sent).
    row(
        "ddp_param_count_not_received",
        "ddp expects same model across all ranks",
        (
            _DDP_COUNTS + r"\d+ has inconsistent " + _NOT_A_COUNT + " params",
            _DDP_COUNTS + r"\1 has inconsistent -?\d+ params",  # its own count, sent to itself, came back other
        ),
        era="torch >= 1.12 (DistributedDataParallel's construction: _verify_param_shape_across_processes)",
        cause="network",
        meaning="DDP's start-up all-gather of each rank's parameter count brought back no real number (0, garbage, "
        "or a rank's own count changed on its way back to it): the ranks' communication is broken, the model itself "
        "is not shown to differ.",
        remedy=(
            "Rank {this_rank|N} received {theirs|0} as rank {other_rank|M}'s parameter count (its own is "
            "{mine|another}): the all-gather DDP runs at construction delivered no data, so fix the network "
            "between the ranks, not the model. Set the NCCL network variables on every node: NCCL_SOCKET_IFNAME "
            "to the interface the nodes reach each other on (ip -br addr; not lo / docker0), on RoCE "
            "NCCL_IB_GID_INDEX to the RoCEv2 GID (show_gids, often 3), NCCL_IB_HCA to the HCAs that are up "
            "(ibstat); NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows what NCCL picked. Test the network alone "
            "with nccl-tests across the nodes (all_reduce_perf under mpirun / srun: #wrong 0). Under accelerate "
            "multi-node, answer same_network as the machines really are (accelerate config; accelerate launch "
            "--same_network). Where one rank reached DDP long after the others (a watchdog timeout above), the "
            "aborted all-gather returns nothing too: read that rank's log."
        ),
        reference=PT_REDUCER + "; https://github.com/pytorch/pytorch/issues/73547",
        fields_re=DDP_COUNT_FIELDS,
    ),
    row(
        "ddp_param_count_mismatch",
        "ddp expects same model across all ranks",
        # another rank's (not its own) real count: not what the row above reads
        _DDP_COUNTS + r"(?!\1 )\d+ has inconsistent (?!" + _NOT_A_COUNT + r" )\d+ params",
        era="torch >= 1.12 (DistributedDataParallel's construction: _verify_param_shape_across_processes)",
        cause="configuration",
        meaning="The ranks built models with different numbers of parameters that need a gradient, and DDP refuses "
        "to synchronise them: the model, its config or its frozen parts differ between ranks.",
        remedy=(
            "Rank {this_rank|N} has {mine|X} parameters that need a gradient and rank {other_rank|M} has "
            "{theirs|Y}: every rank must build the same model before DistributedDataParallel wraps it. Look for "
            "a layer created, loaded or frozen only on some ranks (under `if rank == 0` / is_main_process, "
            "requires_grad set or LoRA / adapters applied on one rank only), a config, checkpoint or code that "
            "differs between nodes (the same commit and files everywhere) or another library version; print "
            "sum(p.requires_grad for p in model.parameters()) on each rank just before the wrap."
        ),
        reference=PT_REDUCER,
        fields_re=DDP_COUNT_FIELDS,
    ),
    row(
        "ddp_param_layout_mismatch",
        ("appears not to match",),
        r"params\[\d+\] in this process with sizes \[[\d, ]*\] appears not to match (?:strides|sizes)",
        era="torch DDP's start-up check (_verify_param_shape_across_processes / verify_params_across_processes)",
        cause="configuration",
        meaning="DDP compared the parameters of every rank at start-up and one has another shape or memory layout "
        "(strides) than rank 0's: the ranks built the model differently.",
        remedy=(
            "Make every rank build the same model the same way: the same torch / CUDA build on every node (the "
            "versions the project pins: a newer torch can give a convolution weight another layout), the same "
            "memory format (channels_last applied on all ranks or none), and the same config and checkpoint; "
            "params[{index|N}] is the parameter to look at (list(model.parameters())[{index|N}])."
        ),
        reference=DDP_VERIFY,
        fields_re=r"params\[(?P<index>\d+)\]",
    ),
    # GRPO groups each prompt's completions inside one global batch: the batch (processes x per-device batch,
    # x steps_per_generation in later releases) must hold whole groups of num_generations
    row(
        "trl_grpo_generations_batch",
        "divisible by the number of generations",
        r"(?:global|effective) train batch size \([\d x]+\) must be evenly divisible by the number of generations",
        era="TRL 0.14 onwards (GRPOTrainer; 'global' before steps_per_generation, 'effective' after)",
        cause="configuration",
        meaning="TRL's GRPO trainer needs each global batch to hold whole groups of completions: the number of "
        "processes x per_device_train_batch_size (x steps_per_generation) must be a multiple of num_generations.",
        remedy=(
            "Make the global batch ({batch|processes x per-device batch}) a multiple of num_generations "
            "({gens|its value}): set num_generations to one of {valid|the values TRL lists}, or change "
            "per_device_train_batch_size or the number of processes (accelerate's num_processes) so the product "
            "divides by it."
        ),
        reference=TRL_GRPO + "; https://github.com/huggingface/open-r1/issues/249",
        fields_re=(
            r"train batch size \((?P<batch>[\d x]+)\) must be evenly divisible by the number of generations per "
            r"prompt \((?P<gens>\d+)\)(?:.*?are: (?P<valid>\[[\d, ]*\]))?"
        ),
    ),
    # Accelerate refuses to move a quantized model: each process must load it onto its own device, and a
    # device_map copied from a one-GPU script ({"": 0}) puts every rank's copy on GPU 0
    row(
        "accelerate_quantized_model_device",
        "precision on a different device",
        r"You can't train a model that has been loaded (?:in|with) [\w\- ]+ precision on a different device",
        era="accelerate 0.20 onwards (Accelerator.prepare_model; '8-bit or 4-bit' in later releases)",
        cause="configuration",
        meaning="Every process loaded the quantized (8-bit / 4-bit) model onto one device (a device_map such as "
        '{"": 0} or "auto"), while the launcher trains process N on GPU N: Accelerate cannot move a quantized '
        "model to the process's own GPU.",
        remedy=(
            'Load the model onto each process\'s own GPU: from_pretrained(..., device_map={"": '
            'Accelerator().local_process_index}) (or {"": torch.cuda.current_device()} after set_device), not '
            '{"": 0} or "auto", when the script runs under accelerate launch / torchrun.'
        ),
        reference=ACCELERATE_PREPARE + "; https://github.com/huggingface/trl/issues/722",
    ),
    # The same check on a quantized model whose hf_device_map spreads it over several GPUs: accelerate releases
    # before huggingface/accelerate#1523 refused it always ('... on multiple devices.'), later ones only under a
    # distributed launch ('... on multiple devices in any distributed mode', with naive pipeline parallelism
    # named as the way: one process driving the spread model) - huggingface/peft#414, fixed by upgrading.
    row(
        "accelerate_quantized_model_spread",
        "precision on multiple devices",
        r"You can't train a model that has been loaded (?:in|with) [\w\- ]+ precision on multiple devices",
        era="accelerate 0.17-0.19 refuse any spread 8-bit model; later releases only in a distributed mode",
        cause="configuration",
        meaning="The quantized (8-bit / 4-bit) model's device_map spreads it over several GPUs, which Accelerate "
        "refuses to train (in every mode before huggingface/accelerate#1523, under a distributed launch after).",
        remedy=(
            "Upgrade accelerate first (pip install --upgrade accelerate; check the accelerate version: releases "
            "before huggingface/accelerate#1523 refuse any model spread over GPUs). Then either train the spread "
            'model from one process (python train.py with device_map="auto", no torchrun / distributed accelerate '
            "config: naive pipeline parallelism), or, for data parallel, load a whole copy per process: "
            'device_map={"": Accelerator().local_process_index}.'
        ),
        reference=ACCELERATE_PREPARE + "; https://github.com/huggingface/accelerate/pull/1523; "
        "https://github.com/huggingface/peft/issues/414",
    ),
    # Current accelerate checks the device map first (accelerator.py verify_device_map): any model loaded with
    # device_map='auto' that it spread over GPUs, quantized or not, is refused under a distributed launch; upgrading
    # changes nothing here.
    row(
        "accelerate_device_map_distributed",
        "in any distributed mode",
        r"You can't train a model that has been loaded with `?device_map=.?auto.?`? in any distributed mode",
        era="current accelerate releases (Accelerator.verify_device_map, checked before the quantization check)",
        cause="configuration",
        meaning="The model was loaded with device_map='auto', which spreads it over the process's visible GPUs "
        "(naive pipeline parallelism), and the script runs under a distributed launch, which Accelerate refuses.",
        remedy=(
            "Either train the spread model from one process (python train.py, or accelerate launch --num_processes=1, "
            'with device_map="auto"), or, for data parallel, load a whole copy per process: '
            'device_map={"": Accelerator().local_process_index} instead of "auto".'
        ),
        reference=ACCELERATE_PREPARE + "; https://github.com/huggingface/accelerate/blob/main/src/accelerate/"
        "accelerator.py (verify_device_map)",
    ),
    # Unsloth's open-source releases of 2024 checked the visible GPUs at import and refused more than one
    row(
        "unsloth_single_gpu_only",
        "does not work on multi GPU",
        r"Unsloth currently does not work on multi GPU setups",
        era="Unsloth 2024 releases (its check of the visible GPU count at start)",
        cause="configuration",
        meaning="Unsloth's release refuses to run with more than one GPU visible (a launcher started it on "
        "several GPUs, or the machine has several and none was chosen).",
        remedy=(
            "Run it on one GPU: CUDA_VISIBLE_DEVICES=0 python train.py (no torchrun / accelerate multi-GPU launch), "
            "or use a release or a library with multi-GPU training."
        ),
        reference="https://github.com/unslothai/unsloth/issues/724",
    ),
    # last: the rows above name their check and its numbers; this one any framework's refusal of its settings
    row(
        "framework_setting_refused",
        ("divisible by", "not support", "not supported", "only support"),
        _CHECK,
        era="any framework that validates its settings at start-up (vLLM, Megatron-LM, DeepSpeed, transformers)",
        cause="configuration",
        confidence="medium",
        meaning="The framework checked its settings before running and refused them: a parallel size that does "
        "not divide what it splits, or a feature the chosen model, device or backend does not support.",
        remedy=(
            "The framework refused its configuration ('{check|the check it raised}'): change the setting it names "
            "to a value it accepts (a parallel size that divides the count it splits, e.g. a --tensor-parallel-size "
            "that divides the attention heads, or fewer GPUs: CUDA_VISIBLE_DEVICES, --nproc_per_node) or drop the "
            "option the model, GPU or backend does not support."
        ),
        reference=VLLM_PARALLEL + "; https://github.com/gpustack/gpustack/issues/814; "
        "https://github.com/vllm-project/vllm/issues/52435",
        fields_re=_CHECK,
    ),
)
