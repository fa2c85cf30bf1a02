"""Processes of a distributed launch that report rank -1 / world size -1: they never joined one process group.

torch.distributed's get_rank() / get_world_size() return -1 for a process that is not a member of the group
(torch/distributed/distributed_c10d.py: `if _rank_not_in_group(group): return -1`), and many scripts default their
rank to -1 where the launcher's variables are missing (`int(os.environ.get("RANK", -1))`, argparse's
`--rank default=-1` / `--world-size default=-1` of pytorch/examples' imagenet main.py). So a job whose processes,
started by mpirun / torchrun / srun as several, each print 'rank -1' ran as processes outside any one group:
- under mpirun with the MPI backend, the group took no rank from MPI: PyTorch 2.0.0 built with USE_MPI=1 did this
  to every process ('Testing mpi backend: hello from rank -1, world size -1', pytorch/pytorch#97507, fixed by
  H-Huang's #98623), as does a torch whose MPI is not the one mpirun's processes run with;
- the script read its rank before init_process_group, or from a variable this launcher does not set (srun sets
  SLURM_PROCID, not RANK; mpirun sets OMPI_COMM_WORLD_RANK / PMI_RANK);
- the launcher's variables did not reach the processes (a wrapper script or container that drops them).

A single process printing its not-distributed default is healthy: HF Trainer's argument dump ('local_rank: -1',
'local_rank=-1,'), HF examples' 'Process rank: -1, device: cuda:0, n_gpu: 1' (the local rank), DeepSpeed's
log_dist prefix '[Rank -1]' before its group exists (deepspeed/utils/logging.py), an argparse Namespace dump
('Namespace(..., rank=-1, world_size=-1, ...)'). Local ranks and dumps never count; a rank report counts only where
the log shows a launch of several processes, or the same report printed by several processes, and no line shows
the group formed after all (a later rank >= 1, NCCL's 'Init COMPLETE', c10d's '[rank1]:' prefix).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scope.analyzers.diagnose.knowledge.line_shapes import SHELL_ASSIGNMENT_RUN, SHELL_PROMPT

PT_C10D = (
    "https://github.com/pytorch/pytorch/blob/main/torch/distributed/distributed_c10d.py (get_rank, get_world_size)"
)

# A process's own report of its rank or world size as -1: 'rank -1', 'rank: -1', 'rank=-1', 'RANK: -1',
# 'world size -1', 'world_size=-1', 'global rank -1'. Never a local / node / group rank ('local_rank: -1' is
# HF's not-distributed default), nor HF's 'Process rank: -1' (its local rank), nor a name that only ends in 'rank'
# ('distributed_rank', 'dp_rank'), nor -10. RANK_WORD is the part before the number: the reader finds each
# standalone '-1' by its literal (MINUS_ONE, a fast scan) and tries RANK_WORD only on the few characters before it,
# not a case-insensitive pattern with lookbehinds from every position of every line (a date holds '-1').
RANK_WORD = (
    r"(?i)(?<![\w.-])(?<!local )(?<!node )(?<!group )(?<!process )(?<!local-)"
    r"(?:global[ _])?(?P<what>rank|world[ _]size)[^\S\n]*+(?:[:=]|\bis\b)?[^\S\n]*+"
)
MINUS_ONE = re.compile(r"-1(?![\d.])")
RANK_BEFORE = re.compile(RANK_WORD + r"\Z")  # searched over the characters before a MINUS_ONE
RANK_REPORT = re.compile(RANK_WORD + r"-1(?![\d.])")
WORD_REACH = 48  # characters before the '-1' RANK_BEFORE reads: 'global world_size  :  ' and the lookbehinds

# Lines that carry the words and are no process's report of itself: an argument or config dump (argparse's
# Namespace, three or more key=value pairs, a dict, an indented 'key: -1' line of a YAML / OmegaConf / mmengine
# dump), DeepSpeed's log prefix before init, NCCL's own lines, an error message about a rank argument (its own rows
# read those). Read on the line past its per-process prefix (PROCESS_PREFIX).
NOT_A_REPORT = re.compile(
    r"Namespace\(|\{['\"]|(?<!\w)\w++=[^,\s]*+,\s*+\w++=[^,\s]*+,\s*+\w++=|\[Rank -1\]|\bNCCL (?:INFO|WARN)\b|"
    r"^[^\S\n]++[\w.-]++[^\S\n]*+:[^\S\n]*+-1[^\S\n]*+$|"
    r"(?i:invalid|must be|expected|error|exception)"
)
# The prefix each process's line carries under a launcher that labels them: Open MPI's --tag-output '[1,0]<stdout>:',
# srun --label '0: ', c10d's '[rank1]:', pdsh's 'host:3:'.
PROCESS_PREFIX = re.compile(r"^(?:\[\d+(?:,\d+)?\]<std(?:out|err)>:|\d+:|\[rank\d+\]:|[\w.-]+:\d+:)[^\S\n]*")
# A training progress line: one process printing the same -1 line again after it is one process, not several.
PROGRESS = re.compile(r"(?i)\b(?:step|iter(?:ation)?|epoch)\b[^\S\n]*+[:=#]?[^\S\n]*+\[?[^\S\n]*+\d|\d%\|")

# What shows the group did form after all (the -1 was read before init, or was a default the launcher's variables
# replaced): each row a pattern on the log LOWER-CASED that opens with a literal, so it is found by a fast scan, and
# where the line came from. A number of 2 or more is written (?:[2-9]|[1-9]\d+).
_MANY = r"(?:[2-9]|[1-9]\d+)\b"
GROUP_FORMED: tuple[tuple[str, str], ...] = (
    # the script's own report of a rank of 1 or more, or of rank N of a world of 2 or more; not Open MPI's 'process
    # rank 1' (mpirun's own numbering of its processes), nor a local / node / group rank
    (
        r"rank(?<![\w.-]rank)(?<!local rank)(?<!node rank)(?<!group rank)(?<!process rank)[^\S\n]*+(?:[:=]|\bis\b)?"
        r"[^\S\n]*+(?:[1-9]\d*+\b(?!\.\d)|\d++[^\S\n]*+(?:of|/)[^\S\n]*+" + _MANY + ")",
        "the script's own print after init_process_group ('rank 1', 'rank 0 of 4')",
    ),
    (r"global[ _]rank[^\S\n]*+[:=]?[^\S\n]*+[1-9]", "Lightning's 'GLOBAL_RANK: 1', a script's 'global rank 3'"),
    # the world's size, as a script, Megatron ('using world size: 8') or an argument dump ('world_size ...... 8') says
    (
        r"world[ _]size(?<![\w.-]world[ _]size)[^\S\n]*+(?::|=|\bis\b|\.{2,})?[^\S\n]*+" + _MANY,
        "scripts; megatron/training/arguments.py ('using world size: N'); DeepSpeed / Megatron argument dumps",
    ),
    (r"init complete", "NCCL src/init.cc ('comm 0x... Init COMPLETE')"),
    (r"nranks " + _MANY, "NCCL src/init.cc ('comm 0x... rank 0 nranks 16 ...')"),
    # init_process_group sets the C++ logs' and the excepthook's prefix from the group's rank (distributed_c10d.py
    # _update_default_pg: _set_global_rank(pg.rank()), -1 outside the group)
    (r"\n\[rank\d+\]:", "torch/distributed/distributed_c10d.py (_update_default_pg, the '[rankN]:' prefix)"),
    (
        r"member: \d+/" + _MANY,
        "lightning/fabric/utilities/distributed.py ('Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4')",
    ),
    (
        r"processes registered\. starting (?:ddp )?with " + _MANY,
        "Lightning ('All distributed processes registered. Starting with 4 processes'; 1.x '... Starting ddp with')",
    ),
    (
        r"distributed training: true",
        "transformers examples run_*.py ('Process rank: 0, ..., distributed training: True')",
    ),
    (r"num processes: " + _MANY, "accelerate/state.py (PartialState's repr: 'Num processes: 4')"),
)


class Launch(NamedTuple):
    name: str  # the launcher, as the remedy names it
    command: str  # the program's name on a command line
    size_re: str  # a regex whose group 1 is a number of processes or nodes it starts ('' where none says it)
    many_by_default: bool  # with no count, it starts several (mpirun fills the slots, deepspeed every GPU)
    remedy: str  # what to check under this launcher ({command}: the log's command line, {program}: its program)
    source: str


# Under mpirun with the MPI backend the ranks are MPI's own; with nccl / gloo the script maps MPI's variables itself
_MPI = (
    "Under mpirun each process's rank comes from MPI: with init_process_group('mpi') check that "
    "torch.distributed.is_mpi_available() is True and that the MPI this PyTorch was built against is the one "
    "this {program} belongs to (which {program}; ompi_info or mpichversion; ldd on torch/lib/libtorch_cpu.so | grep -i "
    "mpi): "
    "a PyTorch 2.0.0 built with USE_MPI=1 gave every process rank -1 and world size -1 (pytorch/pytorch#97507, fixed "
    "by #98623: use 2.1 or later, or 2.0 with that fix). With nccl or gloo under mpirun, set RANK / WORLD_SIZE / "
    "LOCAL_RANK from OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_RANK (MPICH, Intel MPI: "
    "PMI_RANK / PMI_SIZE) before init_process_group"
)
_TORCHRUN = (
    "`{command}` sets RANK, WORLD_SIZE, LOCAL_RANK (and MASTER_ADDR / MASTER_PORT) in each worker's environment: "
    "the script read its rank from something else (its own --rank / --local_rank argument, a SLURM_* or OMPI_* "
    "variable) whose -1 default stayed, or a wrapper between the launcher and Python dropped the variables; read "
    "int(os.environ['RANK']) / int(os.environ['WORLD_SIZE']), or dist.get_rank() after init_process_group"
)
_SRUN = (
    "`{command}` sets SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, not RANK / WORLD_SIZE / LOCAL_RANK: map them "
    "before init_process_group (RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID, with "
    "MASTER_ADDR from scontrol show hostnames $SLURM_JOB_NODELIST | head -n1), or run torchrun once per node under "
    "srun (--ntasks-per-node=1)"
)
_OWN_LAUNCHER = (
    "`{command}` sets RANK / WORLD_SIZE / LOCAL_RANK for each process: the script read its rank from something else "
    "whose -1 default stayed (its own argument, another launcher's variable), or before init_process_group"
)

LAUNCHES: tuple[Launch, ...] = (
    Launch(
        "mpirun",
        r"mpirun|mpiexec|orterun",
        r"(?:^|\s)(?:-np|-n|--np|-c|--n)[\s=]+(\d+)",
        True,
        _MPI,
        "Open MPI mpirun(1) (-np, OMPI_COMM_WORLD_*), MPICH / Hydra mpiexec (-n, PMI_*); pytorch/pytorch#97507",
    ),
    Launch(
        "torchrun",
        r"torchrun|python3?\s+-m\s+torch\.distributed\.(?:run|launch)|\S*torch/distributed/(?:run|launch)\.py",
        r"--(?:nproc[_-]per[_-]node|nnodes)[\s=]+(\d+)",
        False,
        _TORCHRUN,
        "torch/distributed/run.py (the environment variables each worker gets)",
    ),
    Launch(
        "srun",
        r"srun",
        r"(?:^|\s)(?:-n|--ntasks|-N|--nodes)[\s=]+(\d+)",
        False,
        _SRUN,
        "Slurm srun(1) OUTPUT ENVIRONMENT VARIABLES (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)",
    ),
    Launch(
        "deepspeed",
        r"deepspeed",
        r"--num_(?:gpus|nodes)[\s=]+(\d+)",
        True,
        _OWN_LAUNCHER,
        "deepspeed/launcher/launch.py (RANK, WORLD_SIZE, LOCAL_RANK per process)",
    ),
    Launch(
        "accelerate launch",
        r"accelerate\s+launch",
        r"--(?:num_processes|num_machines)[\s=]+(\d+)",
        False,
        _OWN_LAUNCHER,
        "accelerate/commands/launch.py (RANK, WORLD_SIZE, LOCAL_RANK per process)",
    ),
)

# A command line of one of the launchers above ('$ mpirun -np 2 python x.py', 'NCCL_DEBUG=INFO torchrun ...', bash's
# xtrace '+ srun ...');
# group 'launcher' is the program, 'args' what follows. Possessive: a long line is read once.
COMMAND = re.compile(
    rf"^[ \t]*+(?:\++[ \t]++)?{SHELL_PROMPT}{SHELL_ASSIGNMENT_RUN}(?:[^\s/]*+/)*+"
    r"(?P<launcher>mpirun|mpiexec|orterun|srun|torchrun|deepspeed|accelerate[ \t]++launch|"
    r"python3?[ \t]++-m[ \t]++torch\.distributed\.(?:run|launch)|"
    r"python3?[ \t]++\S*torch/distributed/(?:run|launch)\.py)"
    r"(?![\w.-])(?P<args>[^\n]*)$",
    re.M,
)

# Said whatever the launcher: where the rank is read, and what a missing group means for the run.
GENERIC = (
    "Read the rank only after dist.init_process_group returned (dist.get_rank() / dist.get_world_size()), and check "
    "what the launcher sets for each process (print os.environ.get('RANK'), os.environ.get('WORLD_SIZE') at the "
    "script's start)"
)
REMEDY = (
    "The processes of the launch printed '{line}': none of them is a member of one process group (get_rank() and "
    "get_world_size() return -1 outside it, and scripts default to -1 where the launcher's variables are missing), "
    "so each ran alone, not as one distributed job. {launcher}. {generic}."
)
REFERENCE = PT_C10D + "; https://github.com/pytorch/pytorch/issues/97507"
