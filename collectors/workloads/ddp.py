"""DistributedDataParallel MLP on CPU with gloo, with optional fault injection.

    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.ddp --steps 8 \
        [--fault straggler|slow-link|comm-bound|hang|crash|desync|memory-leak|oom|data-stall|none] [--fault-rank R]
        [--factor F] [--profile-dir DIR [--profile-memory]]
        [--fault-step N]   (a straggler, a data stall or a slow link from step N on: live detection onsets)

Each step: forward, backward (DDP all-reduces the gradients), an all-reduce of the loss for
logging, `optimizer.step()`.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from scope.collectors.workloads import common, faults
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WORKLOAD = "ddp"
DDP_FAULTS = (
    "none",
    "straggler",
    "slow-link",
    "comm-bound",
    "hang",
    "crash",
    "desync",
    "memory-leak",
    "oom",
    "data-stall",
)
# comm-bound: a few samples through one wide layer, so 8M parameters (32 MB of gradients) move per
# step for very little compute.
COMM_BOUND_BATCH, COMM_BOUND_IN, COMM_BOUND_OUT = 2, 4096, 2048


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.base_parser(WORKLOAD, __doc__.splitlines()[0], DDP_FAULTS)
    parser.add_argument("--batch", type=int, default=256, help="samples per rank per step")
    parser.add_argument("--hidden", type=int, default=512, help="MLP width")
    parser.add_argument("--layers", type=int, default=4, help="hidden layers")
    parser.add_argument(
        "--link-delay",
        choices=("comm-hook", "grad-hook"),
        default="comm-hook",
        help="slow-link with --fault-step: the delay in a comm hook every rank registers (default), or in a "
        "gradient hook of the fault rank's first-ready gradient, leaving DDP's built-in reducer (no comm hook)",
    )
    args = parser.parse_args(argv)
    if args.link_delay == "grad-hook" and (args.fault != "slow-link" or args.fault_step is None):
        parser.error("--link-delay grad-hook needs --fault slow-link and --fault-step")
    return args


def build_model(args: argparse.Namespace, comm_bound: bool) -> tuple[nn.Module, int, int]:
    """The MLP and its input width and batch; comm-bound swaps in one wide layer and a tiny batch."""
    if comm_bound:
        model = nn.Sequential(nn.Linear(COMM_BOUND_IN, COMM_BOUND_OUT), nn.ReLU(), nn.Linear(COMM_BOUND_OUT, 1))
        return model, COMM_BOUND_IN, COMM_BOUND_BATCH
    blocks: list[nn.Module] = []
    for _ in range(args.layers):
        blocks += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(args.hidden, 1)), args.hidden, args.batch


def straggler_work(ddp: DistributedDataParallel, xb: torch.Tensor, yb: torch.Tensor) -> None:
    """The straggler's extra forward/backward, outside gradient sync (local compute only)."""
    if xb.shape[0] == 0:
        return
    with ddp.no_sync():
        nn.functional.mse_loss(ddp(xb), yb).backward()


def main(argv: list[str] | None = None) -> int:
    common.relaunch_under_torchrun("scope.collectors.workloads.ddp")
    args = parse_args(argv)
    ctx = common.init_distributed(args)
    fault, rank = ctx.fault, ctx.rank
    model, width, batch = build_model(args, comm_bound=fault.name == "comm-bound")
    ddp = DistributedDataParallel(model)
    now = [0]  # the step running, for a slow link with an onset
    # With an onset (live detection), every rank issues its gradient all-reduce from the comm hook, where the
    # scope hook times it; without, only the fault rank runs one, as the post-mortem scenarios were recorded.
    if fault.name == "slow-link" and args.link_delay == "grad-hook" and fault.step is not None:
        if fault.hits(rank):
            faults.delay_first_gradient(model, fault.delay_ms / 1e3, lambda: fault.active(rank, now[0]))
    elif fault.name == "slow-link" and (fault.hits(rank) or fault.step is not None):
        delay_s = fault.delay_ms / 1e3 if fault.hits(rank) else 0.0
        ddp.register_comm_hook(None, faults.delayed_allreduce_hook(delay_s, lambda: fault.active(rank, now[0])))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    params = sum(p.numel() for p in model.parameters())
    common.publish_ground_truth(ctx, WORKLOAD, args, {"batch": batch, "width": width, "parameters": params})

    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)
    x, y = torch.randn(batch, width, generator=gen), torch.randn(batch, 1, generator=gen)
    extra_x, extra_y = faults.straggler_batch(x, y, fault.factor)
    leak = faults.Leak(fault.factor) if fault.name == "memory-leak" and fault.hits(rank) else None
    batches = faults.StallingBatches(x, y, fault, rank) if fault.name == "data-stall" else None

    def one_step(step: int) -> None:
        now[0] = step
        if fault.strikes("crash", rank, step):
            faults.crash(rank, step)
        if fault.strikes("oom", rank, step):
            faults.out_of_memory(rank, step)
        if leak is not None:
            leak.step()
        optimizer.zero_grad(set_to_none=True)
        xb, yb = batches.next(step) if batches is not None else (x, y)
        if fault.name == "straggler" and fault.active(rank, step):  # from --fault-step when given
            straggler_work(ddp, extra_x, extra_y)
            optimizer.zero_grad(set_to_none=True)
        if fault.strikes("hang", rank, step):
            with ddp.no_sync():  # the skipped gradient all-reduce
                nn.functional.mse_loss(ddp(x), y).backward()
            faults.stall_after_skipped_collective(rank, step, args.pg_timeout_s)
        loss = nn.functional.mse_loss(ddp(xb), yb)
        loss.backward()
        dist.all_reduce(faults.log_allreduce_tensor(loss, fault, rank, step))
        optimizer.step()

    return common.train(ctx, args, one_step)


if __name__ == "__main__":
    raise SystemExit(main())
