"""Time every collective the job issues from Python, aggregated per process group and op (live slow links).

`torch.distributed`'s collectives (and `distributed_c10d`'s, the same functions) are wrapped once the module
is imported. Per call, on the calling thread: two clock reads, the group's name (cached per group object),
the tensors' bytes and one locked add into cumulative counters per (group, op). An asynchronous call
(`async_op=True`, DDP comm hooks, FSDP) is timed from its issue to its completion by a callback on its
future, for CPU tensors (gloo completes the future when the data has arrived); a CUDA tensor's future
completes at launch, so there only the time in the call counts. The hook thread reads the counters with
each progress line and writes the difference: nothing is written from the job's threads, memory is
bounded (MAX_KEYS keys, MAX_GROUPS cached names; more are counted as dropped), and a failure of the
bookkeeping never reaches the job: the wrapped call runs, and its own result or exception comes back.

Seen: collectives issued through the Python API (comm hooks, FSDP, pipeline send/recv, explicit calls), and
with `scope run --time-ddp`, gloo DDP's gradient all-reduces, which ddp_reducer.py routes through a comm hook.
Not seen: the NCCL DDP reducer's (C++ only; the future of a Python all-reduce on CUDA completes at enqueue anyway).
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from scope.collective_calls import PY_CALLS

MAX_KEYS = 64  # (group, op) pairs counted; a job with more groups has the rest counted as dropped
MAX_GROUPS = 256  # group objects whose names are cached
DEFAULT_GROUP = "0"  # the default group's name (torch names it "0")
# Calls made of other calls in the table, which are timed each (batch_isend_irecv's isends and irecvs to their
# completion; the object collectives' all_gather or broadcast of sizes and of the pickled bytes): left unwrapped,
# so their parts are timed and counted as before.
COMPOSITE_CALLS = frozenset({"batch_isend_irecv", "all_gather_object", "broadcast_object_list"})


# torch.distributed's collective functions: the table the diagnosis reads stacks with (scope/collective_calls.py,
# in the core package, so the rank imports no scope.analyzers registry), less the composite calls.
OPS = tuple(sorted(PY_CALLS - COMPOSITE_CALLS))


class CollectiveTimer:
    """Cumulative per (group, op): [calls, bytes, ns in the collective]; the last collective entered."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self.totals: dict[tuple[str, str], list[int]] = {}
        self.seq: dict[str, int] = {}  # collectives entered per group (the hook's own count)
        self.last: tuple[str, int, str, int] | None = None  # (group, seq, op, entered at ns epoch)
        self.dropped = 0
        self._names: dict[int, str] = {}
        self._lock = threading.Lock()
        self._local = threading.local()  # a collective calling another (all_gather_object) counts once
        self._written: dict[tuple[str, str], tuple[int, int, int]] = {}

    # -- wrapping (once, after torch.distributed imported) --------------------------------------
    def wrap(self, module: ModuleType) -> None:
        c10d = getattr(module, "distributed_c10d", None)
        wrapped = 0
        for op in OPS:
            original = getattr(module, op, None)
            if not callable(original) or getattr(original, "_scope_timed", False):
                continue
            timed = self._timed(op, original)
            setattr(module, op, timed)
            if c10d is not None and getattr(c10d, op, None) is original:
                setattr(c10d, op, timed)
            wrapped += 1
        self.log.info(f"collectives timed: {wrapped} torch.distributed functions")

    def _timed(self, op: str, original: Callable[..., Any]) -> Callable[..., Any]:
        group_at = _group_position(original)
        timer = self
        compiling = compiling_check()

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            # Under torch.compile's tracing: straight to the original, which Dynamo maps to its traceable
            # collective (a clock read or a thread-local here would break the graph).
            if compiling():
                return original(*args, **kwargs)
            local = timer._local
            if getattr(local, "inside", False):
                return original(*args, **kwargs)
            try:
                t0 = time.perf_counter_ns()
                key = timer._enter(op, args, kwargs, group_at)
            except Exception:
                key = None
            local.inside = True
            try:
                result = original(*args, **kwargs)
            finally:
                local.inside = False
            if key is not None:
                try:
                    timer._leave(key, t0, args, kwargs, result)
                except Exception as exc:
                    timer._failed(exc)
            return result

        timed._scope_timed = True  # type: ignore[attr-defined]
        return timed

    def _enter(self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], group_at: int | None) -> tuple[str, str]:
        group = kwargs.get("group") if group_at is None or len(args) <= group_at else args[group_at]
        name = self._group_name(group)
        seq = self.seq.get(name, 0) + 1
        self.seq[name] = seq
        self.last = (name, seq, op, time.time_ns())
        return (name, op)

    def _leave(
        self,
        key: tuple[str, str],
        t0: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        result: Any,
    ) -> None:
        size, cpu = _tensor_bytes(args, kwargs)
        if cpu and result is not None and hasattr(result, "get_future"):  # a Work: async_op=True, isend, irecv
            future = result.get_future()
            future.add_done_callback(lambda _f: self._add(key, size, time.perf_counter_ns() - t0))
            return
        self._add(key, size, time.perf_counter_ns() - t0)

    def _add(self, key: tuple[str, str], size: int, ns: int) -> None:
        with self._lock:
            row = self.totals.get(key)
            if row is None:
                if len(self.totals) >= MAX_KEYS:
                    self.dropped += 1
                    return
                row = self.totals[key] = [0, 0, 0]
            row[0] += 1
            row[1] += size
            row[2] += ns

    def _failed(self, exc: Exception) -> None:
        self.dropped += 1
        if self.dropped == 1:
            self.log.error("timing a collective", exc)

    def _group_name(self, group: Any) -> str:
        if group is None:
            return DEFAULT_GROUP
        name = self._names.get(id(group))
        if name is None:
            name = _pg_name(group)
            if len(self._names) < MAX_GROUPS:
                self._names[id(group)] = name
        return name

    # -- the hook thread -------------------------------------------------------------------------
    def since_last(self) -> tuple[dict[str, int], list[list[Any]]]:
        """Since the previous call: ns in collectives per group, and per (group, op) [group, op, calls,
        bytes, ns, the group's last sequence number]."""
        with self._lock:
            totals = {k: (v[0], v[1], v[2]) for k, v in self.totals.items()}
        per_group: dict[str, int] = {}
        rows: list[list[Any]] = []
        for key, (n, size, ns) in totals.items():
            n0, size0, ns0 = self._written.get(key, (0, 0, 0))
            if n == n0:
                continue
            per_group[key[0]] = per_group.get(key[0], 0) + ns - ns0
            rows.append([key[0], key[1], n - n0, size - size0, ns - ns0, self.seq.get(key[0], 0)])
        self._written = totals
        return per_group, rows

    def last_entered(self) -> dict[str, Any] | None:
        """For the heartbeat: the last collective entered (a hang's culprit is the rank that never joined)."""
        last = self.last
        if last is None:
            return None
        return {"group": last[0], "seq": last[1], "op": last[2], "t_ns": last[3]}


def compiling_check() -> Callable[[], bool]:
    import sys

    compiler = getattr(sys.modules.get("torch"), "compiler", None)
    check = getattr(compiler, "is_compiling", None)
    return check if callable(check) else _never


def _never() -> bool:
    return False


def _group_position(fn: Callable[..., Any]) -> int | None:
    """Where `group` stands among the positional parameters."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return names.index("group") if "group" in names else None


def _pg_name(group: Any) -> str:
    try:
        from torch.distributed import distributed_c10d

        return str(distributed_c10d._get_process_group_name(group))
    except Exception:
        return f"pg{id(group) & 0xFFFF:x}"


def _tensor_bytes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, bool]:
    """Bytes of the first tensor (or list of tensors) among the arguments, and whether it lives on the CPU."""
    for value in (*args, *kwargs.values()):
        tensors = value if isinstance(value, (list, tuple)) else [value]
        if tensors and hasattr(tensors[0], "element_size") and hasattr(tensors[0], "numel"):
            size = sum(int(t.numel()) * int(t.element_size()) for t in tensors if hasattr(t, "numel"))
            return size, getattr(tensors[0].device, "type", "cpu") == "cpu"
    return 0, True
