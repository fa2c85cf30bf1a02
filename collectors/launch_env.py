"""What the launcher learns from its surroundings and what it adds to the job's environment.

Under srun or mpirun, `scope run` is started once per node; the scheduler's variables give the
node count, this node's rank and a master address, so the same command line works on every node.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scope.collectors.hook.config import HookConfig

SITE_DIR = Path(__file__).resolve().parent / "hook" / "site"
FR_BUFFER_SIZE = "2000"

# Environment worth keeping in run.json: what shapes a distributed job's behaviour.
RELEVANT_PREFIXES = (
    "SCOPE_",
    "TORCH",
    "PYTORCH_",
    "NCCL_",
    "GLOO_",
    "CUDA_",
    "NVIDIA_",
    "HIP_",
    "ROCR_",
    "OMP_",
    "MKL_",
    "MASTER_",
    "UCX_",
    "FI_",
    "SLURM_JOB",
    "SLURM_NNODES",
    "SLURM_NODELIST",
    "SLURM_NTASKS",
    "SLURM_CLUSTER_NAME",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
)
RELEVANT_NAMES = ("PYTHONPATH", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "PRIVATE")


@dataclass
class NodePlacement:
    """Where this launcher sits in a multi-node job, as far as the scheduler tells."""

    nnodes: int | None = None
    node_rank: int | None = None
    master_addr: str | None = None
    source: str = ""  # "slurm", "openmpi", "" (none)


def detect_placement(environ: Mapping[str, str] | None = None) -> NodePlacement:
    env = os.environ if environ is None else environ
    if "SLURM_NODEID" in env and "SLURM_NNODES" in env:
        nodes = expand_slurm_nodelist(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST", ""))
        return NodePlacement(
            nnodes=_int(env.get("SLURM_NNODES")),
            node_rank=_int(env.get("SLURM_NODEID")),
            master_addr=env.get("MASTER_ADDR") or (nodes[0] if nodes else None),
            source="slurm",
        )
    if "OMPI_COMM_WORLD_RANK" in env:
        # One launcher per node (mpirun --map-by ppr:1:node): the MPI rank is the node rank.
        return NodePlacement(
            nnodes=_int(env.get("OMPI_COMM_WORLD_SIZE")),
            node_rank=_int(env.get("OMPI_COMM_WORLD_RANK")),
            master_addr=env.get("MASTER_ADDR"),
            source="openmpi",
        )
    return NodePlacement(master_addr=env.get("MASTER_ADDR"))


def expand_slurm_nodelist(text: str) -> list[str]:
    """`node[01-03,07],gpu5` -> node01 node02 node03 node07 gpu5 (the forms Slurm prints)."""
    hosts: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[\]]+)\[([^\]]*)\]|([^,\[\]]+)", text):
        if plain:
            hosts.append(plain)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not hi:
                hosts.append(prefix + lo)
                continue
            width = len(lo)
            hosts.extend(f"{prefix}{n:0{width}d}" for n in range(int(lo), int(hi) + 1))
    return hosts


def relevant_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    out = {}
    for name, value in env.items():
        if any(word in name.upper() for word in SECRET_WORDS):
            continue
        if name in RELEVANT_NAMES or name.startswith(RELEVANT_PREFIXES):
            out[name] = value
    return dict(sorted(out.items()))


def job_env(run_dir: Path, hook: HookConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables added to every rank: hook activation and configuration, NCCL and Flight Recorder.

    A variable the user set already is kept; the per-rank ones scope sets itself are listed in
    SCOPE_PER_RANK_ENV and filled in per rank (launch_torchrun.per_rank_env).
    """
    env = os.environ if environ is None else environ
    out = dict(hook.env())
    out["SCOPE_RUN_DIR"] = str(run_dir)
    old_path = env.get("PYTHONPATH", "")
    out["PYTHONPATH"] = str(SITE_DIR) + (os.pathsep + old_path if old_path else "")
    managed = []
    if "NCCL_DEBUG" not in env:
        out["NCCL_DEBUG"] = "INFO"
    if "NCCL_DEBUG_FILE" not in env:
        managed.append("NCCL_DEBUG_FILE")
    if "TORCH_FR_BUFFER_SIZE" not in env and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env:
        out["TORCH_FR_BUFFER_SIZE"] = FR_BUFFER_SIZE
    if "TORCH_FR_DUMP_TEMP_FILE" not in env and "TORCH_NCCL_DEBUG_INFO_TEMP_FILE" not in env:
        managed.append("TORCH_FR_DUMP_TEMP_FILE")
    if "TORCH_NCCL_DUMP_ON_TIMEOUT" not in env:
        out["TORCH_NCCL_DUMP_ON_TIMEOUT"] = "1"
    out["SCOPE_PER_RANK_ENV"] = ",".join(managed)
    return out


def hostname() -> str:
    return socket.gethostname()


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None
