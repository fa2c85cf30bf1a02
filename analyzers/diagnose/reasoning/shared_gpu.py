"""Two worker processes of one host on one GPU, read from the prefix of NCCL's own lines under torchrun.

NCCL starts each line with 'host:pid:tid [cudaDev]' (src/debug.cc: the device the process had current when it
logged). torchrun starts every worker of a node with the node's whole GPU list (torch/distributed/run.py and
elastic/agent never set CUDA_VISIBLE_DEVICES per worker), so two of its workers whose NCCL lines all name the
same device index share that GPU: the script never made its local rank's GPU current before NCCL init
(torch.cuda.set_device(LOCAL_RANK)), or something it ran first touched CUDA on GPU 0. NCCL then refuses the
communicator ('Duplicate GPU detected', init.cc) - a log cut before that line still shows it
(pytorch/pytorch#129385: both workers' lines on [0] after `import torch.utils.benchmark`).

A launcher that does give each worker its own GPU list (srun --gpus-per-task, a per-rank container) makes every
worker's index 0 legitimately: only torchrun's own lines make the reading.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import APPLICATION, Anomaly
from scope.analyzers.diagnose.readers.nccl_prefix import nccl_lines

# torchrun ran this job: its own lines (its module path in the warning it prints at start) or its command.
# Not startup._TORCHRUN_NPROC_PER_NODE, which reads a one-node command's worker count: this needs no count.
_TORCHRUN_RAN = re.compile(r"torch/distributed/run\.py|\btorchrun\b|-m torch\.distributed\.(?:run|launch)\b")
# NCCL accepted the communicator, or the run went on to train: the devices were distinct after all
_WENT_ON = re.compile(r"NCCL INFO .*Init COMPLETE|\bstep\s*[:=]?\s*\d+|\bIter(?:ation)?\s*#?\d+|\bepoch\s*\d+", re.I)
MIN_PROCESSES = 2

REMEDY = (
    "Give each worker its own GPU before anything touches CUDA: torch.cuda.set_device(int(os.environ["
    "'LOCAL_RANK'])) first thing in the script (or init_process_group(device_id=...)), ahead of imports or calls "
    "that initialise CUDA on GPU 0; model.to(f'cuda:{local_rank}') / device_ids=[local_rank] for DDP. Check "
    "that every rank binds its own device: NCCL_DEBUG=INFO then shows a different [N] per process."
)


def workers_on_one_gpu(text: str, display: str) -> Anomaly | None:
    """A finding when two or more torchrun workers of one host print NCCL lines all on one device index."""
    if "Init COMPLETE" in text or not _TORCHRUN_RAN.search(text) or _WENT_ON.search(text):
        return None
    devices: dict[tuple[str, int], set[int]] = {}
    first_line: dict[tuple[str, int], int] = {}
    for lineno, nccl in nccl_lines(text):  # the host may be blanked out by the poster: ':4171735:4171735 [0]'
        if not nccl.level:
            continue
        key = (nccl.host, nccl.pid)
        devices.setdefault(key, set()).add(nccl.device)
        first_line.setdefault(key, lineno)
    hosts = {host for host, _ in devices}
    if len(devices) < MIN_PROCESSES or len(hosts) != 1:
        return None
    shared = {dev for devs in devices.values() for dev in devs}
    if len(shared) != 1 or any(len(devs) != 1 for devs in devices.values()):
        return None
    dev = shared.pop()
    pids = [str(pid) for pid in sorted(pid for _, pid in devices)]
    line = max(first_line.values())
    return Anomaly(
        code="workers_one_gpu",
        kind="config_error",
        level=APPLICATION,
        message=(
            f"{len(pids)} torchrun workers of one host (pids {', '.join(pids)}) print every NCCL line on device "
            f"[{dev}]: they share one GPU, which NCCL refuses ('Duplicate GPU detected') or runs at a fraction of "
            "the speed"
        ),
        file=display,
        line=line,
        severity="critical",
        details={"confidence": "medium", "remedy": REMEDY},
    )
