"""Time `scope diagnose` on a synthetic 1,024-rank run built from real dumps and logs (target: < 10 s).

    .venv/bin/python benchmarks/diagnose.py [--ranks 1024] [--workers N] [--keep DIR] [--json FILE]

The run is 64 copies of nvidia-resiliency-ext's 16-rank `lock_gil_1st` job side by side (every
process group renamed per copy, ranks offset, one default group over all ranks). In all copies but
one the two faulted ranks are replaced by a healthy peer's dump, so exactly two ranks of the whole
job never join their all_to_all. Every rank also gets an NCCL_DEBUG=INFO log (the real AWS EFA
log's lines, renumbered), a stderr with the c10d watchdog timeout of the real samples, a stdout; every
host (8 ranks each) a kernel log (gpud's kmsg capture). The diagnosis must name the two ranks.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: `from benchmarks import ...` needs the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scope.analyzers.diagnose import diagnose

from benchmarks.shared_data import shared_data
from scope.manifest import HostInfo, RankInfo, RunManifest, write_manifest

DATA = shared_data()  # SCOPE_SHARED_DATA, else shared/data above the checkout
SOURCE = DATA / "nvrx_fr" / "lock_gil_1st"
FAULTED = (9, 14)
HEALTHY_TWIN = {9: 8, 14: 15}  # a peer in the same groups, whose dump stands in when healthy
GPUS_PER_HOST = 8
LIMIT_S = 10.0
WATCHDOG = (
    "[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=45265, OpType=ALLTOALL, NumelIn=10485760, NumelOut=10485760, "
    "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n"
)


def _unpickle(path: Path) -> dict[str, Any]:
    from scope.flight_recorder import _NoGlobalsUnpickler

    with open(path, "rb") as fh:
        return _NoGlobalsUnpickler(fh).load()


def _rename(dump: dict[str, Any], copy: int, offset: int, world: int) -> dict[str, Any]:
    def name(pg: str) -> str:
        return pg if pg == "0" else f"{pg}_{copy}"

    out = dict(dump)
    out["pg_config"] = {}
    for pg, cfg in dump["pg_config"].items():
        ranks = list(range(world)) if pg == "0" else [r + offset for r in json.loads(cfg["ranks"])]
        out["pg_config"][name(pg)] = {**cfg, "name": name(pg), "ranks": json.dumps(ranks)}
    out["entries"] = [
        {**e, "process_group": (name(e["process_group"][0]), e["process_group"][1])} for e in dump["entries"]
    ]
    return out


def _nccl_lines() -> dict[int, list[str]]:
    """The AWS log's lines per rank, without the mpirun tag and host (re-added per synthetic rank)."""
    per_rank: dict[int, list[str]] = {}
    tag = re.compile(r"^\[1,(\d+)\]<stdout>:(?:[\w.\-]+)(:\d+:\d+ \[\d+\] NCCL .*)$")
    for line in (DATA / "nccl_logs" / "aws_efa_16rank_2node_healthy.log").read_text().splitlines():
        m = tag.match(line)
        if m:
            per_rank.setdefault(int(m.group(1)), []).append(m.group(2))
    return per_rank


def synthesize(out: Path, ranks: int = 1024, faulty_copy: int | None = None) -> dict[str, Any]:
    copies = ranks // 16
    faulty_copy = copies // 2 if faulty_copy is None else faulty_copy
    sources = {r: _unpickle(SOURCE / f"_dump_{r}") for r in range(16)}
    nccl = _nccl_lines()
    kmsg = (DATA / "gpud" / "pkg" / "kmsg" / "testdata" / "kmsg.1.log").read_text()
    hosts = [f"node{h:03d}" for h in range(ranks // GPUS_PER_HOST)]
    infos = []
    for copy in range(copies):
        for local in range(16):
            r = copy * 16 + local
            src = local if copy == faulty_copy or local not in FAULTED else HEALTHY_TWIN[local]
            rank_dir = out / "ranks" / str(r)
            (rank_dir / "fr").mkdir(parents=True)
            dump = _rename(sources[src], copy, copy * 16, ranks)
            (rank_dir / "fr" / "001-hang.pkl").write_bytes(pickle.dumps(dump))
            host = hosts[r // GPUS_PER_HOST]
            body = nccl[local % 16]
            (rank_dir / "nccl.log").write_text(
                "".join(f"{host}{line.replace('nranks 16', f'nranks {ranks}')}\n" for line in body)
            )
            stuck = copy == faulty_copy and local in FAULTED
            (rank_dir / "stderr.log").write_text("" if stuck else WATCHDOG.format(r=r))
            (rank_dir / "stdout.log").write_text("".join(f"step {s} loss {2.5 - s / 100:.3f}\n" for s in range(50)))
            infos.append(
                RankInfo(
                    rank=r,
                    host=host,
                    local_rank=r % GPUS_PER_HOST,
                    pid=1000 + r,
                    exit_code=-6 if not stuck else -15,
                    signal="SIGABRT" if not stuck else "SIGTERM",
                )
            )
    for host in hosts:
        (out / "hosts" / host).mkdir(parents=True)
        (out / "hosts" / host / "kmsg.log").write_text(kmsg)
    write_manifest(
        out,
        RunManifest(
            run_id="bench",
            backend="nccl",
            world_size=ranks,
            ranks=infos,
            status="hung",
            hosts=[HostInfo(h, [i.rank for i in infos if i.host == h]) for h in hosts],
        ),
    )
    culprits = sorted(faulty_copy * 16 + f for f in FAULTED)
    return {"ranks": ranks, "hosts": len(hosts), "culprits": culprits, "pg": f"72_{faulty_copy}"}


def run(ranks: int, workers: int | None, keep: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="scope-diag-bench-") as tmp:
        root = keep or Path(tmp) / "run"
        t0 = time.perf_counter()
        truth = synthesize(root, ranks)
        synth_s = time.perf_counter() - t0
        files = sum(1 for p in root.rglob("*") if p.is_file())
        size_mb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
        t0 = time.perf_counter()
        report = diagnose(root, workers=workers)
        elapsed = time.perf_counter() - t0
        top = report.findings[0] if report.findings else None
        ok = bool(top and top.ranks == truth["culprits"] and top.metrics["details"]["pg"] == truth["pg"])
        return {
            "ranks": ranks,
            "hosts": truth["hosts"],
            "files": files,
            "mb": round(size_mb, 1),
            "synth_s": round(synth_s, 2),
            "diagnose_s": round(elapsed, 2),
            "correct": ok,
            "root_cause": top.summary if top else None,
            "under_limit": elapsed < LIMIT_S,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=1024, help="ranks (a multiple of 16)")
    parser.add_argument("--workers", type=int, default=None, help="parallel readers (default: CPU count)")
    parser.add_argument("--keep", type=Path, default=None, help="write the run here and keep it")
    parser.add_argument("--json", type=Path, default=None, help="write the result row as JSON")
    args = parser.parse_args()
    row = run(args.ranks, args.workers, args.keep)
    print(
        f"{row['ranks']} ranks, {row['hosts']} hosts, {row['files']} files ({row['mb']} MB): "
        f"diagnosed in {row['diagnose_s']:.2f} s (limit {LIMIT_S:.0f} s), correct={row['correct']}"
    )
    print(f"root cause: {row['root_cause']}")
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")
    return 0 if row["correct"] and row["under_limit"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
