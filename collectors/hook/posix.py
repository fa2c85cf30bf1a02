"""What the hook asks of the C library itself, for the moments no Python code may run again.

* `handler_address(signum)`: the C handler the kernel will call for a signal. `signal.getsignal` only
  knows the Python-level handler; a job's `signal.signal` silently replaces faulthandler's C handler
  underneath it, and this is how the hook notices.
* `kill_after(seconds)`: a POSIX timer that delivers SIGKILL to the process when it expires: no thread,
  no GIL and no Python needed when it fires, and a launcher reads the death as a signal (stopped), where
  an exit status would read as a failure of the rank's own. Timers are not inherited by forked children.

Linux/glibc layouts; anything unavailable reports failure and the caller falls back.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import signal

CLOCK_MONOTONIC = 1
SIGEV_SIGNAL = 0
# struct sigaction is 152 bytes on x86_64 and aarch64 glibc; its first member is the handler's address.
SIGACTION_BYTES = 256


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _Sigevent(ctypes.Structure):
    # union sigval (pointer-sized), sigev_signo, sigev_notify, then a union padding the struct to 64 bytes
    _fields_ = [
        ("sigev_value", ctypes.c_void_p),
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("_pad", ctypes.c_int * 12),
    ]


_LIBC: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once (the process's own symbols)."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _timer_lib() -> ctypes.CDLL:
    """timer_create is in libc from glibc 2.34, in librt before."""
    own = libc()
    if hasattr(own, "timer_create"):
        return own
    name = ctypes.util.find_library("rt")
    if name is None:
        raise OSError("no timer_create in libc and no librt")
    return ctypes.CDLL(name, use_errno=True)


def handler_address(signum: int) -> int | None:
    """The address of the C handler installed for `signum` now (0 for SIG_DFL), or None if unknown."""
    with contextlib.suppress(Exception):
        buf = ctypes.create_string_buffer(SIGACTION_BYTES)
        if libc().sigaction(int(signum), None, buf) == 0:
            return ctypes.c_void_p.from_buffer(buf).value or 0
    return None


def kill_after(seconds: float) -> bool:
    """Arm a one-shot timer that SIGKILLs this process after `seconds`; False when it could not be armed."""
    try:
        lib = _timer_lib()
        event = _Sigevent(sigev_signo=int(signal.SIGKILL), sigev_notify=SIGEV_SIGNAL)
        timer = ctypes.c_void_p()
        if lib.timer_create(CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
            return False
        whole = int(seconds)
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(whole, int((seconds - whole) * 1e9)))
        return bool(lib.timer_settime(timer, 0, ctypes.byref(spec), None) == 0)
    except Exception:
        return False
