"""How scope's hook saw a rank end: the last record of ranks/<r>/attempts.jsonl (collectors/hook/lifecycle.py).

The hook writes {"event": "end", "state": "exited", "step": N} from its atexit handler, after the job's main
code returned and before Python finalizes its modules. A rank whose record says it exited normally and whose
process then died of a signal crashed at exit, after training. Read defensively: a regular file only (never a
FIFO or a device), its last 64 KiB, values checked for type and range.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scope.rundir import not_regular

TAIL_BYTES = 65_536
MAX_STEP = 10**12


def rank_end(root: Path, rank: int, attempt: int | None = None) -> dict[str, Any] | None:
    """The rank's last attempt record when it is an 'end' with a state and a sane step, else None; with
    `attempt`, the end record of that attempt (a restarted job's crash belongs to its own attempt, not to
    the relaunch that finished)."""
    for rec in reversed(_tail_records(Path(root) / "ranks" / str(rank) / "attempts.jsonl")):
        if attempt is not None and rec.get("attempt") != attempt:
            continue
        step = rec.get("step")
        ok = rec.get("event") == "end" and isinstance(rec.get("state"), str)
        if ok and isinstance(step, int) and not isinstance(step, bool) and 0 <= step < MAX_STEP:
            return rec
        if attempt is None or rec.get("event") == "start":
            return None
    return None


def _tail_records(path: Path) -> list[dict[str, Any]]:
    """The start, end and previous records in the file's last TAIL_BYTES, in order."""
    try:
        if not_regular(path) or not path.is_file():
            return []
        with path.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read(TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    out = []
    for line in tail.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by the tail or by a crash
        if isinstance(rec, dict) and rec.get("event") in ("start", "end", "previous"):
            out.append(rec)
    return out
