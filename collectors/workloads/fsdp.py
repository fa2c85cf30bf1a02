"""FSDP2 (`fully_shard`) MLP on CPU with gloo, with optional fault injection.

    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.fsdp --steps 8 \
        [--fault straggler|hang|crash|none] [--fault-rank R] [--factor F]

Each layer is its own FSDP unit: forward all-gathers its parameters, backward all-gathers them
again and reduce-scatters the gradients; then `optimizer.step()` on the local shards.
"""

from __future__ import annotations

import argparse
import copy

import torch
from scope.collectors.workloads import common, faults
from torch import nn
from torch.distributed.fsdp import fully_shard

WORKLOAD = "fsdp"
FSDP_FAULTS = ("none", "straggler", "hang", "crash")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.base_parser(WORKLOAD, __doc__.splitlines()[0], FSDP_FAULTS)
    # Compute-dominated by default, as a healthy sharded job is: at 128 samples a step spent ~75% of its time
    # in exposed all-gather / reduce-scatter on a shared 2-core host (a real comm-bound job, not a healthy one).
    parser.add_argument("--batch", type=int, default=2048, help="samples per rank per step")
    parser.add_argument("--hidden", type=int, default=512, help="MLP width")
    parser.add_argument("--layers", type=int, default=2, help="hidden layers")
    return parser.parse_args(argv)


def build_model(args: argparse.Namespace) -> nn.Sequential:
    blocks: list[nn.Module] = []
    for _ in range(args.layers):
        blocks += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(args.hidden, 1))


def shard(model: nn.Sequential) -> nn.Sequential:
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    return model


def main(argv: list[str] | None = None) -> int:
    common.relaunch_under_torchrun("scope.collectors.workloads.fsdp")
    args = parse_args(argv)
    ctx = common.init_distributed(args)
    fault, rank = ctx.fault, ctx.rank
    model = build_model(args)
    # The straggler's extra compute runs on an unsharded local copy: FSDP would add collectives
    # (all-gathers) that only this rank issues, and the job would desync instead of slowing down.
    shadow = copy.deepcopy(model) if fault.name == "straggler" and fault.hits(rank) else None
    model = shard(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    params = sum(p.numel() for p in build_model(args).parameters())
    config = {"batch": args.batch, "width": args.hidden, "parameters": params}
    common.publish_ground_truth(ctx, WORKLOAD, args, config, op="all_gather")

    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)
    x, y = torch.randn(args.batch, args.hidden, generator=gen), torch.randn(args.batch, 1, generator=gen)
    extra_x, extra_y = faults.straggler_batch(x, y, fault.factor)

    def one_step(step: int) -> None:
        if fault.strikes("crash", rank, step):
            faults.crash(rank, step)
        if fault.strikes("hang", rank, step):  # never joins this step's all-gathers
            faults.stall_after_skipped_collective(rank, step, args.pg_timeout_s)
        optimizer.zero_grad(set_to_none=True)
        if shadow is not None and extra_x.shape[0]:
            nn.functional.mse_loss(shadow(extra_x), extra_y).backward()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()

    return common.train(ctx, args, one_step)


if __name__ == "__main__":
    raise SystemExit(main())
