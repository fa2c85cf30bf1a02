"""Who ended a process, read from the words around its end: the reading of a bare SIGKILL or SIGABRT as data.

SIGKILL ('Killed', exit 137, exitcode -9) is the kernel's OOM killer only where the log shows memory evidence or
no other sender; SLURM, Kubernetes and runners kill too:
  srun  'srun: Terminating job step' / 'Terminating StepId=' and 'tasks 0-7: Killed' when it tears a step down
        after another task's exit or abort (--kill-on-bad-exit; https://slurm.schedmd.com/srun.html), 'CANCELLED
        AT ... DUE TO TIME LIMIT', 'Force Terminated' (slurmstepd); an OOM kill is 'Detected N oom-kill event(s)'
        or 'Exceeded job memory limit' there
  Kubernetes  'Reason: OOMKilled' for the cgroup OOM killer; 'Reason: Error' with 137 is the kubelet's SIGKILL
        after the grace period (liveness probe, eviction, deletion, preemption;
        https://kubernetes.io/docs/tasks/debug/debug-application/determine-reason-pod-failure/)
  SLURM preemption  SIGTERM then SIGKILL at the end of the grace time (https://slurm.schedmd.com/preempt.html)

SIGABRT after training steps is c10d's NCCL watchdog (knowledge/signals.py) only in a job that runs collectives
and where the rank printed no abort of its own after its last step: a glibc assertion, std::terminate, a CHECK.
"""

from __future__ import annotations

import re

# A kill's memory evidence: kernel (dmesg), slurmstepd, cgroup, Kubernetes.
MEMORY_EVIDENCE = re.compile(
    r"(?i)oom[-_ ]kill|Out of memory|OOMKilled|Exceeded (?:job|step) memory limit|memory cgroup out of memory|"
    r"oom_reaper|low on resource: memory"  # the last: the kubelet evicting for memory pressure
)
# Another sender of a SIGKILL than the OOM killer (what it is, for the summary).
OTHER_SENDERS: tuple[tuple[str, str], ...] = (
    (r"srun: (?:error: )?Terminating (?:job step|StepId)", "srun tearing the step down"),
    (r"\bCANCELLED AT\b|DUE TO (?:TIME LIMIT|PREEMPTION)|Force Terminated", "SLURM cancelling the job"),
    (
        r"srun: error: \S+: tasks? [\d\-,]+: (?:Exited with exit code [1-9]|Aborted|Segmentation fault)",
        "srun tearing the step down after another task failed",
    ),
    (r"(?i:killed by runner)|\bscancel\b", "a runner or user killing the job"),
    (
        r"Liveness probe failed|failed liveness probe|\bEvicted\b|\b[Pp]reempt(?:ed|ion)\b",
        "Kubernetes stopping the container (probe, eviction, preemption)",
    ),
    (r"Received Signals\.SIGTERM|received signal SIGTERM", "a SIGTERM to the job first"),
    # a shell's job-control report of the launcher itself killed: the OOM killer picks the process with the most
    # memory (a worker; mm/oom_kill.c oom_badness), not the launcher, which holds little; kill -9 or a wrapper did
    (
        r"\b\d+ Killed\s+(?:torchrun|python3? -m torch\.distributed\.(?:run|launch)|deepspeed|"
        r"accelerate launch|mpirun)\b",
        "the launcher itself killed (kill -9 or a wrapper; the OOM killer picks a worker)",
    ),
)
_OTHER = re.compile("|".join(f"(?:{p})" for p, _ in OTHER_SENDERS))
# The Kubernetes pod status: a 137 there is the OOM killer's only with reason OOMKilled.
_K8S_STATUS = re.compile(r"(?m)^[^\S\n]*(?:Reason:\s+\w+|Last State:|State:\s+Terminated)")


def other_sender(text: str) -> str | None:
    """What, besides the OOM killer, the log shows killing the job; None with memory evidence or no other
    sender in the log."""
    if MEMORY_EVIDENCE.search(text):
        return None
    m = _OTHER.search(text)
    if m is not None:
        return next(what for p, what in OTHER_SENDERS if re.search(p, m.group(0)))
    if _K8S_STATUS.search(text):
        return "Kubernetes killing the container (its reason is not OOMKilled)"
    return None


# What to check for each sender (in place of the OOM killer's checks): the sources above.
SENDER_CHECKS: dict[str, str] = {
    "srun tearing the step down": "srun killed the step's other tasks after one of them ended (--kill-on-bad-exit): "
    "find the task that ended first, above srun's 'Terminating' line, and its own error.",
    "SLURM cancelling the job": "SLURM ended the job (time limit, preemption or scancel): sacct -j JOB -o "
    "State,Elapsed,Timelimit,Reason says which; raise --time or checkpoint often enough to resume.",
    "srun tearing the step down after another task failed": "srun killed the step's other tasks after one failed "
    "(--kill-on-bad-exit): the failing task's own error, on its 'Exited with exit code' / 'Aborted' line, is "
    "the cause.",
    "a runner or user killing the job": "A runner or a user killed the job: check the runner's timeout and why the "
    "job had stopped making progress before it.",
    "Kubernetes stopping the container (probe, eviction, preemption)": "Kubernetes stopped the container: kubectl "
    "describe pod shows the probe, eviction or preemption; a liveness probe that fails while the job trains needs a "
    "longer timeoutSeconds / failureThreshold, an eviction the node's pressure.",
    "a SIGTERM to the job first": "The job got SIGTERM first (preemption, cancel, the launcher after another rank "
    "failed) and SIGKILL after the grace period: find who sent the SIGTERM; handle it to save a checkpoint.",
    "the launcher itself killed (kill -9 or a wrapper; the OOM killer picks a worker)": "Something killed the "
    "launcher itself (kill -9, a wrapper's or scheduler's timeout): find who, in the wrapper's or shell's log.",
    "Kubernetes killing the container (its reason is not OOMKilled)": "Kubernetes killed the container for a reason "
    "other than OOMKilled: kubectl describe pod (Last State, Reason, Events) says which.",
}


def sender_check(sender: str) -> str:
    """What to check where `sender` (other_sender's words) killed the job."""
    return SENDER_CHECKS.get(sender, f"The log shows {sender}: find why it ended the job.")


# A SIGKILL in any launcher's words: the signal's name, the shell's and srun's 'Killed', exit code -9 / 137
# (torchrun's 'exitcode: -9', DeepSpeed's 'exits with return code = -9', Docker's and Kubernetes' 137).
KILL_WORDS = re.compile(r"SIGKILL|\bKilled\b|(?:exit|return) ?(?:code|_code|status)?[:= ]+(?:-9|137)\b")


def mentions_kill(text: str) -> bool:
    return KILL_WORDS.search(text) is not None


def memory_shown(text: str) -> bool:
    return MEMORY_EVIDENCE.search(text) is not None


# A rank's own abort after its last step: glibc's assert, std::terminate, a C++ CHECK, libc++abi, a shell's report
# of the program's abort. faulthandler's 'Fatal Python error: Aborted' is not here: it prints the same for the
# watchdog's abort.
OWN_ABORT = re.compile(
    r"Assertion [`'].*' failed|terminate called|libc\+\+abi: terminating|\bCheck failed\b|\bwhat\(\):|"
    r"^(?:.*: )?Aborted \(core dumped\)|double free or corruption|malloc\(\): ",
    re.MULTILINE,
)
_WATCHDOG = re.compile(r"Watchdog caught|watchdog thread terminated|ProcessGroupNCCL's watchdog")
# A job that runs collectives: NCCL's or c10d's words, rank tags, a launcher stopping the other workers.
COLLECTIVE_JOB = re.compile(
    r"\bNCCL\b|ProcessGroupNCCL|\[rank[1-9]\d*\]|closing signal SIG|local_rank: [1-9]|^\s*\[[1-9]\d*\]:\s*$",
    re.MULTILINE,
)


# std::terminate with no exception in flight: a C++ thread object destroyed while its thread still runs (C++
# [thread.thread.destr]: the destructor of a joinable std::thread calls std::terminate), which in a Python job is a
# library's background thread met by the interpreter's exit or a collected object. Measured on scope's own test job
# (torch 2.13 CPU, DDP on gloo, 3 ranks, a loaded 2-core host; tests/jobs/ddp_reducer_job.py): with no scope code
# loaded it aborted so at exit in 3 of 45 runs after barrier + destroy_process_group, in none of 50 that left by
# os._exit(0) after destroy_process_group.
NO_ACTIVE_EXCEPTION = "terminate called without an active exception"
NO_ACTIVE_EXCEPTION_MEANS = (
    "std::terminate with no exception in flight: a C++ thread object destroyed while its thread still ran, most "
    "often a library's background thread (a process group's, a DataLoader's, the job's own) met by the "
    "interpreter's exit"
)
NO_ACTIVE_EXCEPTION_CHECK = (
    "If the job's work was done before the abort (its last step and outputs written), the results stand and the "
    "abort is the teardown's: end with dist.barrier() and dist.destroy_process_group(), join the job's own threads "
    "and close DataLoader iterators before the interpreter exits (flushing and os._exit(0) after "
    "destroy_process_group() skips the teardown); if it came mid-run, get the native stack of the thread that "
    "ended (gdb, py-spy dump --native)."
)


def own_abort_after(text: str, line: int) -> tuple[int, str] | None:
    """(line, text) of the first abort the program printed itself after line LINE (1-based)."""
    start = 0
    for _ in range(line):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    m = OWN_ABORT.search(text, start)
    if m is None or _WATCHDOG.search(text, start):
        return None  # c10d's watchdog ends by std::terminate too ('terminate called ... what(): ... Watchdog caught')
    s = text.rfind("\n", 0, m.start()) + 1
    e = text.find("\n", m.start())
    return text.count("\n", 0, m.start()) + 1, text[s : e if e >= 0 else len(text)].strip()[:160]


def runs_collectives(text: str) -> bool:
    return COLLECTIVE_JOB.search(text) is not None
