"""What an exit status means when a launcher's line is the only word: signals and 128+N, as data.

How each launcher reports a worker's end (the sources):
  torchrun / torch.distributed.elastic  'failed (exitcode: -7) local_rank: 0 (pid: 12) of binary: ...' and the
        ChildFailedError block 'exitcode : -7 (pid: 12)': a negative exitcode is the signal that killed the
        worker (torch/distributed/elastic/multiprocessing/api.py, errors/__init__.py; `Signal 7 (SIGBUS)
        received by PID` in its traceback field)
  DeepSpeed launcher  'exits with return code = -7' (deepspeed/launcher/launch.py, sigkill_handler): the
        Popen return code, negative for a signal
  Open MPI mpirun  'exited on signal 7 (Bus error)' / 'Exit code: 139' (orte/mca/errmgr help text)
  SLURM  'task 5: Exited with exit code 139', 'Bus error (core dumped)' (srun, slurmstepd): a shell or
        container reports 128 + N for signal N
  Kubernetes  'exit code 137' / 'OOMKilled' / 'Exit Code: 143' in the pod status (128 + N again; 137 with
        reason OOMKilled is the cgroup OOM killer)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.remedies import LARGER_SHM


@dataclass(frozen=True)
class SignalMeaning:
    number: int
    name: str
    kind: str
    meaning: str
    check: str
    # The kind when the log shows training steps before this end, in a job that runs collectives, and no abort of
    # the rank's own after them (knowledge/kill_senders.py): mid-run, the usual sender of the signal is another
    # (empty: the same kind everywhere).
    kind_mid_run: str = ""
    mid_run: str = ""
    check_mid_run: str = ""  # what to check then, before `check`


SIGNALS: dict[int, SignalMeaning] = {
    s.number: s
    for s in (
        SignalMeaning(
            7,
            "SIGBUS",
            "config_error",
            "a bus error: a memory-mapped page could not be backed; in a container this is almost always /dev/shm "
            "too small for the DataLoader workers' or NCCL's shared memory (docker's default is 64 MB)",
            LARGER_SHM + " and check it with df -h /dev/shm; fewer DataLoader workers or NCCL_SHM_DISABLE=1 work "
            "around it.",
        ),
        SignalMeaning(
            9,
            "SIGKILL",
            "oom",
            "killed outright: by the kernel's OOM killer (host or container memory limit) or by the scheduler "
            "(time limit, preemption, scancel, a launcher tearing the job down)",
            "Check the host's kernel log for an OOM kill (dmesg -T | grep -i -e oom -e 'Killed process'), the "
            "container's memory limit (Kubernetes reason OOMKilled) and the job's time limit (sacct -j JOB); "
            "lower host memory per rank (DataLoader workers, pinned memory, dataset copies per rank); a kill while "
            "the model loads is every rank holding the whole checkpoint in host RAM at once: load it memory-mapped "
            "or once (torch.load(mmap=True), from_pretrained(low_cpu_mem_usage=True), deepspeed.zero.Init) or use "
            "a host with more RAM.",
        ),
        SignalMeaning(
            11,
            "SIGSEGV",
            "crash",
            "a segmentation fault in native code (a CUDA / NCCL / extension library, or a mismatch between them)",
            "Get the native stack (PYTHONFAULTHANDLER=1, gdb, py-spy dump --native) and check the versions of the "
            "native libraries against each other (torch, CUDA, NCCL, custom extensions built for another torch).",
        ),
        SignalMeaning(
            6,
            "SIGABRT",
            "crash",
            "the process aborted itself: c10d takes a rank down after a collective timeout or NCCL error "
            "(TORCH_NCCL_ASYNC_ERROR_HANDLING), or a C++ assertion / std::terminate in a library",
            "Read that rank's own stderr for the first error before the abort (a watchdog timeout, an NCCL error, "
            "a 'terminate called' line).",
            # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: the watchdog thread aborts the process (std::abort,
            # TORCH_NCCL_ASYNC_ERROR_HANDLING, on by default since torch 2.2) when a collective outlives its
            # timeout; a C++ terminate or assertion prints its own line, and mid-run after clean steps it is rare
            # (Peterande/D-FINE#311: exitcode -6 after epoch 27's steps, a rank's data loading stalled).
            kind_mid_run="timeout",
            mid_run="The rank had been training (line {line}: '{text}') and printed no error: mid-run, the usual "
            "sender of SIGABRT is c10d's NCCL watchdog, which aborts the process when a collective outlives its "
            "timeout (30 min by default) because one rank stopped reaching it (a stalled DataLoader worker, work "
            "on one rank, a hung GPU).",
            check_mid_run="Find the rank that never reached the collective: the other ranks' watchdog lines name "
            "its SeqNum and op, Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT=1) "
            "records where each rank was; raise the process-group timeout (init_process_group(timeout=...), "
            "the framework's own timeout setting) only where that rank was busy with work of its own.",
        ),
        SignalMeaning(
            15,
            "SIGTERM",
            "crash",
            "asked to stop: by the launcher after another rank failed, by the scheduler (time limit, preemption) "
            "or by a user",
            "This rank was stopped, it did not fail: find the rank that failed first (the launcher's first "
            "failure) or the scheduler's reason (sacct -j JOB -o State,ExitCode,Reason).",
        ),
        SignalMeaning(
            2,
            "SIGINT",
            "crash",
            "interrupted (Ctrl-C, or a launcher forwarding an interrupt)",
            "Nothing failed by itself: the run was interrupted.",
        ),
        SignalMeaning(
            4,
            "SIGILL",
            "crash",
            "an illegal instruction: a binary built for a CPU (AVX-512, ...) or GPU architecture this node lacks",
            "Rebuild or install packages for this node's CPU / GPU architecture (TORCH_CUDA_ARCH_LIST).",
        ),
    )
}
_BY_NAME = {s.name: s for s in SIGNALS.values()}
# 'exitcode: -7', 'return code = -9', 'exit code 137', 'Exit Code: 139', 'exited on signal 7', 'Signal 7 (SIGBUS)'
_STATUS = re.compile(
    r"(?i)(?:exit ?code|return code|exit status)\s*[:=]?\s*(-?\d+)|exited on signal (\d+)|\bsignal (\d+)\b|"
    r"\b(SIG[A-Z]{2,6})\b"
)


def meaning(code: object = None, signal_name: object = None) -> SignalMeaning | None:
    """The signal behind an exit status: -N (a Popen / torchrun return code), 128+N (shell, container), a name.
    Values come from parsed lines: anything not a number or a known name means nothing."""
    if isinstance(signal_name, str) and signal_name in _BY_NAME:
        return _BY_NAME[signal_name]
    try:
        code = int(str(code))
    except ValueError:
        return None
    if code < 0:
        return SIGNALS.get(-code)
    if 128 < code < 160:
        return SIGNALS.get(code - 128)
    return None


# What a shell or runtime prints for a signal's end (bash's strsignal words, Python's faulthandler).
_WORDS = (
    ("Segmentation fault", 11),
    ("Bus error", 7),
    ("Aborted", 6),
    ("Killed", 9),
    ("Illegal instruction", 4),
)


def status_in_line(line: str) -> tuple[str, SignalMeaning] | None:
    """The words of the line that report the signal ('exitcode: -7', 'exited on signal 7', 'Bus error') and the
    signal they mean, so a remedy can quote the log."""
    for word, number in _WORDS:
        if word in line:
            return word, SIGNALS[number]
    for m in _STATUS.finditer(line):
        if m.group(1):
            found = meaning(int(m.group(1)))
        elif m.group(2) or m.group(3):
            found = SIGNALS.get(int(m.group(2) or m.group(3)))
        else:
            found = _BY_NAME.get(m.group(4))
        if found:
            return m.group(0).strip(), found
    return None


# A launcher tearing the job down after a worker ended (DeepSpeed's launch.py sigkill_handler, torch elastic's
# ChildFailedError block, Open MPI's 'exited on signal'): the words that open its report.
# Python's subprocess.CalledProcessError for a child a signal ended ('died with <Signals.SIGKILL: 9>'), as
# accelerate's simple_launcher and other wrappers raise it (Lib/subprocess.py CalledProcessError.__str__).
LAUNCHER_TEARDOWN = re.compile(
    r"sigkill_handler|Killing subprocess|ChildFailedError|exits with return code|\S\.py FAILED\b|"
    r"primary job +terminated|died with <Signals\.SIG"
)
# A worker that printed no error of its own: from deepspeedai/DeepSpeed#3160 (the launcher's sigkill_handler after
# building the optimizer states on the CPU, the return code -9 of the host OOM killer) and the SIGKILL row above.
SILENT_END = (
    "The launcher tore the job down after a worker ended, and no rank printed an error of its own: a process "
    "that ends without a word was most likely killed from outside (SIGKILL). "
)
_AFTER_LINES = 40
_BEFORE_CHARS = 40_000  # a worker's traceback just before the teardown (one the run survived long ago is no reason)
# A worker's own exit status, no signal: 1-127 ('exits with return code = 1', torchrun's 'exitcode  : 1')
_PLAIN_EXIT = re.compile(r"(?i)(?:return code|exit ?code|exit status)\s*[:=]?\s*([1-9]\d?|1[01]\d|12[0-7])\b")
# torchrun's ChildFailedError block names the first failure under this heading (torch/distributed/elastic/
# multiprocessing/errors/__init__.py); the other failures listed before it are its consequences
_ROOT_CAUSE = "Root Cause"


def _teardown_at(text: str, start: int) -> bool:
    end = text.find("\n", start)
    return bool(LAUNCHER_TEARDOWN.search(text[start : len(text) if end < 0 else end]))


def launcher_signal(text: str, start: int) -> tuple[str, SignalMeaning] | None:
    """The signal a launcher's teardown report at `start` names within its next lines (the Root Cause block's
    first where there is one), and the words that name it."""
    if not _teardown_at(text, start):
        return None
    lines = text[start:].split("\n", _AFTER_LINES)[:_AFTER_LINES]
    root = next((i for i, line in enumerate(lines) if _ROOT_CAUSE in line), 0)
    return next((found for line in lines[root:] + lines[:root] if (found := status_in_line(line))), None)


def launcher_signal_advice(text: str, start: int) -> str | None:
    """The remedy for a launcher's teardown line at `start` that no rule read: the signal its report names
    within the next lines ('exitcode: -9', 'signal 9 (SIGKILL)'; the Root Cause block's first where there is
    one), a worker's own exit status (no kill), else SIGKILL's checks for a worker that ended silently. None
    when the line is no launcher teardown."""
    if not _teardown_at(text, start):
        return None
    lines = text[start:].split("\n", _AFTER_LINES)[:_AFTER_LINES]
    found = launcher_signal(text, start)
    if found:
        word, sig = found
        return f"The log's '{word}' is {sig.name}, {sig.meaning}. {sig.check}"
    plain = next((m for line in lines if (m := _PLAIN_EXIT.search(line))), None)
    if plain:
        return (
            f"The log's '{plain.group(0)}' is the worker's own exit status, not a signal: it ended on an error it "
            "raised or reported. Read that worker's output before the teardown (its stderr or its own log file)."
        )
    if "Traceback (most recent call last)" in text[max(0, start - _BEFORE_CHARS) : start]:
        return None  # a rank did say why: its traceback, not a kill from outside
    return SILENT_END + SIGNALS[9].check
