"""How a rank's ending is recorded: torchrun's error file, and dying of SIGTERM from any thread."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import traceback
from types import TracebackType


def write_error_file(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """torchrun's per-rank error file, when the job did not write one (no `@record` on its main)."""
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if not path or os.path.exists(path):
        return
    data = {
        "message": {
            "message": f"{etype.__name__}: {value}",
            "extraInfo": {
                "py_callstack": "".join(traceback.format_exception(etype, value, tb)),
                "timestamp": str(int(time.time())),
            },
        }
    }
    # Whole or not at all: a half-written file on a full disk makes torchrun report "Failed to parse
    # reply file" instead of the job's error; without a file it reports the exit code.
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def die_by_sigterm() -> None:
    """Restore SIGTERM's default action from a non-main thread (the signal module cannot) and raise it."""
    try:
        import ctypes

        from scope.collectors.hook.posix import libc as posix_libc

        libc = posix_libc()
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(int(signal.SIGTERM), 0)  # 0 is SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)
    except Exception:
        pass
    os.kill(os.getpid(), signal.SIGKILL)
