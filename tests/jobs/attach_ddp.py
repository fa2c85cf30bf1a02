"""A 2-rank gloo DDP job that checkpoints every 10 steps, for the attach tests (tests/test_attach_exit.py).

    scope run --out RUN --nproc-per-node 2 -- tests/jobs/attach_ddp.py --steps N --ckpt DIR \
        [--sleep S] [--wait-for FILE]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--ckpt", type=Path, required=True)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--wait-for", type=Path, help="start training once this file exists")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    while args.wait_for is not None and not args.wait_for.exists():
        time.sleep(0.05)
    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    model = DistributedDataParallel(layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, args.steps + 1):
        model(torch.randn(32, 128)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0 and rank == 0:
            torch.save({"step": step, "model": model.state_dict()}, args.ckpt / "latest.pt")
        time.sleep(args.sleep)
    dist.destroy_process_group()
    print("done", rank, flush=True)


if __name__ == "__main__":
    main()
