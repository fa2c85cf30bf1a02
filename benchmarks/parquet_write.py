"""Parquet write speed and size: scope's native writer against pyarrow.parquet, on one table shaped like trace events.

Run by hand:  .venv/bin/python benchmarks/parquet_write.py [--rows N] [--repeat N] [--distinct-strings]

The table: int64 ts (increasing), int64 dur, int32 rank, three string columns of ~2,000 / 50 / 10
distinct values (skewed, as kernel names are), five int64 columns that are mostly -1 (ids that most
events lack), one float64. Both writers get the same data: numbers as numpy arrays (our buffer fast
path; a zero-copy pa.array for pyarrow), strings as lists of str. pyarrow's time includes building
the pa.Table from those lists, since ours includes its dictionary encoding of them; "pyarrow write"
is write_table alone. Best of --repeat runs, wall and CPU seconds (pyarrow may use several threads).
--distinct-strings gives every row its own str object (as a JSON decoder without interning would).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from scope.ingest import _native

Columns = list[tuple[str, str, Any]]


@dataclass
class Timing:
    wall: float
    cpu: float
    size: int


def skewed_strings(rng: np.random.Generator, n: int, distinct: int, prefix: str, distinct_objects: bool) -> list[str]:
    """n picks from `distinct` values with a Zipf-like skew (a few names dominate, as in real traces)."""
    pool = [f"{prefix}_{i}_{'x' * (i % 40)}" for i in range(distinct)]
    weights = 1.0 / np.arange(1, distinct + 1) ** 1.1
    picks = rng.choice(distinct, size=n, p=weights / weights.sum())
    if distinct_objects:
        return ["".join(pool[i]) for i in picks.tolist()]  # join copies: one object per row
    return [pool[i] for i in picks.tolist()]


def mostly_minus_one(rng: np.random.Generator, n: int) -> np.ndarray:
    values = np.full(n, -1, dtype=np.int64)
    hit = rng.random(n) < 0.05
    values[hit] = rng.integers(0, 1 << 20, size=int(hit.sum()))
    return values


def make_columns(n: int, distinct_objects: bool, seed: int = 0) -> Columns:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(1, 5_000, size=n, dtype=np.int64)) + 1_700_000_000_000_000
    columns: Columns = [
        ("ts", "int64", ts),
        ("dur", "int64", rng.integers(0, 200_000, size=n, dtype=np.int64)),
        ("rank", "int32", np.repeat(np.arange(8, dtype=np.int32), -(-n // 8))[:n].copy()),
        ("name", "string", skewed_strings(rng, n, 2_000, "kernel", distinct_objects)),
        ("cat", "string", skewed_strings(rng, n, 50, "cat", distinct_objects)),
        ("stream", "string", skewed_strings(rng, n, 10, "stream", distinct_objects)),
    ]
    columns += [(f"id{i}", "int64", mostly_minus_one(rng, n)) for i in range(5)]
    columns.append(("bytes_per_s", "float64", rng.random(n) * 1e9))
    return columns


def best_of(repeat: int, write: Callable[[str], None], path: str) -> Timing:
    best: Timing | None = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        write(path)
        timing = Timing(time.perf_counter() - wall, time.process_time() - cpu, os.path.getsize(path))
        if best is None or timing.wall < best.wall:
            best = timing
    assert best is not None
    return best


def write_ours(columns: Columns) -> Callable[[str], None]:
    def write(path: str) -> None:
        _native.write_parquet(path, columns, compression="zstd")

    return write


def to_table(columns: Columns) -> pa.Table:
    return pa.table({name: pa.array(values) for name, _, values in columns})


def write_pyarrow(columns: Columns) -> Callable[[str], None]:
    def write(path: str) -> None:
        pq.write_table(to_table(columns), path, compression="zstd")

    return write


def write_pyarrow_table(table: pa.Table) -> Callable[[str], None]:
    def write(path: str) -> None:
        pq.write_table(table, path, compression="zstd")

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--distinct-strings", action="store_true", help="one str object per row")
    args = parser.parse_args()

    columns = make_columns(args.rows, args.distinct_strings)
    table = to_table(columns)
    with tempfile.TemporaryDirectory() as tmp:
        ours = best_of(args.repeat, write_ours(columns), os.path.join(tmp, "ours.parquet"))
        arrow = best_of(args.repeat, write_pyarrow(columns), os.path.join(tmp, "pyarrow.parquet"))
        arrow_write = best_of(args.repeat, write_pyarrow_table(table), os.path.join(tmp, "pyarrow_table.parquet"))
        check = pq.read_table(os.path.join(tmp, "ours.parquet"))
        assert check.equals(table), "our file does not read back as the input"

    print(f"{args.rows:,} rows x {len(columns)} columns, zstd, best of {args.repeat}")
    print(f"{'writer':<16} {'wall s':>8} {'cpu s':>8} {'MB':>8}")
    for label, t in (("scope native", ours), ("pyarrow", arrow), ("pyarrow write", arrow_write)):
        print(f"{label:<16} {t.wall:8.3f} {t.cpu:8.3f} {t.size / 1e6:8.2f}")
    print(
        f"ours/pyarrow: time {ours.wall / arrow.wall:.2f} (vs write_table alone {ours.wall / arrow_write.wall:.2f}), "
        f"cpu {ours.cpu / arrow.cpu:.2f}, size {ours.size / arrow.size:.2f}"
    )


if __name__ == "__main__":
    main()
