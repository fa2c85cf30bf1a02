"""Fuzz the native ingest core (scope.ingest._native) with damaged Kineto traces and damaged memory snapshot
pickles, under ASan/UBSan.

`make test` (and so CI) runs a short seeded pass (`make fuzz-ci`: about 45 s after the sanitized build);
before a release run it longer by hand:

    bash scripts/fuzz_native.sh [SECONDS] [SEED]   # builds a sanitized copy, then runs this driver in it

The driver mutates seed traces (hand-made, and the small real traces in ../shared/data when present):
byte flips, cuts, splices, nesting bombs, huge numbers, long strings, odd keys, and gzip damage. Each
input goes through the whole native rank ingest (read, classify, finish, comm metadata, write), and
the written Parquet is read back with pyarrow. A memory error aborts the process with a sanitizer
report; a Python exception other than the documented ingest errors is a bug too. The input that
broke it is left in the work folder for replay.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(__import__("os").environ.get("SCOPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
SEED_MAX_BYTES = 2_000_000  # bigger real traces make each iteration too slow to find much

TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"null",
    b"true",
    b"1e999",
    b"-0",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"1.7976931348623157e309",
    b'"ph"',
    b'"X"',
    b'"ts"',
    b'"dur"',
    b'"args"',
    b'"traceEvents"',
    b'"name"',
    b'"cat"',
    b'"kernel"',
    b'"correlation"',
    b'"External id"',
    b'"Collective name"',
    b'"Process Group Ranks"',
    b'"Input Dims"',
    b'"In msg nelems"',
    b'"stream"',
    b'"device"',
    b'"ProfilerStep#1"',
    b'"record_param_comms"',
    b'"ncclDevKernel_Generic"',
    b"\x00",
    b"\xff",
    b"\xc3",
    # what event-level recovery repairs or resynchronises on
    b": ,",
    b": }",
    b"NaN",
    b"-Infinity",
    b"Infinity",
    b"}, {",
    b"},\n  {",
    b'"Process Group Description": ,',
    b"}]",
    b'}]}\n{"traceEvents": [',
    b'"dur": -1',
]


def hand_made_seed(rng: random.Random) -> bytes:
    events: list[object] = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 10**6}]
    for i in range(rng.randrange(5, 60)):
        corr = rng.randrange(1, 40)
        events.append(
            {
                "ph": "X",
                "cat": rng.choice(["cpu_op", "kernel", "gpu_memcpy", "cuda_runtime", "user_annotation"]),
                "name": rng.choice(["aten::mm", "record_param_comms", "ncclDevKernel_Generic", "gloo:all_reduce"]),
                "pid": rng.choice([0, 1, "Spans"]),
                "tid": rng.choice([1, 7, 2**40]),
                "ts": rng.uniform(0, 10**6),
                "dur": rng.randrange(0, 1000),
                "args": {
                    "correlation": corr,
                    "External id": corr,
                    "stream": rng.choice([7, 13]),
                    "device": 0,
                    "Collective name": rng.choice(["allreduce", "broadcast", "_allgather_base"]),
                    "Process Group Ranks": "[0, 1]",
                    "Process Group Name": "0",
                    "dtype": "Float",
                    "In msg nelems": rng.randrange(0, 2**20),
                    "Out msg nelems": rng.randrange(0, 2**20),
                    "Group size": 2,
                    "Input Dims": [[rng.randrange(1, 9), 4]],
                    "Input type": ["float"],
                },
            }
        )
        if i % 9 == 0:
            events.append({"ph": "f", "id": corr, "ts": i, "cat": "ac2g"})
    trace = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
        "traceEvents": events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    return json.dumps(trace).encode()


def real_seeds() -> list[bytes]:
    out = []
    for folder in ("hta", "tracelens"):
        for p in sorted((SHARED / folder).rglob("*.json*")) if (SHARED / folder).exists() else []:
            if p.stat().st_size > SEED_MAX_BYTES // 4:
                continue
            data = gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes()
            if len(data) <= SEED_MAX_BYTES:
                out.append(data)
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        if not buf:
            buf += rng.choice(TOKENS)
            continue
        at = rng.randrange(len(buf))
        op = rng.randrange(8)
        if op == 0:
            buf[at] = rng.randrange(256)
        elif op == 1:
            del buf[at : at + rng.randrange(1, 64)]
        elif op == 2:
            buf[at:at] = rng.choice(TOKENS)
        elif op == 3:
            depth = rng.choice([10, 100, 10_000])
            buf[at:at] = b"[" * depth + b"{" * rng.randrange(3) + b"]" * rng.randrange(depth + 1)
        elif op == 4:
            buf[at:at] = b'"' + bytes(rng.randrange(32, 127) for _ in range(rng.choice([10, 5000, 200_000]))) + b'"'
        elif op == 5:
            other = rng.randrange(len(buf))
            buf[at:at] = buf[other : other + rng.randrange(1, 4096)]
        elif op == 6:
            del buf[at:]
        else:
            buf[at:at] = str(rng.choice([2**63, -(2**63) - 1, 10**40, 1e308, -1, 0.5])).encode()
    return bytes(buf)


def mutate_pickle(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 8])):
        at = rng.randrange(len(buf) + 1)
        op = rng.randrange(4)
        if op == 0 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        elif op == 1:
            del buf[at : at + rng.randrange(1, 16)]
        elif op == 2:
            buf[at:at] = rng.choice(PICKLE_TOKENS)
        else:
            other = rng.randrange(len(buf) + 1)
            buf[at:at] = buf[other : other + rng.randrange(1, 256)]
    return bytes(buf)


def encode(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Plain or gzip; gzip sometimes cut, corrupted, multi-member or followed by junk."""
    if rng.random() < 0.6:
        return data, "rank0.json"
    gz = bytearray(gzip.compress(data, compresslevel=1))
    choice = rng.randrange(5)
    if choice == 1 and len(gz) > 20:
        del gz[rng.randrange(10, len(gz)) :]
    elif choice == 2 and len(gz) > 20:
        gz[rng.randrange(0, len(gz))] ^= 1 << rng.randrange(8)  # the header's 10 bytes included
    elif choice == 3:
        half = len(data) // 2
        gz = bytearray(gzip.compress(data[:half]) + gzip.compress(data[half:]))
    elif choice == 4:
        gz += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    return bytes(gz), "rank0.json.gz"


def run_one(data: bytes, name: str, work: Path) -> None:
    from scope.ingest.job import RankJob
    from scope.ingest.native_rank import ingest_rank_native

    case = work / "case"
    store = work / "store"
    case.mkdir(parents=True, exist_ok=True)
    for old in case.iterdir():
        old.unlink()
    path = case / name
    path.write_bytes(data)
    job = RankJob(rank=0, files=[str(path)], store_dir=str(store), clock_offset_ns=0)
    outcome = ingest_rank_native(job)
    if outcome.n_events:
        import pyarrow.parquet as pq

        for table in ("events", "steps", "collectives"):
            pq.read_table(store / table / "rank-00000.parquet")


PICKLE_TOKENS = [
    b"\x80\x04",  # PROTO
    b"(",  # MARK
    b"e",  # APPENDS
    b"u",  # SETITEMS
    b"a",
    b"s",
    b"0",
    b"1",
    b"t",
    b"\x85",
    b"\x94",  # MEMOIZE
    b"h\xff",  # BINGET 255
    b"j\xff\xff\xff\x7f",  # LONG_BINGET huge
    b"r\xff\xff\xff\xff",  # LONG_BINPUT huge
    b"\x8a\x09" + b"\xff" * 9,  # LONG1 past 64 bits
    b"\x8b\xff\xff\xff\x7f",  # LONG4 of 2 GB
    b"X\xff\xff\xff\x7f",  # BINUNICODE of 2 GB
    b"\x8c\x02\xc3\x28",  # bad UTF-8
    b"\x8c\x06frames",
    b"\x8c\x06action",
    b"\x8c\x05alloc",
    b"\x93",  # STACK_GLOBAL
    b"R",
    b"b",
    b"2",  # DUP
    b"}",
    b"]",
    b".",
]


def snapshot_seed(rng: random.Random) -> bytes:
    """A small snapshot in torch's current shape: shared frame dicts, a frames list per entry."""
    import pickle

    frames = [{"filename": f"/m/f{i}.py", "line": i, "name": f"fn{i}"} for i in range(12)]
    trace = [
        {"action": rng.choice(["alloc", "free_requested", "free_completed", "oom", "segment_alloc"]),
         "addr": rng.randrange(1 << 47), "size": rng.choice([512, 1 << 20, 1 << 40]), "stream": 0,
         "time_us": rng.randrange(1 << 52), "frames": rng.sample(frames, rng.randrange(0, 12)),
         "pool_id": (0, rng.randrange(3))}
        for _ in range(rng.randrange(1, 80))
    ]  # fmt: skip
    blocks = [{"address": i << 20, "size": 1 << 20, "requested_size": 100, "state": "active_allocated",
               "frames": trace[0]["frames"]} for i in range(3)]  # fmt: skip
    snap = {"segments": [{"device": 0, "address": 0, "total_size": 3 << 20, "blocks": blocks}],
            "device_traces": [trace, trace[: rng.randrange(len(trace) + 1)]]}  # fmt: skip
    return pickle.dumps(snap, protocol=rng.choice([2, 3, 4, 5]))


def run_snapshot(data: bytes) -> None:
    """The native snapshot reader: a plain ValueError or a consistent result, nothing else."""
    from scope.ingest._native import read_snapshot

    try:
        out = read_snapshot(data, 100_000 + 2 * len(data))
    except ValueError:
        return
    rows = len(out["action"])
    assert len(out["addr"]) == len(out["size"]) == len(out["time_us"]) == 8 * rows
    assert len(out["stack"]) == len(out["owner"]) == 4 * rows
    assert len(out["stack_offsets"]) // 8 - 1 <= len(out["stack_frames"]) // 4 + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/scope-fuzz"))
    # With a count the run is reproducible (the same inputs on any machine); --seconds then only caps it.
    parser.add_argument("--iterations", type=int, default=0, help="stop after this many inputs (0: no limit)")
    args = parser.parse_args()
    import scope
    from scope.ingest._native import has_fast_inflate, set_fast_inflate

    print(f"fuzz: scope from {Path(scope.__file__).parent}; ISA-L built: {has_fast_inflate()}", flush=True)
    rng = random.Random(args.seed)
    seeds = [hand_made_seed(rng) for _ in range(8)] + real_seeds()
    print(f"fuzz: {len(seeds)} seeds, {args.seconds:.0f} s, work folder {args.work}", flush=True)
    deadline, n = time.monotonic() + args.seconds, 0
    while time.monotonic() < deadline and (args.iterations <= 0 or n < args.iterations):
        data, name = encode(mutate(rng.choice(seeds), rng), rng)
        (args.work / "last").mkdir(parents=True, exist_ok=True)
        (args.work / "last" / name).write_bytes(data)  # what to replay if the process dies here
        try:
            set_fast_inflate(n % 2 == 0)  # gzip by ISA-L (zlib taking over at damage), then by zlib alone
            run_one(data, name, args.work)
            snap = mutate_pickle(snapshot_seed(rng), rng)
            (args.work / "last" / "snapshot.pickle").write_bytes(snap)
            run_snapshot(snap)
        except Exception:
            print(f"fuzz: iteration {n} raised; input kept in {args.work / 'last' / name}", flush=True)
            traceback.print_exc()
            return 1
        n += 1
    if 0 < n < args.iterations:
        print(f"fuzz: the {args.seconds:.0f} s cap stopped the run at {n} of {args.iterations} inputs", flush=True)
    print(f"fuzz: {n} inputs, no crash, no sanitizer report", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
