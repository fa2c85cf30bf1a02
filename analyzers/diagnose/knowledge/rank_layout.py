"""The lines in which a framework's every process states its local rank beside the GPUs it sees, and the line
that states the world size: together they say how many processes each node may run with one local rank each.

PyTorch Lightning's accelerator logs 'LOCAL_RANK: {local_rank} - CUDA_VISIBLE_DEVICES: [{devices}]' from every
process as it sets its device (pytorch_lightning/accelerators/gpu.py set_nvidia_flags in 1.x, lightning/pytorch/
accelerators/cuda.py in 2.x), after 'initializing ddp: GLOBAL_RANK: g, MEMBER: m/N' (1.x) or 'Initializing
distributed: GLOBAL_RANK: g, MEMBER: m/N' (2.x). Lightning takes the local rank from the launcher: SLURM_LOCALID
under SLURM (plugins/environments/slurm_environment.py, which is switched off in an interactive job:
SLURM_JOB_NAME 'bash' or 'interactive'), LOCAL_RANK under torchrun, its own index when it spawns the processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RankLayoutLine:
    program: str
    local: str  # a regex: group 1 the local rank, group 2 the device list as printed
    world: str  # a regex: group 1 the world size
    remedy: str
    source: str


LIGHTNING_LOCAL_RANK = (
    "Each process must get its own local rank, 0..{last} on a node of {per_node} GPUs. Lightning takes it from the "
    "launcher: under SLURM from SLURM_LOCALID, so submit with sbatch and start the tasks with srun, one task per "
    "GPU (#SBATCH --nodes equal to Trainer(num_nodes=...), --ntasks-per-node equal to Trainer(devices=...)), not "
    "from an interactive shell (SLURM_JOB_NAME bash / interactive turns SLURM detection off); with torchrun, from "
    "LOCAL_RANK. Where the job is submitted that way and every process still reports the same local rank, the "
    "Lightning release's SLURM handling is at fault (1.2.7 gave every task LOCAL_RANK 0, fixed in 1.2.8): upgrade "
    "pytorch-lightning."
)

RANK_LAYOUT_LINES: tuple[RankLayoutLine, ...] = (
    RankLayoutLine(
        "Lightning",
        r"^\s*(?:\S+:)?LOCAL_RANK: (\d+) ?- ?CUDA_VISIBLE_DEVICES: \[([^\]]*)\]",
        r"(?:initializing ddp|Initializing distributed): GLOBAL_RANK: \d+, MEMBER: \d+/(\d+)",
        LIGHTNING_LOCAL_RANK,
        "pytorch_lightning/accelerators/gpu.py (1.x), lightning/pytorch/accelerators/cuda.py (2.x); "
        "Lightning-AI/pytorch-lightning#7027 (1.2.7: every SLURM task LOCAL_RANK 0, 'invalid device ordinal')",
    ),
)


def compiled(row: RankLayoutLine) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return re.compile(row.local, re.M), re.compile(row.world)
