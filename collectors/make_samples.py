"""Regenerate `sample_traces/`: small run directories from the sample workloads, run under scope.

    python -m scope.collectors.make_samples [--out sample_traces] [--only healthy straggler ...]

Each sample is a real 4-rank gloo job on CPU launched by `scope run` (the same code path as a user's
job), with its injected ground truth in run.json. The counter sidecar is left out (on a shared
machine it records other people's kernel messages) and the store is not kept (`scope analyze`
rebuilds it), so the samples stay small and mean only what they say.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scope.collectors.launcher import LaunchConfig, launch

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "sample_traces"
# Left out of a sample: rebuilt on demand, or only meaningful while the job runs.
DROP = ("store", "control", ".run.lock")
SIZE_LIMIT_MB = 5.0


@dataclass
class Sample:
    name: str
    command: list[str]
    note: str
    expected_status: str = "completed"
    launcher: dict[str, object] = field(default_factory=dict)


DDP = ["-m", "scope.collectors.workloads.ddp"]
PIPELINE = ["-m", "scope.collectors.workloads.pipeline", "--schedule", "1f1b", "--microbatches", "8"]
SAMPLES = (
    Sample("healthy", [*DDP, "--steps", "8", "--scenario", "healthy"], "ddp, no fault: the baseline"),
    Sample(
        "straggler",
        [*DDP, "--steps", "8", "--scenario", "straggler", "--fault", "straggler", "--fault-rank", "2", "--factor", "3"],
        "ddp, rank 2's compute runs 3 times over; the others wait for it in the all-reduce",
    ),
    Sample(
        "pipeline",
        [
            *PIPELINE,
            "--steps",
            "6",
            "--scenario",
            "pipeline-imbalance",
            "--fault",
            "pipeline-imbalance",
            "--fault-rank",
            "1",
        ],
        "4-stage 1F1B pipeline, 8 micro-batches; the stage on rank 1 has 3 times the layers",
    ),
    Sample(
        "memory",
        [
            *DDP,
            "--steps",
            "8",
            "--scenario",
            "memory-leak",
            "--fault",
            "memory-leak",
            "--fault-rank",
            "2",
            "--factor",
            "4",
        ],
        "ddp, rank 2 keeps 4 MiB more each step (a leak); allocations recorded (scope run --profile-memory)",
        launcher={"profile_memory": True},
    ),
    Sample(
        "hang",
        [*DDP, "--steps", "10", "--scenario", "hang", "--fault", "hang", "--fault-rank", "2", "--pg-timeout-s", "90"],
        "ddp, rank 2 skips the gradient all-reduce of step 5 and stalls; the watchdog dumps all ranks",
        expected_status="hung",
        launcher={"hang_timeout_s": 8.0, "kill_on_hang": True},
    ),
)


def make_sample(sample: Sample, out: Path) -> str:
    target = out / sample.name
    if target.exists():
        shutil.rmtree(target)
    options = {"hang_timeout_s": 120.0, "kill_on_hang": True, **sample.launcher}
    cfg = LaunchConfig(
        run_dir=target,
        command=sample.command,
        nproc_per_node="4",
        tee=False,
        sidecar=False,
        argv=["python", "-m", "scope.collectors.make_samples", "--only", sample.name],
        **options,  # type: ignore[arg-type]
    )
    result = launch(cfg)
    for name in DROP:
        path = target / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    return result.status


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m scope.collectors.make_samples", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the samples go (default sample_traces/)")
    parser.add_argument("--only", nargs="+", choices=[s.name for s in SAMPLES], help="regenerate only these")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for sample in SAMPLES:
        if args.only and sample.name not in args.only:
            continue
        status = make_sample(sample, args.out)
        ok = status == sample.expected_status
        print(f"{sample.name}: {status} ({'as designed' if ok else 'expected ' + sample.expected_status})")
        if not ok:
            failed.append(sample.name)
    total = folder_mb(args.out)
    print(f"{args.out}: {total:.2f} MB")
    if total > SIZE_LIMIT_MB:
        print(f"warning: samples exceed {SIZE_LIMIT_MB} MB", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
