"""What the hook thread can see of the training thread without touching it (for live detection).

- `MainThreadClock`: the training thread's CPU time and its run-queue wait (Linux
  /proc/self/task/<tid>/schedstat: one small read), so a progress line says how much of the step the rank
  computed and how long it waited for a core; what is left is waiting (for peers, data, I/O).
- `main_thread_site`: where the training thread stands ("torch/autograd/graph.py:_engine_run_backward"),
  looked at only once the step stalled: the ranks of a hang wait in one place, its culprit stands elsewhere.

Both run on the hook thread; the training thread does nothing for them.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path


class MainThreadClock:
    def __init__(self) -> None:
        tid = threading.main_thread().native_id
        self.path = Path(f"/proc/self/task/{tid}/schedstat") if tid is not None else None

    def read(self) -> tuple[int, int] | None:
        """(cpu_ns, run_queue_wait_ns) since the thread started, or None where the kernel does not say."""
        if self.path is None:
            return None
        try:
            fields = self.path.read_text().split()
            return int(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):
            self.path = None  # no schedstat here (another OS, a locked-down kernel): stop asking
            return None


def main_thread_site(depth: int = 3) -> str | None:
    """The training thread's innermost Python frame as "last/path/parts.py:function"."""
    ident = threading.main_thread().ident
    if ident is None or ident == threading.get_ident():
        return None
    frame = sys._current_frames().get(ident)
    if frame is None:
        return None
    code = frame.f_code
    parts = Path(code.co_filename).parts[-depth:]
    return f"{'/'.join(parts)}:{code.co_name}"
