"""A one-process training loop for the hook tests: deterministic, prints a checksum of its weights.

    python tests/jobs/hook_loop.py --steps N [--sleep S] [--break-profiler start|export]
        [--explicit-steps] [--wait-signal] [--spawn-child] [--memory-report]

Run with the hook's site folder on PYTHONPATH and SCOPE_RUN_DIR set, the hook activates by itself;
the job's printed result must not depend on whether it did.
"""

from __future__ import annotations

import argparse
import json
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


def watch_memory_history() -> list[str]:
    """Record every call that arms the CUDA allocator's history or its OOM observer (the calls of
    snapshot-on-OOM), without making them: the list the job prints with --memory-report."""
    calls: list[str] = []
    torch.cuda.memory._record_memory_history = lambda *a, **k: calls.append(f"history {k}")  # type: ignore[assignment]
    torch._C._cuda_attach_out_of_memory_observer = lambda cb: calls.append("oom observer")  # type: ignore[attr-defined]
    return calls


def memory_report(calls: list[str]) -> str:
    import scope.collectors.hook as hook

    current = hook.current()
    return json.dumps(
        {
            "memsnap_imported": "scope.collectors.hook.memsnap" in sys.modules,
            "hook_memory": None if current is None or current.memory is None else type(current.memory).__name__,
            "cuda_calls": calls,
        }
    )


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
    parser.add_argument("--memory-report", action="store_true", help="print what snapshot-on-OOM loaded and called")
    args = parser.parse_args()
    calls = watch_memory_history() if args.memory_report else []
    if args.install:
        import scope.collectors.hook

        scope.collectors.hook.install(run_dir=args.install, profile_start=1, profile_active=2)
    if args.break_profiler:
        break_profiler(args.break_profiler)
    print(train(args.steps, args.sleep, args.explicit_steps), flush=True)
    if args.memory_report:
        print("memory", memory_report(calls), flush=True)
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
