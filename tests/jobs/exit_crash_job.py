"""A one-rank job that trains to its last step and then dies of SIGSEGV at interpreter exit, while Python
finalizes its modules: the crash-at-exit of issue 41 (a native teardown bug in garbage collection). A real
native crash: a module-level object whose finalizer reads address 0 through ctypes.

    exit_crash_job.py --steps N
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import sys
import time

import torch


class NativeTeardown:
    """Finalized with the module's globals, after atexit handlers (scope's hook records the rank's end there)."""

    def __del__(self) -> None:
        ctypes.string_at(0)  # SIGSEGV


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    faulthandler.enable()  # the native stack goes to stderr, as PYTHONFAULTHANDLER=1 would
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(args.steps):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step + 1} loss {float(model.weight.sum()):.4f}", flush=True)
        time.sleep(0.05)
    sys.stdout.flush()


TEARDOWN = NativeTeardown()

if __name__ == "__main__":
    main()
