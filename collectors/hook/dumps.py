"""Post-mortem evidence from inside a rank: Python stacks of all threads and the Flight Recorder.

Two paths, because a hung rank may not run Python code on its main thread:
  * `faulthandler` is registered for SIGUSR2 (and fatal signals) and SIGTERM: C-level, it writes
    every thread's stack to `stacks/faulthandler.txt` / `stacks/sigterm.txt` even while the main
    thread is blocked inside a collective.
  * `Dumper.dump()` runs on a hook thread (a poll tick, a control request, exit, an exception or
    SIGTERM): `stacks/<seq>-<reason>.txt` with thread names, and `fr/<seq>-<reason>.pkl`, the
    pickle from `torch._C._distributed_c10d._dump_fr_trace()` (the format torch's own
    flight_recorder tool reads; load it with a restricted unpickler).
Every dump runs with a time limit on a daemon thread, so a wedged communicator cannot hang the job.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TextIO

from scope.collectors.hook.hooklog import HookLog
from scope.collectors.hook.posix import handler_address, kill_after

OWN_THREADS = "scope-hook"  # prefix of the hook's thread names; their stacks are not the job's


class Dumper:
    def __init__(self, fr_dir: Path, stacks_dir: Path, log: HookLog, rank: int, timeout_s: float) -> None:
        self.fr_dir = fr_dir
        self.stacks_dir = stacks_dir
        self.log = log
        self.rank = rank
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._seq = 0
        self._fault_files: dict[int, tuple[TextIO, int]] = {}
        self._sigterm_c_handler: int | None = None  # faulthandler's, as installed for SIGTERM
        self.written: list[Path] = []

    # -- dumps ------------------------------------------------------------------------------
    def dump(self, reason: str, *, fr: bool = True, stacks: bool = True) -> list[Path]:
        """Dump now on a helper thread; waits at most `timeout_s`. Never raises."""
        done: list[Path] = []

        def work() -> None:
            with self._lock:
                self._seq += 1
                seq = self._seq
            if stacks:
                done.extend(self._guarded(f"stack dump ({reason})", self._dump_stacks, reason, seq))
            if fr:
                done.extend(self._guarded(f"Flight Recorder dump ({reason})", self._dump_fr, reason, seq))

        thread = threading.Thread(target=work, name="scope-hook-dump", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no new threads at interpreter shutdown (3.12+): dump inline
            work()
            return done
        thread.join(self.timeout_s)
        if thread.is_alive():
            self.log.info(f"dump ({reason}) still running after {self.timeout_s:.0f} s; not waiting")
        return done

    def _guarded(self, what: str, fn, reason: str, seq: int) -> list[Path]:  # type: ignore[no-untyped-def]
        try:
            path = fn(reason, seq)
        except Exception as exc:
            self.log.error(what, exc)
            return []
        if path is None:
            return []
        self.written.append(path)
        self.log.info(f"wrote {path.parent.name}/{path.name}")
        return [path]

    def _dump_stacks(self, reason: str, seq: int) -> Path:
        names = {t.ident: t for t in threading.enumerate()}
        lines = [f"# scope stack dump: reason={reason} rank={self.rank} pid={os.getpid()} time_ns={time.time_ns()}"]
        for ident, frame in sys._current_frames().items():
            thread = names.get(ident)
            label = thread.name if thread else "?"
            daemon = f", daemon={thread.daemon}" if thread else ""
            if label.startswith(OWN_THREADS):
                lines.append(f"\nThread {label} (id {ident}{daemon}): scope's own hook thread")
                continue
            lines.append(f"\nThread {label} (id {ident}{daemon}), most recent call last:")
            lines.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
        return _write_atomic(self.stacks_dir / f"{seq:03d}-{reason}.txt", ("\n".join(lines) + "\n").encode())

    def _dump_fr(self, reason: str, seq: int) -> Path | None:
        if "torch.distributed" not in sys.modules:
            return None  # the job never used torch.distributed: nothing recorded
        import torch

        c10d = getattr(torch._C, "_distributed_c10d", None)
        dump_fn = getattr(c10d, "_dump_fr_trace", None)
        if dump_fn is None:
            return None
        data = dump_fn()
        return _write_atomic(self.fr_dir / f"{seq:03d}-{reason}.pkl", bytes(data))

    # -- the C-level path for signals ---------------------------------------------------------
    def register_faulthandler(self, signum: int, name: str) -> None:
        """Dump all threads' stacks on `signum` at C level (works while Python is blocked) into
        `stacks/<name>`; a file per signal, so the hook thread can tell which signal arrived."""
        try:
            self.stacks_dir.mkdir(parents=True, exist_ok=True)
            fh = open(self.stacks_dir / name, "a")  # noqa: SIM115 - must stay open for faulthandler
            fh.write(f"# faulthandler ({signal_name(signum)}) for rank {self.rank} pid {os.getpid()}\n")
            fh.flush()
        except OSError as exc:
            self.log.error(f"opening stacks/{name}", exc)
            return
        try:
            # Chain to the handler that was there before (SIGTERM must still end the process), but
            # not to SIGUSR2's default action, which would kill the rank.
            previous = signal.getsignal(signum)
            chain = signum == signal.SIGTERM or previous not in (signal.SIG_DFL, signal.SIG_IGN, None)
            faulthandler.register(signum, file=fh, all_threads=True, chain=chain)
        except (ValueError, RuntimeError, OSError) as exc:
            self.log.error(f"faulthandler for {signal_name(signum)}", exc)
            fh.close()
            return
        self._fault_files[signum] = (fh, os.fstat(fh.fileno()).st_size)
        if signum == signal.SIGTERM:
            self._sigterm_c_handler = handler_address(signum)
        # Signals may share a file (SIGUSR2 and the watchdog's dump signal): this header is no dump.
        for other, (ofh, _) in list(self._fault_files.items()):
            with contextlib.suppress(OSError):
                self._fault_files[other] = (ofh, os.fstat(ofh.fileno()).st_size)
        if signum == signal.SIGUSR2 and not faulthandler.is_enabled():
            # Fatal signals too (SIGSEGV, SIGABRT from a failed gloo/NCCL check, ...): the stacks of
            # a rank that dies inside C++ are otherwise lost.
            with contextlib.suppress(Exception):
                faulthandler.enable(file=fh, all_threads=True)

    def make_sigterm_fatal(self) -> bool:
        """SIGTERM's default action back (the process ends at once), with faulthandler's C-level stacks
        still written first. Main thread only (the signal module's rule)."""
        entry = self._fault_files.get(signal.SIGTERM)
        try:
            if entry is not None:
                faulthandler.unregister(signal.SIGTERM)  # puts back the handler it chained to
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if entry is not None:  # chains to SIG_DFL now: stacks, then the default death
                self._chain_sigterm_stacks(entry[0])
        except (ValueError, RuntimeError, OSError) as exc:
            self.log.error("restoring SIGTERM's default action", exc)
            return False
        return True

    def sigterm_stacks_replaced(self) -> bool:
        """Whether a `signal.signal` of the job's replaced faulthandler's C handler for SIGTERM (the Python
        handler it reports may well be the hook's again)."""
        now = handler_address(signal.SIGTERM)
        return self._sigterm_c_handler is not None and now is not None and now != self._sigterm_c_handler

    def register_sigterm_stacks_again(self) -> None:
        """After the job's own SIGTERM handler came and went (its `signal.signal` replaced faulthandler's C
        handler): faulthandler on SIGTERM again, chaining to the handler in place now."""
        entry = self._fault_files.get(signal.SIGTERM)
        if entry is None:
            return
        try:
            faulthandler.unregister(signal.SIGTERM)
            self._chain_sigterm_stacks(entry[0])
        except (ValueError, RuntimeError, OSError) as exc:
            self.log.error("faulthandler for SIGTERM, again", exc)

    def _chain_sigterm_stacks(self, fh: TextIO) -> None:
        """faulthandler on SIGTERM into `fh`, chaining to the handler in place now; its C handler's address
        kept, to notice when a job's `signal.signal` replaces it. Raises what faulthandler raises."""
        faulthandler.register(signal.SIGTERM, file=fh, all_threads=True, chain=True)
        self._fault_files[signal.SIGTERM] = (fh, os.fstat(fh.fileno()).st_size)
        self._sigterm_c_handler = handler_address(signal.SIGTERM)

    def arm_exit_deadline(self, seconds: float) -> None:
        """A C-level deadline, even when no Python thread can ever run again (a C call wedged with the GIL
        held, or a thread frozen by the interpreter's finalization): every thread's stack a second before,
        then SIGKILL, as a launcher's grace running out would end it. Where no POSIX timer can be armed,
        faulthandler's own exit (status 1) at `seconds`. It replaces a faulthandler timer the job set."""
        entry = self._fault_files.get(signal.SIGTERM)
        out = entry[0] if entry is not None else sys.stderr
        try:
            if kill_after(seconds):
                faulthandler.dump_traceback_later(max(seconds - 1.0, 0.5), exit=False, file=out)
            else:
                faulthandler.dump_traceback_later(seconds, exit=True, file=out)
        except (ValueError, RuntimeError, OSError) as exc:
            self.log.error("arming the exit deadline", exc)

    def signal_arrived(self, signum: int) -> bool:
        """True once after faulthandler wrote a dump for `signum`: the signal arrived."""
        entry = self._fault_files.get(signum)
        if entry is None:
            return False
        fh, size = entry
        try:
            now = os.fstat(fh.fileno()).st_size
        except OSError:
            return False
        self._fault_files[signum] = (fh, now)
        return now > size

    def unregister_faulthandlers(self) -> None:
        """In a forked child: its signals are its own, not the rank's."""
        for signum in list(self._fault_files):
            with contextlib.suppress(Exception):
                faulthandler.unregister(signum)
        self._fault_files.clear()
        with contextlib.suppress(Exception):
            faulthandler.disable()


def _write_atomic(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no partial dump behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal without a name of its own
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}"


def pick_dump_signal() -> int | None:
    """The signal the watchdog sends for C-level stacks: a real-time signal, from the top, that nothing
    in the process handles (SIGUSR1/SIGUSR2 belong to jobs and schedulers: Slurm's --signal, requeue
    handlers). None when every candidate is taken: the watchdog then relies on its control request."""
    if not hasattr(signal, "SIGRTMAX"):
        return None
    for signum in range(signal.SIGRTMAX - 2, signal.SIGRTMIN + 8, -1):
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                return signum
    return None
