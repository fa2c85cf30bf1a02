"""Pipeline-parallel MLP (torch.distributed.pipelining) on CPU with gloo: one stage per rank.

    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.pipeline --schedule 1f1b \
        --microbatches 4 [--fault pipeline-imbalance|hang|crash|none] [--fault-rank R] [--factor F]

Each step runs the schedule (GPipe or 1F1B) over `--microbatches` micro-batches, then
`optimizer.step()`. Every micro-batch's stage forward and backward run inside
`record_function("PP:{stage}F{mb}")` / `record_function("PP:{stage}B{mb}")` (the names torch's
runtime schedules record), so a profiler trace shows the schedule for GPipe and 1F1B alike.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import torch
from scope.collectors.workloads import common, faults
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
from torch.profiler import record_function

WORKLOAD = "pipeline"
PIPELINE_FAULTS = ("none", "pipeline-imbalance", "hang", "crash")
SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.base_parser(WORKLOAD, __doc__.splitlines()[0], PIPELINE_FAULTS)
    parser.add_argument("--schedule", choices=sorted(SCHEDULES), default="1f1b")
    parser.add_argument("--microbatches", type=int, default=4, help="micro-batches per step (>= 4)")
    # Compute-dominated micro-batches (tens of ms per action on a shared CPU core): a transfer's latency
    # (~1-2 ms through gloo, more on a contended host) stays small beside it, so a healthy run's bubble
    # is the schedule's, (p-1)/(m+p-1), and not point-to-point latency.
    parser.add_argument("--microbatch-size", type=int, default=64, help="samples per micro-batch")
    parser.add_argument("--hidden", type=int, default=1024, help="MLP width")
    parser.add_argument("--layers", type=int, default=2, help="layers per stage (healthy)")
    args = parser.parse_args(argv)
    if args.microbatches < 4:
        parser.error("--microbatches must be at least 4")
    return args


def stage_layers(args: argparse.Namespace, stage: int, fault: faults.FaultSpec) -> int:
    if fault.name == "pipeline-imbalance" and stage == fault.rank:
        return faults.layers_for(args.layers, fault.factor)
    return args.layers


def build_stage_module(hidden: int, layers: int) -> nn.Module:
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(hidden, hidden), nn.ReLU()]
    return nn.Sequential(*blocks)


def annotate(stage: PipelineStage) -> None:
    """Wrap the stage's per-micro-batch forward and backward in PP:{stage}F{mb} / PP:{stage}B{mb}."""

    def wrap(method: Callable[..., Any], action: str) -> Callable[..., Any]:
        @functools.wraps(method)
        def annotated(chunk_id: int, *args: Any, **kwargs: Any) -> Any:
            with record_function(f"PP:{stage.stage_index}{action}{chunk_id}"):
                return method(chunk_id, *args, **kwargs)

        return annotated

    # Instance attributes shadow the methods; the schedules call them through the instance.
    stage.forward_one_chunk = wrap(stage.forward_one_chunk, "F")  # type: ignore[method-assign]
    stage.backward_one_chunk = wrap(stage.backward_one_chunk, "B")  # type: ignore[method-assign]


def expected_bubble(stages: int, microbatches: int) -> float:
    """Ideal bubble fraction of GPipe and 1F1B: (p - 1) / (m + p - 1)."""
    return round((stages - 1) / (microbatches + stages - 1), 4)


def main(argv: list[str] | None = None) -> int:
    common.relaunch_under_torchrun("scope.collectors.workloads.pipeline")
    args = parse_args(argv)
    ctx = common.init_distributed(args)
    fault, rank, world = ctx.fault, ctx.rank, ctx.world_size
    layers = [stage_layers(args, s, fault) for s in range(world)]
    module = build_stage_module(args.hidden, layers[rank])
    mb_size, batch = args.microbatch_size, args.microbatch_size * args.microbatches
    stage = PipelineStage(module, rank, world, torch.device("cpu"), input_args=(torch.empty(mb_size, args.hidden),))
    annotate(stage)
    schedule = SCHEDULES[args.schedule](stage, n_microbatches=args.microbatches, loss_fn=nn.functional.mse_loss)
    optimizer = torch.optim.SGD(module.parameters(), lr=1e-3)
    config = {"schedule": args.schedule, "microbatches": args.microbatches, "microbatch_size": mb_size}
    config |= {"hidden": args.hidden, "stage_layers": layers, "stages": world}
    expected = {"bubble_fraction": expected_bubble(world, args.microbatches)}
    # A stalled stage never posts its sends and receives: its neighbours block in send or recv.
    common.publish_ground_truth(ctx, WORKLOAD, args, config, expected, op="send_recv")

    gen = torch.Generator().manual_seed(args.seed)
    x, y = torch.randn(batch, args.hidden, generator=gen), torch.randn(batch, args.hidden, generator=gen)

    def one_step(step: int) -> None:
        if fault.strikes("crash", rank, step):
            faults.crash(rank, step)
        if fault.strikes("hang", rank, step):  # never joins this step's sends and receives
            faults.stall_after_skipped_collective(rank, step, args.pg_timeout_s)
        optimizer.zero_grad(set_to_none=True)
        if rank == 0:
            schedule.step(x)
        elif rank == world - 1:
            schedule.step(target=y, losses=[])
        else:
            schedule.step()
        optimizer.step()

    return common.train(ctx, args, one_step)


if __name__ == "__main__":
    raise SystemExit(main())
