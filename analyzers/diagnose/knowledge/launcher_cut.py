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
So the reading is a crash whose code decides the fix, not SIGKILL's reading by default - except where the lines
just before the teardown show the job filling host RAM, a checkpoint or optimizer states being loaded or built
on the CPU: that silent kill is the host OOM killer's (SIGKILL's reading stays):
  deepspeedai/DeepSpeed#3160  see_memory_usage's 'CPU Virtual Memory' lines, then the teardown (-9)
  deepspeedai/DeepSpeed#3938  'Loading checkpoint from .../..._optim_states.pt', then the Killing subprocess lines
  liucongg/ChatGLM-Finetuning#102  'Loading checkpoint shards: 0%' then the teardown (-9)
  mallorbc/Finetune_LLMs#15   resuming from a checkpoint killed with -9: it takes more RAM to reload one
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.signals import SIGNALS

# The DeepSpeed launcher's teardown lines (the INFO kill lines and the ERROR line with the worker's command)
DEEPSPEED_TEARDOWN = re.compile(r"sigkill_handler\]|Killing subprocess \d+")
# How the ERROR line ends when whole; torch elastic's and other launchers' codes count too (the report's own code).
# The launcher itself stopped by a signal (Ctrl-C, the scheduler's SIGTERM) prints 'Main process received SIGINT,
# exiting' (launch.py's sigkill_handler) and no code: the cause is shown, an interrupted or preempted run.
_CODE_SHOWN = re.compile(r"(?i)return code\s*=\s*-?\d+|exit ?code\s*[:=]?\s*-?\d+|Main process received SIG[A-Z]+")
_AFTER_LINES = 40
# The job filling host RAM just before the teardown (the sources above): DeepSpeed's memory report, a checkpoint's
# or the optimizer states' load, a resume. transformers' shard bar counts only while the load is under way (below
# 100%, or at 100% with nothing after it): a finished load followed by other lines ('trainable params', a step)
# is no kill during the load, and a silent end there is as often SIGBUS (/dev/shm) as the OOM killer.
HOST_MEMORY_WORK = re.compile(
    r"CPU Virtual Memory|Loading checkpoint(?! shards)|Attempting to resume from|_get_all_zero_checkpoint_state_dicts|"
    r"optim_states\.pt|load_checkpoint|Resuming (?:training )?from checkpoint"
)
_BEFORE_LINES = 6
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
    return not _CODE_SHOWN.search(after) and not host_memory_work_before(text, start)


def host_memory_work_before(text: str, start: int) -> bool:
    """The teardown line at `start` or the few lines before it show the job filling host RAM."""
    end = text.find("\n", start)
    before = text[: len(text) if end < 0 else end].rsplit("\n", _BEFORE_LINES + 1)[-(_BEFORE_LINES + 1) :]
    return any(HOST_MEMORY_WORK.search(line) for line in before) or _shards_loading(before)


_SHARDS_BAR = re.compile(r"Loading checkpoint shards:\s*(\d+)%")


def _shards_loading(lines: list[str]) -> bool:
    """transformers' 'Loading checkpoint shards' bar is the last the lines show of the job (the teardown's own
    lines aside) and had not finished, or finished with nothing after it."""
    for i in range(len(lines) - 1, -1, -1):
        bars = _SHARDS_BAR.findall(lines[i])
        if bars:  # a tqdm bar redrawn with '\r' holds every reading on one line: the last is where it stood
            return int(bars[-1]) < 100 or all(DEEPSPEED_TEARDOWN.search(line) for line in lines[i + 1 :] if line)
    return False
