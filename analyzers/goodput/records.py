"""Goodput from scope's own records in a run directory (collectors/hook/lifecycle.py writes them).

The lowest rank with progress records is the job's voice (its steps, its saves, its attempts); every rank's
attempt records give the last step each rank reached in each attempt, and the blocking time of a save is
the longest any rank spent in it (training waits for the slowest). The records become the same marks the
log parsers produce, so one accounting (timeline.py) serves both:

    attempt start   -> init_begin at the process's creation (imports included)
    progress        -> step (the time the step completed)
    checkpoint      -> save/load begin and end, with bytes (and an async save's background time)
    attempt end     -> failure (exception, SIGTERM, or a process that left only its heartbeat), or job_end
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.analyzers.goodput.parse import Mark

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import Checkpoint, GoodputReport

    from scope.inputs import Inventory

ATTEMPTS, PROGRESS, CHECKPOINTS = "attempts.jsonl", "progress.jsonl", "checkpoints.jsonl"
FAILED_STATES = frozenset({"exception", "terminated", "killed", "running"})


def _rank_dirs(path: Path) -> dict[int, Path]:
    out: dict[int, Path] = {}
    ranks = Path(path) / "ranks"
    if not ranks.is_dir():
        return out
    for d in ranks.iterdir():
        if d.name.isdigit():
            out[int(d.name)] = d
    return out


def has_records(path: Path, inputs: Inventory | None = None) -> bool:
    path = Path(path)
    if inputs is not None:  # the run's inventory (scope.inputs) lists them: no second look
        return any(e.rel.parts[::2] == ("ranks", ATTEMPTS) and e.rel.parts[1].isdigit() for e in inputs.entries)
    if not path.is_dir():
        return False
    return any((d / ATTEMPTS).is_file() for d in _rank_dirs(path).values())


def _jsonl(path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        text = path.read_text()
    except OSError:
        return out
    bad = 0
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            bad += 1  # a line cut by a crash or a full disk: the others still count
            continue
        if isinstance(rec, dict):
            out.append(rec)
    if bad:
        warnings.append(f"{path}: {bad} unreadable line(s) skipped")
    return out


def _s(ns: Any) -> float | None:
    return ns / 1e9 if isinstance(ns, (int, float)) else None


def records_report(path: Path, mtbf_s: float | None = None) -> GoodputReport:
    from scope.analyzers.goodput.report import build_report
    from scope.analyzers.goodput.timeline import account

    warnings: list[str] = []
    dirs = _rank_dirs(path)
    attempts_by_rank = {r: _jsonl(d / ATTEMPTS, warnings) for r, d in sorted(dirs.items())}
    voice = next((r for r in sorted(dirs) if (dirs[r] / PROGRESS).is_file()), min(dirs))
    progress = _jsonl(dirs[voice] / PROGRESS, warnings)
    saves = _checkpoints(dirs, voice, warnings)
    marks = _marks(_first_failures(attempts_by_rank, voice), progress, saves, f"ranks/{voice}")
    acc = account(marks)
    checkpoints = _checkpoint_rows(saves, voice)
    report = build_report(
        str(path),
        "records",
        [f"ranks/{voice}", f"{len(dirs)} ranks' attempt records"],
        acc,
        checkpoints,
        mtbf_s=mtbf_s,
        warnings=warnings,
    )
    report.ranks = _last_steps(attempts_by_rank)
    report.cannot = [c for c in report.cannot if "data stalls" not in c]
    report.cannot.append("data stalls are not recorded by the hook yet (they stay inside productive time)")
    return report


def _first_failures(attempts_by_rank: dict[int, list[dict[str, Any]]], voice: int) -> list[dict[str, Any]]:
    """The voice rank's attempt records, each failed attempt ending when its first rank failed (the crash),
    not when the launcher got round to terminating the voice."""
    first: dict[int, dict[str, Any]] = {}
    for recs in attempts_by_rank.values():
        for rec in recs:
            if rec.get("event") == "end" and rec.get("state") in FAILED_STATES and isinstance(rec.get("time_ns"), int):
                n = int(rec.get("attempt", 0))
                # an exception is where a failure starts; a SIGTERM is the launcher's reaction to it
                key = (rec.get("state") != "exception", rec["time_ns"])
                best = first.get(n)
                if best is None or key < (best.get("state") != "exception", best["time_ns"]):
                    first[n] = rec
    out = []
    for rec in attempts_by_rank.get(voice, []):
        n = int(rec.get("attempt", 0))
        if rec.get("event") == "end" and n in first:
            rec = {
                **rec,
                "time_ns": first[n]["time_ns"],
                "state": first[n]["state"],
                "failed_rank": _rank_of(attempts_by_rank, first[n]),
            }
        out.append(rec)
    return out


def _rank_of(attempts_by_rank: dict[int, list[dict[str, Any]]], rec: dict[str, Any]) -> int | None:
    return next((r for r, recs in attempts_by_rank.items() if any(x is rec for x in recs)), None)


def _checkpoints(dirs: dict[int, Path], voice: int, warnings: list[str]) -> list[dict[str, Any]]:
    """The voice rank's checkpoint calls, each blocking as long as the slowest rank's same call."""
    own = _jsonl(dirs[voice] / CHECKPOINTS, warnings)
    longest: dict[tuple[Any, ...], int] = {}
    for r, d in dirs.items():
        if r == voice or not (d / CHECKPOINTS).is_file():
            continue
        for rec in _jsonl(d / CHECKPOINTS, warnings):
            key = (rec.get("attempt"), rec.get("op"), rec.get("global_step"))
            longest[key] = max(longest.get(key, 0), int(rec.get("dur_ns") or 0))
    for rec in own:
        key = (rec.get("attempt"), rec.get("op"), rec.get("global_step"))
        rec["blocking_ns"] = max(int(rec.get("dur_ns") or 0), longest.get(key, 0))
    return own


def _marks(
    attempts: list[dict[str, Any]], progress: list[dict[str, Any]], cps: list[dict[str, Any]], where: str
) -> list[Mark]:
    marks: list[tuple[float, int, Mark]] = []

    def add(kind: str, t: float | None, order: int, **kw: Any) -> None:
        if t is not None:
            marks.append((t, order, Mark(kind, 0, where, "records", t=t, t_src="own", **kw)))

    for rec in attempts:
        ev, n = rec.get("event"), rec.get("attempt", 0)
        if ev == "start":
            t = _s(rec.get("proc_start_ns")) or _s(rec.get("time_ns"))
            add("restart" if n else "init_begin", t, 0, text=f"attempt {n} started (pid {rec.get('pid')})")
            if n:
                add("init_begin", t, 1, text=f"attempt {n} started (pid {rec.get('pid')})")
        elif ev == "end":
            state = str(rec.get("state"))
            if rec.get("last_step_ns") and state not in FAILED_STATES:
                add("step", _s(rec.get("last_step_ns")), 2, step=rec.get("global_step"))  # the last step, exactly
            kind = "failure" if state in FAILED_STATES else "job_end"
            who = f" on rank {rec['failed_rank']}" if rec.get("failed_rank") is not None else ""
            add(
                kind,
                _s(rec.get("time_ns")),
                5,
                text=f"attempt {n} ended: {state}{who} at step {rec.get('global_step')}",
            )
        elif ev == "previous" and not any(r.get("event") == "end" and r.get("attempt") == n for r in attempts):
            # the process died without a word (SIGKILL, OOM killer): its last heartbeat is all we know
            add(
                "failure",
                _s(rec.get("written_ns")),
                5,
                text=f"attempt {n} left no end record (state {rec.get('state')})",
            )
    for rec in progress:
        add("step", _s(rec.get("t_ns")), 2, step=int(rec.get("global_step", rec.get("step", 0))))
    for rec in cps:
        op, start = rec.get("op", "save"), _s(rec.get("start_ns"))
        blocking = _s(rec.get("blocking_ns", rec.get("dur_ns"))) or 0.0
        step = rec.get("global_step")
        if op == "save" and rec.get("last_step_ns"):
            add("step", _s(rec.get("last_step_ns")), 2, step=step)  # the step the save follows, exactly
        if start is None:
            continue
        text = f"{rec.get('api')} {rec.get('path')}"
        add(f"{op}_begin", start, 3, step=step, text=text)
        end = Mark(f"{op}_end", 0, where, "records", step=step, t=start + blocking, t_src="own", text=text)
        marks.append((start + blocking, 4, end))
    marks.sort(key=lambda x: (x[0], x[1]))
    return [m for _, _, m in marks]


def _checkpoint_rows(cps: list[dict[str, Any]], voice: int) -> list[Checkpoint]:
    from scope.analyzers.goodput.report import Checkpoint

    out = []
    for rec in cps:
        out.append(
            Checkpoint(
                op=str(rec.get("op", "save")),
                step=rec.get("global_step"),
                start=_s(rec.get("start_ns")),
                blocking_s=_s(rec.get("blocking_ns", rec.get("dur_ns"))),
                ended=True,
                evidence=f"ranks/{voice}/{CHECKPOINTS}: {rec.get('api')} {rec.get('path')}",
                bytes=rec.get("bytes"),
                background_s=_s(rec.get("background_ns")),
            )
        )
    return out


def _last_steps(attempts_by_rank: dict[int, list[dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    """Per rank, the last step reached in each attempt (from its end record, else the heartbeat it left)."""
    out: dict[int, dict[str, Any]] = {}
    for rank, recs in attempts_by_rank.items():
        last: dict[int, Any] = {}
        for rec in recs:
            if rec.get("event") in ("end", "previous"):
                n = int(rec.get("attempt", 0))
                step = rec.get("global_step", rec.get("step"))
                if n not in last or rec.get("event") == "end":
                    last[n] = step
        out[rank] = {"last_steps": [last.get(n) for n in range(max(last) + 1)] if last else []}
    return out
