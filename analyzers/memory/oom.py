"""OOM forensics: the figures of each out-of-memory line the diagnosis found, and what they say.

The diagnosis (analyzers/diagnose) names the OOM and its rank, with the cascade of its peers' timeouts
under it; this module reads the message's own figures (knowledge/oom_messages.py: capacity, allocated,
reserved but unallocated, memory outside PyTorch) from the lines it cites, into the `oom_figures` table,
and turns a large unallocated reserve into a `fragmentation` finding hung under the OOM (memory_spec's
link rule), with its remedy.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pandas as pd
from scope.analyzers.diagnose.knowledge.oom_messages import FIGURES, WORDINGS
from scope.analyzers.memory.findings import EXPANDABLE, FRAGMENT_MIN_SHARE, GIB

from scope.finding import Finding
from scope.inputs import place_of

_UNITS = {"bytes": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
_FIGURES = [(f.name, [re.compile(p) for p in f.patterns]) for f in FIGURES]
_WORDINGS = [(w.id, re.compile(w.phrase)) for w in WORDINGS]
_EVIDENCE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)$")
# An unallocated reserve this large (and this share of the reserve) makes the OOM a fragmentation case.
OOM_FRAGMENT_MIN_BYTES = GIB // 2
OOM_COLUMNS = [
    "rank",
    "evidence",
    "wording",
    "tried_to_allocate",
    "capacity",
    "free",
    "allocated",
    "reserved",
    "reserved_unallocated",
    "non_pytorch",
    "private_pools",
]


_SIZE = re.compile(r"(\d+(?:\.\d+)?) ?(bytes|[KMGTP]iB|B)$")


def size_bytes(text: str) -> int:
    """'12.19 MiB' -> 12781629; '0 bytes' -> 0 (the message's figures are binary units)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return round(float(m.group(1)) * _UNITS[m.group(2)])


def parse_oom_message(text: str) -> dict[str, Any] | None:
    """The figures of an OOM message (bytes; the GPU as its index), its wording, and the figures it
    implies: reserved = allocated + unallocated where not stated, and memory outside PyTorch = the
    process's use - reserved (2.1+). None when the text states no figure."""
    found: dict[str, Any] = {}
    for name, patterns in _FIGURES:
        for pattern in patterns:
            m = pattern.search(text)
            if m:
                found[name] = int(m.group("v")) if name == "gpu" else size_bytes(m.group("v"))
                break
    if not found.keys() - {"gpu"}:
        return None
    found["wording"] = next((wid for wid, phrase in _WORDINGS if phrase.search(text)), "unknown")
    if "reserved" not in found and {"allocated", "reserved_unallocated"} <= found.keys():
        found["reserved"] = found["allocated"] + found["reserved_unallocated"]
    if "reserved_unallocated" not in found and {"allocated", "reserved"} <= found.keys():
        found["reserved_unallocated"] = max(0, found["reserved"] - found["allocated"])
    if {"process_in_use", "reserved"} <= found.keys():
        found["non_pytorch"] = max(0, found["process_in_use"] - found["reserved"])
    return found


def oom_forensics(root: Path, diagnosis: Any) -> tuple[pd.DataFrame, list[Finding]]:
    """The figures of each OOM line the diagnosis cites, and fragmentation findings where they say so."""
    rows = []
    for finding in getattr(diagnosis, "findings", []) or []:
        if finding.kind != "oom":
            continue
        for evidence in finding.evidence:
            figures = _figures_at(root, evidence)
            if figures is not None:
                rank = place_of(Path(evidence.rsplit(":", 1)[0]))[0]
                rows.append({"rank": -1 if rank is None else rank, "evidence": evidence, **figures})
    if not rows:
        return pd.DataFrame(columns=OOM_COLUMNS), []
    table = pd.DataFrame(rows).reindex(columns=OOM_COLUMNS)
    for col in OOM_COLUMNS[3:]:
        table[col] = pd.to_numeric(table[col], errors="coerce").fillna(-1).astype("int64")
    return table, _fragmentation(table)


def _figures_at(root: Path, evidence: str) -> dict[str, Any] | None:
    """The figures of the OOM message at FILE:LINE (with the two lines after it: a terminal may wrap it)."""
    m = _EVIDENCE.match(evidence)
    if not m:
        return None
    path = (root / m.group("file")) if not Path(m.group("file")).is_absolute() else Path(m.group("file"))
    line = int(m.group("line"))
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = " ".join(s.rstrip("\n")[:4000] for s in itertools.islice(fh, line - 1, line + 2))
    except OSError:
        return None
    return parse_oom_message(text) if "out of memory" in text.lower() else None


def _fragmentation(table: pd.DataFrame) -> list[Finding]:
    """OOMs whose allocator held a large reserve it could not hand out: the request failed although the
    cache was far from empty (the blocks were of the wrong sizes)."""
    frag = table[
        (table["reserved_unallocated"] >= OOM_FRAGMENT_MIN_BYTES)
        & (table["reserved_unallocated"] >= FRAGMENT_MIN_SHARE * table["reserved"])
    ]
    if frag.empty:
        return []
    top = frag.sort_values("reserved_unallocated", ascending=False).iloc[0]
    fits = 0 < top["tried_to_allocate"] <= top["reserved_unallocated"]
    why = " (more than the request)" if fits else ""
    unalloc, reserved = top["reserved_unallocated"], top["reserved"]
    return [
        Finding(
            kind="fragmentation",
            severity="warning",
            summary=(
                f"The out-of-memory error on rank {int(top['rank'])} came with {unalloc / GIB:.2f} GiB reserved by "
                f"PyTorch but unallocated{why}, {100 * unalloc / max(reserved, 1):.0f}% of its {reserved / GIB:.2f}"
                " GiB reserve: fragmentation, not demand alone"
            ),
            ranks=sorted({int(r) for r in frag["rank"] if r >= 0}),
            evidence=[str(e) for e in frag["evidence"]],
            metrics={
                "source": "oom_message",
                "reserved_unallocated_bytes": int(top["reserved_unallocated"]),
                "reserved_bytes": int(top["reserved"]),
                "tried_to_allocate_bytes": int(top["tried_to_allocate"]),
                "capacity_bytes": int(top["capacity"]),
                "non_pytorch_bytes": int(top["non_pytorch"]),
                "wording": str(top["wording"]),
            },
            suggestion=f"Set {EXPANDABLE} (PyTorch 2.1+; max_split_size_mb before): the reserve then grows in "
            "place and a large request can use it.",
        )
    ]
