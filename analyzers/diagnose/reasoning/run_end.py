"""Whether a run had printed its own end before a line: one reading for every rule that asks (the best guess's
teardown lines, reasoning/guess.py; a Slurm step refused because the job was over, reasoning/setting_refused.py).

The run's own end is a clean end of the stage model (training finished, the launcher's workers done, a server's
shutdown complete: reasoning/stages.clean_end) or a stop it was asked for (Ctrl-C, KeyboardInterrupt:
knowledge/after_the_end.REQUESTED_STOP), with no progress and no new run's set-up between it and the line.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.after_the_end import (
    LOOK_BACK_LINES,
    NEW_RUN_STAGES,
    REQUESTED_STOP,
    teardown_noise,
)
from scope.analyzers.diagnose.reasoning.stages import clean_end, message_marker

# Training, evaluation or benchmark progress printed after a line: the run went on past it (steps, epochs,
# iterations, nccl-tests' summary), so that line did not stop it.
PROGRESS = re.compile(
    r"^(?!#)(?!.*(?:srun|slurm|job step))"  # SLURM's 'job step 4242.0' is an id, not progress
    r"(?:.*?(?:\bstep\s*[:=]?\s*\d+|\bIter(?:ation)?\s*#?\d+|\bepoch\s*\d+|Avg bus bandwidth)"
    # the HF Trainer's log dict, alone on its line (after a progress bar's carriage return): {'loss': 0.69, ...,
    # 'epoch': 0.5}, {'eval_loss': ..., 'epoch': 1.0}, {'train_runtime': ..., 'epoch': 3.0}; not a dict a message
    # quotes ('Saving emergency state: {'epoch': 2, ...}') nor a config dump that holds a 'loss' key
    r"|(?:[^\n]*\r)?[ \t]*\{'(?:loss|eval_\w+|train_\w+)': [^\n\r]*'epoch': [\d.]+\}[ \t]*$)",
    re.I | re.M,
)


def last_progress(text: str) -> int:
    """Offset of the last progress line (-1: none)."""
    last = -1
    for m in PROGRESS.finditer(text):
        last = m.start()
    return last


class RunEnd:
    """The run's own end before a line: read back line by line from each line asked about, as far as the previous
    one asked about, whose reading it then takes: each line once, however long the teardown."""

    def __init__(self, text: str, progress_at: int) -> None:
        self.text = text
        self.progress_at = progress_at  # a line before the last progress line is not after the run's end
        self.last: tuple[int, int, int] = (-1, -1, 0)  # (offset asked about, its end's offset, lines counted)

    def before(self, start: int) -> int:
        """Offset of the line that ended the run before the line at offset START (-1: none)."""
        ended, counted = self._walk(start)
        self.last = (start, ended, counted)
        return ended

    def _walk(self, start: int) -> tuple[int, int]:
        pos, counted = start, 0
        while pos > 0 and counted < LOOK_BACK_LINES:
            begin = self.text.rfind("\n", 0, pos - 1) + 1
            if begin < self.progress_at:
                return -1, counted  # the run went on after whatever is above
            if begin == self.last[0]:
                return self.last[1], self.last[2] + counted  # the previous line's reading holds
            line = self.text[begin : pos - 1]
            pos = begin
            if REQUESTED_STOP.search(line):
                return begin, counted
            marker = message_marker(line)
            if marker is not None and clean_end(marker.stage, marker.ends):
                return begin, counted
            if marker is not None and marker.stage in NEW_RUN_STAGES:
                return -1, counted  # a new run's set-up after any earlier end
            counted += bool(line.strip()) and not teardown_noise(line)
        return -1, counted


def end_before_line(text: str, line: int) -> int:
    """The 1-based line of the run's own end before LINE (1-based; 0: none), read as RunEnd reads it."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return 0
    ended = RunEnd(text, last_progress(text)).before(start)
    return text.count("\n", 0, ended) + 1 if ended >= 0 else 0
