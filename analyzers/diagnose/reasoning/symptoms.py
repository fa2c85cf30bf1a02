"""When no rank logged a cause, read the symptoms: who timed out, on what, and who did not.

Precedence (one incident, the rest is its cascade):
  ranks disagreeing on the timed-out collective (SeqNum / OpType)  -> collective_mismatch
  ranks that never enqueued the timed-out collective, or never timed out while the others did,
  or whose stack is outside any collective while the others wait in one       -> hang, naming them
  stack dumps with most processes waiting in a collective and a few elsewhere -> hang, naming where
  a stuck watchdog (heartbeat monitor)                                        -> hang
  collective timeouts                                                        -> timeout
  only exits and signals                                                     -> crash (exit status)
  only lost connections to processes on the same host (or loopback)         -> crash (the peer exited)
  only lost connections                                                      -> network_fault
  only pasted stack dumps, waiting in a collective or a known wait place      -> hang (low confidence)
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from scope.analyzers.diagnose.knowledge.addresses import LOOPBACK, PEER_ADDR
from scope.analyzers.diagnose.knowledge.c10d_groups import group_label
from scope.analyzers.diagnose.knowledge.own_words import ON_DEMAND_DUMP_REASONS
from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.reasoning.c10d_grouping import comparable, timed_out_seq, timeout_groups
from scope.analyzers.diagnose.reasoning.rootcause import Incident

TIMEOUT_CODES = ("c10d_watchdog_timeout", "gloo_timeout")
PEER_CODES = ("peer_connection_lost", "nccl_peer_lost", "nccl_ib_completion_error")


def symptom_incident(symptoms: list[Anomaly], world: set[int]) -> Incident | None:
    if not symptoms:
        return None
    by_code: dict[str, list[Anomaly]] = defaultdict(list)
    for a in symptoms:
        by_code[a.code].append(a)
    timeouts = [a for c in TIMEOUT_CODES for a in by_code[c]]
    for build in (_desync, _not_joined):
        inc = build(timeouts, by_code, world)
        if inc:
            return _with_cascade(inc, symptoms)
    silent = _silent_ranks(timeouts, world) or _stacks_apart(by_code)
    if silent:
        return _with_cascade(silent, symptoms)
    for code, kind in (
        ("c10d_heartbeat_monitor", "hang"),
        ("c10d_watchdog_timeout", "timeout"),
        ("gloo_timeout", "timeout"),
        ("c10d_pg_status", "timeout"),
        ("collective_wait_cut", "timeout"),  # a cut stack inside a collective (readers/cut_traceback.py)
    ):
        if by_code[code]:
            return _with_cascade(Incident(key=(code,), anomalies=list(by_code[code]), kind=kind, code=code), symptoms)
    exits = _failed_exits(by_code["child_exit"])
    lost = [a for c in PEER_CODES for a in by_code[c]]
    if exits:
        # a worker that died (its exit code or signal) while the others lost their connections to it: the
        # connection errors are the symptom, the dead peer the cause - a missing rank, not the network
        kind = "missing_rank" if lost and not _fabric_error(lost) else "crash"
        inc = Incident(key=("exit",), anomalies=exits, kind=kind, code="child_exit", severity_override="critical")
        return _with_cascade(inc, symptoms)
    if lost and _peers_on_own_host(lost):
        inc = Incident(key=("peer",), anomalies=lost, kind="crash", code="peer_exited_same_host")
        return _with_cascade(inc, symptoms)
    if lost:
        return _with_cascade(Incident(key=("peer",), anomalies=lost, kind="network_fault", code="peer_lost"), symptoms)
    pasted = _pasted_stacks(by_code)
    return _with_cascade(pasted, symptoms) if pasted else None


def _fabric_error(lost: list[Anomaly]) -> bool:
    """An IB completion error is the fabric's own word: the network reading stays possible."""
    return any(a.code == "nccl_ib_completion_error" for a in lost)


def _peers_on_own_host(lost: list[Anomaly]) -> bool:
    """Every peer that a lost connection names is this host itself or loopback, and at least one is named: the
    fabric does not carry such a connection, so it closed because the process at its other end exited (NCCL's
    ncclRemoteError: 'remote process exited or there was a network error' -- here not the network). An IB
    completion error is the fabric's own word, so it keeps the network reading."""
    if any(a.code == "nccl_ib_completion_error" for a in lost):
        return False
    named = same = 0
    for a in lost:
        for peer in PEER_ADDR.findall(a.message):
            short = peer.split(".", 1)[0].lower()
            if re.fullmatch(r"[\d.]+|[\da-f:%\w]*:[\da-f:%\w]*", peer) and not LOOPBACK.match(peer):
                continue  # a bare address: whose host it is, the log does not say
            named += 1
            same += bool(LOOPBACK.match(peer) or (a.host and short == a.host.split(".", 1)[0].lower()))
    return named > 0 and same == named


def _with_cascade(inc: Incident, symptoms: list[Anomaly]) -> Incident:
    ids = {id(a) for a in inc.anomalies}
    inc.cascade.extend(a for a in symptoms if id(a) not in ids)
    return inc


def _desync(timeouts: list[Anomaly], by_code: dict[str, list[Anomaly]], world: set[int]) -> Incident | None:
    """Watchdog lines of one group that disagree on SeqNum or OpType: the ranks are out of step."""
    groups = timeout_groups(
        [a for a in timeouts if a.code == "c10d_watchdog_timeout" and a.rank is not None and "seq" in a.details]
    )
    for key, items in groups.items():  # SeqNums count per group: only one group's can disagree
        per_rank = {a.rank: (a.details["seq"], a.details["op"]) for a in items if a.rank is not None}  # (all are)
        if len(set(per_rank.values())) < 2 or not comparable(key, items):
            continue
        counts = Counter(per_rank.values())
        (top, n_top), (_, n_next) = counts.most_common(2)
        odd = sorted(r for r, v in per_rank.items() if v != top) if n_top > n_next else sorted(per_rank)
        picked = [a for a in items if a.rank in odd] or items
        inc = Incident(key=("c10d_desync",), anomalies=picked, kind="collective_mismatch", code="c10d_desync")
        inc.anomalies[0].details["per_rank"] = {str(r): f"{op} #{seq}" for r, (seq, op) in sorted(per_rank.items())}
        return inc
    return None


def _not_joined(timeouts: list[Anomaly], by_code: dict[str, list[Anomaly]], world: set[int]) -> Incident | None:
    status = by_code["c10d_pg_status"]
    timed_out = {a.rank for a in timeouts + status if a.rank is not None}
    # each suspect with why, and the group it did not join: its lines and timed-out SeqNum (None: not known)
    suspects: dict[int, tuple[str, list[Anomaly] | None, int | None]] = {}
    for key, items in timeout_groups([a for a in timeouts + status if "seq" in a.details]).items():
        seq = timed_out_seq(key, items)
        for a in items:  # a rank whose last enqueued work is below its group's timed-out one never enqueued it
            enqueued = a.details.get("last_enqueued")
            if seq is not None and enqueued is not None and a.rank is not None and enqueued < seq:
                suspects[a.rank] = (f"its last enqueued work is {enqueued}, before {seq}", items, seq)
    inside = {a.rank for a in _job_dumps(by_code["stack_in_collective"]) if a.rank is not None}
    for a in _job_dumps(by_code["stack_elsewhere"]):
        if inside and a.rank is not None and a.rank not in inside:
            outside = f"its main thread is outside any collective ({a.details.get('frame')})"
            suspects.setdefault(a.rank, (outside, None, None))
    if timed_out and len(world) > 1 and not suspects:
        others = world - timed_out - _ranks_with_own_error(by_code)
        if others and len(others) < len(timed_out):
            for r in sorted(others):
                suspects[r] = ("it never timed out while its peers did (it was not in the collective)", None, None)
    if not suspects:
        return None
    anomalies = [
        _suspect_anomaly(r, why, by_code, timeouts + status if group is None else group, seq, set(suspects))
        for r, (why, group, seq) in sorted(suspects.items())
    ]
    return Incident(key=("hang_suspects",), anomalies=anomalies, kind="hang", code="hang_suspects")


def _silent_ranks(timeouts: list[Anomaly], world: set[int]) -> Incident | None:
    """Ranks count from 0: a rank below the highest that timed out which printed nothing at all, while its
    peers timed out, is the one they waited for. Busy (a long step of its own) or stuck, the logs cannot
    tell, so the kind stays timeout; the finding names the rank."""
    timed_out = {a.rank for a in timeouts if a.rank is not None}
    if len(timed_out) < 2:
        return None
    silent = set(range(max(timed_out) + 1)) - timed_out - world
    if not silent or len(silent) >= len(timed_out):
        return None
    op = next((a.details.get("op") for a in timeouts if a.details.get("op")), None)
    seq = next((a.details.get("seq") for a in timeouts if a.details.get("seq") is not None), None)
    what = f"{op} #{seq}" if op and seq is not None else (op or "the collective")
    waiting = ", ".join(map(str, sorted(timed_out)))
    anomalies = [
        Anomaly(
            code="timeout_silent_rank",
            kind="timeout",
            level=STALL,
            rank=r,
            message=f"ranks {waiting} timed out in {what} waiting for rank {r}, which printed nothing: it never "
            "joined (busy with work of its own, or stuck)",
            file=timeouts[0].file,
            line=timeouts[0].line,
            host=None,
            details={"op": op, "waiting_ranks": sorted(timed_out)},
        )
        for r in sorted(silent)
    ]
    return Incident(key=("timeout_silent_rank",), anomalies=anomalies, kind="timeout", code="timeout_silent_rank")


def _stacks_apart(by_code: dict[str, list[Anomaly]]) -> Incident | None:
    """Stack dumps of a hung job (py-spy, faulthandler) with no timeout to go by: when most processes wait
    inside a collective and fewer stand elsewhere, the elsewhere is what the others wait for. Where it waits
    (knowledge/wait_places.py: a DataLoader's queue) says what to do."""
    inside = _job_dumps(by_code["stack_in_collective"])
    outside = _job_dumps(by_code["stack_elsewhere"])
    if not inside or not outside or len(outside) > len(inside):
        return None
    ops = sorted({str(a.details.get("op")) for a in inside if a.details.get("op")})
    anomalies = [_outside_anomaly(a, len(inside), ops) for a in outside]
    if len(inside) < MIN_WAITING_FOR_MEDIUM:  # one rank in a collective, one elsewhere: a snapshot of a healthy job
        for a in anomalies:
            a.details["confidence"] = "low"
    return Incident(key=("hang_stack_outside",), anomalies=anomalies, kind="hang", code="hang_stack_outside")


# Stacks waiting in a collective for the one elsewhere to be the hang at medium confidence: ranks of a healthy
# job snapshot at once stand at different places, one of them in a collective, all the time.
MIN_WAITING_FOR_MEDIUM = 2


def _job_dumps(stacks: list[Anomaly]) -> list[Anomaly]:
    """Dumps that may show a stuck job: not scope's on-demand dumps of a running one, not a dump the log went on
    past to a clean end (file_reading marks it)."""
    return [a for a in stacks if a.details.get("reason") not in ON_DEMAND_DUMP_REASONS and not a.details.get("went_on")]


def _outside_anomaly(stack: Anomaly, n_inside: int, ops: list[str]) -> Anomaly:
    waits = f" ({stack.details['waits_for']})" if stack.details.get("waits_for") else ""
    in_ops = f" in {', '.join(ops)}" if ops else " in a collective"
    details = {"frame": stack.details.get("frame"), "waiting": n_inside}
    if stack.details.get("remedy"):
        details["remedy"] = stack.details["remedy"]
    message = (
        f"{_whose(stack)} stands outside any collective, at {stack.details.get('frame')}{waits}, while "
        f"{n_inside} other stack{_plural(n_inside)} wait{'' if n_inside > 1 else 's'}{in_ops}: the job hangs on it"
    )
    return _stack_hang(stack, "hang_stack_outside", message, details)


def _stack_hang(stack: Anomaly, code: str, message: str, details: dict[str, object]) -> Anomaly:
    """A hang finding read from one stack dump, placed where the dump is."""
    return Anomaly(
        code=code,
        kind="hang",
        level=STALL,
        rank=stack.rank,
        message=message,
        file=stack.file,
        line=stack.line,
        host=stack.host,
        time_ns=stack.time_ns,
        severity="critical",
        details=details,
    )


# What a stack waiting in a collective asks for, when no other stack of the job is in the log.
PEERS_REMEDY = (
    "It waits for a peer that never joined this collective: dump every rank's stack (py-spy dump --pid PID on "
    "each) and look for the one outside the collective (data loading, I/O, a lock, another code path); "
    "TORCH_NCCL_DUMP_ON_TIMEOUT=1 with TORCH_FR_BUFFER_SIZE=2000 records which rank never enqueued it"
)


# What a dumped stack that shows no wait asks for.
UNKNOWN_WAIT_REMEDY = (
    "Dump every rank's whole stack while it hangs (py-spy dump --pid PID on each, --native for C++ frames): the "
    "innermost frames say where each waits (a collective, a data loader, a lock); a rank that ran out of batches "
    "before its peers (a dataset whose size is no multiple of the batch size x the ranks, with no drop_last or "
    "padding sampler) leaves them in a collective it never joins"
)


def _pasted_stacks(by_code: dict[str, list[Anomaly]]) -> Incident | None:
    """Stack dumps pasted into a log with nothing else to go by (no timeout, no error): someone dumped a stuck
    process. Where its main thread waits is the best guess of the hang: a known wait place
    (knowledge/wait_places.py) with its remedy, or a collective whose peer is missing. scope's own dumps
    (a reason in their header) are records of a run, not a report of a stuck one."""
    pasted = _pasted_dumps(by_code["stack_elsewhere"])
    outside = [a for a in pasted if a.details.get("waits_for")]
    inside = _pasted_dumps(by_code["stack_in_collective"])
    # a dump standing in the program's own code, cut before its wait (or waiting where no row knows): still
    # a stuck process someone dumped, the weakest of these guesses
    anomalies = [_waiting_anomaly(a) for a in (outside or inside or pasted)]
    if not anomalies:
        return None
    return Incident(key=("hang_stack_dump",), anomalies=anomalies, kind="hang", code="hang_stack_dump")


def _pasted_dumps(stacks: list[Anomaly]) -> list[Anomaly]:
    """Dumps someone pasted: no reason in the header, the log not gone on past them. Stricter than _job_dumps
    (which drops only the on-demand reasons): scope's watchdog's reason=hang dump of a stall the job may outlive
    is read with the run's records, and faulthandler's dump of a crash (reason=fatal) is the crash's."""
    return [a for a in stacks if not a.details.get("reason") and not a.details.get("went_on")]


def _waiting_anomaly(stack: Anomaly) -> Anomaly:
    if stack.code == "stack_elsewhere" and stack.details.get("waits_for"):
        where = f"waits outside any collective, at {stack.details.get('frame')} ({stack.details.get('waits_for')})"
        remedy = str(stack.details.get("remedy") or "")
    elif stack.code == "stack_elsewhere":
        where = f"stands at {stack.details.get('frame')} (the dump shows no wait below it)"
        remedy = UNKNOWN_WAIT_REMEDY
    elif stack.details.get("waits_for"):  # a collective library's own wait, whose row says what to check
        op = stack.details.get("op")  # the collective it stands in, where the dump names it
        under = f" in {op}" if op and op != "a collective" else ""
        where = f"{stack.details.get('waits_for')}{under}, at {stack.details.get('frame')}"
        remedy = str(stack.details.get("remedy") or PEERS_REMEDY)
    else:
        where = f"waits in {stack.details.get('op')} ({stack.details.get('frame')})"
        remedy = PEERS_REMEDY
    message = f"a stack dump shows {_whose(stack)} {where}: if the job is stuck, it is stuck there"
    details = {"confidence": "low", "frame": stack.details.get("frame"), "remedy": remedy}
    return _stack_hang(stack, "hang_stack_dump", message, details)


def _whose(stack: Anomaly) -> str:
    """Whose main thread the stack is, in words: by rank, by process id, or (faulthandler names neither) by
    the dump's line."""
    if stack.rank is not None:
        return f"rank {stack.rank}'s main thread"
    if stack.details.get("pid"):
        return f"process {stack.details['pid']}'s main thread"
    return f"the main thread dumped at line {stack.line}"


def _plural(n: int) -> str:
    return "s" if n > 1 else ""


QUIET_CODES = ("child_exit", "launcher_sigterm", "abort", "stack_elsewhere", "stack_in_collective")


def _ranks_with_own_error(by_code: dict[str, list[Anomaly]]) -> set[int]:
    """Ranks that logged a failure of their own were inside a collective, not missing from it."""
    return {a.rank for c, items in by_code.items() if c not in QUIET_CODES for a in items if a.rank is not None}


def _suspect_anomaly(
    rank: int, why: str, by_code: dict[str, list[Anomaly]], peers: list[Anomaly], seq: int | None, suspects: set[int]
) -> Anomaly:
    """Evidence for a rank that stayed silent: its exit record or its stack, when there is one. PEERS: the watchdog
    lines of the group it did not join (every one where that is not known), which name the collective and the ranks
    that waited in it (SUSPECTS, the ranks that never joined, are not among them); SEQ: that group's timed-out
    SeqNum, where the group is known."""
    own = [a for c in ("stack_elsewhere", "child_exit") for a in by_code[c] if a.rank == rank]
    ref = own[0] if own else None
    op = next((a.details["op"] for a in peers if a.details.get("op") and a.rank != rank), None)
    op = op or next((a.details["op"] for a in peers if a.details.get("op")), None)
    what = f" in {op}" if op else ""
    details: dict[str, object] = {
        "op": op,
        "waiting_ranks": sorted({a.rank for a in peers if a.rank is not None and a.rank not in suspects}),
        "reason": why,
    }
    labels = {group_label(a.details) for a in peers} - {None}
    if seq is not None and len(labels) == 1:
        details.update(group=labels.pop(), seq=seq)  # one group's collective: named as such
    return Anomaly(
        code="hang_suspect",
        kind="hang",
        level=STALL,
        rank=rank,
        message=f"rank {rank} never joined the collective{what} its peers timed out in: {why}",
        file=ref.file if ref else "",
        line=ref.line if ref else 0,
        host=ref.host if ref else None,
        time_ns=ref.time_ns if ref else None,
        details=details,
    )


def _failed_exits(exits: list[Anomaly]) -> list[Anomaly]:
    """Exits that are not the launcher's SIGTERM clean-up; torchrun's 'first failure' first."""
    roots = [a for a in exits if a.details.get("torchrun_root")]
    if roots:
        return roots
    return [a for a in exits if a.details.get("signal") != "SIGTERM" and a.details.get("exitcode") not in (0, None)]
