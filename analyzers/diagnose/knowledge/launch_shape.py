"""Signature rows for a launch whose shape does not fit what it must match: a checkpoint saved with another
parallel layout than the run was launched with, and a launcher that could place fewer replicas
or processes than were asked for. The line states both numbers; the remedy names them (`{name|fallback}`
slots, readers/signature_scan.fill_remedy), because the fix is arithmetic on those numbers, not the
traceback.

Sources: Megatron-LM megatron/checkpointing.py (check_checkpoint_args._compare), meta-llama/llama
llama/generation.py (Llama.build's model-parallel assert), DeepSpeed-MII mii/config.py
(generate_replica_configs), Open MPI's rmaps help text ('not enough slots').
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

MEGATRON_CKPT = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/checkpointing.py"
LLAMA_BUILD = "https://github.com/meta-llama/llama/blob/main/llama/generation.py"
MII_CONFIG = "https://github.com/deepspeedai/DeepSpeed-MII/blob/main/mii/config.py"

# Megatron's check_checkpoint_args: '<arg> value from checkpoint (<saved>) is not equal to the input argument
# value (<given>).'; meta-llama's Llama.build: 'Loading a checkpoint for MP=<saved> but world size is <given>'
_MEGATRON_ARG = (
    r"(?P<arg>\w+) value from checkpoint \((?P<saved>[^)]*)\) is not equal to the input argument value "
    r"\((?P<given>[^)]*)\)"
)
_LLAMA_MP = r"Loading a checkpoint for MP=(?P<saved>\d+) but world size is (?P<given>\d+)"
_MII_PLACE = r"Only able to place (?P<placed>\d+) replicas, but (?P<asked>\d+) replicas were requested"
_MPI_SLOTS = r"There are not enough slots available in the system to satisfy the (?P<asked>\d+)\b"

LAUNCH_SHAPE_SIGNATURES: tuple[Signature, ...] = (
    row(
        "checkpoint_parallel_layout_differs",
        "value from checkpoint",
        _MEGATRON_ARG,
        era="Megatron-LM (check_checkpoint_args) and its forks (Megatron-DeepSpeed, Pai-Megatron-Patch)",
        cause="configuration",
        meaning="The checkpoint was saved with another parallel setting than the one this run was launched "
        "with: its shards are cut for one model-parallel size and the launch asks for another.",
        remedy=(
            "The checkpoint was saved with {arg|this setting} = {saved|its own value} and this run was launched "
            "with {given|another}: launch with the checkpoint's setting ({saved|the saved value}), or first "
            "convert/reshard the checkpoint to {given|the new value} (Megatron-LM tools/checkpoint/convert.py "
            "--target-tensor-parallel-size / --target-pipeline-parallel-size), then load it."
        ),
        reference=MEGATRON_CKPT + "; https://github.com/NVIDIA/Megatron-LM/issues/296",
        fields_re=_MEGATRON_ARG,
    ),
    row(
        "checkpoint_model_parallel_shards_differ",
        "loading a checkpoint for mp=",
        _LLAMA_MP,
        era="meta-llama/llama 2 (Llama.build), and the reference code built on it",
        cause="configuration",
        meaning="The checkpoint is cut into one model-parallel shard per process (consolidated.NN.pth) and the "
        "launch started another number of processes.",
        remedy=(
            "The checkpoint has {saved|its own number of} model-parallel shards and {given|another number of} "
            "processes were launched: launch with the checkpoint's count (torchrun --nproc_per_node {saved|N}: 1 "
            "for 7B, 2 for 13B, 8 for 70B), or merge/split the consolidated.*.pth shards to the new count first."
        ),
        reference=LLAMA_BUILD + "; https://github.com/meta-llama/llama/issues/1017",
        fields_re=_LLAMA_MP,
    ),
    row(
        "replicas_not_placed",
        "only able to place",
        _MII_PLACE,
        era="DeepSpeed-MII 0.1 onwards (MIIConfig.generate_replica_configs)",
        cause="configuration",
        meaning="MII could place fewer model replicas than asked: each replica needs tensor_parallel GPUs on "
        "the hostfile's hosts, and replica_num x tensor_parallel exceeds the GPUs it lists.",
        remedy=(
            "Only {placed|fewer} of the {asked|requested} replicas fit: tensor_parallel is per replica, so "
            "replica_num x tensor_parallel must not exceed the GPUs the hostfile lists (the sum of its slots=N, "
            "and one replica's tensor_parallel GPUs must fit the hosts); lower tensor_parallel to (GPUs / "
            "replica_num), or lower replica_num, or add "
            "hosts; pass both to mii.serve, not to generate."
        ),
        reference=MII_CONFIG + "; https://github.com/deepspeedai/DeepSpeed/issues/5267; "
        "https://github.com/deepspeedai/DeepSpeed-MII/issues/381",
        fields_re=_MII_PLACE,
    ),
    row(
        "mpi_not_enough_slots",
        "not enough slots available",
        _MPI_SLOTS,
        era="Open MPI / PRRTE, all releases (rmaps: 'not enough slots')",
        cause="configuration",
        meaning="mpirun was asked for more processes than the hosts offer slots (hostfile slots=N, --host "
        "host:N, the scheduler's allocation, or by default the cores of each host).",
        remedy=(
            "Open MPI was asked for {asked|more} processes, more than the hosts have slots: -np must not exceed "
            "the sum of the hosts' slots; give each host slots= its GPU count in the hostfile (or --host host:N), "
            "lower -np to the GPUs you have (one process per GPU), or add hosts; --oversubscribe only for CPU tests."
        ),
        reference="https://github.com/open-mpi/ompi/issues/7719; https://github.com/mit-han-lab/spvnas/issues/10; "
        "https://github.com/mpitutorial/mpitutorial/issues/77",
        fields_re=_MPI_SLOTS,
    ),
)
