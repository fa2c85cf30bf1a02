"""A crashed job is never "healthy": the first error-class line no rule explained, as a best guess.

Used only when nothing else produced a failure finding. NCCL INFO narration, nccl-tests comment and
result lines, and the benign warnings of signatures.BENIGN are not errors; nor is a 'WARNING' or
'Warning' (advice by convention: deprecations, env echo), where NCCL's own 'WARN' token is.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.after_the_end import teardown_noise
from scope.analyzers.diagnose.knowledge.launcher_cut import CODE_CUT, deepspeed_code_cut
from scope.analyzers.diagnose.knowledge.native_libraries import crashed_in
from scope.analyzers.diagnose.knowledge.remedies import NCCL_BUILD_FOR_CUDA, NCCL_DEBUG_RERUN, TIMEOUT_KNOBS
from scope.analyzers.diagnose.knowledge.signals import SILENT_END, launcher_signal, launcher_signal_advice
from scope.analyzers.diagnose.model import APPLICATION, Anomaly
from scope.analyzers.diagnose.readers.lines import parse_line
from scope.analyzers.diagnose.readers.signature_scan import is_benign
from scope.analyzers.diagnose.reasoning.run_end import RunEnd, last_progress

ERROR_CLASS = re.compile(
    r"Error\b|\berror:|\bERROR\b|\bWARN\b|\bfail(?:ed|ure)\b|\bFAIL(?:ED)?\b"
    r"|timed out|\bKilled\b|\bSignal\b|\bsignal \d+|Segmentation fault|core dumped|\bAborted\b|\bpanic\b"
    r"|exit(?:ed)?(?: with)? (?:code|status)[ :=]*-?[1-9]|exitcode\s*[:=]\s*-?[1-9]"
    # a serving engine's process reporting the exception that ends it, traceback to follow (sglang
    # srt/managers/scheduler.py run_scheduler_process: 'Scheduler hit an exception: Traceback ...')
    r"|\bhit an exception\b"
    # DeepSpeed's launcher tearing the workers down after one ended (knowledge/launcher_cut.py): its INFO lines
    # are the only failure words of a paste cut before its ERROR line
    r"|Killing subprocess \d"
)
# 'error_file' only as torchrun's own field line ('error_file: <N/A>'): torch elastic's ProcessFailure repr carries
# it beside the failure itself ('ProcessFailure(local_rank=0, pid=54, exitcode=-7, error_file=...', as DLRover and
# the elastic agent log RunResult.failures: torch/distributed/elastic/multiprocessing/errors/__init__.py).
_NOT_ERRORS = re.compile(
    r"NCCL INFO|^#|\b0 errors?\b|errors?: 0\b|^\W*error_file\b|\bno error\b|without error|"
    # a metric named 'error' with a decimal value ('Top1 error: 98.99', 'val error 0.213'): a rate the training
    # loop prints each step (an exit or status code is a whole number)
    r"\berror\s*[:=]?\s*\d+\.\d+\b",
    re.I,
)
# A setting's listing, one 'NAME: value' or 'NAME=value' of an environment variable a line (ProcessGroupNCCL's
# options dump prints 'NCCL_DEBUG: WARN'; env echoes print 'NCCL_DEBUG=WARN'): the value names a level, no failure.
_SETTING_LINE = re.compile(r"^\s*[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*[:=]\s*\S+\s*$")

# Best-guess kind from the words of the line, first match wins.
_GUESS_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)out of memory|\bOOM\b|Cannot allocate memory"), "oom"),
    # "failed or timed out" (c10d's take-down line) does not say which: not a timeout by itself
    (re.compile(r"(?i)(?<!failed or )timed? ?out|timeout|deadline exceeded"), "timeout"),
    (re.compile(r"(?i)Xid|ECC|NVLink|fallen off the bus|PCIe"), "hardware_fault"),
    (re.compile(r"(?i)connection|socket|network|unreachable|refused|\bpeer\b|\bIB\b|infiniband"), "network_fault"),
    # c10d raises DistBackendError for its backend's (NCCL's) failures (torch/csrc/distributed/c10d/exception.h);
    # Ray's RayTaskError(DistBackendError) names it for a remote actor whose own lines are not in the log
    (re.compile(r"(?i)\bNCCL\b|\bnccl\w*|RCCL|\bDistBackendError\b"), "nccl_error"),
    (
        re.compile(r"(?i)not found|no such file|permission denied|not supported|invalid|version|mismatch|unknown"),
        "config_error",
    ),
)


# What to check first for a failure of that kind whose line no rule knows, in the order the class's confirmed
# fixes ran (a timeout: one rank's own long work, knowledge/remedies.py).
GUESS_CHECKS: dict[str, str] = {
    "oom": "Check host and GPU memory per rank (dmesg -T | grep -i oom; nvidia-smi); lower the batch or workers.",
    "timeout": "A timeout is most often one rank's own long work (evaluation, pre-processing, a save on rank 0) "
    "while the others wait: run that work on every rank or once before the job, or raise the timeout ("
    + TIMEOUT_KNOBS
    + "); else find the rank that did not reach the timed-out operation (its own log and stack, py-spy dump).",
    "hardware_fault": "Check the node's kernel log for Xid / AER / NVLink errors (dmesg -T) and drain it if they show.",
    "network_fault": "Check the network between the hosts: NCCL_SOCKET_IFNAME to the routable NIC, firewalls, and on "
    "InfiniBand ibstat / ib_write_bw (NCCL_IB_DISABLE=1 as a test where the nodes have no working IB).",
    "nccl_error": f"{NCCL_DEBUG_RERUN} to see the WARN line that names the failing subsystem; across nodes "
    "NCCL_IB_DISABLE=1 or NCCL_SOCKET_IFNAME tells a network fault apart.",
    "config_error": "Check the named file, library or setting on every node (versions of driver, CUDA, NCCL, PyTorch; "
    "devices visible in the container).",
    "crash": "Read the first failing rank's own output and exit status (faulthandler, py-spy dump --native for a "
    "native crash).",
}

# Plain substrings one of which every ERROR_CLASS match contains: str.find over the text is far faster
# than the regex alternation tried at every character.
_LITERALS = (
    "Error",
    "error:",
    "ERROR",
    "WARN",
    "fail",
    "FAIL",
    "timed out",
    "Killed",
    "Signal",
    "signal ",
    "Segmentation fault",
    "core dumped",
    "Aborted",
    "panic",
    "exit",
    "hit an exception",
    "Killing subprocess",
)


def _candidate_starts(text: str) -> list[int]:
    starts: set[int] = set()
    for word in _LITERALS:
        pos = text.find(word)
        while pos >= 0:
            starts.add(text.rfind("\n", 0, pos) + 1)
            nl = text.find("\n", pos)
            pos = text.find(word, nl) if nl >= 0 else -1
    return sorted(starts)


def first_error(text: str, display: str, year: int = 1970, read: frozenset[int] = frozenset()) -> Anomaly | None:
    """The first error-class line after the run's last progress; `read`: lines a rule already read as no
    failure (a WARN the run went past), which are no guess."""
    progress_at: int | None = None
    run_end: RunEnd | None = None
    lines_before = (0, 0)  # (offset, newlines before it) of the last candidate reached
    for start in _candidate_starts(text):
        end = text.find("\n", start)
        raw = text[start : len(text) if end < 0 else end]
        if not ERROR_CLASS.search(raw):
            continue
        if progress_at is None:
            progress_at = last_progress(text)
        if start < progress_at:
            continue  # the run progressed past this line: a warning it survived, not what stopped it
        # lines counted on from the previous candidate's: each skipped candidate (a benign line, teardown's words
        # after the end) costs its own stretch of the log, not the whole log again
        idx = lines_before[1] + text.count("\n", lines_before[0], start)
        lines_before = (start, idx)
        if idx + 1 in read:
            continue
        p = parse_line(raw, year)
        msg = p.text
        if not msg or _NOT_ERRORS.search(msg) or _SETTING_LINE.match(msg) or is_benign(msg):
            continue
        if teardown_noise(msg) and (run_end := run_end or RunEnd(text, progress_at)).before(start) >= 0:
            continue  # the run had ended: its teardown's words (knowledge/after_the_end.py)
        kind = next((k for pattern, k in _GUESS_KINDS if pattern.search(msg)), "crash")
        cut = deepspeed_code_cut(text, start)  # no code shown: no signal to read, the codes' fixes instead
        advice = CODE_CUT if cut else launcher_signal_advice(text, start)
        said = None if cut else launcher_signal(text, start)
        # a worker that ended without a word under a launcher's teardown: killed from outside, SIGKILL's reading
        signal = said[1].name if said else "SIGKILL" if advice and advice.startswith(SILENT_END) else None
        return Anomaly(
            code="unmatched_error",
            kind=kind,
            level=APPLICATION,
            message=msg[:300],
            file=display,
            line=idx + 1,
            rank=p.rank if p.rank is not None else p.local_rank,
            host=p.host,
            time_ns=p.time_ns,
            severity="critical",
            details={
                "confidence": "low",
                "line_text": msg[:300],
                # a launcher's teardown line: the signal its report names says more than the kind's checks
                "remedy": _native_crash(text, kind) + (advice or _checks(kind, msg)),
                # the signal, for the ending's reading of it (words/endings.explain_exit_status: its kind)
                **({"signal": signal} if signal else {}),
            },
        )
    return None


# An NCCL line no row knows that still says its result was a CUDA error (Caffe's 'result == ncclSuccess (1 vs. 0)
# unhandled cuda error', markdown-mangled as 'cuda _error_'): the NCCL-for-this-CUDA fix first.
_NCCL_CUDA_RESULT = re.compile(r"(?i)unhandled\W{1,3}cuda\W{1,3}_?error|ncclUnhandledCudaError")


# A timeout line that names a collective, the store or a process group: the collective-timeout order; any other
# ("Read timed out" of an HTTP download, datalab-to/marker#308) gets the neutral question of what timed out.
_COLLECTIVE_TIMEOUT = re.compile(
    r"(?i)WorkNCCL|store|barrier|ProcessGroup|\bNCCL|gloo|collective|watchdog|waitForInput|c10d|rendezvous|"
    r"all_?reduce|broadcast|all_?gather|reduce_?scatter|\bSeqNum"
)
OTHER_TIMEOUT = (
    "Find what timed out - a connection or a download (the host and port the line names: its network, proxy or "
    "service; retry, or raise that client's timeout), a file system, or a peer rank - and check that first; "
    "where a rank timed out waiting, find the rank that did not reach the operation (its own log and stack, "
    "py-spy dump)."
)


def _checks(kind: str, msg: str) -> str:
    """What to check first for a guessed kind, from the line itself where it says more than its kind."""
    if kind == "timeout" and not _COLLECTIVE_TIMEOUT.search(msg):
        return OTHER_TIMEOUT
    if kind == "nccl_error" and _NCCL_CUDA_RESULT.search(msg):
        return f"{NCCL_BUILD_FOR_CUDA}. " + GUESS_CHECKS[kind]
    return GUESS_CHECKS[kind]


def _native_crash(text: str, kind: str) -> str:
    """For a crash with a gdb backtrace in the log: whose library its frame 0 is in, and what to do then."""
    found = crashed_in(text) if kind == "crash" and "\n#0 " in text else None
    if found is None:
        return ""
    func, lib = found
    return f"It stopped in {func}, in {lib.owner}'s library: {lib.remedy}. "
