"""What an NCCL RAS status says about a failure, as anomalies for root-cause selection (see ras.py).

- ranks RAS got no data from (INCOMPLETE, DEAD; JSON `missing_ranks`)        -> missing_rank
- ranks at different operation counts of one collective (MISMATCH)            -> hang, naming the
  outlying ranks and whether they are ahead of or behind the others
- ranks at a different communicator status (ABORT / FINALIZE / INIT)          -> nccl_error / missing_rank / hang
- ranks that reported an NCCL error (ERROR)                                   -> nccl_error
A status with every communicator OK yields nothing: RAS can say OK while PyTorch times out.
"""

from __future__ import annotations

from typing import Any

from scope.analyzers.diagnose.model import COMM_ERROR, MISMATCH, Anomaly
from scope.analyzers.diagnose.readers.ras import RasComm, RasStatus

MISSING_ACTION = (
    "RAS lost contact with these ranks: read their stderr and exit status and their hosts' kernel logs "
    "(OOM killer, Xid); a process that is alive but silent is stuck outside NCCL (py-spy dump --pid). "
    "Unresponsive for about 5 s means busy or stuck, considered dead after about 60 s means gone."
)
OPS_ACTION = (
    "Ranks are at different counts of one collective: dump the stacks of the outlying ranks "
    "(py-spy dump --pid PID) to see where they wait; a rank behind is stuck before the collective (data, I/O, a "
    "lock, another code path), a rank ahead issued a collective the others skipped (a rank-dependent branch)."
)
STATUS_ACTION = (
    "Some ranks left or aborted the communicator while the others still run it: read the log of those ranks "
    "for the error that made them abort or finish early."
)
ERROR_ACTION = "NCCL reported an error on these ranks: read their NCCL WARN lines (NCCL_DEBUG=WARN) for the cause."
STATUS_KIND = {"ABORT": "nccl_error", "FINALIZE": "missing_rank", "NOCOMM": "missing_rank", "INIT": "hang"}


def ras_anomalies(status: RasStatus, file: str, host: str | None = None) -> list[Anomaly]:
    world = status.world
    out: list[Anomaly] = []
    for comm in status.comms:
        global_ranks = world is not None and comm.size == world
        out.extend(_missing(comm, file, host, global_ranks))
        out.extend(_op_counts(comm, file, host, global_ranks))
        out.extend(_status(comm, file, host, global_ranks))
        out.extend(_errors(comm, file, host, global_ranks))
    if not any(a.kind == "missing_rank" for a in out):
        out.extend(_missing_processes(status, file, host))
    return out


def _anomaly(code: str, kind: str, level: int, message: str, file: str, host: str | None, **details: Any) -> Anomaly:
    return Anomaly(code=code, kind=kind, level=level, message=message, file=file, host=host, details=details)


def _named(ranks: list[int], global_ranks: bool) -> list[int | None]:
    return list(ranks) if global_ranks and ranks else [None]


def _missing(comm: RasComm, file: str, host: str | None, global_ranks: bool) -> list[Anomaly]:
    out = []
    for m in comm.missing:
        state = "considered dead" if m.dead else "not responding"
        where = f"process {m.pid} on node {m.node}" if m.pid else "process unknown"
        msg = f"NCCL RAS got no data from communicator rank {m.rank} of {comm.label} ({where}, {state})"
        a = _anomaly(
            "ras_missing_rank",
            "missing_rank",
            MISMATCH,
            msg,
            file,
            host,
            comm=comm.label,
            comm_rank=m.rank,
            node=m.node,
            pid=m.pid,
            dead=m.dead,
            action=MISSING_ACTION,
        )
        a.rank = m.rank if global_ranks else None
        out.append(a)
    if comm.n_missing and not comm.missing:  # NCCL did not list them (too many)
        msg = f"NCCL RAS got no data from {comm.n_missing} ranks of {comm.label}"
        out.append(
            _anomaly(
                "ras_missing_rank",
                "missing_rank",
                MISMATCH,
                msg,
                file,
                host,
                comm=comm.label,
                missing=comm.n_missing,
                action=MISSING_ACTION,
            )
        )
    return out


def _missing_processes(status: RasStatus, file: str, host: str | None) -> list[Anomaly]:
    procs = status.dead_processes + status.missing_processes
    n = status.n_dead + status.n_missing_processes
    if not procs and not n:
        return []
    named = ", ".join(f"{p.pid} on {p.node}" for p in procs[:6])
    msg = f"NCCL RAS got no data from {n or len(procs)} job process(es)" + (f" ({named})" if named else "")
    return [
        _anomaly(
            "ras_missing_rank",
            "missing_rank",
            MISMATCH,
            msg,
            file,
            host,
            processes=[{"pid": p.pid, "node": p.node, "gpu": p.gpu, "dead": p.dead} for p in procs],
            action=MISSING_ACTION,
        )
    ]


def _op_counts(comm: RasComm, file: str, host: str | None, global_ranks: bool) -> list[Anomaly]:
    out = []
    for op, groups in comm.op_groups.items():
        if len(groups) < 2:
            continue
        top = max(n for n, _, _ in groups)
        biggest = max(groups, key=lambda g: (g[1], -g[0]))
        outliers = [g for g in groups if g is not biggest]
        for count, n, ranks in outliers:
            side = "ahead of" if count == top else "behind"
            msg = (
                f"NCCL RAS: {n} rank(s) of {comm.label} {side} the others at {op}: launched up to operation "
                f"{count} while {biggest[1]} rank(s) are at {biggest[0]}"
            )
            for r in _named(ranks, global_ranks):
                a = _anomaly(
                    "ras_op_count_mismatch",
                    "hang",
                    MISMATCH,
                    msg,
                    file,
                    host,
                    comm=comm.label,
                    op=op,
                    side=side,
                    count=count,
                    others_count=biggest[0],
                    comm_ranks=ranks,
                    groups=[{"count": c, "ranks": k, "named": rs} for c, k, rs in groups],
                    action=OPS_ACTION,
                )
                a.rank = r
                out.append(a)
    return out


def _status(comm: RasComm, file: str, host: str | None, global_ranks: bool) -> list[Anomaly]:
    if len(comm.status_groups) < 2:
        return []
    main = max(comm.status_groups, key=lambda s: comm.status_groups[s][0])
    out = []
    for state, (n, ranks) in comm.status_groups.items():
        if state == main:
            continue
        msg = f"NCCL RAS: {n} rank(s) of {comm.label} have status {state} while the others are {main}"
        for r in _named(ranks, global_ranks):
            a = _anomaly(
                "ras_status_mismatch",
                STATUS_KIND.get(state, "hang"),
                MISMATCH,
                msg,
                file,
                host,
                comm=comm.label,
                status=state,
                others_status=main,
                comm_ranks=ranks,
                action=STATUS_ACTION,
            )
            a.rank = r
            out.append(a)
    return out


def _errors(comm: RasComm, file: str, host: str | None, global_ranks: bool) -> list[Anomaly]:
    out = []
    for error, (n, ranks) in comm.rank_errors.items():
        msg = f"NCCL RAS: {n or len(ranks)} rank(s) of {comm.label} reported {error}"
        for r in _named(ranks, global_ranks):
            a = _anomaly(
                "ras_nccl_error",
                "nccl_error",
                COMM_ERROR,
                msg,
                file,
                host,
                comm=comm.label,
                error=error,
                comm_ranks=ranks,
                action=ERROR_ACTION,
            )
            a.rank = r
            out.append(a)
    return out
