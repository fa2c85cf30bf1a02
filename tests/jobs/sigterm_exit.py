"""A one-process job that is SIGTERMed while it cannot run Python code, for the hook's SIGTERM tests.

    python tests/jobs/sigterm_exit.py RUN_DIR exit-wedged | dump-wedged | job-handler

exit-wedged: it raises an uncaught exception; on the way out its own atexit handler blocks in C with the
    GIL held (a destructor waiting on a dead peer), printing "wedged" first. Without the hook a SIGTERM
    ends it at once.
dump-wedged: the hook's stack dump blocks in C with the GIL held (a wedged communicator), and the
    job waits for a signal, printing "waiting" first.
job-handler: the job installs a SIGTERM handler of its own after the hook's, which calls the one it found
    (as Lightning's does) and goes on training; it prints "waiting", then "went on" after the signal.
"""

from __future__ import annotations

import atexit
import ctypes
import signal
import sys
import time

import scope.collectors.hook as hook
import torch
from scope.collectors.hook.dumps import Dumper

WEDGE_S = 60


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def wedge_holding_the_gil() -> None:
    """Block WEDGE_S seconds in a lock wait, which no signal interrupts (a sleep or a read would return
    early on EINTR), through PyDLL, which keeps the GIL during the call: no Python thread runs meanwhile."""
    libc = ctypes.PyDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: glibc's PTHREAD_MUTEX_INITIALIZER
    libc.pthread_mutex_lock(mutex)
    until = Timespec(int(time.time()) + WEDGE_S, 0)
    libc.pthread_mutex_timedlock(mutex, ctypes.byref(until))


def train(steps: int) -> None:
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()


def go_on_after_sigterm() -> None:
    found = signal.getsignal(signal.SIGTERM)
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if callable(found):
            found(signum, frame)

    signal.signal(signal.SIGTERM, handler)
    print("waiting", flush=True)
    while not received:
        time.sleep(0.05)
    train(2)
    print("went on", flush=True)


def main() -> None:
    run_dir, mode = sys.argv[1], sys.argv[2]
    hook.install(run_dir=run_dir, rank=0, profile_start=-1)
    train(3)
    if mode == "job-handler":
        go_on_after_sigterm()
        return
    if mode == "exit-wedged":

        def wedged_atexit() -> None:
            print("wedged", flush=True)
            wedge_holding_the_gil()

        atexit.register(wedged_atexit)
        raise RuntimeError("injected failure")
    Dumper._dump_stacks = lambda self, reason, seq: wedge_holding_the_gil()  # type: ignore[method-assign,assignment,misc]
    print("waiting", flush=True)
    ctypes.CDLL(None).pause()  # in C without the GIL, as in a collective
    ctypes.CDLL(None).pause()


if __name__ == "__main__":
    main()
