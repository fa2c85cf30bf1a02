"""Live detection on real runs: precision, recall, culprit and time-to-detect over injected onsets.

    nice -n 5 .venv/bin/python benchmarks/live_real.py --out /tmp/live-real [--healthy 20] [--per-kind 8]
        [--kinds straggler-1.5,hang,...] [--seed 0]
    .venv/bin/python benchmarks/live_real.py --summary /tmp/live-real/results.jsonl

Each run is the sample DDP job (4 gloo ranks, ~0.1-0.3 s steps on a busy 2-core host) under `scope run`, the
live detector on the launcher, with one onset fault from a known step on a chosen rank (the demo's scenarios:
compute stragglers of factor 1.5, 2 and 3, a data-loader stall, a slowed link, a hang) or none (healthy). The
runs go in a shuffled order so the host's load drifts over every kind alike. One JSON line per run, written as
it finishes (a crash loses nothing): the fault, the load before and after, the live findings
(RUN/live/events.jsonl) and their verdict (scoring in benchmarks/live_real_score.py), then a summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.live_real_score import score_run, summarize  # noqa: E402

WORLD = 4
BATCH = 512  # ~0.1-0.3 s steps for 4 ranks on 2 shared cores
RUN_TIMEOUT_S = 300
HANG_PG_TIMEOUT_S = 25

# kind -> (workload fault options, steps, onset range, parameter choices)
KINDS: dict[str, dict[str, Any]] = {
    "straggler-1.5": {"fault": ["straggler", "--factor", "1.5"], "steps": 60, "onset": (15, 35)},
    "straggler-2": {"fault": ["straggler", "--factor", "2"], "steps": 60, "onset": (15, 35)},
    "straggler-3": {"fault": ["straggler", "--factor", "3"], "steps": 60, "onset": (15, 35)},
    "data-stall": {"fault": ["data-stall"], "steps": 60, "onset": (15, 35), "delay_ms": (100, 200)},
    # a rank's collectives are judged against its own first records (scope.live.collective: 2 + 5): a later onset
    "slow-link": {"fault": ["slow-link"], "steps": 80, "onset": (30, 40), "delay_ms": (200, 400)},
    "hang": {"fault": ["hang", "--pg-timeout-s", str(HANG_PG_TIMEOUT_S)], "steps": 60, "onset": (20, 35)},
}


def plan(healthy: int, per_kind: int, kinds: list[str], seed: int) -> list[dict[str, Any]]:
    """The campaign's runs: culprit ranks cycled, onsets and delays drawn, the order shuffled."""
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = [{"kind": "healthy", "steps": 60} for _ in range(healthy)]
    for kind in kinds:
        spec = KINDS[kind]
        for i in range(per_kind):
            case = {"kind": kind, "steps": spec["steps"], "rank": i % WORLD, "onset": rng.randint(*spec["onset"])}
            if "delay_ms" in spec:
                case["delay_ms"] = spec["delay_ms"][i // WORLD % len(spec["delay_ms"])]
            cases.append(case)
    rng.shuffle(cases)
    for i, case in enumerate(cases):
        case["id"] = f"{i:03d}-{case['kind']}"
    return cases


def job_args(case: dict[str, Any]) -> list[str]:
    args = ["--steps", str(case["steps"]), "--batch", str(BATCH)]
    if case["kind"] == "healthy":
        return args
    fault = KINDS[case["kind"]]["fault"]
    args += ["--fault", *fault, "--fault-rank", str(case["rank"]), "--fault-step", str(case["onset"])]
    return args + (["--delay-ms", str(case["delay_ms"])] if "delay_ms" in case else [])


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "TORCH_FR", "NCCL_"))}


def launch(run: Path, case: dict[str, Any]) -> tuple[int | None, str]:
    """`scope run` of the case, in its own session so a run past the timeout is ended whole."""
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(run), "--quiet", "--no-sidecar", "--profile-start", "-1"]
    cmd += ["--nproc-per-node", str(WORLD), "--", "-m", "scope.collectors.workloads.ddp", *job_args(case)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out


def run_case(base: Path, case: dict[str, Any], keep: bool) -> dict[str, Any]:
    run = base / "runs" / case["id"]
    shutil.rmtree(run, ignore_errors=True)
    load0, t0 = os.getloadavg()[0], time.time()
    rc, output = launch(run, case)
    record = {**case, "rc": rc, "wall_s": round(time.time() - t0, 2), "load_start": load0}
    record["load_end"] = os.getloadavg()[0]
    try:
        record.update(score_run(run, case))
    except (OSError, ValueError, KeyError, IndexError) as exc:  # one broken run costs only its own line
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["output_tail"] = output[-2000:]
    if not keep and "error" not in record:
        shutil.rmtree(run, ignore_errors=True)
    return record


def campaign(args: argparse.Namespace) -> Path:
    base = Path(args.out)
    base.mkdir(parents=True, exist_ok=True)
    results = base / "results.jsonl"
    done = {json.loads(x)["id"] for x in results.read_text().splitlines()} if results.is_file() else set()
    cases = plan(args.healthy, args.per_kind, args.kinds.split(","), args.seed)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{len(cases)} runs ({len(done)} already done); start: {uptime}", flush=True)
    with (base / "uptime.txt").open("a") as f:
        f.write(f"start {uptime}\n")
    for case in cases:
        if case["id"] in done:
            continue
        record = run_case(base, case, args.keep)
        with results.open("a") as f:
            f.write(json.dumps(record) + "\n")
        print(f"{case['id']}: {record.get('verdict', record.get('error'))} ({record['wall_s']} s, "
              f"load {record['load_start']:.1f})", flush=True)  # fmt: skip
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with (base / "uptime.txt").open("a") as f:
        f.write(f"end {uptime}\n")
    print(f"end: {uptime}", flush=True)
    return results


def rescore(results: Path, record: dict[str, Any]) -> dict[str, Any]:
    """The record with its findings from the replay of its kept run folder (hangs keep their live verdict:
    a replay holds no heartbeats)."""
    run = results.parent / "runs" / record["id"]
    if record["kind"] == "hang" or "error" in record or not run.is_dir():
        return record
    out = {**record, **score_run(run, record, replayed=True)}
    if out["verdict"] != record["verdict"]:
        print(f"{record['id']}: live {record['verdict']}, replay now {out['verdict']}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/scope-live-real", help="run folders and results.jsonl")
    parser.add_argument("--healthy", type=int, default=20)
    parser.add_argument("--per-kind", type=int, default=8, help="faults of each kind (culprit rank cycled)")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of: {', '.join(KINDS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep every run folder (failed runs are kept)")
    parser.add_argument("--summary", default=None, help="only summarize this results.jsonl (several: comma)")
    parser.add_argument(
        "--replay", action="store_true",
        help="with --summary: score the replays of the kept run folders instead (the detector as it is now)",
    )  # fmt: skip
    args = parser.parse_args()
    paths = [Path(p) for p in args.summary.split(",")] if args.summary else [campaign(args)]
    records = [json.loads(x) for p in paths for x in p.read_text().splitlines()]
    if args.replay:
        records = [rescore(p, r) for p in paths for r in map(json.loads, p.read_text().splitlines())]
    print(json.dumps(summarize(records), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
