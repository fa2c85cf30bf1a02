"""A small real pipeline job (gloo, CPU, plain send/recv) laid out out of rank order; it profiles itself.

Usage: torchrun --standalone --nproc-per-node 4 tests/jobs/profiled_p2p_chain.py OUT_DIR LAYOUT
LAYOUT lists the ranks in stage order (e.g. 2,0,3,1: stage 0 runs on rank 2). Each step, every
micro-batch goes forward through the stages (recv from the previous stage, compute, send to the next)
and its gradient comes back the same way; the stage on LAYOUT[1] computes 24 times as long, so that it
carries the critical path even when 4 ranks share 2 busy cores (at 4x, a CI machine's scheduling noise
once gave the path to another stage).
"""

import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function, schedule

MICRO_BATCHES = 3
SHAPE = (64, 256)


def work(x: torch.Tensor, weight: torch.Tensor, rounds: int) -> torch.Tensor:
    for _ in range(rounds):
        x = torch.tanh(x @ weight)
    return x


def one_pass(
    name: str, src: int | None, dst: int | None, start: Callable[..., torch.Tensor], weight: torch.Tensor, rounds: int
) -> None:
    """Every micro-batch through this stage in one direction (forward: from the stage before to the one after;
    backward: the other way): receive from SRC, compute, send to DST. START makes the tensor a first stage
    begins from (the others receive into it)."""
    for mb in range(MICRO_BATCHES):
        with record_function(f"{name}{mb}"):
            x = start(SHAPE)
            if src is not None:
                dist.recv(x, src=src)
            y = work(x, weight, rounds)
            if dst is not None:
                dist.send(y, dst=dst)


def step(layout: list[int], rank: int, weight: torch.Tensor) -> None:
    stage = layout.index(rank)
    rounds = 48 if stage == 1 else 2
    prev = layout[stage - 1] if stage > 0 else None
    nxt = layout[stage + 1] if stage + 1 < len(layout) else None
    one_pass("forward", prev, nxt, torch.randn, weight, rounds)
    one_pass("backward", nxt, prev, torch.ones, weight, rounds)


def main(out_dir: str, layout_text: str) -> None:
    torch.set_num_threads(1)  # 4 ranks on a 2-core host: intra-op threads would only add scheduling noise
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    layout = [int(r) for r in layout_text.split(",")]
    torch.manual_seed(rank)
    weight = torch.randn(SHAPE[1], SHAPE[1]) / SHAPE[1] ** 0.5
    sched = schedule(wait=1, warmup=1, active=3)

    def export(prof: profile) -> None:
        prof.export_chrome_trace(f"{out_dir}/rank{rank}.pt.trace.json")

    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True, on_trace_ready=export) as prof:
        for _ in range(6):
            step(layout, rank, weight)
            dist.barrier()
            prof.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
