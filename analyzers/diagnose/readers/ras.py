"""NCCL RAS status (the `ncclras` client, or the RAS port 28028) as text or JSON, into anomalies.

NCCL >= 2.24 runs a RAS thread in every process; asked for its status it gathers every rank's view of
every communicator. Text output (all versions): a "Job summary", a "Communicators" table (Group, Comms,
Nodes, Ranks per node / per comm / in group, Status, Errors), then "Errors" (INCOMPLETE: no data from
some processes or ranks; DEAD: processes unreachable; #G-C (hash) ERROR: ranks that reported an NCCL
error) and "Warnings" (TIMEOUT; #G-C (hash) MISMATCH: ranks at different status or at different
collective operation counts). NCCL only names the outliers of a group (a single rank, or a few). JSON
(2.28.7+, `SET FORMAT json`): per communicator every rank's status and per-collective counts, and
`missing_ranks` with `unresponsive` / `considered_dead`.

RAS is evidence, not a verdict: it can say "OK" while PyTorch times out (the stuck work may be outside
NCCL's counters). Ranks are communicator ranks; they name global ranks only for communicators of the
job's full size (the largest), for the others they stay in the details.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from scope.errors import ScopeError

# A file (or the head of one) that holds a RAS status.
_TEXT_MARKERS = ("Communicators...", "Group     Comms")
_JSON_KEYS = (b'"communicators"', b'"communicators_count"')
HEAD_CHARS = 4096
NCCL_SUCCESS, NCCL_IN_PROGRESS = 0, 7
NCCL_RESULTS = {
    1: "Unhandled CUDA error",
    2: "System error",
    3: "Internal error",
    4: "Invalid argument",
    5: "Invalid usage",
    6: "Remote process error",
    8: "Timeout",
}


@dataclass
class RasRank:
    rank: int | None = None  # communicator rank; None for a process line
    node: str = ""  # the node's IP as RAS prints it
    pid: int | None = None
    gpu: str = ""
    dead: bool = False


@dataclass
class RasComm:
    label: str  # "#0-0 (fa93daea854b060b)" in text, the hash in JSON
    size: int | None = None
    status: str = ""
    errors: set[str] = field(default_factory=set)
    missing: list[RasRank] = field(default_factory=list)
    n_missing: int = 0
    # op -> [(count, n_ranks, named ranks)]: NCCL names only the outliers of each group.
    op_groups: dict[str, list[tuple[int, int, list[int]]]] = field(default_factory=dict)
    # status -> (n_ranks, named ranks)
    status_groups: dict[str, tuple[int, list[int]]] = field(default_factory=dict)
    # error text -> (n_ranks, named ranks)
    rank_errors: dict[str, tuple[int, list[int]]] = field(default_factory=dict)


@dataclass
class RasStatus:
    path: str
    fmt: str
    nccl_version: str = ""
    comms: list[RasComm] = field(default_factory=list)
    missing_processes: list[RasRank] = field(default_factory=list)
    n_missing_processes: int = 0
    dead_processes: list[RasRank] = field(default_factory=list)
    n_dead: int = 0
    timeouts: int = 0
    comm_sizes: list[int] = field(default_factory=list)  # of every communicator, healthy ones too

    @property
    def world(self) -> int | None:
        sizes = self.comm_sizes + [c.size for c in self.comms if c.size]
        return max(sizes) if sizes else None


def looks_like_ras(head: str | bytes) -> bool:
    """RAS text has its section titles; RAS JSON its communicators array."""
    raw = head if isinstance(head, bytes) else head[:HEAD_CHARS].encode("utf-8", errors="replace")
    if raw.lstrip()[:1] == b"{" and any(k in raw for k in _JSON_KEYS) and b'"nccl_version"' in raw:
        return True
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    return all(m in head for m in _TEXT_MARKERS) or ("Job summary\n====" in head and "Communicators" in head)


def parse_ras(text: str, path: str) -> RasStatus:
    """Text or JSON, whichever the capture is; ScopeError when it is neither."""
    start = text.find("{")
    if start >= 0 and '"communicators"' in text and text[:start].strip() in ("", "OK"):
        return parse_ras_json(text[start:], path)
    if not looks_like_ras(text):
        raise ScopeError(f"{path}: not an NCCL RAS status (no 'Communicators' table)")
    return parse_ras_text(text, path)


# ---- text ------------------------------------------------------------------------------------------

_VERSION = re.compile(r"^NCCL version (\S+)")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+([A-Z,]+)\s*$")
_COMM = re.compile(r"^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) ([A-Z,]+)\s*$")
_SECTION = re.compile(r"^(Job summary|Communicators\.\.\..*|Errors|Warnings)\s*$")
_COUNT = re.compile(r"^\s+(?:Missing communicator data from|Encountered) (\d+)")
_DEAD_COUNT = re.compile(r"^\s+(\d+) job process(?:es are| is) considered dead")
_PROCESS = re.compile(r"^\s+Process (\d+) on node (\S+) managing GPUs? (.*?)\s*$")
_RANK = re.compile(r"^\s+Rank (\d+)(?: (.*?))? -- (?:GPU (.*?) managed by process (\d+) on node (\S+)|\[process)")
_GROUP_OPS = re.compile(r"^\s+(\d+) ranks have (?:launched up to operation (\d+)|not launched any operations)")
_GROUP_STATUS = re.compile(r"^\s+(\d+) ranks have status (\w+)")
_GROUP_ERROR = re.compile(r"^\s+(\d+) ranks reported (.+?)\s*$")
_DIFF_OPS = re.compile(r"^\s+Communicator ranks have different (\w+) operation counts")
_ONE_OPS = re.compile(r"^has (?:launched up to operation (\d+)|not launched any operations)")
_ONE_STATUS = re.compile(r"^has status (\w+)")
_ONE_ERROR = re.compile(r"^reported (.+)")


@dataclass
class _TextState:
    status: RasStatus
    section: str = ""
    block: str = ""  # INCOMPLETE / DEAD / TIMEOUT at job level, or a communicator's label
    comm: RasComm | None = None
    op: str = ""
    group: list[int] | None = None  # the named ranks of the group being listed
    comms: dict[str, RasComm] = field(default_factory=dict)
    groups: dict[int, tuple[int, str]] = field(default_factory=dict)  # table group -> (ranks per comm, status)


def parse_ras_text(text: str, path: str) -> RasStatus:
    """Tolerant: lines it does not know are skipped; an unindented stranger ends the block it interrupts."""
    st = _TextState(RasStatus(path=path, fmt="text"))
    for line in text.splitlines():
        line = line.rstrip()
        if not line or set(line) == {"="}:
            continue
        if m := _VERSION.match(line):
            st.status.nccl_version = st.status.nccl_version or m.group(1)
        elif m := _SECTION.match(line):
            st.section, st.block, st.comm = m.group(1).split(".")[0], "", None
        elif st.section == "Communicators" and (m := _TABLE_ROW.match(line)):
            st.groups[int(m.group(1))] = (int(m.group(5)), m.group(7))
        elif st.section in ("Errors", "Warnings"):
            _text_line(st, line)
    st.status.comms = list(st.comms.values())
    st.status.comm_sizes = [size for size, _ in st.groups.values()]
    dead = {(p.node, p.pid) for p in st.status.dead_processes}
    for comm in st.status.comms:
        for r in comm.missing:
            r.dead = (r.node, r.pid) in dead
    return st.status


def _text_line(st: _TextState, line: str) -> None:
    if not line[0].isspace():
        if line in ("INCOMPLETE", "DEAD", "TIMEOUT"):
            st.block, st.comm, st.group = line, None, None
        elif m := _COMM.match(line):
            label = f"#{m.group(1)}-{m.group(2)} ({m.group(3)})"
            size, state = st.groups.get(int(m.group(1)), (None, ""))
            st.comm = st.comms.setdefault(label, RasComm(label=label, size=size, status=state))
            st.comm.errors.update(m.group(4).split(","))
            st.block, st.op, st.group = m.group(4), "", None
        else:  # a line RAS does not write (another tool's output): it ends the block it interrupts
            st.block, st.comm, st.group = "", None, None
        return
    if st.comm is None:
        _job_line(st, line)
    else:
        _comm_line(st, st.comm, line)


def _job_line(st: _TextState, line: str) -> None:
    s = st.status
    if st.block == "DEAD" and (m := _DEAD_COUNT.match(line)):
        s.n_dead = int(m.group(1))
    elif m := _COUNT.match(line):
        if st.block == "INCOMPLETE":
            s.n_missing_processes = int(m.group(1))
        elif st.block == "TIMEOUT":
            s.timeouts = int(m.group(1))
    elif m := _PROCESS.match(line):
        proc = RasRank(node=m.group(2), pid=int(m.group(1)), gpu=m.group(3), dead=st.block == "DEAD")
        (s.dead_processes if st.block == "DEAD" else s.missing_processes).append(proc)


def _comm_line(st: _TextState, comm: RasComm, line: str) -> None:
    if m := _COUNT.match(line):
        comm.n_missing = int(m.group(1))
    elif m := _DIFF_OPS.match(line):
        st.op, st.group = m.group(1), None
    elif m := _GROUP_OPS.match(line):
        st.group = []
        comm.op_groups.setdefault(st.op or "?", []).append((int(m.group(2) or 0), int(m.group(1)), st.group))
    elif m := _GROUP_STATUS.match(line):
        st.group = []
        comm.status_groups[m.group(2)] = (int(m.group(1)), st.group)
    elif m := _GROUP_ERROR.match(line):
        st.group = []
        comm.rank_errors[m.group(2)] = (int(m.group(1)), st.group)
    elif m := _RANK.match(line):
        _rank_line(st, comm, m)


def _rank_line(st: _TextState, comm: RasComm, m: re.Match[str]) -> None:
    rank, what = int(m.group(1)), m.group(2) or ""
    if st.block == "INCOMPLETE":
        comm.missing.append(RasRank(rank, m.group(5) or "", int(m.group(4)) if m.group(4) else None, m.group(3) or ""))
    elif not what and st.group is not None:  # one of the ranks of the group just counted
        st.group.append(rank)
    elif o := _ONE_OPS.match(what):
        comm.op_groups.setdefault(st.op or "?", []).append((int(o.group(1) or 0), 1, [rank]))
    elif o := _ONE_STATUS.match(what):
        comm.status_groups[o.group(1)] = (1, [rank])
    elif o := _ONE_ERROR.match(what):
        comm.rank_errors.setdefault(o.group(1), (1, []))[1].append(rank)


# ---- JSON ------------------------------------------------------------------------------------------


def parse_ras_json(text: str, path: str) -> RasStatus:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ScopeError(f"{path}: NCCL RAS JSON does not parse ({type(exc).__name__}: {str(exc)[:80]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("communicators"), list):
        raise ScopeError(f"{path}: not an NCCL RAS status (no 'communicators' list)")
    status = RasStatus(path=path, fmt="json", nccl_version=str(data.get("nccl_version") or ""))
    ras = _dict(data.get("ras"))
    status.timeouts = _int(ras.get("timeouts_count")) or 0
    for raw in data["communicators"]:
        if isinstance(raw, dict):
            status.comms.append(_json_comm(raw))
    return status


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _json_comm(raw: dict[str, Any]) -> RasComm:
    comm = RasComm(label=str(raw.get("hash") or "?"), size=_int(raw.get("size")))
    ranks = [r for r in raw.get("ranks") or [] if isinstance(r, dict) and _int(r.get("rank")) is not None]
    for m in raw.get("missing_ranks") or []:
        if isinstance(m, dict) and _int(m.get("rank")) is not None:
            st = _dict(m.get("status"))
            comm.missing.append(
                RasRank(
                    m["rank"],
                    str(m.get("host") or ""),
                    _int(m.get("pid")),
                    str(m.get("cuda_dev", "")),
                    bool(st.get("considered_dead")),
                )
            )
    comm.n_missing = len(comm.missing)
    if comm.missing:
        comm.errors.add("INCOMPLETE")
    by_op: dict[str, dict[int, list[int]]] = {}
    by_status: dict[str, list[int]] = {}
    for r in ranks:
        counts = _dict(r.get("collective_counts"))
        for op, n in counts.items():
            if _int(n) is not None:
                by_op.setdefault(str(op), {}).setdefault(n, []).append(r["rank"])
        state, error = _json_rank_state(r)
        by_status.setdefault(state, []).append(r["rank"])
        if error:
            comm.rank_errors.setdefault(error, (0, []))[1].append(r["rank"])
    for op, groups in by_op.items():
        if len(groups) > 1:
            comm.errors.add("MISMATCH")
            comm.op_groups[op] = [(n, len(rs), sorted(rs)) for n, rs in sorted(groups.items())]
    if len(by_status) > 1:
        comm.errors.add("MISMATCH")
        comm.status_groups = {s: (len(rs), sorted(rs)) for s, rs in by_status.items()}
    comm.rank_errors = {e: (len(rs), sorted(rs)) for e, (_, rs) in comm.rank_errors.items()}
    if comm.rank_errors:
        comm.errors.add("ERROR")
    comm.status = max(by_status, key=lambda s: len(by_status[s])) if by_status else ""
    return comm


def _json_rank_state(r: dict[str, Any]) -> tuple[str, str]:
    """(RUNNING / INIT / FINALIZE / ABORT, the NCCL error it reported or '') as the text client derives them."""
    st = _dict(r.get("status"))
    init, err = _int(st.get("init_state")) or 0, _int(st.get("async_error")) or 0
    if st.get("abort_flag"):
        state = "ABORT"
    elif st.get("finalize_called") or st.get("destroy_flag"):
        state = "FINALIZE"
    else:
        state = "RUNNING" if init == NCCL_SUCCESS else "INIT"
    bad = next((e for e in (init, err) if e not in (NCCL_SUCCESS, NCCL_IN_PROGRESS)), None)
    return state, (NCCL_RESULTS.get(bad, f"NCCL error {bad}") if bad is not None else "")
