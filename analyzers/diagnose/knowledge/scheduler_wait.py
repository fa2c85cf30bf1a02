"""A scheduler ending a job whose ranks were still waiting at start-up: the wait is the failure, the cancel its end.

SLURM's slurmstepd prints '*** JOB J ON N CANCELLED AT T ***' (scancel, or the time limit: '... DUE TO TIME LIMIT')
when it ends the job (src/slurmd/slurmstepd/req.c, step_terminate_monitor); the signature rows read it
(knowledge/signatures.py slurm_cancelled, slurm_time_limit). Where the log's last progress line before it is a
rendezvous or process-group init line, the ranks were waiting for members that never came until someone (or the
limit) ended the job.
"""

from __future__ import annotations

import re

# The signature rows of a scheduler ending the job, and the stages that are a wait for the other ranks
SCHEDULER_ENDINGS = ("slurm_cancelled", "slurm_time_limit")
WAIT_STAGES = ("rendezvous", "comm_init")

# Lightning's SLURMEnvironment takes the world size from SLURM_NTASKS (nodes x --ntasks-per-node) and each task is
# one rank; 'Initializing distributed: GLOBAL_RANK: g, MEMBER: m/N' states it (lightning/fabric/plugins/
# environments/slurm.py world_size(); lightning/fabric/strategies/ddp.py). A task count above Trainer(devices=...)
# leaves init waiting for ranks that are never started as training processes (Lightning-AI/torchmetrics#2300).
LIGHTNING_WORLD = re.compile(r"GLOBAL_RANK: \d+, MEMBER: \d+/(?P<world>\d+)")
# rank 0's own init line: the one rank whose log goes on (the model summary, the progress bar) once all joined
LIGHTNING_RANK_ZERO = re.compile(r"GLOBAL_RANK: 0, MEMBER: 1/\d+")
LIGHTNING_SLURM_WORLD = (
    "Lightning took the world size ({world}) from SLURM's task count (SLURM_NTASKS = --nodes x --ntasks-per-node) "
    "and waits at distributed init until all {world} ranks join; the job was cancelled while it waited. Under SLURM "
    "each task is one rank: make --ntasks-per-node equal Trainer(devices=...) and --nodes equal "
    "Trainer(num_nodes=...), start the script with srun python ..., and give each task its CPUs with "
    "--cpus-per-task (not extra tasks)."
)
LIGHTNING_SLURM_REFERENCE = (
    "https://lightning.ai/docs/pytorch/stable/clouds/cluster_advanced.html; "
    "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/fabric/plugins/environments/slurm.py"
)
# The devices a Lightning rank's node shows ('LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]', lightning/pytorch/
# accelerators/cuda.py; an exported 'CUDA_VISIBLE_DEVICES=0,1') and SLURM's tasks per node ('SLURM_NTASKS_PER_NODE=8'
# as a job script echoes it): what the world size N is compared with before the task-count fix is given
VISIBLE_DEVICES = re.compile(r"CUDA_VISIBLE_DEVICES(?::\s*\[|=)(?P<devices>\d+(?:\s*,\s*\d+)*)")
TASKS_PER_NODE = re.compile(r"SLURM_NTASKS_PER_NODE=(?P<tasks>\d+)\b")
# The node count a job script echoes ('Running on 1 nodes.', SLURM_NNODES / SLURM_JOB_NUM_NODES): N ranks on that
# many nodes is N / nodes per node, more than any node's GPUs where no device list shows them (16: the largest
# GPU count per node, HGX / DGX-2)
NODE_COUNT = re.compile(r"Running on (?P<nodes>\d+) nodes?\b|SLURM_(?:JOB_NUM_NODES|NNODES)=(?P<env>\d+)\b")
MAX_GPUS_PER_NODE = 16
# A cancel for the scheduler's own reason is no end of a wait: preemption or a node failure ends a run wherever it is
NOT_A_WAIT = re.compile(r"DUE TO (?:PREEMPTION|NODE FAILURE)")
# NCCL built its rings or trees (init.cc 'Channel 00/24 :', 'Connected all rings', 'Init COMPLETE'): every rank of
# the communicator had joined, so the ranks did not wait for members that never came
RANKS_CONNECTED = re.compile(r"NCCL INFO (?:Channel \d+/\d+ :|Connected all (?:rings|trees)|comm \S+ rank \d+ nranks)")
# The start-up's own chatter between the init line and the cancel (Lightning's device and precision lines,
# accelerate's state print, NCCL's and torch's init lines, warnings, the scheduler's lines): any other line is the
# job's own output (a metric line, a data-loading line on a rank that prints no step), so it got past start-up
STARTUP_CHATTER = re.compile(
    r"^\W*$|LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES|\b(?:GPU|TPU|HPU|IPU) available: |distributed_backend=|"
    r"\bNCCL (?:INFO|WARN|version)\b|[Ww]arning|warnings\.warn|\[rank\d+\]:\[[WI]\d|^[WI]\d{4} |"
    r"^\s*(?:Num processes|Process index|Local process index|Device|Mixed precision type|Distributed environment): |"
    r"slurmstepd|^srun: |^wandb: |Using (?:16bit|bfloat16|native)|You are using a CUDA device|Initializing distributed|"
    r"Rendezvous|init_process_group|process group|\bPG \d+\b"
)
# The line's own date and time ('2024-02-02 10:00:00', '2024-02-02T10:00:20' in slurmstepd's 'CANCELLED AT T')
LINE_TIME = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<time>\d\d:\d\d:\d\d)")
# A cancel this soon after the init line is a user's (or a script's) decision, not the end of a wait; a wait this
# long (or up to the time limit) before it is one, and under Lightning the world size is what it waited for
SHORT_WAIT_S = 120
LONG_WAIT_S = 1800
# Any other framework: the wait's own causes (knowledge/stages.py STAGE_INFO), after the world size check
WAITED_IN = (
    "The job was ended by the scheduler while its ranks waited in {stage}: the wait, not the cancel, is the "
    "failure. Check that the world size the ranks wait for is the number of processes started (SLURM's task count: "
    "--nodes x --ntasks-per-node, one task per GPU; the launcher's --nproc_per_node x --nnodes). Then: {causes}."
)
