"""Goodput from scope's own records in a run directory (collectors/hook/lifecycle.py writes them).

The lowest rank with progress records is the job's voice (its steps, its saves, its attempts); every rank's
attempt records give the last step each rank reached in each attempt, and the blocking time of a save is
the longest any rank spent in it (training waits for the slowest). The records become the same marks the
log parsers produce, so one accounting (timeline.py) serves both:

    attempt start   -> init_begin at the process's creation (imports included)
    progress        -> step (the time the step completed)
    checkpoint      -> save/load begin and end, with bytes (and an async save's background time)
    attempt end     -> failure (exception, SIGTERM, or a process that left only its heartbeat), or job_end
    attempt group   -> world (the world size and node count the attempt ran with)

The launcher's attempt records (RUN/hosts/<host>/attempts.jsonl, collectors/launch_attempts.py) give each
rank's exit code and signal per attempt; they join the hook's attempt records by pid. A rank failed on its
own when it raised, exited non-zero, or died of a signal the launcher does not send (SIGSEGV, SIGABRT, a
SIGKILL with no SIGTERM before it: the OOM killer); the others were stopped by the launcher. An attempt
that ended with no rank failing on its own, followed by one in a group of another size, is an elastic
membership change (describe.py), not a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.analyzers.goodput.mark import Mark
from scope.analyzers.goodput.record_files import checkpoint_calls as _checkpoint_calls
from scope.analyzers.goodput.record_files import jsonl as _jsonl
from scope.analyzers.goodput.record_files import progress as _progress

from scope.recordio import CHECKPOINT, HOOK_ATTEMPT, LAUNCH_ATTEMPT

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import Checkpoint, GoodputReport

    from scope.inputs import Inventory

ATTEMPTS, PROGRESS, CHECKPOINTS = "attempts.jsonl", "progress.jsonl", "checkpoints.jsonl"
FAILED_STATES = frozenset({"exception", "terminated", "killed", "running"})
# Signals a launcher sends to stop a worker group (torchrun: SIGTERM, then SIGKILL after a grace period).
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"})
# Attempts listed per rank in the report (a rank's records numbering attempts beyond it list their last).
MAX_LISTED_ATTEMPTS = 10_000


def _rank_dirs(inputs: Inventory) -> dict[int, Path]:
    """The rank folders that hold files, as the run's inventory lists them."""
    out: dict[int, Path] = {}
    for path in _listed(inputs):
        parts = path.relative_to(inputs.root).parts
        if len(parts) >= 3 and parts[0] == "ranks" and parts[1].isdigit():
            out.setdefault(int(parts[1]), inputs.root / "ranks" / parts[1])
    return out


def has_records(inputs: Inventory) -> bool:
    """Whether the run's inventory lists a rank's attempt records (ranks/<r>/attempts.jsonl)."""
    rels = (p.relative_to(inputs.root).parts for p in _listed(inputs))
    return any(parts[::2] == ("ranks", ATTEMPTS) and parts[1].isdigit() for parts in rels)


def _listed(inputs: Inventory) -> list[Path]:
    """Every file the inventory lists, those that are not regular too (a FIFO, a link to a device): a
    record file of that kind is named in a warning by the reader (never opened), not passed over."""
    return [e.path for e in inputs.entries] + [p for p, _ in inputs.irregular]


def _s(ns: Any) -> float | None:
    return ns / 1e9 if isinstance(ns, (int, float)) else None


def records_report(inputs: Inventory, mtbf_s: float | None = None) -> GoodputReport:
    from scope.analyzers.goodput.report import build_report
    from scope.analyzers.goodput.timeline import account

    warnings: list[str] = []
    dirs = _rank_dirs(inputs)
    attempts_by_rank = {r: _jsonl(d / ATTEMPTS, warnings, HOOK_ATTEMPT) for r, d in sorted(dirs.items())}
    voice = next((r for r in sorted(dirs) if (dirs[r] / PROGRESS).is_file()), min(dirs))
    attempts_by_rank = _aligned(attempts_by_rank, voice)
    progress = _progress(dirs[voice] / PROGRESS, warnings)
    saves = _checkpoints(dirs, voice, warnings)
    ends = end_states(attempts_by_rank, _launcher_attempts(inputs, warnings))
    firsts = _first_failures(attempts_by_rank, voice, ends)
    marks = _marks(firsts, progress, saves, f"ranks/{voice}")
    acc = account(marks)
    for a in acc.attempts:
        state = ends.get(a.index)
        if state is not None:
            a.exit_codes, a.signals, a.failed_ranks = state.exit_codes, state.signals, state.failed_ranks
    checkpoints = _checkpoint_rows(saves, voice)
    report = build_report(
        str(inputs.path),
        "records",
        [f"ranks/{voice}", f"{len(dirs)} ranks' attempt records"],
        acc,
        checkpoints,
        mtbf_s=mtbf_s,
        warnings=warnings,
    )
    report.ranks = _last_steps(attempts_by_rank)
    report.cannot = [c for c in report.cannot if "data stalls" not in c]
    if not any(rec.get("data_ns") for rec in progress):
        report.cannot.append(
            "no DataLoader waits recorded (the job iterates no torch DataLoader): data stalls stay inside "
            "productive time"
        )
    return report


def _aligned(attempts_by_rank: dict[int, list[dict[str, Any]]], voice: int) -> dict[int, list[dict[str, Any]]]:
    """Every rank's attempts numbered as the voice rank's: each rank counts its own processes, so a node that
    joined an elastic job later calls its first attempt 0; it is the job's attempt that started with it."""
    starts = [(int(r.get("attempt", 0)), r["time_ns"]) for r in attempts_by_rank.get(voice, [])
              if r.get("event") == "start" and isinstance(r.get("time_ns"), int)]  # fmt: skip
    if not starts:
        return attempts_by_rank
    out: dict[int, list[dict[str, Any]]] = {}
    for rank, recs in attempts_by_rank.items():
        own = {
            int(r.get("attempt", 0)): min(starts, key=lambda s: abs(s[1] - r["time_ns"]))[0]
            for r in recs
            if r.get("event") == "start" and isinstance(r.get("time_ns"), int)
        }
        if rank == voice or all(k == v for k, v in own.items()):
            out[rank] = recs
            continue
        out[rank] = [{**r, "attempt": own.get(int(r.get("attempt", 0)), r.get("attempt"))} for r in recs]
    return out


@dataclass
class EndState:
    """How one attempt's ranks ended."""

    exit_codes: dict[int, int | None] = field(default_factory=dict)
    signals: dict[int, str] = field(default_factory=dict)
    failed_ranks: list[int] = field(default_factory=list)  # the first to fail first
    world_size: int | None = None
    nodes: int | None = None


def _launcher_attempts(inputs: Inventory, warnings: list[str]) -> list[dict[str, Any]]:
    """The launcher's records, hosts/<h>/attempts.jsonl, as the run's inventory lists them."""
    listed = sorted(p for p in _listed(inputs) if p.relative_to(inputs.root).parts[::2] == ("hosts", ATTEMPTS))
    return [rec for f in listed for rec in _jsonl(f, warnings, LAUNCH_ATTEMPT)]


def end_states(
    attempts_by_rank: dict[int, list[dict[str, Any]]], launcher: list[dict[str, Any]]
) -> dict[int, EndState]:
    """Per attempt: each rank's exit code and signal (the launcher's, joined by pid; else the hook's own end
    record), the ranks that failed on their own, and the group's size."""
    out: dict[int, EndState] = {}
    by_pid: dict[int, int] = {}
    for recs in attempts_by_rank.values():
        for rec in recs:
            n = int(rec.get("attempt", 0))
            if rec.get("event") == "start":
                if isinstance(rec.get("pid"), int):
                    by_pid[rec["pid"]] = n
                st = out.setdefault(n, EndState())
                st.world_size = st.world_size or rec.get("world_size")
                st.nodes = st.nodes or rec.get("nodes")
    hook_state: dict[tuple[int, int], str] = {}
    hook_end: dict[tuple[int, int], int] = {}
    for rank, recs in attempts_by_rank.items():
        for rec in recs:
            if rec.get("event") == "end":
                n = int(rec.get("attempt", 0))
                hook_state[(n, rank)] = str(rec.get("state"))
                if isinstance(rec.get("time_ns"), int):
                    hook_end[(n, rank)] = rec["time_ns"]
                if rec.get("signal"):
                    out.setdefault(n, EndState()).signals[rank] = str(rec["signal"])
                elif rec.get("state") == "exited":
                    out.setdefault(n, EndState()).exit_codes[rank] = 0
    for order, rec in enumerate(sorted(launcher, key=lambda r: r.get("start_ns") or 0)):
        pids = [r.get("pid") for r in rec.get("ranks", [])]
        found = next((by_pid[p] for p in pids if p in by_pid), order if not by_pid else None)
        if found is None:
            continue
        n = found
        st = out.setdefault(n, EndState())
        st.world_size = rec.get("world_size") or st.world_size
        for r in rec.get("ranks", []):
            if not isinstance(r.get("rank"), int):
                continue
            st.exit_codes[r["rank"]] = r.get("exit_code")
            if r.get("signal"):
                st.signals[r["rank"]] = str(r["signal"])
    for n, st in out.items():
        ranks = set(st.exit_codes) | set(st.signals) | {r for (m, r) in hook_state if m == n}
        failed = [r for r in ranks if _failed_on_its_own(st, hook_state.get((n, r)), r)]
        # the first to fail first: ranks whose peer died may fail too (a closed connection) before the
        # launcher stops them
        st.failed_ranks = sorted(failed, key=lambda r: (hook_end.get((n, r), 1 << 62), r))
    return out


def _failed_on_its_own(st: EndState, hook: str | None, rank: int) -> bool:
    """By the launcher's exit code where it has one: a rank that raised because its peer died (gloo's
    'Connection closed by peer') and was then stopped by the launcher's SIGTERM exits by that signal."""
    code, sig = st.exit_codes.get(rank), st.signals.get(rank)
    if code is not None and code > 0:
        return True
    if code is None and hook == "exception":
        return True
    if sig and sig not in STOP_SIGNALS:
        # SIGKILL after the launcher's SIGTERM (the hook recorded it) is the launcher's grace running out
        return not (sig == "SIGKILL" and hook == "terminated")
    return False


def _first_failures(
    attempts_by_rank: dict[int, list[dict[str, Any]]], voice: int, ends: dict[int, EndState] | None = None
) -> list[dict[str, Any]]:
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
        st = (ends or {}).get(n)
        if rec.get("event") == "end" and n in first:
            rec = {
                **rec,
                "time_ns": first[n]["time_ns"],
                "state": first[n]["state"],
                "failed_rank": _rank_of(attempts_by_rank, first[n]),
            }
        if rec.get("event") in ("end", "previous") and st is not None:
            rec = {**rec, "stopped": not st.failed_ranks, "failed_ranks": st.failed_ranks}
        if rec.get("event") == "start" and st is not None:
            rec = {**rec, "world_size": st.world_size, "nodes": st.nodes}
        out.append(rec)
    return out


def _rank_of(attempts_by_rank: dict[int, list[dict[str, Any]]], rec: dict[str, Any]) -> int | None:
    return next((r for r, recs in attempts_by_rank.items() if any(x is rec for x in recs)), None)


def _checkpoints(dirs: dict[int, Path], voice: int, warnings: list[str]) -> list[dict[str, Any]]:
    """The voice rank's checkpoint calls, each blocking as long as the slowest rank's same call."""
    own = _checkpoint_calls(_jsonl(dirs[voice] / CHECKPOINTS, warnings, CHECKPOINT))
    longest: dict[tuple[Any, ...], int] = {}
    for r, d in dirs.items():
        if r == voice or not (d / CHECKPOINTS).is_file():
            continue
        for rec in _jsonl(d / CHECKPOINTS, warnings, CHECKPOINT):
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

    def add(kind: str, t: float | None, order: int, row: str = "records", **kw: Any) -> None:
        if t is not None:
            marks.append((t, order, Mark(kind, 0, where, row, t=t, t_src="own", **kw)))

    ended: float | None = None  # when the attempt before ended (its end record)
    for rec in attempts:
        ev, n = rec.get("event"), rec.get("attempt", 0)
        if ev == "start":
            t = _s(rec.get("proc_start_ns")) or _s(rec.get("time_ns"))
            if t is not None and ended is not None and n:
                # a process start an earlier hook read from whole-second btime can fall before the end
                # the attempt before it recorded: a relaunch starts after that end (1 ms, so that the end,
                # ordered after a start at the same instant, stays in its own attempt), never before
                t = max(t, ended + 1e-3)
            add("restart" if n else "init_begin", t, 0, text=f"attempt {n} started (pid {rec.get('pid')})")
            if n:
                add("init_begin", t, 1, text=f"attempt {n} started (pid {rec.get('pid')})")
            if rec.get("world_size") or rec.get("nodes"):
                add("world", t, 1, world=rec.get("world_size"), nodes=rec.get("nodes"), text="worker group size")
        elif ev == "end":
            ended = _s(rec.get("time_ns")) or ended
            state = str(rec.get("state"))
            if rec.get("last_step_ns") and state not in FAILED_STATES:
                add("step", _s(rec.get("last_step_ns")), 2, step=rec.get("global_step"))  # the last step, exactly
            kind = "failure" if state in FAILED_STATES else "job_end"
            who = f" on rank {rec['failed_rank']}" if rec.get("failed_rank") is not None else ""
            add(
                kind,
                _s(rec.get("time_ns")),
                5,
                row="records_stopped" if rec.get("stopped") else "records",
                text=f"attempt {n} ended: {state}{who} at step {rec.get('global_step')}",
            )
        elif ev == "previous" and not any(r.get("event") == "end" and r.get("attempt") == n for r in attempts):
            # the process died without a word (SIGKILL, OOM killer): its last heartbeat is all we know
            add(
                "failure",
                _s(rec.get("written_ns")),
                5,
                row="records_stopped" if rec.get("stopped") else "records",
                text=f"attempt {n} left no end record (state {rec.get('state')})",
            )
    prev_step: int | None = None
    for rec in progress:
        done = int(rec.get("global_step", rec.get("step", 0)))
        # the hook's DataLoader wait since the line before, per step (timeline.py splits it off productive)
        steps = done - prev_step if prev_step is not None and done > prev_step else 1
        data_s = (_s(rec.get("data_ns")) or 0.0) / steps or None
        add("step", _s(rec.get("t_ns")), 2, step=done, data_s=data_s)
        prev_step = done
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
        listed = range(max(last) + 1) if last and max(last) < MAX_LISTED_ATTEMPTS else sorted(last)
        out[rank] = {"last_steps": [last.get(n) for n in listed]}
    return out
