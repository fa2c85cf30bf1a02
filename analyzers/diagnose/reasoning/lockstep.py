"""Ranks that print the same lines in lockstep, then fall out of it: one rank went on, another stopped.

Every rank of a data-parallel job runs the same loop, and a collective in each step keeps them together,
so a console where each rank prints its own messages with no rank tag shows every message twice (or N
times), side by side. An excerpt cut anywhere leaves a rank at most the messages of one stretch between two
collectives ahead of its peer. When the log's last lines are more of the loop's messages (each printed side
by side before) printed once, one rank went on through the loop while another never got past its last
message: the job hangs on the one that stopped, in the collective after it. Messages that one rank prints
alone (rank 0's evaluation or summary) are not the loop.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.reasoning.excerpt import CUT

# Lines of the log's end that are read (a step's messages repeat well within this).
WINDOW = 120
# Lines side by side that count as partners: ranks' lines of one message interleave with a skew of a few.
PARTNER_SPAN = 3
# Share of the lines before the end that must have a partner for the log to be in lockstep at all.
MIN_PAIRED = 0.75
MIN_BODY = 12  # lines with partners before the end: a step or two of two ranks
# Lines at the end without a partner: more than a cut excerpt leaves. A rank of a healthy job runs ahead of its
# peer by up to the messages it prints between two collectives (optimizer, data, model, loss: 4 in a tight loop
# of 5 messages); the parting of RT-DETR#242 left 6.
MIN_UNPAIRED = 5
QUOTE_CHARS = 90

# What differs between ranks' copies of one message: its time, the rank's own values (a loss), its device and
# addresses. Integers stay: a step counter is the same in every rank's copy and differs between one rank's steps.
_VARIABLE = re.compile(
    r"\d{4}-\d\d-\d\d|\d\d/\d\d/\d{4}|\d\d:\d\d:\d\d(?:[.,]\d+)?|\d+\.\d+(?:e[+-]?\d+)?|cuda:\d+|0x[0-9a-fA-F]+"
)


def out_of_step(text: str, display: str) -> Anomaly | None:
    """A finding for ranks that printed in lockstep and parted at the end (None: not such a log)."""
    raw = text.split("\n")
    start = max(0, len(raw) - WINDOW)
    numbered = [(start + i + 1, ln.strip()) for i, ln in enumerate(raw[start:]) if ln.strip()]
    lines = [ln for _, ln in numbered]
    if len(lines) < MIN_BODY + MIN_UNPAIRED or any(CUT.match(ln) for ln in lines):
        return None
    shapes = [_VARIABLE.sub("N", ln) for ln in lines]
    paired = [_has_partner(shapes, i) for i in range(len(shapes))]
    last_pair = max((i for i, p in enumerate(paired) if p), default=-1)
    tail = shapes[last_pair + 1 :]
    body = paired[: last_pair + 1]
    if len(body) < MIN_BODY or sum(body) / len(body) < MIN_PAIRED:
        return None
    # Only messages the ranks printed side by side before are the shared loop; a message one rank always prints
    # alone (rank 0's epoch summary, its evaluation, a 'saving best model') is that rank's own work.
    shared = {shape for shape, p in zip(shapes[: last_pair + 1], body, strict=True) if p}
    if len(tail) < MIN_UNPAIRED or any(shape not in shared for shape in tail):
        return None
    (line, stopped), went_on = numbered[last_pair], lines[-1]
    return Anomaly(
        code="ranks_out_of_step",
        kind="hang",
        level=STALL,
        message=(
            f"ranks printed each message side by side until '{_end_of(stopped)}'; then {len(tail)} lines "
            f"of the same loop came from one rank alone, up to '{_end_of(went_on)}': the other rank stopped "
            "after its last message and the job hangs on it"
        ),
        file=display,
        line=line,
        severity="critical",
        details={
            "confidence": "low",
            "phase": "steps",
            "remedy": "The rank that stopped waits in the collective after its last message while its peer "
            "ran on: the ranks took different paths through the step (a rank-dependent branch, data that "
            "differs between ranks: an empty batch, a sample without labels, a loss term one rank skips) "
            "or the peer's next collective does not match; TORCH_DISTRIBUTED_DEBUG=DETAIL names the "
            "mismatched call, and py-spy dump on each rank shows where each one waits",
        },
    )


def _end_of(line: str) -> str:
    """A line's end, where a message follows its time and logger prefix."""
    return line if len(line) <= QUOTE_CHARS else "..." + line[-QUOTE_CHARS:]


def _has_partner(shapes: list[str], i: int) -> bool:
    lo, hi = max(0, i - PARTNER_SPAN), min(len(shapes), i + PARTNER_SPAN + 1)
    return any(shapes[j] == shapes[i] for j in range(lo, hi) if j != i)
