"""analyzers/ops.py's per-rank work (rank_products: counts per kind, name and launching operator, and the
host budget) against reading the same rank's events, in the same run.

Run by hand:  .venv/bin/python benchmarks/ops_rank.py [--store STORE] [--ranks 40] [--repeat 3]

--store: a scope store (e.g. a synthesized 1,024-rank one from benchmarks/synth.py); without it, the
real GPU trace ../shared/data/hta/nccl_parser_config (one rank, ~27k events) is ingested into a
temporary store and its rank timed --ranks times. Per rank, the events are read as `scope analyze`
reads them (OPS_EVENT_COLUMNS and the step windows), then rank_products runs on what was read; best of
--repeat per rank (the VM is noisy). Prints ms per rank of each, events per second of rank_products and
the ratio compute / read: the read is the floor of a pass that reads each rank once, and what ops adds
to a fused per-rank pass is the compute (issue #30: 16,384 ranks in 10 minutes on 2 cores leaves
~73 ms per rank for every analyzer together, the read included).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pandas as pd

if not __package__:  # run as a script: the checkout's modules, as the other benchmarks
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scope.analyzers.ops import OPS_EVENT_COLUMNS, rank_products

from benchmarks.shared_data import shared_data
from scope.store import Store

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = shared_data() / "hta" / "nccl_parser_config"


T = TypeVar("T")


def best_of(repeat: int, func: Callable[[], T]) -> tuple[float, T]:
    """The shortest of `repeat` runs (seconds) and the last run's result."""
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - t0)
    return min(times), out


def measure(store: Store, ranks: list[int], repeat: int) -> dict[str, float]:
    read_s = compute_s = 0.0
    events = 0
    for rank in ranks:

        def read(rank: int = rank) -> tuple[pd.DataFrame, pd.DataFrame]:
            return store.read_events(rank, columns=OPS_EVENT_COLUMNS).to_pandas(), store.read_steps(rank)

        t_read, (ev, steps) = best_of(repeat, read)
        t_compute, _ = best_of(repeat, lambda ev=ev, steps=steps, rank=rank: rank_products(ev, steps, rank))
        read_s += t_read
        compute_s += t_compute
        events += len(ev)
    n = len(ranks)
    return {
        "ranks": n,
        "events_per_rank": events / n,
        "read_ms": read_s / n * 1e3,
        "compute_ms": compute_s / n * 1e3,
        "events_per_s": events / compute_s if compute_s else float("inf"),
        "compute_over_read": compute_s / read_s if read_s else float("inf"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, help="a scope store (default: the real GPU trace, ingested)")
    parser.add_argument("--ranks", type=int, default=40, help="how many ranks to time (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per rank (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.store is not None:
            store = Store.open(args.store)
            ranks = store.ranks[: args.ranks]
        else:
            from scope.ingest import ingest

            store = ingest(DEFAULT_TRACE, Path(tmp) / "store").store
            ranks = [store.ranks[0]] * args.ranks
        row = measure(store, ranks, args.repeat)
    print(
        f"store: {args.store or DEFAULT_TRACE}  ranks timed: {row['ranks']}  events/rank: {row['events_per_rank']:,.0f}"
    )
    print(f"read          {row['read_ms']:7.1f} ms/rank  (baseline: read_events + read_steps)")
    print(f"rank_products {row['compute_ms']:7.1f} ms/rank  {row['events_per_s'] / 1e6:.2f} M events/s")
    print(f"compute / read: {row['compute_over_read']:.2f}x")


if __name__ == "__main__":
    main()
