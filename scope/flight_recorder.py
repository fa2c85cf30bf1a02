"""Load torch.distributed Flight Recorder dumps (one file per rank), pickle or JSON.

A pickle is code: dumps are read through an unpickler that refuses every global, so a dump can only
build plain containers (dict, list, tuple, str, numbers). Every real dump (NCCL and gloo, versions
2.x) loads that way. A bad dump raises ScopeError naming the file and what is wrong.

Dump layout (torch >= 2.4): {"version", "pg_config": {name: {name, desc, ranks}}, "pg_status":
{pg_id: {last_enqueued_collective, last_started_collective, last_completed_collective}},
"entries": [{record_id, pg_id, process_group: (name, desc), collective_seq_id, p2p_seq_id, op_id,
profiling_name, time_created_ns, input_sizes, input_dtypes, output_sizes, output_dtypes, state,
retired, timeout_ms, is_p2p, frames?, ...}], "nccl_version"/"comm_lib_version"}.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope.errors import ScopeError
from scope.typed_cache import typed_lru_cache

# `_dump_12`, `nccl_trace_rank_3`, `fr_rank5.json`, `rank7.pkl`: the trailing number is the rank.
_RANK_SUFFIX = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle|bin))?$")
DUMP_NAME = re.compile(r"(?:_dump_|trace_rank_|fr_rank|_rank_?|^rank)(\d+)(?:\.(?:json|pkl|pickle|bin))?$")


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Refuse every class or function reference: a Flight Recorder dump needs none."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")


@dataclass
class FRDump:
    path: Path
    rank: int | None
    version: str = ""
    pg_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)
    comm_lib_version: str = ""


def rank_from_name(path: Path) -> int | None:
    m = _RANK_SUFFIX.search(Path(path).name)
    return int(m.group(1)) if m else None


def looks_like_dump(path: Path, head: bytes) -> bool:
    """By name (`_dump_<rank>`) or by content: a pickle whose first keys are FR's, or FR JSON; never an
    allocator snapshot (`rank3.pickle` may be one: scope.memory_snapshot reads those)."""
    if head[:1] == b"\x80" and (b"segments" in head[:96] or b"device_traces" in head[:96]):
        return False
    if DUMP_NAME.search(path.name) and head[:1] == b"\x80":
        return True
    if DUMP_NAME.search(path.name) and head.lstrip()[:1] == b"{":
        # `rank0.json` is as often a Kineto trace: by name, JSON must also look like a dump, not a trace
        return b'"traceEvents"' not in head and any(k in head for k in (b'"entries"', b'"pg_config"', b'"version"'))
    if head[:1] == b"\x80":
        return b"entries" in head or b"pg_config" in head or b"version" in head[:64]
    stripped = head.lstrip()
    return stripped[:1] == b"{" and b'"entries"' in head and (b'"pg_config"' in head or b'"version"' in head)


def load_dump(path: Path, rank: int | None = None) -> FRDump:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScopeError(f"{path}: cannot read Flight Recorder dump ({exc.strerror or exc})") from None
    if not data:
        raise ScopeError(f"{path}: empty Flight Recorder dump (the rank died while dumping?)")
    raw = _decode(path, data)
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        got = type(raw).__name__ if not isinstance(raw, dict) else f"keys {sorted(map(str, raw))[:6]}"
        raise ScopeError(f"{path}: not a Flight Recorder dump (expected a dict with 'entries', got {got})")
    try:
        return _build(path, rank, raw)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError, OverflowError) as exc:
        raise ScopeError(f"{path}: malformed Flight Recorder dump ({type(exc).__name__}: {str(exc)[:100]})") from None


def _build(path: Path, rank: int | None, raw: dict[str, Any]) -> FRDump:
    return FRDump(
        path=path,
        rank=rank if rank is not None else rank_from_name(path),
        version=_short(raw.get("version", "")),
        pg_config=_pg_config(raw.get("pg_config")),
        pg_status=_pg_status(raw.get("pg_status")),
        entries=[_entry(e) for e in raw["entries"] if isinstance(e, dict)],
        comm_lib_version=_short(raw.get("comm_lib_version") or raw.get("nccl_version") or ""),
    )


# What a loaded pickle may expand to, read as a tree (how the dump is walked): a pickle shares objects by
# reference, so 863 bytes of nested shared lists (a "pickle bomb") stand for 2^60 nodes. A real dump,
# whose repeated strings are the only sharing, expands to about as many nodes as it has bytes.
EXPAND_BASE = 2_000_000
EXPAND_PER_BYTE = 8


def _decode(path: Path, data: bytes) -> Any:
    if data[:1] == b"\x80":
        try:
            obj = _NoGlobalsUnpickler(io.BytesIO(data)).load()
        except pickle.UnpicklingError as exc:
            raise ScopeError(f"{path}: unsafe or corrupt Flight Recorder pickle ({exc})") from None
        except Exception as exc:  # no globals can load, so any other failure is damage (EOF, APPEND on a dict...)
            raise ScopeError(f"{path}: truncated or corrupt Flight Recorder pickle ({type(exc).__name__})") from None
        limit = EXPAND_BASE + EXPAND_PER_BYTE * len(data)
        if not _expands_within(obj, limit):
            raise ScopeError(
                f"{path}: Flight Recorder pickle refused: its shared or cyclic references expand past "
                f"{limit:,} values from {len(data):,} bytes (a pickle bomb, not a dump); skipped"
            )
        return obj
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ScopeError(f"{path}: neither a Flight Recorder pickle nor JSON ({exc})") from None
    except RecursionError:
        raise ScopeError(f"{path}: JSON nested too deeply to be a Flight Recorder dump") from None


def _expands_within(root: Any, limit: int) -> bool:
    """Whether ROOT, read as a tree (shared containers counted each time they are reached), has at most
    LIMIT nodes and no cycle. Linear in the distinct containers: each one's tree size is computed once."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        obj, done = stack.pop()
        if not isinstance(obj, (list, tuple, dict, set, frozenset)):
            continue
        key = id(obj)
        if done:
            children = obj.items() if isinstance(obj, dict) else obj
            total = 1
            for child in children:
                for part in child if isinstance(obj, dict) else (child,):
                    total += sizes.get(id(part), 1) if isinstance(part, (list, tuple, dict, set, frozenset)) else 1
            if total > limit:
                return False
            sizes[key] = total
            open_.discard(key)
            continue
        if key in sizes:
            continue
        if key in open_:
            return False  # a cycle: expands without end
        open_.add(key)
        stack.append((obj, True))
        items = obj.items() if isinstance(obj, dict) else obj
        for child in items:
            for part in child if isinstance(obj, dict) else (child,):
                if isinstance(part, (list, tuple, dict, set, frozenset)) and id(part) not in sizes:
                    stack.append((part, False))
    return sizes.get(id(root), 1) <= limit


INT64_MAX = (1 << 63) - 1


def _as_int(value: Any, default: int = -1) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if -INT64_MAX <= number <= INT64_MAX else default  # a 5,000-digit id is damage


@typed_lru_cache(maxsize=4096)
def _ranks_list(text: str) -> tuple[int, ...]:
    """'[0, 1, 2]' as torch writes it; cached: every rank's dump repeats the same lists."""
    try:
        ranks = json.loads(text)
    except json.JSONDecodeError:
        return ()
    return tuple(int(r) for r in ranks if isinstance(r, int) or (isinstance(r, str) and r.isdigit()))


def _pg_config(raw: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(raw, dict):
        return out
    for key, cfg in raw.items():
        if not isinstance(cfg, dict) or not _short(key):
            continue
        ranks = cfg.get("ranks", [])
        ranks = _ranks_list(ranks) if isinstance(ranks, str) else _ranks_list(json.dumps(list(ranks)))
        out[_short(key)] = {"name": _short(cfg.get("name", key)), "desc": _short(cfg.get("desc", "")), "ranks": ranks}
    return out


def _pg_status(raw: Any) -> dict[str, dict[str, int]]:
    if not isinstance(raw, dict):
        return {}
    return {
        str(pg): {
            "last_enqueued": _as_int(st.get("last_enqueued_collective")),
            "last_started": _as_int(st.get("last_started_collective")),
            "last_completed": _as_int(st.get("last_completed_collective")),
        }
        for pg, st in raw.items()
        if isinstance(st, dict)
    }


_INT_KEYS = ("pg_id", "collective_seq_id", "p2p_seq_id", "op_id", "record_id", "time_created_ns")
_STR_KEYS = ("profiling_name", "state")
_LIST_KEYS = ("input_sizes", "output_sizes", "input_dtypes", "output_dtypes")


def _in_shape(e: dict[str, Any], pg: Any) -> bool:
    """A pickle from torch: every field the analysis reads already has its type (a few lookups per entry)."""
    return (
        type(pg) is tuple
        and len(pg) == 2
        and all(type(e.get(k)) is int for k in _INT_KEYS)
        and all(type(e.get(k, "")) is str for k in _STR_KEYS)
        and all(type(e.get(k, ())) in (list, tuple) for k in _LIST_KEYS)
        and all(_shapes_ok(e.get(k)) for k in ("input_sizes", "output_sizes"))
    )


def _shapes_ok(shapes: Any) -> bool:
    """Every tensor's dimensions are integers a tensor can have (a 5,000-digit one is damage, and would
    fail the analysis of every dump when printed: Python refuses to write integers past 4,300 digits)."""
    return shapes is None or all(
        type(shape) in (list, tuple) and all(type(d) is int and 0 <= d <= INT64_MAX for d in shape) for shape in shapes
    )


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    """Same shape for pickle and JSON dumps: process_group a pair of str, ids ints, 0 times as None.

    A field of the wrong kind (a damaged or hand-made dump) raises ValueError: the dump is named, not read."""
    pg = e.get("process_group") or ("", "")
    if _in_shape(e, pg) and all(-INT64_MAX <= e[k] <= INT64_MAX for k in _INT_KEYS):
        return e
    if not isinstance(pg, list | tuple) or not pg:
        raise ValueError(f"entry {_short(e.get('record_id'))}: process_group is {type(pg).__name__}, not (name, desc)")
    out = dict(e)
    out["process_group"] = (str(pg[0]), str(pg[1]) if len(pg) > 1 else "")
    for key in _INT_KEYS:
        out[key] = _as_int(e.get(key), -1)
    for key in _STR_KEYS:
        value = e.get(key)
        out[key] = value if isinstance(value, str) else "" if value is None else _short(value)
    for key in _LIST_KEYS:
        value = e.get(key) or []
        if not isinstance(value, list | tuple):
            raise ValueError(f"entry {_short(e.get('record_id'))}: {key} is {type(value).__name__}, not a list")
        if "sizes" in key:
            shapes = [list(v) if isinstance(v, list | tuple) else [] for v in value]
            if not _shapes_ok(shapes):
                raise ValueError(f"entry {_short(e.get('record_id'))}: {key} holds a dimension that is not a size")
            out[key] = shapes
        else:
            out[key] = [_short(v) for v in value]
    for key in ("time_discovered_started_ns", "time_discovered_completed_ns"):
        out[key] = e.get(key) or None
    return out


def _short(value: Any, limit: int = 200) -> str:
    """A value as text, whatever it is: an integer past Python's 4,300-digit limit is said by its size."""
    if isinstance(value, int) and abs(value) > INT64_MAX:
        return f"<an integer of {value.bit_length()} bits>"
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # a container holding such an integer
        text = f"<a {type(value).__name__} that cannot be written>"
    return text[:limit]


def describe_entry(e: dict[str, Any]) -> str:
    """One Flight Recorder entry as a line a person reads: op, group, sequence, state and sizes."""
    pg = e.get("process_group") or ("", "")
    group = f"pg {pg[0]}" + (f" ({pg[1]})" if len(pg) > 1 and pg[1] else "")
    seq = e.get("p2p_seq_id") if e.get("is_p2p") else e.get("collective_seq_id")
    kind = "p2p seq" if e.get("is_p2p") else "seq"
    sizes = _sizes(e.get("input_sizes"), e.get("input_dtypes"))
    out_sizes = _sizes(e.get("output_sizes"), e.get("output_dtypes"))
    state = str(e.get("state") or "?") + (", retired" if e.get("retired") else "")
    text = f"{e.get('profiling_name') or '?'}  {group}  {kind} {seq}  state {state}"
    if sizes:
        text += f"  in {sizes}"
    if out_sizes and out_sizes != sizes:
        text += f"  out {out_sizes}"
    timeout = _as_int(e.get("timeout_ms"), 0)
    if timeout > 0:
        text += f"  timeout {timeout / 1000:g} s"
    return text


def _sizes(shapes: Any, dtypes: Any) -> str:
    if not isinstance(shapes, list):
        return ""
    types = dtypes if isinstance(dtypes, list) else []
    parts = []
    for i, shape in enumerate(shapes[:4]):
        dims = "x".join(str(d) for d in shape) if isinstance(shape, (list, tuple)) else str(shape)
        parts.append(f"{dims or 'scalar'} {types[i]}" if i < len(types) else dims)
    return ", ".join(parts) + (f", ... ({len(shapes)} tensors)" if len(shapes) > 4 else "")


def entry_frames(e: dict[str, Any], limit: int = 8) -> list[str]:
    """The entry's Python stack (innermost first, as torch records it): 'name  file:line'."""
    raw = e.get("frames")
    frames: list[Any] = raw if isinstance(raw, list) else []
    return [
        f"{f.get('name', '?')}  {f.get('filename', '?')}:{f.get('line', '?')}"
        for f in frames[:limit]
        if isinstance(f, dict)
    ]
