"""A one-rank job for the collector-fault tests: steps an optimizer, prints as told, may stall, and
has its own SIGUSR2 handler (as jobs under Slurm's --signal do). It proves it finished by writing
DONE to --result (outside the run directory, which may be full or read-only).

    fault_job.py --steps N --result FILE [--print-kib K] [--stall-at S --stall-s T] [--sleep S] [--fail MESSAGE]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--print-kib", type=int, default=0, help="printed to stdout and stderr per step")
    parser.add_argument("--stall-at", type=int, default=-1)
    parser.add_argument("--stall-s", type=float, default=0.0)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--fail", help="after the steps, raise RuntimeError with this message")
    args = parser.parse_args()
    usr2 = args.result.with_suffix(".sigusr2")
    signal.signal(signal.SIGUSR2, lambda *_: usr2.write_text("the job's own SIGUSR2 handler ran\n"))
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    line = "x" * 1023
    for step in range(args.steps):
        if step == args.stall_at:
            time.sleep(args.stall_s)  # a long checkpoint or evaluation: no steps for a while
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        for _ in range(args.print_kib):
            print(line)
            print(line, file=sys.stderr)
        time.sleep(args.sleep)
    args.result.write_text("DONE\n")
    if args.fail:
        raise RuntimeError(args.fail)


if __name__ == "__main__":
    main()
