"""Desyncs visible only in NCCL_DEBUG=INFO collective lines (NCCL_DEBUG_SUBSYS=COLL).

Every rank logs each collective it posts:
  host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a sendbuff 0x.. recvbuff 0x.. count 1024 datatype 7 op 0
      root 0 comm 0x55d8.. [nranks=4] stream 0x..
The N-th collective of a communicator (its opCount, printed in hex) must be the same call on every rank:
same collective, count, datatype, reduction op and root. A rank that posts something else for an opCount
its peers agree on is the culprit of the desync. Point-to-point calls (Send/Recv) differ by design.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator

from scope.analyzers.diagnose.model import MISMATCH, Anomaly, CollCall
from scope.analyzers.diagnose.readers.nccl_prefix import NcclPrefix, nccl_lines

# The message of a collective's INFO line and of a communicator's init line (after the prefix nccl_prefix.py reads).
_CALL = re.compile(
    r"(\w+): opCount ([0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ "
    r"count (\d+) datatype (\d+) op (\d+) root (-?\d+) comm (0x[0-9a-fA-F]+)(?: \S+)*? \[nranks=(\d+)\]"
)
_INIT = re.compile(r"comm (0x[0-9a-fA-F]+) rank (\d+) nranks (\d+)(.*)$")
_COMM_ID = re.compile(r"commId (0x[0-9a-fA-F]+)")
POINT_TO_POINT = ("Send", "Recv", "SendRecv")
DATATYPES = {
    0: "int8",
    1: "uint8",
    2: "int32",
    3: "uint32",
    4: "int64",
    5: "uint64",
    6: "float16",
    7: "float32",
    8: "float64",
    9: "bfloat16",
    10: "fp8_e4m3",
    11: "fp8_e5m2",
}
REDOPS = {0: "sum", 1: "prod", 2: "max", 3: "min", 4: "avg"}


def _info_lines(text: str) -> Iterator[tuple[int, NcclPrefix]]:
    """The NCCL INFO lines of a log (those with the NCCL token and no source location, as NCCL writes them)
    whose host is named: a call is told apart by its host, and a blanked-out one names none."""
    return ((n, p) for n, p in nccl_lines(text) if p.level == "INFO" and not p.source and p.host)


def collective_calls(text: str, file: str = "", year: int = 1970) -> list[CollCall]:
    comms: dict[str, tuple[int, str]] = {}  # comm pointer -> (rank, commId)
    calls: list[tuple[int, NcclPrefix, re.Match[str]]] = []
    for lineno, p in _info_lines(text):
        if m := _CALL.match(p.message):
            calls.append((lineno, p, m))
        elif m := _INIT.search(p.message):  # the first 'comm 0x.. rank N nranks M' of the line
            cid = _COMM_ID.search(m.group(4))
            comms[m.group(1)] = (int(m.group(2)), cid.group(1) if cid else f"nranks={m.group(3)}")
    out = []
    hosts = {p.host for _, p, _ in calls}
    for lineno, p, m in calls:
        coll = m.group(1)
        if coll in POINT_TO_POINT:
            continue
        rank, group = comms.get(m.group(7), (None, f"nranks={m.group(8)}"))
        if rank is None and len(hosts) == 1 and not comms:
            rank = p.device  # one host, no init lines: one process per GPU, the device is the rank
        out.append(
            CollCall(
                who=f"{p.host}:{p.pid} [{p.device}]",
                rank=rank,
                group=group,
                op_count=int(m.group(2), 16),
                coll=coll,
                count=int(m.group(3)),
                datatype=int(m.group(4)),
                op=int(m.group(5)),
                root=int(m.group(6)),
                file=file,
                line=lineno,
                host=p.host,
            )
        )
    return out


def describe(call: tuple[str, int, int, int, int]) -> str:
    coll, count, dtype, op, root = call
    return f"{coll} count {count} {DATATYPES.get(dtype, f'datatype {dtype}')} {REDOPS.get(op, f'op {op}')} root {root}"


def mismatches(calls: list[CollCall]) -> list[Anomaly]:
    """The first opCount of a communicator on which ranks posted different calls: the odd ranks."""
    by_op: dict[tuple[str, int], dict[str, CollCall]] = defaultdict(dict)
    for c in calls:
        by_op[(c.group, c.op_count)].setdefault(c.who, c)
    for (group, op_count), per_rank in sorted(by_op.items(), key=lambda kv: kv[0][1]):
        if len(per_rank) < 2:
            continue
        counts = Counter(c.call() for c in per_rank.values())
        if len(counts) < 2:
            continue
        (top, n_top), (_, n_next) = counts.most_common(2)
        odd = [c for c in per_rank.values() if c.call() != top] if n_top > n_next else list(per_rank.values())
        agreed = describe(top) if n_top > n_next else None
        out = []
        for c in odd:
            label = f"rank {c.rank}" if c.rank is not None else c.who
            msg = f"{label} posted {describe(c.call())} as collective #{op_count} of its communicator" + (
                f" while {n_top} peers posted {agreed}" if agreed else " while its peers posted other calls"
            )
            out.append(
                Anomaly(
                    code="info_collective_mismatch",
                    kind="collective_mismatch",
                    level=MISMATCH,
                    message=msg,
                    file=c.file,
                    line=c.line,
                    rank=c.rank,
                    host=c.host,
                    details={
                        "op_count": op_count,
                        "group": group,
                        "posted": describe(c.call()),
                        "peers_posted": agreed,
                        "process": c.who,
                        "confidence": "high",
                    },
                )
            )
        return out
    return []
