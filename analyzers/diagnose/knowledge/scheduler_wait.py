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
# Any other framework: the wait's own causes (knowledge/stages.py STAGE_INFO), after the world size check
WAITED_IN = (
    "The job was ended by the scheduler while its ranks waited in {stage}: the wait, not the cancel, is the "
    "failure. Check that the world size the ranks wait for is the number of processes started (SLURM's task count: "
    "--nodes x --ntasks-per-node, one task per GPU; the launcher's --nproc_per_node x --nnodes). Then: {causes}."
)
