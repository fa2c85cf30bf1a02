"""A one-process job that gets SIGTERM at an awkward moment, for the hook's SIGTERM tests.

    python tests/jobs/sigterm_exit.py RUN_DIR MODE

It prints "ready" when the test should send SIGTERM, and "went on" if it carries on after it.

exit-wedged: it raises an uncaught exception; on the way out its own atexit handler blocks in C with the
    GIL held (a destructor waiting on a dead peer). Without the hook a SIGTERM ends it at once.
atexit-wedged: the same on a normal exit, with no exception.
dump-wedged: the hook's stack dump blocks in C with the GIL held (a wedged communicator); the job waits
    in C without the GIL, as in a collective.
thread-error: a helper thread's error is forwarded to sys.excepthook (a common pattern) and training
    goes on: the rank is not exiting, so a SIGTERM still ends it at once.
job-handler: the job installs a SIGTERM handler of its own after the hook's, which calls the one it found
    (as Lightning's does) and goes on training.
one-shot-handler: the job's handler puts the handler it found back, then calls it, and goes on.
no-frame-handler: the same, calling it with frame None.
ignored: the job was started with SIGTERM ignored (the test does that) and goes on.
lent-handler: the job installs its own handler and puts the hook's back at once (a save that defers
    SIGTERM for a moment), then blocks in C without the GIL: only the hook's thread can see the SIGTERM.
"""

from __future__ import annotations

import atexit
import ctypes
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import scope.collectors.hook as hook
import torch
from scope.collectors.hook.dumps import Dumper

WEDGE_S = 60


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def wedge(lib: ctypes.CDLL) -> None:
    """Block WEDGE_S seconds in a lock wait, which no signal interrupts (a sleep or a read would return
    early on EINTR). Through ctypes.PyDLL the call keeps the GIL (no Python thread runs meanwhile);
    through ctypes.CDLL it releases it."""
    mutex = ctypes.create_string_buffer(64)  # zeroed: glibc's PTHREAD_MUTEX_INITIALIZER
    lib.pthread_mutex_lock(mutex)
    until = Timespec(int(time.time()) + WEDGE_S, 0)
    lib.pthread_mutex_timedlock(mutex, ctypes.byref(until))


def wedge_holding_the_gil() -> None:
    wedge(ctypes.PyDLL(None))


def train(steps: int) -> None:
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()


def ready() -> None:
    print("ready", flush=True)


def go_on_after(received: list[int], wait_s: float = 30.0) -> None:
    deadline = time.monotonic() + wait_s
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    train(2)
    print("went on", flush=True)


def own_handler(received: list[int], give_back: bool, no_frame: bool = False) -> Callable[[int, Any], None]:
    found = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        if give_back:
            signal.signal(signal.SIGTERM, found)
        if callable(found):
            found(signum, None if no_frame else frame)

    return handler


def wedged_exit(raise_first: bool) -> None:
    def wedged_atexit() -> None:
        ready()
        wedge_holding_the_gil()

    atexit.register(wedged_atexit)
    if raise_first:
        raise RuntimeError("injected failure")


def forwarded_thread_error() -> None:
    threading.excepthook = lambda a: sys.excepthook(a.exc_type, a.exc_value, a.exc_traceback)  # type: ignore[arg-type]

    def fail() -> None:
        raise ValueError("a helper thread's error")

    worker = threading.Thread(target=fail)
    worker.start()
    worker.join()
    ready()
    while True:
        time.sleep(0.05)
        train(1)


def main() -> None:
    run_dir, mode = sys.argv[1], sys.argv[2]
    hook.install(run_dir=run_dir, rank=0, profile_start=-1)
    train(3)
    received: list[int] = []
    if mode in ("exit-wedged", "atexit-wedged"):
        wedged_exit(raise_first=mode == "exit-wedged")
    elif mode == "thread-error":
        forwarded_thread_error()
    elif mode in ("job-handler", "one-shot-handler", "no-frame-handler"):
        give_back = mode != "job-handler"
        signal.signal(signal.SIGTERM, own_handler(received, give_back, no_frame=mode == "no-frame-handler"))
        ready()
        go_on_after(received)
    elif mode == "ignored":
        ready()
        go_on_after(received, wait_s=2.0)
    elif mode == "lent-handler":
        hooks = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, own_handler(received, give_back=False))
        signal.signal(signal.SIGTERM, hooks)  # within one tick of the hook thread
        time.sleep(1.5)  # the hook thread ticks meanwhile
        ready()
        wedge(ctypes.CDLL(None))
    elif mode == "dump-wedged":
        Dumper._dump_stacks = lambda self, reason, seq: wedge_holding_the_gil()  # type: ignore[method-assign,assignment,misc]
        ready()
        wedge(ctypes.CDLL(None))


if __name__ == "__main__":
    main()
