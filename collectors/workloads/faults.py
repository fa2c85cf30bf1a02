"""The faults the sample workloads inject, and the ground truth each one leaves for the analyzers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class FaultInfo:
    """What a fault is: whether it strikes once, which finding it should cause, how the run ends."""

    one_shot: bool
    kinds: tuple[str, ...]  # Finding kinds (the analyzers' records declare them) an analyzer should report
    op: str | None  # the collective involved, when one is
    status: str  # run status expected in run.json: completed | failed | hung
    all_ranks: bool = False  # the fault hits every rank, not only --fault-rank
    note: str = ""


FAULTS: dict[str, FaultInfo] = {
    "none": FaultInfo(False, (), None, "completed", note="healthy run"),
    "straggler": FaultInfo(
        False, ("straggler",), None, "completed", note="compute of the fault rank runs `factor` times"
    ),
    "slow-link": FaultInfo(
        False,
        ("slow_collective",),
        "all_reduce",
        "completed",
        note="the fault rank starts each gradient all-reduce `delay_ms` late; peers wait in it",
    ),
    "comm-bound": FaultInfo(
        False,
        ("comm_bound",),
        "all_reduce",
        "completed",
        all_ranks=True,
        note="tiny batch through a wide layer: the gradient all-reduce dominates every step",
    ),
    "pipeline-imbalance": FaultInfo(
        False,
        ("pipeline_imbalance",),
        None,
        "completed",
        note="the pipeline stage on the fault rank has `factor` times the layers",
    ),
    "hang": FaultInfo(
        True,
        ("hang", "timeout"),
        "all_reduce",
        "hung",
        note="the fault rank skips the gradient all-reduce of fault_step and stalls; peers time out",
    ),
    "data-stall": FaultInfo(
        False,
        ("straggler",),
        None,
        "completed",
        note="the fault rank's DataLoader takes `delay_ms` longer per batch (from fault_step when given)",
    ),
    "crash": FaultInfo(True, ("crash",), None, "failed", note="the fault rank raises RuntimeError"),
    "desync": FaultInfo(
        True,
        ("collective_mismatch",),
        "all_reduce",
        "failed",
        note="the fault rank all-reduces a tensor of another size at fault_step",
    ),
    "memory-leak": FaultInfo(
        False,
        ("memory_growth",),
        None,
        "completed",
        note="the fault rank keeps `factor` MiB more each step (a list that is never emptied)",
    ),
    "oom": FaultInfo(
        True,
        ("oom",),
        None,
        "failed",
        # (the note is printed in rank 0's ground-truth line: no words of the allocator's error in it)
        note="the fault rank allocates past its device at fault_step and dies of the allocator's error (on a "
        "CPU machine the workload raises it itself, worded as the CUDA allocator does); peers time out",
    ),
}

# Elements the desync rank all-reduces instead of the 1-element loss every other rank sends.
DESYNC_NUMEL = 1024


@dataclass(frozen=True)
class FaultSpec:
    name: str
    rank: int
    factor: float = 3.0
    step: int | None = None
    delay_ms: float = 100.0

    @property
    def info(self) -> FaultInfo:
        return FAULTS[self.name]

    def hits(self, rank: int) -> bool:
        return self.name != "none" and (self.info.all_ranks or rank == self.rank)

    def active(self, rank: int, step: int) -> bool:
        """A lasting fault hits this rank at this step: from fault_step on when one is given (an onset)."""
        return self.hits(rank) and (self.step is None or step >= self.step)

    def strikes(self, name: str, rank: int, step: int) -> bool:
        """True when one-shot fault `name` strikes this rank at this step."""
        return self.name == name and rank == self.rank and step == self.step


def ground_truth(
    workload: str, scenario: str, fault: FaultSpec, world_size: int, steps: int, config: dict[str, Any]
) -> dict[str, Any]:
    """The labels a run carries: what was injected, where, and what an analyzer should find."""
    info = fault.info
    injected = fault.name != "none"
    fault_ranks = list(range(world_size)) if info.all_ranks else ([fault.rank] if injected else [])
    expected: dict[str, Any] = {
        "status": info.status,
        "kinds": list(info.kinds),
        "ranks": fault_ranks,
        "steps": [fault.step] if info.one_shot else [],
    }
    if fault.name == "straggler":
        expected["compute_ratio"] = fault.factor
    elif fault.name == "pipeline-imbalance":
        expected["stage"] = fault.rank
        expected["stage_work_ratio"] = fault.factor
    elif fault.name == "slow-link":
        expected["delay_ms"] = fault.delay_ms
    elif fault.name == "data-stall":
        expected["delay_ms"] = fault.delay_ms
        expected["straggler_kind"] = "input"
    elif fault.name == "desync":
        expected["mismatch"] = "size"
        expected["numel"] = {"fault_rank": DESYNC_NUMEL, "others": 1}
    elif fault.name == "hang":
        expected["stuck_rank"] = fault.rank
        expected["waiting_ranks"] = [r for r in range(world_size) if r != fault.rank]
    return {
        "workload": workload,
        "scenario": scenario,
        "fault": fault.name,
        "fault_rank": fault.rank if injected and not info.all_ranks else None,
        "factor": fault.factor if fault.name in ("straggler", "pipeline-imbalance") else None,
        "fault_step": fault.step,
        "op": info.op,
        "world_size": world_size,
        "steps": steps,
        "note": info.note,
        "config": config,
        "expected": expected,
    }


class StallingBatches:
    """The batches of a data-stall run, through a real DataLoader (no workers: the wait is the training
    thread's), whose dataset sleeps `delay_s` per batch on the fault rank once the fault is on."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, fault: FaultSpec, rank: int) -> None:
        from torch.utils.data import DataLoader, Dataset

        stalls = self

        class _Batches(Dataset[tuple[torch.Tensor, torch.Tensor]]):
            def __len__(self) -> int:
                return 1 << 30

            def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
                if fault.name == "data-stall" and fault.active(rank, stalls.step):
                    time.sleep(fault.delay_ms / 1e3)
                return x, y

        self.step = 0
        self._it = iter(DataLoader(_Batches(), batch_size=None))

    def next(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        self.step = step
        return next(self._it)


def straggler_batch(x: torch.Tensor, y: torch.Tensor, factor: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The straggler's extra work: one batch of (factor - 1) x the rows, so its compute is about
    `factor` times its peers' (compute scales with rows for these MLPs). One extra pass over more
    rows, not factor - 1 passes, keeps the trace small."""
    rows = max(0, round((factor - 1.0) * x.shape[0]))
    reps = -(-rows // x.shape[0])
    return x.repeat(reps, 1)[:rows], y.repeat(reps, 1)[:rows]


def layers_for(base_layers: int, factor: float) -> int:
    """Layers of a heavier pipeline stage: `factor` times the base, at least one more."""
    return max(base_layers + 1, round(base_layers * factor)) if factor > 1 else base_layers


def crash(rank: int, step: int) -> None:
    raise RuntimeError(f"scope-workload injected crash: rank {rank} failed at step {step}")


class Leak:
    """The memory-leak fault: tensors kept each step, as a loss appended to a list with its graph."""

    def __init__(self, mib_per_step: float) -> None:
        self.numel = max(1, int(mib_per_step * 2**20) // 4)
        self.kept: list[torch.Tensor] = []

    def step(self) -> None:
        self.kept.append(torch.ones(self.numel))


# What the OOM fault's rank pretends its device is (the message's figures): 16 GiB, nearly full.
OOM_CAPACITY_GIB = 15.77
OOM_ALLOCATED_GIB, OOM_UNALLOCATED_GIB, OOM_NON_PYTORCH_GIB = 9.62, 5.41, 0.55


def out_of_memory(rank: int, step: int) -> None:
    """The OOM fault's rank runs out of device memory. On a GPU it really allocates past the device; on
    the CPU it raises the error itself, in the words of the CUDA caching allocator of PyTorch 2.2+, with a
    large reserved-but-unallocated share (a fragmentation OOM)."""
    if torch.cuda.is_available():
        hog = []
        while True:  # until the allocator raises torch.OutOfMemoryError
            hog.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    reserved = OOM_ALLOCATED_GIB + OOM_UNALLOCATED_GIB
    in_use = reserved + OOM_NON_PYTORCH_GIB
    free_mib = (OOM_CAPACITY_GIB - in_use) * 1024
    raise torch.OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate 2.00 GiB. GPU {rank} has a total capacity of "
        f"{OOM_CAPACITY_GIB:.2f} GiB of which {free_mib:.2f} MiB is free. Including non-PyTorch memory, this "
        f"process has {in_use:.2f} GiB memory in use. Of the allocated memory {OOM_ALLOCATED_GIB:.2f} GiB is "
        f"allocated by PyTorch, and {OOM_UNALLOCATED_GIB:.2f} GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
        "to avoid fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables) "
        f"[scope-workload: rank {rank}, step {step}]"
    )


def stall_after_skipped_collective(rank: int, step: int, pg_timeout_s: float) -> None:
    """The hang's stuck rank: it skipped a collective and now never reaches the next one.

    It sleeps (a stack dump shows this frame) until the launcher ends the job once its peers time
    out; a bound keeps it from lingering forever where nothing ends it.
    """
    print(f"scope-workload: rank {rank} skipped its collective of step {step} and stalls", flush=True)
    deadline = time.monotonic() + 2 * pg_timeout_s + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
    raise RuntimeError(f"scope-workload injected hang: rank {rank} stalled past its peers' timeout")


def log_allreduce_tensor(loss: torch.Tensor, fault: FaultSpec, rank: int, step: int) -> torch.Tensor:
    """The per-step loss all-reduce for logging; the desync rank sends another size at its step."""
    if fault.strikes("desync", rank, step):
        return torch.zeros(DESYNC_NUMEL)
    return loss.detach().reshape(1).clone()


def delay_first_gradient(model: Any, delay_s: float, delaying: Callable[[], bool]) -> None:
    """Sleep `delay_s` when the model's last parameter's gradient (the first computed in backward) is ready,
    while `delaying()`: this rank starts all its gradient all-reduces that much late, through DDP's built-in
    reducer (no comm hook), and the other ranks wait in them. A sleep, not work: no compute straggler."""
    last = list(model.parameters())[-1]

    def late(grad: Any) -> None:
        if delaying():
            time.sleep(delay_s)

    last.register_hook(late)


def delayed_allreduce_hook(delay_s: float, delaying: Callable[[], bool] = lambda: True) -> Callable[..., Any]:
    """A DDP comm hook that waits `delay_s` before starting each bucket's all-reduce (a slow link) while
    `delaying()` (from the fault step on: the onset of live detection). With an onset the other ranks run it
    too, without a delay: their all-reduces are issued from Python, where the scope hook times them."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    # No annotations: DDP checks them against dist.GradBucket, and postponed ones are strings.
    def hook(state, bucket):  # type: ignore[no-untyped-def]
        if delay_s > 0 and delaying():
            time.sleep(delay_s)
        return default_hooks.allreduce_hook(state, bucket)

    return hook
