"""A DeepSpeed launcher's teardown whose return code the log does not show: the report was cut.

deepspeed/launcher/launch.py's sigkill_handler runs when a worker ends with a non-zero code: it logs 'Killing
subprocess PID' (INFO) for each worker, then one ERROR line, the failed worker's command as a list, ending with
'exits with return code = N'. The code is the only word on why the worker ended (a worker killed by a signal
prints nothing), and a pasted log often loses it: the ERROR line is long and gets cut mid-command, or the paste
stops after the INFO lines. Without it the signal is unknown: SIGKILL (the host OOM killer) and SIGBUS (a
container's /dev/shm too small) are the usual two, both silent, both seen under the same lines:
  deepspeedai/DeepSpeed#4002, haotian-liu/LLaVA#739, hiyouga/LlamaFactory#2061  'exits with return code = -7',
        no error from any rank; fixed by a larger docker --shm-size
  deepspeedai/DeepSpeed#3160  -9 after the optimizer states were built on the CPU (host RAM)
  deepspeedai/DeepSpeed#3989  -11, a native crash at start-up
So the reading is a crash whose code decides the fix, not SIGKILL's reading by default.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.signals import SIGNALS

# The DeepSpeed launcher's teardown lines (the INFO kill lines and the ERROR line with the worker's command)
DEEPSPEED_TEARDOWN = re.compile(r"sigkill_handler\]|Killing subprocess \d+")
# How the ERROR line ends when whole; torch elastic's and other launchers' codes count too (the report's own code)
_CODE_SHOWN = re.compile(r"(?i)return code\s*=\s*-?\d+|exit ?code\s*[:=]?\s*-?\d+")
_AFTER_LINES = 40
# The codes to look for, most frequent first in the threads above
_CODES = (9, 7, 11)

CODE_CUT = (
    "The DeepSpeed launcher's report is cut before its return code (its ERROR line ends 'exits with return code = "
    "N'), and no rank printed an error: that code is the only word on why the worker ended. Read it in the whole "
    "launcher output. "
    + " ".join(f"-{n} is {SIGNALS[n].name}, {SIGNALS[n].meaning}: {SIGNALS[n].check}" for n in _CODES)
    + " A positive code is the worker's own error: read its output before the teardown."
)


def deepspeed_code_cut(text: str, start: int) -> bool:
    """The line at `start` is a DeepSpeed launcher teardown line, and neither it nor the next lines show the
    return code."""
    end = text.find("\n", start)
    line = text[start : len(text) if end < 0 else end]
    if not DEEPSPEED_TEARDOWN.search(line):
        return False
    after = "\n".join(text[start:].split("\n", _AFTER_LINES)[:_AFTER_LINES])
    return not _CODE_SHOWN.search(after)
