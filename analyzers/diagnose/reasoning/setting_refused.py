"""A framework's refusal of its settings (knowledge/framework_config.py, the generic row) counts only where it
ended the run: the last exception of a chained traceback, raised rather than logged, and not one the run went
past. A dispatcher's 'not supported' that was caught (xformers' operator choice, a fused kernel's fallback) is
no failure of its own."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from scope.analyzers.diagnose.knowledge.build_backends import BUILD_ECHO_CODES, BUILD_WENT_PAST_CODES
from scope.analyzers.diagnose.knowledge.line_shapes import EXCERPT_CUT
from scope.analyzers.diagnose.knowledge.node_environment import HELPER_PROGRAMS, NODE_WENT_PAST_CODES, SOURCED_SCRIPT
from scope.analyzers.diagnose.knowledge.ray_failures import RAY_NODE_LOST_CODES, RAY_SUMMARY_CODES
from scope.analyzers.diagnose.knowledge.remote_launch import LAUNCH_WENT_PAST_CODES
from scope.analyzers.diagnose.knowledge.runtime_loading import LOADING_WENT_PAST_CODES
from scope.analyzers.diagnose.knowledge.slurm_step import JOB_OVER_REASON, SLURM_STEP_WENT_PAST_CODES, STEP_CREATE_CODE
from scope.analyzers.diagnose.knowledge.training_code import CAUGHT_WENT_PAST_CODES
from scope.analyzers.diagnose.readers.lines import line_at
from scope.analyzers.diagnose.reasoning import run_end, stages, survived_loading
from scope.analyzers.diagnose.reasoning.survived_loading import Process

if TYPE_CHECKING:
    from scope.analyzers.diagnose.model import Anomaly

GENERIC_CODE = "framework_setting_refused"
# Python's words between the exceptions of a chain: the one above was handled (or re-raised as another)
_CHAINED = re.compile(r"During handling of the above exception|The above exception was the direct cause")
# A log record's level before the exception's name: a warning or note the program printed and went on
_LOGGED = re.compile(r"\b(?:WARNING|WARN|INFO|DEBUG)\b|\[[WI]\d{4}|^[WI]\d{4} ")
CHAIN_LOOKAHEAD = 4  # lines after the exception line where Python prints the chain's words
MAX_OWN_OUTPUT_SCAN = 2000  # lines after a missing helper read for the job's own output
# Rows whose line a run prints and goes on from: a shell's 'command not found' for an optional tool (nvidia-smi,
# lsb_release, git in a setup script) is the failure only where nothing ran after it.
# Its matches count only where the run did not go on; they are notes where it trained or ended cleanly after them,
# and clues beside an error that shows the program itself ran (it ran out of memory, crashed, its collectives
# failed): an error of the launch (ssh refused, a rank never joined) may be the missing program's consequence.
# A launch's own failures (knowledge/remote_launch.py: ssh, pdsh, the Kubernetes API, a Go client's dial) are the
# same: 'the job never started' holds only where nothing ran after them; their row's own sign that it went on (an
# answered host-key question, the API answering: details went_on_past_it) is a note too.
# torchrun's c10d rendezvous store connect (knowledge/rendezvous_host.py) retried until the rendezvous completed
RENDEZVOUS_WENT_PAST_CODES = ("store_endpoint_ip_renamed", "c10d_rendezvous_store_unhosted")
WENT_PAST_CODES = (
    "launch_program_missing",
    "dmabuf_registration_unsupported",
    *LAUNCH_WENT_PAST_CODES,
    *RENDEZVOUS_WENT_PAST_CODES,
    *BUILD_WENT_PAST_CODES,  # a Windows build's socket warning, NCCL's 'unknown result code' (build_backends.py)
    *LOADING_WENT_PAST_CODES,  # an 'undefined symbol' the program went past (runtime_loading.py)
    *NODE_WENT_PAST_CODES,  # a launcher's missing program: one srun step, one host (node_environment.py)
    *SLURM_STEP_WENT_PAST_CODES,  # a Slurm step whose tasks never started: its plugins (slurm_step.py)
    *RAY_SUMMARY_CODES,  # Ray's summary of a failure printed elsewhere: a clue beside that error (ray_failures.py)
    *RAY_NODE_LOST_CODES,  # a node Ray lost and the run trained on without (ray_failures.py)
    *CAUGHT_WENT_PAST_CODES,  # a weights_only refusal a loader caught and retried (training_code.py)
)
# Rows gone past only where their own process trained after them (another rank's steps do not show it lived on)
OWN_PROCESS_WENT_PAST_CODES = (*LOADING_WENT_PAST_CODES, *CAUGHT_WENT_PAST_CODES)
# Rows that are the failure only where nothing else is: a later error of the program's own (whatever its kind: the
# Windows build's 'doesn't have NCCL built in' after its socket warnings) is what ended the run, and a log of
# nothing but these warnings shows no failure at all
CLUE_ONLY_CODES = ("windows_store_address_noise",)
SHELL_CODE = "launch_program_missing"  # a shell's 'command not found' (knowledge/launcher_rows.py)
# a helper's name on a shell's line (after 'line N: ', zsh's 'command not found: ', a path's folders)
_HELPER_NAMED = re.compile(r"(?:^|[\s:/])" + HELPER_PROGRAMS + r"(?::|\s*$)")
_SOURCED = re.compile(SOURCED_SCRIPT)
# a shell's or a launcher's complaint, not output of the job's own program
_SHELL_WORDS = re.compile(r"command not found|No such file or directory|: not found\s*$|executable file not found")
# a stop shown right below a warning: Python's traceback, torchrun's / mp.spawn's report of a failed process
_STOP_SHOWN = re.compile(
    r"Traceback \(most recent call last\)|ChildFailedError|ProcessRaisedException|ProcessExitedException|"
    r"terminated with (?:exit code|signal)|\bFAILED\b"
)
# a framework's word that it starts the process group the warning's store belongs to (Lightning's
# 'Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2'): the log ending there stopped in that init
_INIT_LINE = re.compile(r"Initializing distributed: |init_process_group|Rendezvous(?:ing)? ")
# a documentation heading an indented example sits under ('Troubleshooting:', 'Example output of a broken node:',
# 'If you see this:'): words of a guide, not of a log line, ending in a colon
_DOC_HEADING = re.compile(
    r"^(?=[A-Z])[\w ,'()/-]{0,80}?\b(?:Troubleshooting|Examples?|e\.g\.|For instance|Symptoms?|Known issues?|"
    r"FAQ|If you see)\b[\w ,'()/.-]{0,80}:\s*$",
    re.IGNORECASE,
)
DOC_QUOTE_LINES = 6  # indented lines under a heading read as its quote
# srun's word that a step's task ended (src/srun/srun_job.c): the step whose program was missing is over, and what
# trained after it is another step
_STEP_ENDED = re.compile(r"\bsrun: error: \S+: tasks? [\d,-]+: Exited with exit code", re.IGNORECASE)
# Rows of a launcher that started no process for one task of the step (slurmstepd's execve() of a missing program):
# the others training after it is no sign that task ran, so where no end is shown it stays a clue naming it
UNSTARTED_TASK_CODES = ("slurm_task_program_missing",)
# slurmctld's reason for refusing a step because the job was already over (knowledge/slurm_step.py)
_JOB_OVER = re.compile(JOB_OVER_REASON)
RAN_KINDS = ("oom", "crash", "hardware_fault", "nccl_error", "collective_mismatch", "input_problem")
# The kinds of a first failure that a later line cannot have caused: the program ran and failed (RAN_KINDS), or a
# collective / the job's time limit ran out. A rendezvous or store that timed out waiting for ranks (missing_rank),
# or a store no rank could reach (config_error), is what a host whose program is missing leaves on the others,
# whichever host's lines a concatenated or pdsh log prints first.
FAILED_FIRST_KINDS = (*RAN_KINDS, "timeout")


def drop_survived(anomalies: list[Anomaly], text: str) -> None:
    """Mark the generic row's matches that did not end the run as notes (severity info)."""
    refused = [a for a in anomalies if a.code == GENERIC_CODE and a.severity != "info"]
    if not refused:
        return
    lines = text.split("\n")
    last_step = stages.last_step(text)
    for a in refused:
        why = _survived(lines, a.line, last_step)
        if why:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = why


def drop_went_past(anomalies: list[Anomaly], text: str) -> None:
    """WENT_PAST_CODES' matches the run went past: a note (severity info) where their row's own sign of going on
    followed (went_on_past_it), the job ended cleanly after them, or it trained after them and did not then fail
    (a launch error on a host whose own processes never ran stays the root of a job that then failed for it: a
    timeout waiting for that host, a non-zero exit, pdsh's 255 at the end); a clue (severity warning, ranked
    below it) beside an error of the program itself."""
    found = [a for a in anomalies if a.code in WENT_PAST_CODES and a.severity != "info"]
    if not found:
        return
    lines = text.split("\n")
    last_step = stages.last_step(text)
    stop = stages.where_it_stopped(text)
    ran_last = _last_line_each_host_ran(lines)
    end = _last_line(lines)
    own = [o for o in anomalies if o.severity == "critical" and o.code not in WENT_PAST_CODES]
    last_own_error = max((o.line for o in own), default=0)
    ran_and_failed = any(o.kind in RAN_KINDS for o in own)  # read once: a pdsh fan-out has thousands of lines
    first_ran_error = min((o.line for o in own if o.kind in RAN_KINDS), default=0)
    first_own_error = min((o.line for o in own if o.kind in FAILED_FIRST_KINDS), default=0)
    clues = frozenset(a.line for a in found if a.code in CLUE_ONLY_CODES)
    alone = _clues_alone(lines, clues)
    loading = [a for a in found if a.code in OWN_PROCESS_WENT_PAST_CODES]
    progress = survived_loading.progress_lines(lines, min(a.line for a in loading)) if loading else []
    for a in found:
        step_after = _step_after(a, lines, last_step, progress)
        host = launch_host(lines, a)
        host_ran = ran_last.get(host, 0) > a.line
        # the job did not end cleanly after the line: a later error of its own, or a launcher's non-zero exit at
        # the end (not pdsh's 255 for the failed host itself, printed just below it)
        failed = last_own_error > a.line or (end[0] > a.line and bool(_NONZERO_EXIT.search(end[1])))
        ended = 0 if failed else _ended_cleanly(end, stop, a.line)
        if a.line in alone:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = "a warning alone: the log shows nothing that failed"
        elif (over := _step_after_the_end(text, lines, a, stop)) > 0:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = f"a step asked for after the run had ended (line {over}) and the job with it"
        elif _after_the_failure(first_own_error, a.line, last_step) and not (host and not host_ran):
            # the program had already failed (a timeout, a crash) and did not train on: a clean-up step's missing
            # program, printed after it, cannot have caused it
            a.severity = "warning"
            a.details["survived"] = f"printed after the run had already failed (line {first_own_error})"
        elif a.code in CLUE_ONLY_CODES and last_own_error <= a.line and not _stop_follows(lines, a.line, clues):
            # the program's own output after the warning (or no stop shown at all): it went on past it
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = "the program went on past it: no stop follows it in the log"
        elif a.details.get("went_on_past_it"):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = a.details["recovered_by"] = "the run went on past it"
        elif ended:
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = f"the run ended cleanly (line {ended})"
        elif a.code == SHELL_CODE and _quoted_under_doc_heading(lines, a.line):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = "an example quoted under a documentation heading, not a command that ran"
        elif a.code == SHELL_CODE and (own_output := _helper_went_on(lines, a)):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = (
                f"a helper the script went on without: output of its own follows (line {own_output})"
            )
        elif (
            step_after and a.code in UNSTARTED_TASK_CODES and not failed and not _step_ended(lines, a.line, step_after)
        ):
            # one task of the step never started while the others trained, and no end of that step is shown: a clue
            # naming it (the job may wait for that task, or its work was never done), not the job's clean run
            a.severity = "warning"
            a.details["survived"] = f"the other tasks went on training (line {step_after}); this one never started"
        elif step_after and (host_ran or not failed or a.code in OWN_PROCESS_WENT_PAST_CODES):
            a.severity, a.details["signature"] = "info", None
            a.details["survived"] = f"the run went on training (line {step_after})"
        elif a.code in CAUGHT_WENT_PAST_CODES:
            continue  # not caught: the error its process died at, the root whatever failed after it (a re-raise)
        elif step_after and a.code in SLURM_STEP_WENT_PAST_CODES and _failed_after(step_after, last_own_error, end):
            # srun aborts a step whole when one of its tasks does not launch: the training after it is a later
            # step's (the script's retry), whose own failure ended the run, whatever its kind (an HCCL link timeout,
            # a watchdog's: not RAN_KINDS)
            a.severity = "warning"
            a.details["survived"] = f"a later step trained (line {step_after}) and then failed on its own"
        elif a.code in CLUE_ONLY_CODES and last_own_error > a.line:
            a.severity = "warning"
        elif host and not host_ran and failed:
            continue  # the job failed for want of the host the launch never reached: this error is its root
        elif a.code in LOADING_WENT_PAST_CODES and survived_loading.died_at(lines, a.line):
            continue  # its process died at it: the root, whatever the other ranks did (and the launcher said) after
        elif a.code in RAY_NODE_LOST_CODES and not step_after:
            continue  # the other nodes' errors after it (their collectives, a dead actor) are its consequence
        elif a.code in RAY_SUMMARY_CODES and own:
            # Ray's summary of an error that the log prints too (the worker's exception, whatever its kind): that
            # error is the root, the summary its clue
            a.severity = "warning"
        elif ran_and_failed and (a.code not in BUILD_ECHO_CODES or first_ran_error < a.line):
            a.severity = "warning"  # the program ran and failed on its own: that error ended the run


def _step_after_the_end(text: str, lines: list[str], a: Anomaly, stop: stages.StageStop | None) -> int:
    """The line (0: none) of the run's own end before a step that Slurm refused because the job was already over
    ('Job/step already completing or completed'): a later srun of the script (an upload, an evaluation) that came
    after the job's end, not a failure of the run. The end is the log's last stage marker where it closes the run,
    else the end reasoning/run_end.py reads back from the step (a Ctrl-C, a KeyboardInterrupt: the user's stop)."""
    if a.code != STEP_CREATE_CODE or not _JOB_OVER.search(line_at(lines, a.line)):
        return 0
    if stop is not None and stop.clean and stop.line < a.line:
        return stop.line
    return run_end.end_before_line(text, a.line)


def _failed_after(step: int, last_own_error: int, end: tuple[int, str]) -> bool:
    """The run failed after its training step STEP: an error of its own below it, or a launcher's non-zero exit as
    the log's last line."""
    return last_own_error > step or (end[0] > step and bool(_NONZERO_EXIT.search(end[1])))


def _after_the_failure(first_own_error: int, line: int, last_step: tuple[int, str] | None) -> bool:
    """LINE comes after the program's own first failure with no training step between them."""
    if not 0 < first_own_error < line:
        return False
    return last_step is None or not first_own_error < last_step[0] < line


def _step_after(
    a: Anomaly, lines: list[str], last_step: tuple[int, str] | None, progress: list[tuple[int, Process]]
) -> int:
    """The line (0: none) of a training step after the row's line that shows it was gone past: for a loading error
    only a step of its own process (its '[rankN]:' tag, srun's label; any process where the line names none), as
    another rank's steps are no sign that the rank whose import failed lived on; for the others the log's last."""
    if a.code in OWN_PROCESS_WENT_PAST_CODES:
        said = line_at(lines, a.line)
        return survived_loading.went_on_at(a.line, survived_loading.process(said), progress)
    return last_step[0] if last_step is not None and last_step[0] > a.line else 0


def _stop_follows(lines: list[str], line: int, clues: frozenset[int]) -> bool:
    """The run stopped right after a clue-only warning (and the warnings like it below it): the next line is a
    Python traceback or a launcher's report that a process failed, or the log ends in the distributed init the
    warning came from (Lightning's 'Initializing distributed: ...' and nothing after), or an excerpt cuts there. Any
    other output is the program going on."""
    at_init = False
    for idx in range(line, len(lines)):
        if idx + 1 in clues or not lines[idx].strip():
            continue
        if _INIT_LINE.search(lines[idx]):
            at_init = True
            continue
        # an excerpt's cut marker: the lines left out may hold the stop, and no output of the program is shown
        return bool(EXCERPT_CUT.match(lines[idx]) or _STOP_SHOWN.search(lines[idx]) or _NONZERO_EXIT.search(lines[idx]))
    return at_init


def _quoted_under_doc_heading(lines: list[str], line: int) -> bool:
    """The row's line is indented under a documentation heading (a few indented lines below it): a README's or
    a guide's example of the message, not a shell that ran."""
    said = line_at(lines, line)
    if not said[:1].isspace():
        return False
    for idx in range(line - 2, max(-1, line - 2 - DOC_QUOTE_LINES), -1):
        above = lines[idx]
        if not above.strip() or above[:1].isspace():
            continue
        return bool(_DOC_HEADING.match(above))
    return False


def _step_ended(lines: list[str], line: int, until: int) -> bool:
    """srun reports a step's task ended between the row's line and the step line `until` (both 1-based)."""
    return any(_STEP_ENDED.search(lines[idx]) for idx in range(line, min(until, len(lines))))


def _helper_went_on(lines: list[str], a: Anomaly) -> int:
    """The line (0: none) of the job's own output after a shell's missing helper (module, nvidia-smi, conda, a
    sourced profile's command): any later non-blank line that is no shell complaint. A missing main program
    (python, torchrun, srun) is no helper: the script's own echoes after it are no sign the job ran."""
    said = line_at(lines, a.line)
    program = str(a.details.get("program") or "")
    if not (_HELPER_NAMED.search(f" {program}") or _SOURCED.search(said)):
        return 0
    for idx in range(a.line, min(len(lines), a.line + MAX_OWN_OUTPUT_SCAN)):
        if lines[idx].strip() and not _SHELL_WORDS.search(lines[idx]):
            return idx + 1
    return 0


def _clues_alone(lines: list[str], clues: frozenset[int]) -> frozenset[int]:
    """The lines of CLUE_ONLY_CODES matches (`clues`) where the log holds nothing else: every non-blank line is one
    of them."""
    if not clues or any(text.strip() and idx not in clues for idx, text in enumerate(lines, 1)):
        return frozenset()
    return clues


SSH_CODE_PREFIXES = ("ssh_", "pdsh_")  # the launch rows whose line is about one host the launcher ssh-ed to
# pdsh's 'node: ' prefix and srun --label's / a wrapper's '[node]' on a remote host's output (src/pdsh/main.c)
_HOST_PREFIX = re.compile(r"^(?:\[(?P<bracket>[\w.-]+)\]|(?P<pdsh>[\w.-]+):) ")
# A launcher's last word on a process that failed: DeepSpeed's 'exits with return code = 1', pdsh's and
# DeepSpeed's runner's 'ssh exited with exit code 255', torchrun's 'exitcode: 1'
_NONZERO_EXIT = re.compile(
    r"\b(?:exit(?:ed)? with (?:exit |return )?code|return code) =? ?-?(?!0\b)\d+|exitcode\s*:\s*-?(?!0\b)\d+",
    re.IGNORECASE,  # srun's 'error: node2: task 1: Exited with exit code 2'
)
# A launcher's word on a process that ended well: DeepSpeed's launch.py 'Process N exits successfully.'
_CLEAN_EXIT = re.compile(r"\bexits successfully\b")


def launch_host(lines: list[str], a: Anomaly) -> str:
    """The host an ssh launch error is about: the line's own prefix (pdsh's 'node: '), else the host its words
    name; none for other rows (a shell's 'sh: 1: X: not found', srun's 'srun: error:' name no host)."""
    if not a.code.startswith(SSH_CODE_PREFIXES):
        return ""
    said = line_at(lines, a.line)
    prefix = _HOST_PREFIX.match(said)
    if prefix and not said.startswith("pdsh@"):
        return prefix.group("bracket") or prefix.group("pdsh")
    named = a.details.get("ssh_host")
    return str(named) if named else ""


def _last_line_each_host_ran(lines: list[str]) -> dict[str, int]:
    """Each host's last line (1-based) of its own processes' output that marks a stage (a launcher's, the job's):
    one pass over the log, however many hosts failed."""
    last: dict[str, int] = {}
    for idx, later in enumerate(lines, 1):
        prefix = _HOST_PREFIX.match(later)
        if prefix and stages.message_marker(later[prefix.end() :]) is not None:
            last[prefix.group("bracket") or prefix.group("pdsh")] = idx
    return last


def _last_line(lines: list[str]) -> tuple[int, str]:
    """(1-based number, text) of the log's last non-empty line, where a launcher reports how the job ended."""
    for idx in range(len(lines) - 1, -1, -1):
        if lines[idx].strip():
            return idx + 1, lines[idx]
    return 0, ""


def _ended_cleanly(end: tuple[int, str], stop: stages.StageStop | None, line: int) -> int:
    """The line (0: none) of the job's clean end after the error's line: the last stage's line closes the run, or
    the log's last line is the launcher's word that a process exited successfully."""
    if stop is not None and stop.clean and stop.line > line:
        return stop.line
    return end[0] if end[0] > line and _CLEAN_EXIT.search(end[1]) else 0


def _survived(lines: list[str], line: int, last_step: tuple[int, str] | None) -> str:
    said = line_at(lines, line)
    head = said.split("Error", 1)[0]
    if _LOGGED.search(head):
        return "logged at warning or info level"
    after = [t for t in lines[line : line + CHAIN_LOOKAHEAD] if t.strip()]
    if any(_CHAINED.search(t) for t in after):
        return "handled: a later exception of the chain ended the run"
    if last_step is not None and last_step[0] > line:
        return f"the run went on training (line {last_step[0]})"
    return ""
