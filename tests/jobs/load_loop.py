"""A one-process job that calls torch.load and torch.save as research code does (tests/test_hook_records.py,
benchmarks/overhead.py). Prints `elapsed S` (its loop's time) and `checksum X`.

    load_loop.py --steps N --shards DIR [--loads-per-step K]   read K small data shards per step (num_workers=0)
    load_loop.py --steps N --roundtrip DIR --calls C           C torch.save then C torch.load of small files
    load_loop.py --steps N --best DIR                          save best.pt at step 10, load it back at step 20
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch


def make_shards(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        torch.save({"x": torch.full((16,), float(i))}, folder / f"shard{i:05d}.pt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--shards", type=Path)
    parser.add_argument("--loads-per-step", type=int, default=100)
    parser.add_argument("--roundtrip", type=Path)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--best", type=Path)
    parser.add_argument("--wait-for", type=Path, help="say 'ready', then start the loop once this file exists")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    shards = sorted(args.shards.glob("*.pt")) if args.shards else []
    if args.wait_for is not None:
        print("ready", flush=True)
        while not args.wait_for.exists():
            time.sleep(0.01)
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        batch = [torch.load(shards[(step * args.loads_per_step + i) % len(shards)])["x"] for i in range(
            args.loads_per_step if shards else 0)]  # fmt: skip
        x = torch.stack(batch) if batch else torch.randn(4, 16)
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
        if args.best is not None and step == 10:
            torch.save(model.state_dict(), args.best / "best.pt")
        if args.best is not None and step == 20:
            model.load_state_dict(torch.load(args.best / "best.pt"))  # the best weights back, mid-run
    if args.roundtrip is not None:
        args.roundtrip.mkdir(parents=True, exist_ok=True)
        for i in range(args.calls):
            torch.save({"i": torch.tensor([i])}, args.roundtrip / f"f{i % 100}.pt")
            torch.load(args.roundtrip / f"f{i % 100}.pt")
    print(f"elapsed {time.perf_counter() - start:.4f}", flush=True)
    print(f"checksum {sum(float(p.detach().double().sum()) for p in model.parameters()):.10f}", flush=True)


if __name__ == "__main__":
    main()
