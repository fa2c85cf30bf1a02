"""A traceback cut inside the rendezvous: the process stopped while init_process_group waited for its peers.

init_process_group takes the store and the rank's place from its rendezvous handler
(torch/distributed/distributed_c10d.py: `store, rank, world_size = next(rendezvous_iterator)`; the handlers of
torch/distributed/rendezvous.py connect to MASTER_ADDR:MASTER_PORT and wait there for every rank). A traceback
whose last frame is that call, with its exception line cut away, is a rank that never found the others: the
store was unreachable, or the other ranks were never started. What the launcher printed before says which
(the clues below); without one, the stage's known causes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO
from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.readers.cut_traceback import runs_to_the_end

# A Python frame and, on the next line, its source line
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+, in (?P<func>\w+)\s*\n(?P<code>[^\n]*)', re.M)
# The rendezvous frames: init_process_group's call of its handler, and the handlers themselves
_RDZV_FILE = re.compile(r"(?:distributed_c10d|/rendezvous|dynamic_rendezvous|c10d_rendezvous_backend)\.py$")
_RDZV_CODE = re.compile(r"rendezvous_iterator|_create_c10d_store|TCPStore\(|rendezvous\(")
# An exception line after the last frame: the traceback is whole, its error read by the rows
_EXCEPTION = re.compile(r"^[^\S\n]*[\w.]*(?:Error|Exception|Interrupt|Exit)\b", re.M)


@dataclass(frozen=True)
class RendezvousClue:
    pattern: re.Pattern[str]
    kind: str
    why: str
    source: str


CLUES: tuple[RendezvousClue, ...] = (
    RendezvousClue(
        re.compile(r"Unable to find hostfile, will proceed with training with local resources only"),
        "config_error",
        "the DeepSpeed launcher found no hostfile and started the ranks of this node only ('{line}'): the "
        "other nodes' ranks were never launched, so the rendezvous waits for them. Pass the hostfile to the "
        "launcher (deepspeed --hostfile FILE, or the framework's hostfile setting that feeds it; DeepSpeed's "
        "default is /job/hostfile)",
        "deepspeed/launcher/runner.py (fetch_hostfile); EleutherAI/gpt-neox#671",
    ),
)


def stopped_in_rendezvous(text: str, display: str) -> Anomaly | None:
    """The finding for a log whose last traceback frame is the rendezvous and whose exception line is cut."""
    if "rendezvous" not in text and "TCPStore(" not in text:
        return None  # no rendezvous frame can be there: skip the line-by-line read (most logs)
    last = None
    for m in _FRAME.finditer(text):
        last = m
    if last is None or not _RDZV_FILE.search(last.group("file")) or not _RDZV_CODE.search(last.group("code")):
        return None
    if _EXCEPTION.search(text, last.end()) or not runs_to_the_end(text, last):
        return None  # a whole traceback, or one the program handled and went past (a retry, training after it)
    line = text.count("\n", 0, last.start()) + 1
    clue = next((c for c in CLUES if c.pattern.search(text)), None)
    info = STAGE_INFO["rendezvous"]
    known = f"Known causes of a stop here: {info.causes}."
    if clue is not None:
        quoted = clue.pattern.search(text)
        why = clue.why.format(line=quoted.group(0) if quoted else "")
        remedy = f"{why[0].upper()}{why[1:]}. {known}"
    else:
        remedy = known
    return Anomaly(
        code="stopped_in_rendezvous_traceback",
        kind=clue.kind if clue else info.kind,
        level=STALL,
        message=(
            f"A process stopped in the rendezvous (frame '{last.group('func')}: {last.group('code').strip()}'), "
            "and its traceback is cut before the exception: the rank never found the others (the store "
            "unreachable, or ranks that were never started)"
        ),
        file=display,
        line=line,
        severity="critical",
        details={
            "confidence": "medium" if clue else "low",
            "phase": "rendezvous",
            "remedy": remedy,
            **({"reference": clue.source} if clue else {}),
        },
    )
