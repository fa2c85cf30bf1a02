"""Scoring of benchmarks/live_real.py's runs: each live finding against the injected fault, then the campaign's
figures (precision, recall, culprit, false alarms, time-to-detect).

A run's findings are its distinct finding keys in RUN/live/events.jsonl (a verdict cleared and said again is one
finding). A finding is the fault's (a true positive) when it has the fault's kind (and straggler class), names
the culprit rank alone and starts at or after the onset (a record may average a step or two before it); every
other finding is a false alarm, kept with its class so a host's contention (a host-class straggler: 4 ranks
share 2 cores with the other engineers' load) can be told from the detector's own mistakes. Time-to-detect:
from the fault rank's start of the onset step (its own per-step end times) to the first event naming the
culprit; for a hang, from the last progress any rank recorded.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

EXPECTED: dict[str, tuple[str, str | None]] = {
    "straggler-1.5": ("straggler", "compute"),
    "straggler-2": ("straggler", "compute"),
    "straggler-3": ("straggler", "compute"),
    "data-stall": ("straggler", "input"),
    "slow-link": ("slow_collective", None),
    "hang": ("hang", None),
}
EARLY_STEPS = 2  # a finding's start may precede the onset by a record's span


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def step_ends_ns(run: Path, rank: int) -> list[int]:
    """The rank's own end time of each step (the workload's last line); empty when it never finished."""
    for line in (run / "ranks" / str(rank) / "stdout.log").read_text().splitlines():
        if line.startswith("scope-workload-steps:"):
            return list(json.loads(line.split(":", 1)[1])["end_ns"])
    return []


def last_progress_s(run: Path) -> float:
    return max(rec["t_ns"] / 1e9 for rank in range(4) for rec in _lines(run / "ranks" / str(rank) / "progress.jsonl"))


def compact(event: dict[str, Any]) -> dict[str, Any]:
    f = event["finding"]
    m = f.get("metrics", {})
    out = {"action": event["action"], "key": event["key"], "t": event["t"], "step": event["step"]}
    out.update({"kind": f["kind"], "ranks": f["ranks"], "summary": f["summary"][:200]})
    for name in ("straggler_kind", "shape", "since_step", "culprit_rule", "group"):
        if name in m:
            out[name] = m[name]
    return out


def is_the_fault(f: dict[str, Any], case: dict[str, Any]) -> bool:
    if case["kind"] == "healthy":
        return False
    kind, cls = EXPECTED[case["kind"]]
    if f["kind"] != kind or f["ranks"] != [case["rank"]]:
        return False
    if cls is not None and f.get("straggler_kind") != cls:
        return False
    return int(f.get("since_step", f["step"])) >= case["onset"] - EARLY_STEPS


def replayed_events(run: Path) -> list[dict[str, Any]]:
    """The events of the run's replay (scope.live.replay: its samples fed at the live monitor's pace, no
    heartbeats): to try a change of the detector on recorded runs without running them again."""
    from scope.live.replay import replay, run_dir_samples

    return [e.to_dict() for e in replay(run_dir_samples(run)).events]


def score_run(run: Path, case: dict[str, Any], replayed: bool = False) -> dict[str, Any]:
    """The run's live findings (or its replay's) against the case's fault."""
    info = json.loads((run / "run.json").read_text())
    start_s, end_s = info["start_ns"] / 1e9, info["end_ns"] / 1e9
    raw = replayed_events(run) if replayed else _lines(run / "live" / "events.jsonl")
    events = [compact(e) for e in raw]
    said = [e for e in events if e["action"] in ("new", "update") and e["ranks"]]
    first: dict[str, dict[str, Any]] = {}
    for e in said:  # each key's first event with ranks (a hang is said before its culprit is known)
        first.setdefault(e["key"], e)
    true_keys = [k for k, e in first.items() if any(is_the_fault(x, case) for x in said if x["key"] == k)]
    alarms = [e for k, e in first.items() if k not in true_keys]
    out: dict[str, Any] = {"status": info.get("status"), "span_s": round(end_s - start_s, 2), "events": events}
    out["false_alarms"] = [
        {"kind": e["kind"], "ranks": e["ranks"], "class": e.get("straggler_kind"), "step": e["step"]} for e in alarms
    ]
    out["true_findings"] = len(true_keys)
    stats = run / "live" / "stats.json"
    out["detector"] = json.loads(stats.read_text()) if stats.is_file() else None
    if case["kind"] == "healthy":
        out["verdict"] = "clean" if not alarms else f"false alarm x{len(alarms)}"
        return out
    kind = EXPECTED[case["kind"]][0]
    hits = [e for e in said if is_the_fault(e, case) and e["t"] < end_s]
    wrong = [e for e in said if e["kind"] == kind and not is_the_fault(e, case)]
    out["detected"] = bool(hits or wrong)
    out["culprit_ok"] = bool(hits)
    if hits:
        hit = hits[0]
        if case["kind"] == "hang":
            ref_s = last_progress_s(run)
        else:
            ref_s = step_ends_ns(run, case["rank"])[case["onset"] - 1] / 1e9
        out["ttd_s"] = round(hit["t"] - ref_s, 2)
        out["ttd_steps"] = hit["step"] - case["onset"]
    out["verdict"] = "hit" if hits else ("wrong culprit" if wrong else "missed")
    if alarms:
        out["verdict"] += f" + {len(alarms)} other"
    return out


def _q(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _ttd(records: list[dict[str, Any]]) -> dict[str, Any]:
    secs = [r["ttd_s"] for r in records if "ttd_s" in r]
    steps = [float(r["ttd_steps"]) for r in records if "ttd_steps" in r]
    return {
        "n": len(secs),
        "median_s": round(statistics.median(secs), 2) if secs else None,
        "p90_s": _q(secs, 0.9),
        "median_steps": statistics.median(steps) if steps else None,
        "p90_steps": _q(steps, 0.9),
    }


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if "error" not in r]
    faults = [r for r in ok if r["kind"] != "healthy"]
    healthy = [r for r in ok if r["kind"] == "healthy"]
    alarms = [a for r in ok for a in r["false_alarms"]]
    true = sum(r["true_findings"] for r in ok)
    host = [a for a in alarms if a["class"] == "host"]
    detected = [r for r in faults if r["detected"]]
    healthy_alarms = [a for r in healthy for a in r["false_alarms"]]
    rank_hours = sum(r["span_s"] for r in healthy) * 4 / 3600
    loads = sorted(r["load_start"] for r in ok)
    summary: dict[str, Any] = {
        "runs": len(records),
        "errors": [r["id"] for r in records if "error" in r],
        "faults": len(faults),
        "healthy": len(healthy),
        "recall": round(len(detected) / len(faults), 3) if faults else None,
        "right_culprit": round(sum(r["culprit_ok"] for r in detected) / len(detected), 3) if detected else None,
        "precision": round(true / (true + len(alarms)), 3) if true + len(alarms) else None,
        "precision_less_host_class": round(true / (true + len(alarms) - len(host)), 3) if true else None,
        "false_alarms": len(alarms),
        "host_class_alarms": len(host),
        "healthy_runs_with_alarm": sum(bool(r["false_alarms"]) for r in healthy),
        "healthy_alarms_per_1000_rank_hours": round(len(healthy_alarms) / rank_hours * 1000) if rank_hours else None,
        "healthy_rank_hours": round(rank_hours, 3),
        "load_1min": {"min": loads[0], "median": statistics.median(loads), "max": loads[-1]} if loads else None,
    }
    kinds = sorted({r["kind"] for r in faults})
    summary["per_kind"] = {
        k: {
            "faults": len(rs := [r for r in faults if r["kind"] == k]),
            "detected": sum(r["detected"] for r in rs),
            "culprit_ok": sum(r["culprit_ok"] for r in rs),
            "alarms": sum(len(r["false_alarms"]) for r in rs),
            "ttd": _ttd(rs),
        }
        for k in kinds
    }
    stragglers = [r for r in faults if r["kind"].startswith("straggler") or r["kind"] == "data-stall"]
    summary["ttd_rank_stragglers"] = _ttd(stragglers)
    return summary
