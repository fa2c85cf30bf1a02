"""Precision of the findings on the demo scenarios: is the injected cause the one root problem?

    .venv/bin/python benchmarks/precision.py [--runs 5] [--scenarios straggler,pipeline] [--out DIR] [--json FILE]
    .venv/bin/python benchmarks/precision.py --reanalyze DIR/precision.jsonl   # same runs, current analyzers

Each scenario of `scope demo` runs N times (each a real 4-rank torchrun job, about 20-40 s). Per run:
- recall: the injected cause is a root finding (no `caused_by`) of an expected kind naming the injected
  rank (any rank for faults that hit every rank);
- only root: it is the only root problem (roots of severity info, notes, do not count);
- extra roots: other root problems (warning or critical) beside it;
- consequences: findings linked under a cause (`caused_by`);
- clean (healthy scenarios): no finding of severity warning or critical;
- headline: the dashboard overview's verdict names the injected cause (fault scenarios) or says healthy.
Per scenario it prints the runs, the shares and the means per run; totals last. `--burners N` runs N
CPU-burning processes beside every job (host contention: a persistent straggler must stay the root).
Every run's record is appended to DIR/precision.jsonl as it finishes, and the runs go round by round
over the scenarios, so a long benchmark cut short keeps what ran, every scenario alike.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scope.app.links import verdict  # noqa: E402

import scope.ingest  # noqa: E402, F401  (first: app.data imports scope.store, which needs scope.ingest loaded)
from scope.cli.demo import SCENARIOS  # noqa: E402
from scope.finding import Finding  # noqa: E402


def _serious(f: dict[str, Any]) -> bool:
    return f.get("severity") in ("warning", "critical")


def judge_run(findings: list[dict[str, Any]], truth: dict[str, Any]) -> dict[str, Any]:
    """The record of one run from its analysis.json findings and ground_truth.json."""
    ids = {f.get("id") for f in findings if f.get("id")}
    roots = [f for f in findings if _serious(f) and not (f.get("caused_by") and f.get("caused_by") in ids)]
    consequences = [f for f in findings if f.get("caused_by") and f.get("caused_by") in ids]
    kinds = set((truth.get("expected") or {}).get("kinds") or [])
    rank = truth.get("fault_rank")  # None for a fault that hits every rank (comm-bound)
    hits = [f for f in roots if f.get("kind") in kinds and (rank is None or rank in (f.get("ranks") or []))]
    level, sentence = verdict([Finding.from_dict(f) for f in findings], analyzed=True)  # the overview's own verdict
    record: dict[str, Any] = {
        "healthy": not kinds,
        "roots": [f"{f.get('kind')}{f.get('ranks') or ''}" for f in roots],
        "consequences": len(consequences),
        "headline": sentence[:200],
    }
    if kinds:
        record |= {
            "recall": bool(hits),
            "only_root": bool(hits) and len(roots) == 1,
            "extra_roots": len(roots) - (1 if hits else 0),
            "headline_ok": bool(hits) and str(hits[0].get("summary", ""))[:60] in sentence,
        }
    else:
        clean = not any(_serious(f) for f in findings)
        record |= {"clean": clean, "extra_roots": len(roots), "headline_ok": level in ("ok", "info")}
    return record


def run_once(scenario: str, out: Path, steps: int, timeout_s: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "scope", "demo", "--scenario", scenario, "--no-serve", "--out", str(out)]
    cmd += ["--steps", str(steps)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = -1
    wall = time.perf_counter() - t0
    try:
        truth = json.loads((out / "ground_truth.json").read_text())
        findings = json.loads((out / "store" / "analysis.json").read_text()).get("findings", [])
    except (OSError, ValueError) as exc:
        return {"scenario": scenario, "run_dir": str(out), "error": f"no analysis ({exc}); demo exit {code}"}
    return {"scenario": scenario, "run_dir": str(out), "exit": code, "wall_s": round(wall, 1)} | judge_run(
        findings, truth
    )


def reanalyze(record: dict[str, Any], store_root: Path) -> dict[str, Any]:
    """The record of a run already made, its analysis run again with the code as it is now (its own store)."""
    run = Path(record["run_dir"])
    out = store_root / run.name
    cmd = [sys.executable, "-m", "scope", "analyze", str(run), "--store", str(out / "store"), "-q", "--no-tables"]
    subprocess.run([*cmd, "--json", str(out / "analysis.json")], cwd=ROOT, capture_output=True, text=True)
    try:
        truth = json.loads((run / "ground_truth.json").read_text())
        findings = json.loads((out / "analysis.json").read_text()).get("findings", [])
    except (OSError, ValueError) as exc:
        return {"scenario": record["scenario"], "run_dir": str(run), "error": f"no analysis ({exc})"}
    return {"scenario": record["scenario"], "run_dir": str(run)} | judge_run(findings, truth)


def summarize(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["scenario"], []).append(r)
    for name, recs in [*by.items(), ("TOTAL", records)]:
        ok = [r for r in recs if "error" not in r]
        faults, healthy = [r for r in ok if not r["healthy"]], [r for r in ok if r["healthy"]]
        rows.append(
            {
                "scenario": name,
                "runs": len(recs),
                "errors": len(recs) - len(ok),
                "recall": _share(faults, "recall"),
                "only_root": _share(faults, "only_root"),
                "extra_roots_per_run": _mean(ok, "extra_roots"),
                "consequences_per_run": _mean(ok, "consequences"),
                "clean": _share(healthy, "clean"),
                "headline_ok": _share(ok, "headline_ok"),
            }
        )
    return rows


def _share(recs: list[dict[str, Any]], key: str) -> str:
    return f"{sum(bool(r[key]) for r in recs)}/{len(recs)}" if recs else "-"


def _mean(recs: list[dict[str, Any]], key: str) -> str:
    return f"{sum(r[key] for r in recs) / len(recs):.2f}" if recs else "-"


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(widths[c]) for c in cols))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per scenario (default 5)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated (default: all)")
    parser.add_argument("--steps", type=int, default=10, help="training steps per run (default 10)")
    parser.add_argument("--out", type=Path, default=None, help="folder of the runs (default runs/precision-TIME)")
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per run (default 300)")
    parser.add_argument("--json", type=Path, default=None, help="write the summary rows as JSON")
    parser.add_argument(
        "--burners", type=int, default=0, help="CPU-burning processes beside every run (host contention; default 0)"
    )
    parser.add_argument("--summarize", type=Path, default=None, metavar="JSONL", help="only print the table of a log")
    parser.add_argument(
        "--reanalyze",
        type=Path,
        default=None,
        metavar="JSONL",
        help="analyze the runs of a log again with the current code (no new jobs) and print the table",
    )
    args = parser.parse_args(argv)
    if args.summarize or args.reanalyze:
        log_file = args.summarize or args.reanalyze
        records = [json.loads(line) for line in log_file.read_text().splitlines() if line]
        if args.reanalyze:
            root = log_file.parent / "reanalysis"
            records = [reanalyze(r, root) if "error" not in r else r for r in records]
            (root / "precision.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        print_table(summarize(records))
        return 0
    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; choose from {sorted(SCENARIOS)}")
    out = args.out or ROOT / "runs" / f"precision-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "precision.jsonl"
    records = []
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    try:
        # Round by round over the scenarios: a benchmark cut short still has every scenario run alike.
        for i in range(args.runs):
            for scenario in scenarios:
                rec = run_once(scenario, out / f"{scenario}-{i}", args.steps, args.timeout_s)
                rec["burners"] = args.burners
                records.append(rec)
                with log.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"{scenario} #{i}: {json.dumps({k: v for k, v in rec.items() if k != 'run_dir'})}", flush=True)
    finally:
        for burner in burners:  # only the processes started here
            burner.kill()
            burner.wait()
    rows = summarize(records)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
