"""Does scope's scanner classify each NCCL WARN message class as the emitter table says? (benchmarks and tests)

Kept apart from analyzers/diagnose/knowledge/emitters.py: the table is knowledge the scanner reads, this check
runs the scanner over the table, and one module doing both would make the two import each other."""

from __future__ import annotations

from collections import defaultdict

from scope.analyzers.diagnose.knowledge.emitters import MessageClass, message_classes, warn_line
from scope.analyzers.diagnose.readers.scan import scan_text


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
