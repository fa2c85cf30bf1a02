"""Blame from Flight Recorder views: waits, culprits (root or downstream), stalled GPUs, missing dumps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.model import STALL, Anomaly

from scope.op_names import canonical_op

if TYPE_CHECKING:
    from scope.analyzers.diagnose.reasoning.fr_analysis import FRAnalysis, PGView

STALL_LAG = 2


@dataclass
class Wait:
    """Rank `rank` waits on collective `seq` of group `pg`; `culprits` never enqueued it."""

    pg: str
    seq: int
    rank: int
    culprits: set[int]
    no_dump: set[int]
    entry: dict[str, Any] | None

    @property
    def created(self) -> int:
        return int((self.entry or {}).get("time_created_ns") or 0) or (1 << 62)


@dataclass
class Blame:
    waits: list[Wait] = field(default_factory=list)
    stalled: dict[int, dict[str, Any]] = field(default_factory=dict)
    roots: set[int] = field(default_factory=set)
    downstream: set[int] = field(default_factory=set)


def blame(
    out: FRAnalysis, views: dict[int, dict[str, PGView]], members: dict[str, set[int]], detect_stalls: bool = True
) -> None:
    b = Blame()
    for name in sorted(members, key=lambda n: (len(n), n)):
        _group_waits(b, name, members[name], views)
    if not detect_stalls:
        b.stalled.clear()
    _split_roots(b)
    out.anomalies.extend(_culprit_anomalies(b, out.pg_desc, views))
    out.anomalies.extend(_stall_anomalies(b, out.pg_desc))
    out.anomalies.extend(_missing_dump_anomalies(b, out.pg_desc, out.missing_dumps))
    out.rows = _rows(b, views, members, out.pg_desc)


def _group_waits(b: Blame, name: str, ranks: set[int], views: dict[int, dict[str, PGView]]) -> None:
    pg = {r: views[r].get(name) for r in ranks if r in views}
    if any(v is not None and v.p2p for v in pg.values()):
        return  # p2p counters are per pair: not comparable across the group
    no_dump = {r for r in ranks if r not in views}
    for r, v in pg.items():
        if v is None or not v.pending():
            continue
        wseq = v.comp + 1  # type: ignore[operator]
        culprits = {m for m, vm in pg.items() if m != r and vm is not None and vm.enq is not None and vm.enq < wseq}
        b.waits.append(Wait(name, wseq, r, culprits, no_dump, v.by_seq.get(wseq)))
        peers = [vm.comp for m, vm in pg.items() if m != r and vm is not None and vm.comp is not None]
        if peers:
            lag = min(max(peers), v.enq) - v.comp  # type: ignore[operator,type-var]
            if lag >= STALL_LAG and lag > b.stalled.get(r, {}).get("lag", 0):
                stuck = v.by_seq.get(wseq) or {}
                b.stalled[r] = {
                    "pg": name,
                    "completed": v.comp,
                    "peers_completed": max(peers),
                    "lag": lag,
                    "enqueued": v.enq,
                    "file": entry_evidence(stuck) if stuck else "",
                }


def _split_roots(b: Blame) -> None:
    """A culprit already waiting on an older collective is downstream; the others are roots."""
    first_wait: dict[int, int] = {}
    for w in b.waits:
        first_wait[w.rank] = min(first_wait.get(w.rank, 1 << 62), w.created)
    for w in b.waits:
        for m in w.culprits:
            downstream = m not in b.stalled and first_wait.get(m, 1 << 62) < w.created
            (b.downstream if downstream else b.roots).add(m)
    b.downstream -= b.roots


def _culprit_anomalies(b: Blame, pg_desc: dict[str, str], views: dict[int, dict[str, PGView]]) -> list[Anomaly]:
    out = []
    for m in sorted(b.roots):
        missed: dict[tuple[str, int], list[Wait]] = {}
        for w in b.waits:
            if m in w.culprits:
                missed.setdefault((w.pg, w.seq), []).append(w)
        (pg, seq), waits = min(missed.items(), key=lambda kv: min(w.created for w in kv[1]))
        first = min(waits, key=lambda w: w.rank)
        e = first.entry or {}
        op = canonical_op(e.get("profiling_name", "")) or "collective"
        shape = _shape(e)
        waiting = sorted({w.rank for w in waits})
        details = {
            "pg": pg,
            "pg_desc": pg_desc.get(pg, ""),
            "seq": seq,
            "op": op,
            "shape": shape,
            "dtype": ",".join(map(str, e.get("input_dtypes") or [])),
            "waiting_ranks": waiting,
            "last_enqueued": views[m][pg].enq if pg in views.get(m, {}) else None,
            "also_missing_from": [{"pg": p, "seq": s} for (p, s) in sorted(missed) if (p, s) != (pg, seq)],
        }
        if m in b.stalled:
            details["gpu_stalled"] = b.stalled[m]
        details["evidence"] = _evidence(waits, views.get(m, {}).get(pg))
        desc = f" ({pg_desc[pg]})" if pg_desc.get(pg) else ""
        out.append(
            Anomaly(
                code="fr_not_joined",
                kind="hang",
                level=STALL,
                rank=m,
                file=entry_evidence(e) if e else "",
                message=(
                    f"rank {m} never joined {op} #{seq} on PG {pg}{desc}{' ' + shape if shape else ''}; "
                    f"rank{'s' if len(waiting) > 1 else ''} {_ranks(waiting)} wait{'' if len(waiting) > 1 else 's'} "
                    "for it"
                ),
                time_ns=min(w.created for w in waits) if min(w.created for w in waits) < (1 << 62) else None,
                details=details,
            )
        )
    return out


def _stall_anomalies(b: Blame, pg_desc: dict[str, str]) -> list[Anomaly]:
    out = []
    for r, st in sorted(b.stalled.items()):
        if r in b.roots:
            continue  # folded into its culprit anomaly
        out.append(
            Anomaly(
                code="fr_gpu_stalled",
                kind="hang",
                level=STALL,
                rank=r,
                file=st["file"],
                message=(
                    f"rank {r} stopped completing work on PG {st['pg']}: done through #{st['completed']} while "
                    f"its peers finished #{st['peers_completed']} (a stuck GPU stream or a GPU fault)"
                ),
                details={
                    **{k: v for k, v in st.items() if k != "file"},
                    "pg_desc": pg_desc.get(st["pg"], ""),
                },
            )
        )
    return out


def _missing_dump_anomalies(b: Blame, pg_desc: dict[str, str], missing: list[int]) -> list[Anomaly]:
    """Waits nobody with a dump explains: the ranks without a dump are the suspects."""
    unexplained = [w for w in b.waits if not w.culprits and w.no_dump]
    if not unexplained or b.roots:
        return []
    w = min(unexplained, key=lambda x: x.created)
    e = w.entry or {}
    op = canonical_op(e.get("profiling_name", "")) or "collective"
    suspects = sorted(w.no_dump)
    waiting = sorted({x.rank for x in unexplained if (x.pg, x.seq) == (w.pg, w.seq)})
    return [
        Anomaly(
            code="fr_missing_dump",
            kind="missing_rank",
            level=STALL,
            rank=r,
            file=str(e.get("_file", "")),
            message=(
                f"no Flight Recorder dump from rank {r} while ranks {_ranks(waiting)} wait on {op} #{w.seq} "
                f"on PG {w.pg}: it died or hung before it could dump"
            ),
            time_ns=w.created if w.created < (1 << 62) else None,
            details={
                "pg": w.pg,
                "pg_desc": pg_desc.get(w.pg, ""),
                "seq": w.seq,
                "op": op,
                "waiting_ranks": waiting,
                "missing_dumps": missing,
            },
        )
        for r in suspects
    ]


def _rows(
    b: Blame, views: dict[int, dict[str, PGView]], members: dict[str, set[int]], pg_desc: dict[str, str]
) -> list[dict[str, Any]]:
    culprit_of = {(w.pg, m) for w in b.waits for m in w.culprits}
    waiting = {(w.pg, w.rank) for w in b.waits}
    rows = []
    for name in sorted(members, key=lambda n: (len(n), n)):
        for r in sorted(members[name]):
            v = views.get(r, {}).get(name) if r in views else None
            if r not in views:
                role = "no_dump"
            elif (name, r) in culprit_of:
                role = "culprit" if r in b.roots else "downstream"
            elif r in b.stalled and b.stalled[r]["pg"] == name:
                role = "stalled"
            elif (name, r) in waiting:
                role = "waiting"
            elif v is None:
                role = "unknown"
            else:
                role = "p2p" if v.p2p else "idle"
            last = v.by_seq.get(v.enq) if v and v.enq is not None else None
            rows.append(
                {
                    "pg": name,
                    "pg_desc": pg_desc.get(name, ""),
                    "rank": r,
                    "last_enqueued": v.enq if v else None,
                    "last_completed": v.comp if v else None,
                    "last_enqueued_op": canonical_op(last.get("profiling_name", "")) if last else None,
                    "role": role,
                }
            )
    return rows


def entry_evidence(e: dict[str, Any]) -> str:
    """Where an FR entry is, as a person finds it again: the dump and the entry's number and call (a dump is
    a pickle: a 'file:line' there would point at nothing)."""
    op = canonical_op(e.get("profiling_name", "")) or "collective"
    seq = e.get("collective_seq_id") if (e.get("collective_seq_id") or 0) > 0 else e.get("p2p_seq_id")
    pg = e.get("process_group", ["?"])[0]
    state = f", {e['state']}" if e.get("state") else ""
    return f"{e.get('_file', '?')}, entry {e.get('_index', '?')}: {op} #{seq} on PG {pg}{state}"


def _evidence(waits: list[Wait], culprit: PGView | None) -> list[str]:
    """The waiting ranks' entries for the collective, then the culprit's last entry on that group."""
    lines = [entry_evidence(w.entry) for w in sorted(waits, key=lambda w: w.rank) if w.entry]
    if culprit is not None and culprit.enq in culprit.by_seq:
        lines.append(entry_evidence(culprit.by_seq[culprit.enq]))
    return lines[:8]


def _shape(e: dict[str, Any]) -> str:
    sizes = e.get("input_sizes") or []
    if not sizes or not isinstance(sizes[0], list | tuple):
        return ""
    dims = "x".join(str(d) for d in sizes[0])
    dtype = (e.get("input_dtypes") or [""])[0]
    return f"({dims} {dtype})".replace(" )", ")")


def _ranks(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks) if len(ranks) <= 8 else f"{len(ranks)} ranks ({ranks[0]}..{ranks[-1]})"
