"""Start-up progress models: the launcher and framework lines every rank prints before training, in order.
A console log that declares a world size, shows some ranks reaching start-up and stops there (no error, no
completion marker, no training step) is waiting for the ranks that never printed: missing ranks, named.

  torch c10d store barrier (torch <= 2.0):  'Waiting in store based barrier ... (world_size=8, worker_count=4'
                                           ... 'Completed store-based barrier for key ... with 8 nodes'
  PyTorch Lightning:  'Initializing distributed: GLOBAL_RANK: g, MEMBER: m/N' per rank, then rank 0's
                      'All distributed processes registered. Starting with N processes'
  accelerate:         'Num processes: N' and 'Process index: i' per process (accelerate's state print)
  torchrun agent:     "Rendezvous'ing worker group" ... 'Rendezvous complete for workers'
  NCCL init:          'comm 0x.. rank r nranks N' per rank ... 'Init COMPLETE'
  mpirun -np N:       '[1,r]<stdout>:' tags (--tag-output) of every rank
  torchrun (one node): --nproc_per_node N and the '[rankN]:' / '[defaultN]:' tags of every rank

Only a file that shows two or more ranks can name the missing ones (a per-rank file shows its own rank
only); only a log that ends in start-up (no excerpt marker after it) says start-up stopped there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.reasoning.excerpt import CUT_NOTE

_MEMBER = re.compile(r"GLOBAL_RANK: (\d+), MEMBER: \d+/(\d+)")
_LIGHTNING_DONE = re.compile(r"All distributed processes registered|Starting with \d+ processes")
_ACCEL_WORLD = re.compile(r"^\s*Num processes: (\d+)", re.M)
_ACCEL_RANK = re.compile(r"^\s*Process index: (\d+)", re.M)
_BARRIER = re.compile(
    r"Waiting in store based barrier to initialize process group for rank: (\d+), key: \S+ "
    r"\(world_size=(\d+), (?:worker_count|num_workers_joined)=(\d+)"
)
_BARRIER_DONE = re.compile(r"Completed store-based barrier")
_RDZV_START = re.compile(r"Rendezvous'ing worker group|Waiting for \d+ more nodes|rendezvous.*waiting", re.I)
_RDZV_DONE = re.compile(r"Rendezvous complete for workers|Starting worker group|Rendezvous completed")
_PROGRESS = re.compile(r"(?i)\bstep\s*[:=]?\s*\d+|\bIter(?:ation)? #?\d+|\bepoch\b|Init COMPLETE|\d+%\|")
PROGRESS = _PROGRESS  # for readers of a log's progress elsewhere (reasoning/traceback_end.py)

CHECKS = (
    "check that the launcher started every process: each node's launch command (--nnodes / --nproc_per_node / "
    "hostfile slots / SLURM --ntasks), that every node reaches MASTER_ADDR:MASTER_PORT, and those nodes' own "
    "logs for an error before init"
)
# A whole node's ranks missing: that node's launcher never ran (the sources: SLURM runs a batch script on the
# first node only, srun starts the tasks on every node; torchrun and the DeepSpeed / MPI launchers start only
# the nodes their command or hostfile names).
WHOLE_NODE = (
    "{who}: {count} consecutive ranks of {world}, one node's share when each of {nodes} nodes runs {count}: "
    "that node most likely never started its processes. Under SLURM, start the program with srun inside the "
    "sbatch script (srun python ..., --nodes={nodes} --ntasks-per-node={count}; plain python in a batch script "
    "runs on the first node only); with torchrun, run the command on every node (--nnodes={nodes}, each node "
    "its own --node_rank); with deepspeed / mpirun, list every node in the hostfile with slots={count}. "
    "Then {checks}."
)
ONE_RANK = (
    "Rank {rank} alone never joined: read that rank's own log and exit status{local} for an error before "
    "init_process_group; if it is still busy before it (loading or pre-processing data), raise the init "
    "timeout (init_process_group(timeout=...)). Then {checks}."
)
# Ranks a node runs, as the launch states it: torchrun --nproc_per_node, SLURM --ntasks-per-node, Open MPI
# -npernode / --map-by ppr:N:node, torchrun's LOCAL_WORLD_SIZE in an environment echo.
_PER_NODE = re.compile(
    r"--nproc[_-]per[_-]node[= ](\d+)|--ntasks-per-node[= ](\d+)|-npernode\s+(\d+)|ppr:(\d+):node|"
    r"\bLOCAL_WORLD_SIZE=(\d+)"
)
# Where the log does not say: 8, the GPUs of an HGX / DGX server (NVIDIA's DGX A100 and DGX H100 user guides:
# eight GPUs a system), run one rank a GPU.
USUAL_RANKS_PER_NODE = 8


def ranks_per_node(text: str) -> int | None:
    """The ranks each node runs, where the log's launch line or environment states it."""
    m = _PER_NODE.search(text) if "node" in text or "LOCAL_WORLD_SIZE" in text else None
    count = int(next(g for g in m.groups() if g)) if m else 0
    return count if count > 0 else None


def missing_advice(world: int, missing: list[int], per_node: int | None = None) -> str:
    """What to check for the ranks that never joined a start-up of `world`, named from the arithmetic: a block
    the size of one node's ranks is a node whose launcher never ran, a single rank is that rank's own failure
    (with its local rank, from `per_node`: the ranks a node runs, where the log says)."""
    joined = world - len(missing)
    block = bool(missing) and missing == list(range(missing[0], missing[0] + len(missing)))
    if block and len(missing) > 1 and world % len(missing) == 0 and joined % len(missing) == 0:
        who = f"Ranks {missing[0]}-{missing[-1]}"
        return WHOLE_NODE.format(who=who, count=len(missing), world=world, nodes=world // len(missing), checks=CHECKS)
    if len(missing) == 1:
        r = missing[0]
        n = per_node or USUAL_RANKS_PER_NODE
        local = f" (local rank {r % n} of its node when each node runs {n})" if world > n and world % n == 0 else ""
        return ONE_RANK.format(rank=r, local=local, checks=CHECKS)
    return CHECKS[:1].upper() + CHECKS[1:]


@dataclass(frozen=True)
class Seen:
    framework: str
    world: int
    ranks: set[int]
    joined: int | None = None  # a count the program states (store barrier's worker_count)
    repeats: bool = False  # a rank printed its waiting line more than once
    twice: tuple[int, ...] = ()  # ranks whose one-per-process start-up line two processes printed


# Words one of which a start-up model needs: most logs (a healthy rank's) have none and cost one pass each.
_GATES = ("store based barrier", "MEMBER:", "Num processes", "nranks", "]<std", "endezvous", "nproc")


def missing_ranks(text: str, display: str) -> Anomaly | None:
    if not any(g in text for g in _GATES):
        return None
    seen = _barrier(text) or _lightning(text) or _accelerate(text) or _nccl(text) or _mpirun(text) or _torchrun(text)
    rdzv = _RDZV_START.search(text) if "endezvous" in text or "more nodes" in text else None
    if seen is None and rdzv is None:
        return None  # the whole-text checks below only for a log a model recognised
    body = text.rstrip()
    # the store barrier repeats its 'Waiting' line while it waits: a rank printing it twice was still waiting
    # after a whole wait interval, so a cut after it hides no completion of that barrier
    still_waiting = seen is not None and seen.repeats
    cut = bool(body) and bool(CUT_NOTE.match(body[body.rfind("\n") + 1 :]))
    if not body or (cut and not still_waiting) or _PROGRESS.search(text):
        return None
    if seen is not None and seen.joined is not None and seen.joined > seen.world:
        return _too_many(display, text, seen)
    if seen is not None:
        missing = sorted(set(range(seen.world)) - seen.ranks)
        if seen.twice and missing:
            return _assigned_twice(display, text, seen, missing)
        if seen.joined is not None and seen.joined < seen.world:
            return _anomaly(display, text, seen, missing if len(missing) == seen.world - seen.joined else [])
        if missing and len(seen.ranks) >= 2:
            return _anomaly(display, text, seen, missing)
    if rdzv is not None and not _RDZV_DONE.search(text) and "Traceback" not in text:
        return Anomaly(
            code="rendezvous_waiting",
            kind="missing_rank",
            level=STALL,
            message="the log ends while torchrun's agent waits in the rendezvous: nodes of the job never joined it",
            file=display,
            line=text.count("\n", 0, rdzv.start()) + 1,
            severity="critical",
            details={"confidence": "low", "phase": "rendezvous", "remedy": CHECKS},
        )
    return None


def _barrier(text: str) -> Seen | None:
    if "store based barrier" not in text or _BARRIER_DONE.search(text):
        return None
    found = list(_BARRIER.finditer(text))
    if not found:
        return None
    last = found[-1]
    ranks = {int(m.group(1)) for m in found}
    return Seen("torch store barrier", int(last.group(2)), ranks, int(last.group(3)), len(found) > len(ranks))


def _lightning(text: str) -> Seen | None:
    if "MEMBER:" not in text or _LIGHTNING_DONE.search(text):
        return None
    found = [int(m.group(1)) for m in _MEMBER.finditer(text)]
    if not found:
        return None
    world = max(int(m.group(2)) for m in _MEMBER.finditer(text))
    twice = tuple(sorted(r for r in set(found) if found.count(r) > 1))
    return Seen("Lightning", world, set(found), twice=twice)


def _accelerate(text: str) -> Seen | None:
    if "Num processes" not in text:
        return None
    worlds = [int(m.group(1)) for m in _ACCEL_WORLD.finditer(text)]
    ranks = {int(m.group(1)) for m in _ACCEL_RANK.finditer(text)}
    return Seen("accelerate", max(worlds), ranks) if worlds and ranks else None


_NCCL_COMM = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) nranks (\d+)")
_MPI_NP = re.compile(r"\b(?:mpirun|mpiexec|horovodrun)\b[^\n]*?\s-(?:np|n)\s+(\d+)")
_MPI_TAG = re.compile(r"^\[\d+,(\d+)\]<std(?:out|err)>:", re.M)


def _nccl(text: str) -> Seen | None:
    """NCCL's communicator lines ('comm 0x.. rank r nranks N'): ranks that never printed one, no Init COMPLETE."""
    if "nranks" not in text or "Init COMPLETE" in text:
        return None
    found = list(_NCCL_COMM.finditer(text))
    return Seen("NCCL init", max(int(m.group(2)) for m in found), {int(m.group(1)) for m in found}) if found else None


def _mpirun(text: str) -> Seen | None:
    """mpirun -np N with --tag-output: ranks whose tag never appears."""
    if "]<std" not in text or not any(w in text for w in ("mpirun", "mpiexec", "horovodrun")):
        return None
    m = _MPI_NP.search(text)
    if m is None:
        return None
    return Seen("mpirun", int(m.group(1)), {int(t) for t in _MPI_TAG.findall(text)})


# A torchrun (or torch.distributed.launch/run) command and its --nproc_per_node N: the workers one node starts.
# Not shared_gpu._TORCHRUN_RAN, which asks only whether torchrun ran the job.
_TORCHRUN_NPROC_PER_NODE = re.compile(
    r"\b(?:torchrun|torch\.distributed\.(?:launch|run))\b[^\n]*?--nproc[_-]per[_-]node[= ](\d+)"
)
_NNODES = re.compile(r"--nnodes[= ](\d+)(?::(\d+))?")
_RANK_TAG = re.compile(r"^\[(?:rank|default)(\d+)\]:", re.M)


def _torchrun(text: str) -> Seen | None:
    """A one-node torchrun command (--nproc_per_node N) and the [rankN]: / [defaultN]: tags of its output."""
    m = _TORCHRUN_NPROC_PER_NODE.search(text) if "nproc" in text else None
    if m is None:
        return None
    nodes = _NNODES.search(text[m.start() : text.find("\n", m.start()) % (len(text) + 1)])
    if nodes and (nodes.group(1) != "1" or (nodes.group(2) or "1") != "1"):
        return None  # one node's console of a multi-node job shows that node's ranks only
    return Seen("torchrun", int(m.group(1)), {int(r) for r in _RANK_TAG.findall(text)})


def _anomaly(display: str, text: str, seen: Seen, missing: list[int]) -> Anomaly:
    shown = ", ".join(map(str, missing[:16])) + (f" (+{len(missing) - 16} more)" if len(missing) > 16 else "")
    joined = seen.joined if seen.joined is not None else len(seen.ranks)
    who = (f"rank {shown}" if len(missing) == 1 else f"ranks {shown}") if missing else f"{seen.world - joined} ranks"
    return _startup_anomaly(
        display,
        text,
        "startup_missing_ranks",
        "missing_rank",
        f"{seen.framework} start-up: world size {seen.world}, {joined} ranks joined, and the log ends there with "
        f"no error: {who} never started or never reached start-up, the others wait for them",
        confidence="low",
        remedy=missing_advice(seen.world, missing, ranks_per_node(text)),
        rank=missing[0] if len(missing) == 1 else None,
        ranks=missing,
        world=seen.world,
    )


def _startup_anomaly(
    display: str,
    text: str,
    code: str,
    kind: str,
    message: str,
    confidence: str,
    remedy: str,
    rank: int | None = None,
    **details: object,
) -> Anomaly:
    """A start-up finding: read at the log's last line (where start-up stopped), critical, with its remedy."""
    return Anomaly(
        code=code,
        kind=kind,
        level=STALL,
        message=message,
        file=display,
        line=text.rstrip().count("\n") + 1,
        rank=rank,
        severity="critical",
        details={"confidence": confidence, "phase": "startup", **details, "remedy": remedy},
    )


def _too_many(display: str, text: str, seen: Seen) -> Anomaly:
    """More workers checked in than the world size: two jobs share one store, or the script was started twice."""
    return _startup_anomaly(
        display,
        text,
        "startup_too_many_workers",
        "config_error",
        f"{seen.framework}: {seen.joined} workers checked in for a world size of {seen.world}: two jobs share one "
        "rendezvous store (MASTER_ADDR:MASTER_PORT), or each process was started twice",
        confidence="medium",
        remedy="Give each job its own MASTER_PORT (--master_port), stop stale processes of an earlier run, and "
        "start each rank once (not both a launcher and a script that spawns its own processes).",
    )


# Lightning prints 'GLOBAL_RANK: g, MEMBER: m/N' once per process: the same g from two processes while other ranks
# never print is each launcher task spawning the same local ranks (Lightning-AI/pytorch-lightning#4389: srun with
# one task per node, each task spawning its node's processes, so global ranks 0-3 twice and 4-7 never).
ASSIGNED_TWICE = (
    "Start one process per rank, from one launcher: under SLURM one task per GPU (#SBATCH --ntasks-per-node equal "
    "to the GPUs per node, srun starting them) so the framework does not spawn its own; with torchrun or "
    "accelerate, do not also run the script under srun / mpirun. Every global rank 0..{last} must exist once."
)


def _assigned_twice(display: str, text: str, seen: Seen, missing: list[int]) -> Anomaly:
    twice = ", ".join(map(str, seen.twice))
    gone = ", ".join(map(str, missing[:16]))
    return _startup_anomaly(
        display,
        text,
        "startup_rank_assigned_twice",
        "config_error",
        f"{seen.framework} start-up: global rank{'s' if len(seen.twice) > 1 else ''} {twice} printed by two "
        f"processes while rank{'s' if len(missing) > 1 else ''} {gone} of {seen.world} never appear: the ranks "
        "were assigned twice (two launchers each started the same local ranks), and init waits for the missing ones",
        confidence="medium",
        remedy=ASSIGNED_TWICE.format(last=seen.world - 1),
        ranks=missing,
    )
