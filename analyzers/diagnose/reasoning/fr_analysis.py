"""Flight Recorder analysis: who every process group waits for, and who never came.

Per process group (by its name, the same on every rank) and per rank: the last collective enqueued
and completed. A rank with pending work waits on `last_completed + 1`; a member that never enqueued
that sequence number is a culprit. A culprit that is itself waiting on an older collective elsewhere
is only blocked downstream; the root culprits are the rest. A rank whose completions lag what its
peers completed of the same collectives has a stalled GPU stream (or watchdog). Entries with the
same sequence number must agree on op, dtype and (for size-matched ops) input sizes: the odd rank
out of a majority is the desync (with no majority, the side whose call the job never made before).

Units: collective sequence numbers come from the entries; `pg_status` (keyed by the rank-local pg_id)
is used only when it agrees with the entries in these dumps (NCCL dumps do; gloo's counts op ids).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from scope.analyzers.diagnose.model import MISMATCH, Anomaly
from scope.analyzers.diagnose.reasoning.fr_blame import entry_evidence

from scope.flight_recorder import FRDump
from scope.op_names import canonical_op

SIZE_MATCHED_OPS = frozenset({"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "barrier"})


@dataclass
class PGView:
    """One rank's view of one process group."""

    pg_id: int | None = None
    enq: int | None = None
    comp: int | None = None
    by_seq: dict[int, dict[str, Any]] = field(default_factory=dict)
    p2p: bool = False

    def pending(self) -> bool:
        return self.enq is not None and self.comp is not None and self.enq > self.comp


@dataclass
class FRAnalysis:
    rows: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    missing_dumps: list[int] = field(default_factory=list)
    pg_desc: dict[str, str] = field(default_factory=dict)


def _completed(entry: dict[str, Any]) -> bool:
    return entry.get("state") == "completed" or bool(entry.get("retired"))


def _collect_views(dump: FRDump, label: str) -> dict[str, PGView]:
    views: dict[str, PGView] = {}
    for index, e in enumerate(dump.entries, 1):
        e["_file"], e["_index"] = label, index  # evidence: '<dump>:<entry number>'
        name = e["process_group"][0]
        view = views.setdefault(name, PGView(pg_id=e.get("pg_id")))
        if e.get("is_p2p") or (e.get("collective_seq_id", -1) <= 0 and e.get("p2p_seq_id", 0) > 0):
            view.p2p = True  # p2p counters are per pair of ranks; only groups with collectives compare
            continue
        view.by_seq[e["collective_seq_id"]] = e
    for view in views.values():
        if not view.by_seq:
            continue
        view.p2p = False
        seqs = sorted(view.by_seq)
        view.enq = seqs[-1]
        done = [s for s in seqs if _completed(view.by_seq[s])]
        pending = [s for s in seqs if not _completed(view.by_seq[s])]
        view.comp = max(done) if done and not pending else (pending[0] - 1 if pending else view.enq)
    return views


def _status_trusted(dumps: list[FRDump], views: dict[int, dict[str, PGView]]) -> bool:
    """Does pg_status count collectives like the entries do (NCCL) or something else (gloo op ids)?"""
    agree = disagree = 0
    for d in dumps:
        for view in views[d.rank].values():  # type: ignore[index]
            st = d.pg_status.get(str(view.pg_id))
            if st is None or view.enq is None:
                continue
            if st["last_enqueued"] == view.enq:
                agree += 1
            else:
                disagree += 1
    return agree > disagree


def _apply_status(dump: FRDump, rank_views: dict[str, PGView], trusted: bool) -> None:
    if not trusted:
        return
    for view in rank_views.values():
        st = dump.pg_status.get(str(view.pg_id))
        if st and view.enq is not None and st["last_enqueued"] == view.enq and 0 <= st["last_completed"] <= view.enq:
            view.comp = st["last_completed"]


def _members(dumps: list[FRDump], views: dict[int, dict[str, PGView]], world: set[int]) -> dict[str, set[int]]:
    members: dict[str, set[int]] = defaultdict(set)
    for d in dumps:
        for name, cfg in d.pg_config.items():
            members[name].update(cfg.get("ranks", []))
        for name in views[d.rank]:  # type: ignore[index]
            members[name].add(d.rank)  # type: ignore[arg-type]
    if "0" in members or not members:
        members["0"].update(world)
    return members


def _fill_from_status(dumps: list[FRDump], views: dict[int, dict[str, PGView]], members: dict[str, set[int]]) -> None:
    """A member with no entries on a group: borrow the group's pg_id from its peers, read pg_status."""
    dump_of = {d.rank: d for d in dumps}
    for name, ranks in members.items():
        present = [views[r][name] for r in ranks if r in views and name in views[r]]
        if not present or any(v.p2p for v in present):
            continue
        pg_id, _ = Counter(v.pg_id for v in present).most_common(1)[0]
        for r in ranks:
            d = dump_of.get(r)
            if d is not None and name not in views[r]:
                st = d.pg_status.get(str(pg_id))
                if st and st["last_enqueued"] >= 0:
                    views[r][name] = PGView(pg_id=pg_id, enq=st["last_enqueued"], comp=max(st["last_completed"], -1))


def analyze_dumps(
    dumps: list[FRDump], world: set[int] | None = None, labels: dict[int, str] | None = None
) -> FRAnalysis:
    """`world`: ranks expected (a rank without a dump is reported); `labels`: file name per rank."""
    dumps = [d for d in dumps if d.rank is not None]
    world = set(world or ()) | {d.rank for d in dumps}  # type: ignore[misc]
    labels = labels or {}
    views = {d.rank: _collect_views(d, labels.get(d.rank, str(d.path))) for d in dumps}  # type: ignore[arg-type]
    trusted = _status_trusted(dumps, views)  # type: ignore[arg-type]
    for d in dumps:
        _apply_status(d, views[d.rank], trusted)
    members = _members(dumps, views, world)  # type: ignore[arg-type]
    if trusted:
        _fill_from_status(dumps, views, members)  # type: ignore[arg-type]
    out = FRAnalysis(missing_dumps=sorted(world - set(views)))  # type: ignore[arg-type]
    for d in dumps:
        for name, cfg in d.pg_config.items():
            out.pg_desc.setdefault(name, cfg.get("desc", ""))
        for e in d.entries:
            out.pg_desc.setdefault(e["process_group"][0], e["process_group"][1])
    from scope.analyzers.diagnose.reasoning.fr_blame import blame

    # A GPU lagging its peers needs GPU work; gloo (CPU) also retires work that failed.
    gpu_completion = any(not str(e.get("profiling_name", "")).startswith("gloo:") for d in dumps for e in d.entries)
    blame(out, views, members, detect_stalls=gpu_completion)  # type: ignore[arg-type]
    out.anomalies.extend(find_mismatches(views, out.pg_desc))  # type: ignore[arg-type]
    return out


def find_mismatches(views: dict[int, dict[str, PGView]], pg_desc: dict[str, str]) -> list[Anomaly]:
    """Same group, same sequence number, different op / dtype / size: the minority ranks are the desync."""
    by_pg: dict[str, dict[int, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for rank, pgs in views.items():
        for name, view in pgs.items():
            for seq, e in view.by_seq.items():
                by_pg[name][seq][rank] = e
    found: dict[int, Anomaly] = {}
    for name in sorted(by_pg, key=lambda n: (len(n), n)):
        for seq in sorted(by_pg[name]):
            entries = by_pg[name][seq]
            if len(entries) < 2:
                continue
            signatures = _signatures(entries)
            for fld, values in signatures.items():
                habit = partial(_agreed_before, by_pg[name], seq, fld)
                odd, majority = _minority(values, signatures["op"], habit)
                for rank in odd:
                    if rank in found:
                        continue
                    e = entries[rank]
                    found[rank] = Anomaly(
                        code="fr_mismatch",
                        kind="collective_mismatch",
                        level=MISMATCH,
                        message=(
                            f"rank {rank} called {canonical_op(e.get('profiling_name', ''))} #{seq} on PG "
                            f"{name} with {fld} {values[rank]} while the others used {majority}"
                        ),
                        file=entry_evidence(e),
                        rank=rank,
                        time_ns=e.get("time_created_ns") or None,
                        details={
                            "pg": name,
                            "pg_desc": pg_desc.get(name, ""),
                            "seq": seq,
                            "field": fld,
                            "got": values[rank],
                            "expected": majority,
                            "op": canonical_op(e.get("profiling_name", "")),
                            "values": {str(r): v for r, v in sorted(values.items())},
                        },
                    )
    return list(found.values())


def _signatures(entries: dict[int, dict[str, Any]]) -> dict[str, dict[int, str]]:
    ops = {r: canonical_op(e.get("profiling_name", "")) for r, e in entries.items()}
    out = {"op": ops, "dtype": {r: ",".join(map(str, e.get("input_dtypes") or [])) for r, e in entries.items()}}
    if len(set(ops.values())) == 1 and next(iter(ops.values())) in SIZE_MATCHED_OPS:
        out["input sizes"] = {r: str(e.get("input_sizes")) for r, e in entries.items()}
    return out


def _minority(
    values: dict[int, str], ops: dict[int, str], habit: Callable[[], set[tuple[str, str]]]
) -> tuple[list[int], str]:
    """The odd ranks out and the value the others used. With no majority (often two dumps of four: the
    ranks that died first wrote none) the program's habit decides: a desync is a call the job never
    made before, so when exactly one side repeats an (op, value) that every rank made alike earlier in
    the group (habit()), the other sides are the odd ones. Else every side is suspect."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return [], ""
    (top, n_top), (_, n_next) = counts.most_common(2)
    if n_top == n_next:
        known = habit()
        repeated = {v for r, v in values.items() if (ops[r], v) in known}
        if len(repeated) != 1:
            return sorted(values), top
        top = repeated.pop()
    return sorted(r for r, v in values.items() if v != top), top


def _agreed_before(history: dict[int, dict[int, dict[str, Any]]], seq: int, fld: str) -> set[tuple[str, str]]:
    """(op, value of fld) of this group's earlier calls that every dumped rank made alike."""
    out = set()
    for earlier, entries in history.items():
        if earlier >= seq or len(entries) < 2:
            continue
        signatures = _signatures(entries)
        values, ops = signatures.get(fld), signatures["op"]
        if values and len(set(values.values())) == 1 and len(set(ops.values())) == 1:
            out.add((next(iter(ops.values())), next(iter(values.values()))))
    return out
