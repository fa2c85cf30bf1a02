"""Does scope classify each message class of the emitter tables as the table says? (benchmarks and tests)

NCCL WARN classes (analyzers/diagnose/knowledge/emitters.py) go through the scanner, c10d / torchrun / gloo
classes (knowledge/c10d_messages.py) through the whole diagnosis. Kept apart from the tables: they are knowledge
the scanner reads, this check runs scope over them, and one module doing both would make the two import each
other."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge import c10d_messages
from scope.analyzers.diagnose.knowledge.c10d_messages import MessageClass as C10dClass
from scope.analyzers.diagnose.knowledge.emitters import MessageClass, message_classes, warn_line
from scope.analyzers.diagnose.readers.scan import scan_text

from scope.finding import FAILURE_KINDS


def scan_kinds(line: str) -> set[str]:
    """The failure kinds scope's scanner gives one line (info-level anomalies are no failure)."""
    return {a.kind for a in scan_text(line + "\n", "emitter-check").anomalies if a.severity != "info"}


def agreement() -> dict[str, tuple[int, int]]:
    """Per NCCL source file: (message classes whose printed line scope classifies as the table says, classes).
    An 'info' class agrees when the line gives no failure; a failure class when its kind is among the line's."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for mc in message_classes():
        kinds = scan_kinds(warn_line(mc))
        row = out[mc.source]
        row[1] += 1
        row[0] += (not kinds) if mc.kind == "info" else agrees_with_table(mc, kinds)
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def agrees_with_table(mc: MessageClass, kinds: set[str]) -> bool:
    if mc.subsystem == "cuda":  # the CUDA error name decides; 'x' is no known name: a crash
        return "crash" in kinds
    if mc.subsystem == "internal":  # NCCL's own state: reported as the generic NCCL error
        return "nccl_error" in kinds
    return mc.kind in kinds


def c10d_agrees(mc: C10dClass, kinds: set[str]) -> bool:
    """A 'cascade' line agrees when it alone is no failure, or only the symptom it reports."""
    if mc.kind == "cascade":
        return kinds <= {"timeout", "crash", "network_fault", "hang"} and not kinds & {"config_error", "oom"}
    return mc.kind in kinds


def c10d_finding_kinds(line: str) -> set[str]:
    """The kind of the first failure finding `scope diagnose` gives a log of this one line (empty: none)."""
    with tempfile.TemporaryDirectory(prefix="scope-c10d-") as tmp:
        (Path(tmp) / "job.log").write_text(line + "\n")
        found = [f for f in diagnose(tmp, workers=1).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    return {found[0].kind} if found else set()


def c10d_agreement() -> dict[str, tuple[int, int]]:
    """Per c10d / torchrun / gloo source file: (message classes scope diagnoses as listed, message classes)."""
    out: dict[str, tuple[int, int]] = {}
    for source, rows in sorted(c10d_messages.sources().items()):
        out[source] = (sum(c10d_agrees(mc, c10d_finding_kinds(mc.example)) for mc in rows), len(rows))
    return out
