"""A one-process training loop for the hook tests: deterministic, prints a checksum of its weights.

    python tests/jobs/hook_loop.py --steps N [--sleep S] [--break-profiler start|export]
        [--explicit-steps] [--wait-signal] [--spawn-child]

Run with the hook's site folder on PYTHONPATH and SCOPE_RUN_DIR set, the hook activates by itself;
the job's printed result must not depend on whether it did.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import torch


def break_profiler(where: str) -> None:
    """Make torch.profiler fail the way a broken profiler install would."""

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"injected profiler failure ({where})")

    if where == "start":
        torch.profiler.profile.prepare_trace = boom  # type: ignore[method-assign]
    else:
        torch.profiler.profile.export_chrome_trace = boom  # type: ignore[method-assign]


def train(steps: int, sleep: float = 0.0, explicit_steps: bool = False) -> str:
    """The training loop; returns the checksum line (the job's result)."""
    torch.set_num_threads(1)  # bit-identical results in any process
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(16, 32)
    for _ in range(steps):
        loss = model(data).pow(2).mean()
        loss.backward()
        if explicit_steps:
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
                    p.grad = None
            import scope.collectors.hook

            scope.collectors.hook.step()
        else:
            opt.step()
            opt.zero_grad()
        time.sleep(sleep)
    checksum = sum(float(p.detach().double().sum()) for p in model.parameters())
    return f"checksum {checksum:.10f}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--break-profiler", choices=("start", "export"))
    parser.add_argument("--explicit-steps", action="store_true")
    parser.add_argument("--wait-signal", action="store_true", help="after training, wait for a signal")
    parser.add_argument("--spawn-child", action="store_true", help="start a child Python process")
    parser.add_argument("--install", metavar="RUN", help="start the hook with the one-line API")
    args = parser.parse_args()
    if args.install:
        import scope.collectors.hook

        scope.collectors.hook.install(run_dir=args.install, profile_start=1, profile_active=2)
    if args.break_profiler:
        break_profiler(args.break_profiler)
    print(train(args.steps, args.sleep, args.explicit_steps), flush=True)
    if args.spawn_child:
        code = "import scope.collectors.hook as h, os; print('child hook', h.current() is not None, os.getpid())"
        subprocess.run([sys.executable, "-c", code], check=True)
    if args.wait_signal:
        print("waiting", flush=True)
        while True:
            time.sleep(0.1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
