"""The live look's own CPU, per look, and whether a change of the detector keeps its events identical.

    .venv/bin/python benchmarks/live_look.py [--base main] [--rounds 2] [--ranks 4 64 512 4096] [--no-scale]
    .venv/bin/python benchmarks/live_look.py --same [--base main]
    .venv/bin/python benchmarks/live_look.py --bound PAIRS [--steps 300] [--nproc 2] [--base main]

`scope run` looks at the ranks' records every 0.5 s (scope/live/monitor.py): the samples that came are fed to
the detector and it is asked what appeared or cleared. This measures that look (add_sample and evaluate; the
tail's file reads are left out: they are the same before and after) in CPU time (time.process_time over many
looks), deterministically:

- synthetic streams of 4, 64, 512 and 4,096 ranks at one step a second, each rank's record completing at its
  own moment of the second (so about half the ranks bring a record to each look), with the step budget's
  classes and two process groups' collective times: the mean CPU per look while steps arrive, and per look
  with nothing new (a job between its steps, or of long steps: two looks in three on 1.5 s steps);
- the recorded runs under tests/data (live_*): a replay at the monitor's pace, CPU per look;
- the aggregator target of issue 42 (4,096 ranks at one step a second, <= 1 core, <= 300 MB):
  benchmarks/live.py's `scale`, in a process of its own (its peak RSS is that process's).

The baseline is another version of `scope` (a git ref, `git archive`d to a temporary folder and put first on
PYTHONPATH) measured in the same invocation, interleaved with this tree (base, this, base, this): each
measurement runs in a child process of its own. The figures printed are the least over the rounds (the
machine's other load only adds CPU time: on the shared 2-core machine one round's figure varies by 25%).

`--same` replays the recorded runs, the ByteDance AR and ST timelines (when the shared data is there), the
synthetic jobs of benchmarks/live.py (every fault kind, and healthy jobs) and these synthetic streams under
both versions, and compares every event (action, key, time, step, the finding's every field) for equality,
and for the recorded runs and these streams the detector's state after every look.

`--bound` runs the real sample job (`scope run`, live detection on, gloo) on the baseline and on this tree in
turn, and states the overhead bound: the looks' CPU (RUN/live/stats.json: per look, times looks per second)
over the job's ranks' CPU in the same run (each CPU second the detector takes is at most a second of the job's
on a saturated host).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Imported from this script's own folder (first on the path when run as a script): putting the checkout's root
# on the path would shadow the base tree's `scope` that the child must import.
sys.path.append(str(ROOT / "benchmarks"))
from shared_data import shared_data  # type: ignore[import-not-found]  # noqa: E402

RECORDED = sorted(p for p in (ROOT / "tests" / "data").glob("live_*") if (p / "ranks").is_dir())
SHARED = shared_data() / "straggler_analysis"
NAMESPACED = ("collectors", "analyzers", "app")  # installed under scope (setup.py)
RANKS = (4, 64, 512, 4096)
WARM_STEPS = 20  # past the collectives' warm-up and baseline (12 records) and the straggler's window
LOOK_S = 0.5
# Steps measured per rank count: enough looks for a stable mean, about a second of CPU each.
STEPS = {4: 300, 64: 120, 512: 30, 4096: 8}
IDLE_LOOKS = {4: 2000, 64: 1000, 512: 300, 4096: 60}


# -- the child: one measurement with whatever `scope` is first on the path ------------------------------------
def stream(ranks: int, steps: int, seed: int = 1) -> list[Any]:
    """Every rank's samples for `steps` steps of about 1 s, in completion order: rank r completes its steps at
    its own phase of the second, with 10% noise; two process groups' collectives; rank 1 of each job
    computes 1.6x from step 25 to 44 (a straggler: the looks that name and clear it are measured too)."""
    from scope.live.samples import StepSample

    rng = random.Random(seed)
    phase = [rng.random() for _ in range(ranks)]
    out = []
    for step in range(1, steps + 1):
        for r in range(ranks):
            compute = 0.6 * rng.gauss(1.0, 0.1) * (1.6 if r == 1 and 25 <= step < 45 else 1.0)
            data, host = abs(rng.gauss(0.02, 0.01)), abs(rng.gauss(0.01, 0.005))
            comm = {"dp": abs(rng.gauss(0.2, 0.02)), "tp": abs(rng.gauss(0.05, 0.005))}
            t = 1000.0 + step + phase[r] + rng.gauss(0.0, 0.02)
            out.append(StepSample(r, step, t, 1.0, 1, data, host, compute, comm))
    out.sort(key=lambda s: (s.t, s.rank))
    return out


def look_cost(ranks: int) -> dict[str, Any]:
    """CPU per look (ms) while steps arrive, and per look with nothing new, for `ranks` synthetic streams."""
    from scope.live.detector import LiveDetector

    steps = STEPS.get(ranks, 10)
    samples = stream(ranks, WARM_STEPS + steps)
    det = LiveDetector()
    looks = [0, 0]  # warm-up looks, measured looks
    cpu = 0.0
    i, now = 0, samples[0].t + LOOK_S
    while i < len(samples):
        warm = samples[i].step <= WARM_STEPS
        batch = []
        while i < len(samples) and samples[i].t <= now:
            batch.append(samples[i])
            i += 1
        start = time.process_time()
        for s in batch:
            det.add_sample(s)
        det.evaluate(now)
        if not warm:
            cpu += time.process_time() - start
        looks[not warm] += 1
        now += LOOK_S
    idle = IDLE_LOOKS.get(ranks, 100)
    start = time.process_time()
    for _ in range(idle):  # the same moment: no new sample, no hang limit passed
        det.evaluate(now)
    idle_cpu = time.process_time() - start
    return {
        "ranks": ranks,
        "looks": looks[1],
        "ms_per_look": 1e3 * cpu / max(looks[1], 1),
        "ms_per_idle_look": 1e3 * idle_cpu / idle,
    }


def recorded_cost() -> dict[str, Any]:
    """CPU per look of a replay of each recorded run (ms), the looks counted by the replay's evaluate calls."""
    from scope.live.detector import LiveDetector, LiveEvent
    from scope.live.replay import replay, run_dir_samples

    class Counting(LiveDetector):
        looks = 0

        def evaluate(self, now: float) -> list[LiveEvent]:
            self.looks += 1
            return super().evaluate(now)

    out = {}
    for run in RECORDED:
        samples = run_dir_samples(run)
        best = math.inf
        for _ in range(3):  # the least of three: the machine's other load only adds
            det = Counting()
            start = time.process_time()
            replay(samples, det)
            best = min(best, time.process_time() - start)
        out[run.name] = {"looks": det.looks, "ms_per_look": 1e3 * best / det.looks}
    return out


def scale_cost(ranks: int, seconds: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from live import scale  # type: ignore[import-not-found]

    return scale(ranks, seconds)  # type: ignore[no-any-return]


def traced(samples: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """A replay's events, and per look a digest of what the detector holds after it: its active findings
    (every field), each rank's straggler score and metrics, the hang limit and verdict."""
    from scope.live.detector import LiveDetector, LiveEvent
    from scope.live.replay import replay

    class Tracing(LiveDetector):
        def __init__(self) -> None:
            super().__init__()
            self.digests: list[str] = []

        def evaluate(self, now: float) -> list[LiveEvent]:
            found = super().evaluate(now)
            state = {
                "active": {k: f.to_dict() for k, f in self.active.items()},
                "ranks": self.rank_metrics(now),
                "limit": self.hang_limit_s(),
                "hang": repr(self.hang),
            }
            self.digests.append(hashlib.sha1(json.dumps(state, default=repr).encode()).hexdigest())
            return found

    det = Tracing()
    return [e.to_dict() for e in replay(samples, det).events], det.digests


def events() -> dict[str, list[Any]]:
    """Every event of every stream this check replays, as dicts, and for the recorded runs and the synthetic
    streams per look a digest of the detector's state (what `--same` compares)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import live  # type: ignore[import-not-found]

    from scope.live.replay import optrace_samples, replay, run_dir_samples

    out: dict[str, list[Any]] = {}
    for run in RECORDED:
        out[run.name], out[f"{run.name} (looks)"] = traced(run_dir_samples(run))
    for name in ("AR", "ST"):
        trace = SHARED / f"trace-{name}.parquet"
        if trace.is_file():
            out[f"bytedance-{name}"] = [e.to_dict() for e in replay(optrace_samples(trace)).events]
    rng = random.Random(7)
    for i in range(2 * len(live.FAULT_KINDS)):  # every fault kind twice, on 16 ranks, as live.score draws them
        name, factor, kind, cls = live.FAULT_KINDS[i % len(live.FAULT_KINDS)]
        fault = live.Fault(name, rng.randrange(16), rng.randrange(40, 70), factor(rng), kind, cls)
        out[f"synthetic-{i}-{name}"] = [e.to_dict() for e in live.run_job(16, fault, seed=100 + i)[0]]
    for i in range(4):
        out[f"synthetic-healthy-{i}"] = [e.to_dict() for e in live.run_job(16, None, seed=10_000 + i)[0]]
    for ranks in (4, 64):
        out[f"stream-{ranks}"], out[f"stream-{ranks} (looks)"] = traced(stream(ranks, 60))
    return out


def child(what: str, ranks: int, seconds: int) -> None:
    import scope

    result: Any
    if what == "look":
        result = look_cost(ranks)
    elif what == "recorded":
        result = recorded_cost()
    elif what == "scale":
        result = scale_cost(ranks, seconds)
    else:
        result = events()
    print(json.dumps({"scope": scope.__file__, "result": result}, default=repr))  # numpy scalars as themselves


# -- the parent: base and this tree in turn ------------------------------------------------------------------
def extract(ref: str) -> Path:
    """`scope` at `ref`, extracted to a temporary folder (put first on PYTHONPATH, it shadows this tree's), its
    namespaced folders where setup.py installs them (scope.collectors, scope.analyzers, scope.app)."""
    folder = Path(tempfile.mkdtemp(prefix="live_look_base_"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "scope", *NAMESPACED], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        for name in NAMESPACED:
            (folder / name).rename(folder / "scope" / name)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # (the caller removes it only once it has it)
        raise
    return folder


def run_child(base: Path | None, what: str, ranks: int = 0, seconds: int = 60) -> Any:
    env = dict(os.environ)
    if base is not None:  # first on the path, before the editable install's finder
        env["PYTHONPATH"] = os.pathsep.join([str(base), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", what, "--ranks", str(ranks)]
    done = subprocess.run([*cmd, "--seconds", str(seconds)], env=env, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{what} ({'base' if base else 'this tree'}) failed:\n{done.stderr[-3000:]}")
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    expected = str(base) if base is not None else str(ROOT)
    if not reply["scope"].startswith(expected):
        raise SystemExit(f"the child imported {reply['scope']}, not the version under {expected}")
    return reply["result"]


def job_run(base: Path | None, steps: int, nproc: int) -> dict[str, float]:
    """One `scope run` of the sample DDP job (gloo) with live detection, launcher and ranks on `base`'s scope (or
    this tree's): the looks' CPU (RUN/live/stats.json), the ranks' CPU (their end records), the wall time."""
    work = Path(tempfile.mkdtemp(prefix="live_look_run_"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCOPE_", "TORCH_FR", "NCCL_"))}
    if base is not None:  # `-m` puts the working folder first on the path: a folder without a `scope` in it
        env["PYTHONPATH"] = os.pathsep.join([str(base), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(work / "run"), "--quiet", "--no-sidecar"]
    cmd += ["--profile-start", "-1", "--nproc-per-node", str(nproc), "--", "-m", "scope.collectors.workloads.ddp"]
    try:  # (the folder goes on every way out: a failed run raises from check=True)
        started = time.monotonic()
        subprocess.run([*cmd, "--steps", str(steps)], cwd=work, env=env, capture_output=True, text=True, check=True)
        wall = time.monotonic() - started
        stats = json.loads((work / "run" / "live" / "stats.json").read_text())
        job = 0.0
        for rank in range(nproc):
            lines = (work / "run" / "ranks" / str(rank) / "attempts.jsonl").read_text().splitlines()
            job += [r for r in map(json.loads, lines) if r["event"] == "end"][-1]["cpu_ns"] / 1e9
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"wall_s": wall, "looks": stats["ticks"], "look_cpu_s": stats["cpu_s"], "job_cpu_s": job}


def bound(base: Path, pairs: int, steps: int, nproc: int) -> None:
    """The overhead bound of real runs, base and this tree in turn (base, this, this, base, ...): per-look CPU x
    looks per second over the job's CPU per second, that is the looks' CPU over the ranks'."""
    runs: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
    for i in range(pairs):
        for arm in ("base", "this") if i % 2 == 0 else ("this", "base"):
            runs[arm].append(job_run(base if arm == "base" else None, steps, nproc))
            load = os.getloadavg()[0]
            r = runs[arm][-1]
            print(f"{arm}: {json.dumps(r)} load {load:.1f}", flush=True)
    for arm, rs in runs.items():
        per_look = statistics.median(1e3 * r["look_cpu_s"] / r["looks"] for r in rs)
        rate = statistics.median(r["looks"] / r["wall_s"] for r in rs)
        job = statistics.median(r["job_cpu_s"] / r["wall_s"] for r in rs)
        share = [r["look_cpu_s"] / r["job_cpu_s"] for r in rs]
        print(
            f"{arm:4s}: {per_look:.3f} ms CPU per look x {rate:.2f} looks/s over the job's {job:.2f} CPU-s/s "
            f"({nproc} ranks, {steps} steps): {100 * statistics.median(share):.3f}% (runs "
            f"{', '.join(f'{100 * x:.3f}%' for x in share)})"
        )


def same(base: Path) -> int:
    before, after = run_child(base, "events"), run_child(None, "events")
    differ = [name for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    for name in sorted(before):
        what = "looks" if name.endswith("(looks)") else "events"
        print(f"{name:34s} {len(before[name]):4d} {what} before, {len(after.get(name, [])):4d} after")
    total = sum(len(v) for k, v in before.items() if not k.endswith("(looks)"))
    looks = sum(len(v) for k, v in before.items() if k.endswith("(looks)"))
    verdict = "identical" if not differ else "DIFFERENT: " + ", ".join(differ)
    print(f"{len(before)} streams, {total} events, {looks} looks' states: {verdict}")
    return 1 if differ else 0


def measure(base: Path, ranks: list[int], rounds: int, with_scale: bool, seconds: int) -> None:
    runs: dict[str, dict[str, list[Any]]] = {"base": {}, "this": {}}
    for _ in range(rounds):
        for arm, where in (("base", base), ("this", None)):
            for n in ranks:
                runs[arm].setdefault(f"look-{n}", []).append(run_child(where, "look", n))
            runs[arm].setdefault("recorded", []).append(run_child(where, "recorded"))
            if with_scale:
                runs[arm].setdefault("scale", []).append(run_child(where, "scale", 4096, seconds))
    print(f"CPU per look, ms (the least of {rounds} rounds, base and this in turn; load {os.getloadavg()[0]:.1f})")
    print(f"{'stream':22s} {'looks':>6s} {'base':>9s} {'this':>9s} {'ratio':>7s}   idle: {'base':>7s} {'this':>7s}")
    for n in ranks:
        key = f"look-{n}"
        b, t = (min(r["ms_per_look"] for r in runs[a][key]) for a in ("base", "this"))
        bi, ti = (min(r["ms_per_idle_look"] for r in runs[a][key]) for a in ("base", "this"))
        looks = runs["this"][key][0]["looks"]
        print(f"{f'{n} ranks, 1 step/s':22s} {looks:6d} {b:9.3f} {t:9.3f} {t / b:7.2f}x         {bi:7.3f} {ti:7.3f}")
    for name in runs["this"]["recorded"][0]:
        b, t = (min(r[name]["ms_per_look"] for r in runs[a]["recorded"]) for a in ("base", "this"))
        looks = runs["this"]["recorded"][0][name]["looks"]
        print(f"{name:22s} {looks:6d} {b:9.3f} {t:9.3f} {t / b:7.2f}x")
    if with_scale:
        for arm in ("base", "this"):
            cpu = statistics.median(r["cpu_s_per_s"] for r in runs[arm]["scale"])
            rss = max(r["peak_rss_mb"] for r in runs[arm]["scale"])
            print(
                f"aggregator {arm:4s}: 4096 ranks at 1 step/s for {seconds} s: {cpu:.3f} CPU-s per s "
                f"({cpu:.1%} of one core, {cpu / 4096 * 1e6:.1f} us per rank-step), peak RSS {rss:.0f} MB"
            )
    print(json.dumps(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="the git ref to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ranks", type=int, nargs="+", default=list(RANKS))
    parser.add_argument("--seconds", type=int, default=60, help="simulated seconds of the 4,096-rank aggregator")
    parser.add_argument("--no-scale", action="store_true", help="leave out the 4,096-rank aggregator")
    parser.add_argument("--same", action="store_true", help="compare the events of base and this tree")
    parser.add_argument("--bound", type=int, metavar="PAIRS", help="real `scope run`s of the sample job instead")
    parser.add_argument("--steps", type=int, default=300, help="--bound: steps per run")
    parser.add_argument("--nproc", type=int, default=2, help="--bound: ranks")
    parser.add_argument("--child", choices=("look", "recorded", "scale", "events"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.ranks[0] if isinstance(args.ranks, list) else args.ranks, args.seconds)
        return
    base = extract(args.base)
    try:
        if args.same:
            raise SystemExit(same(base))
        if args.bound:
            bound(base, args.bound, args.steps, args.nproc)
        else:
            measure(base, args.ranks, args.rounds, not args.no_scale, args.seconds)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
