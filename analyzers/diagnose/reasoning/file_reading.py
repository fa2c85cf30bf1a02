"""One log file read whole: its lines into anomalies (readers/scan.py), then the readings that need the
file's other lines (this module): which interface a socket error blames, a slow peer-to-peer measurement,
where the log stopped, what a late rank was doing around a timeout, a stack cut inside a collective, a log
that stalled or ends in silence, the best guess at an error no rule knows, and whether training finished.

`read_text` is what the diagnosis runs per file (readers/inputs.run_jobs is handed it by post_mortem.py, so
that readers never import reasoning).
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge import divergence, engines, kill_senders, native_init, timeout_knobs
from scope.analyzers.diagnose.knowledge.own_advice import own_advice
from scope.analyzers.diagnose.knowledge.remedies import RANK_ZERO_POINT, RANK_ZERO_POINT_LINES
from scope.analyzers.diagnose.knowledge.runtime_launcher import (
    LAUNCHER_EVIDENCE,
    LOCAL_RANK_FROM_ENV,
    LOCAL_RANK_FROM_ENV_REFERENCE,
    SELF_EVIDENT_ARG,
)
from scope.analyzers.diagnose.model import Anomaly, FileScan
from scope.analyzers.diagnose.readers import cut_traceback
from scope.analyzers.diagnose.readers.collector_prefix import srun_label_at, strip_collector_prefix
from scope.analyzers.diagnose.readers.scan import Scanner
from scope.analyzers.diagnose.reasoning import (
    exit_hang,
    extension_lock,
    guess,
    ib_fallback,
    interfaces,
    internode_busbw,
    late_rank,
    launcher_env,
    lockstep,
    no_group_rank,
    nvshmem_cause,
    p2p_bandwidth,
    progress,
    recovered_warns,
    remote_launch,
    rendezvous_cut,
    rendezvous_echo,
    setting_refused,
    shared_gpu,
    stages,
    startup_cancel,
    stop_causes,
    survived_loading,
    traceback_end,
    watchdog_cuda,
)

# c10 logging's global-rank prefix of each rank's output line ('[rank0]:[E1218 ...', '[rank1]: Traceback'), at a
# line's start (knowledge/c10d_groups.py)
_RANK_TAG = re.compile(r"^\[rank(\d+)\]:", re.M)


def read_text(text: str, display: str, rank: int | None = None, host: str | None = None, year: int = 1970) -> FileScan:
    """The file's anomalies and the readings across its lines."""
    scanner = Scanner(display, rank, host, year)
    result = scanner.scan(strip_collector_prefix(text, for_scanner=True))
    # the program's own line starts, under any collector's prefix (kubectl, Ray, srun --label)
    across_lines(result, strip_collector_prefix(scanner.text), year, rank, host)
    if result.guess is not None and result.guess.rank is None and rank is None:
        # the best guess read the text without srun's labels: its rank is the label of the line it quotes
        result.guess.rank = srun_label_at(scanner.text, result.guess.line)
    if any(a.kind == "timeout" for a in result.anomalies):  # the ranks with lines of their own, beyond those the
        # scanner's rules read (a timeout rank 0 alone reports is rank 0's own only where the others are here and
        # silent: words/endings.py)
        result.rank_tags.update(int(m.group(1)) for m in _RANK_TAG.finditer(text))
    if result.late is None and result.engine is None and ("imeout" in text or "timed out" in text):
        # the collector's prefix is an engine's own word (Ray's '(RayWorkerWrapper pid=...)' for vLLM's workers)
        result.engine = engines.engine_of(text)
    return result


def across_lines(result: FileScan, text: str, year: int, rank: int | None, host: str | None) -> None:
    display = result.path
    recovered_warns.downgrade_recovered(result.anomalies, text)
    setting_refused.drop_survived(result.anomalies, text)
    remote_launch.mark_answered_host_keys(result.anomalies, text)
    setting_refused.drop_went_past(result.anomalies, text)
    survived_loading.drop_survived_loading(result.anomalies, text)
    rendezvous_echo.echo_of_unhosted_store(result.anomalies, text)
    nvshmem_cause.bootstrap_beside_another_failure(result.anomalies, text)
    remote_launch.collapse_fan_out(result.anomalies, text)
    remote_launch.word_go_dial_errors(result.anomalies)
    watchdog_cuda.seen_by_watchdog_first(result.anomalies, text)
    _mark_rank_zero_points(result.anomalies, text)
    _drop_options_with_no_launcher(result, text)
    _local_rank_under_a_launcher(result, text)
    interfaces.blame_virtual_interfaces(result.anomalies, text)
    interfaces.blame_unmatched_ifname(result.anomalies, text)
    if "172.17." in text:
        interfaces.blame_bridge_address(result.anomalies, text)
    slow_p2p = p2p_bandwidth.p2p_bandwidth(text, display) if "P2P=" in text else None
    if slow_p2p is not None:
        result.anomalies.append(slow_p2p)
    slow_net = internode_busbw.slow_internode_busbw(text, display) if "busbw" in text else None
    if slow_net is not None:
        result.anomalies.append(slow_net)
    shared = shared_gpu.workers_on_one_gpu(text, display) if "NCCL INFO" in text and not _failed(result) else None
    if shared is not None:
        result.anomalies.append(shared)
    fallback = ib_fallback.ib_requested_socket_used(text, display) if "No device found" in text else None
    if fallback is not None:
        result.anomalies.append(fallback)
    if "destroy_process_group" in text:
        exit_hang.mark_hang_at_exit(result, text)
    result.stop = stages.where_it_stopped(text)
    # a scheduler's cancel after a start-up wait is that wait's end: the wait is where the run stopped
    waited = startup_cancel.cancelled_while_waiting(result, text, display) if "CANCELLED" in text else None
    # a run that completed is no finding for a setting that differed between hosts: it did not stop the run
    completed = result.stop is not None and result.stop.clean
    unexported = launcher_env.unexported_settings(text, display, completed=completed)
    if unexported is not None:
        result.anomalies.append(unexported)
    outside = no_group_rank.ranks_outside_group(text, display, completed=completed)
    if outside is not None:
        result.anomalies.append(outside)
    _mark_dumps_gone_past(result)
    _quote_own_advice(result.anomalies, text)
    result.frameworks = timeout_knobs.frameworks_in(text)
    if "imeout" in text or "timed out" in text:
        result.late = late_rank.busy_work(text)
        result.engine = engines.engine_of(text) if result.late is None else None
    if not _failed(result):
        _cut_stack_in_collective(result, text, rank, host)
    if not _failed(result):
        # a program's own completion summary as the last marker (nccl-tests' 'Out of bounds values', torchrun's
        # 'worker group finished') is a clean end: init lines quoted above it, cut short, are no stall
        clean = result.stop is not None and result.stop.clean
        result.stalled = (
            None
            if clean
            else waited
            or extension_lock.stopped_at_extension_build(text, display)
            or progress.stalled(text, display)
            or rendezvous_cut.stopped_in_rendezvous(text, display)
            or cut_traceback.creating_group(text, display)  # after the rendezvous' own reading of the same frames
            or traceback_end.cut_in_traceback(text, display)
            or stages.silence(text, display, result.stop)
            or lockstep.out_of_step(text, display)
        )
        if result.stalled is not None:  # WARNs the log went past, then stopped: not recovered, the stop's clue
            recovered_warns.keep_as_clue(result.anomalies, result.stalled)
            stop_causes.name_forced_paths(result.stalled, text, result.env)
        # a row's line the run went past (drop_went_past's 'survived'): no best guess either
        read = frozenset(
            a.line for a in result.anomalies if {"recovered_by", "before_stop", "survived"} & a.details.keys()
        )
        result.guess = guess.first_error(text, display, year, read)
        _crash_in_setup_stage(result)
    crashed = result.guess is not None and result.guess.kind == "crash"
    ended = ("crash", "hang", "timeout")  # a crash or a hang after the work finished is the teardown's
    if crashed or any(a.kind in ended and a.severity != "info" for a in result.anomalies):
        result.finished = stages.training_finished(text)
        result.stepped = stages.last_step(text)
        if result.stepped is not None:
            result.collectives = kill_senders.runs_collectives(text)
        # the program's own abort after its last step, or anywhere where no step line shows
        result.own_abort = kill_senders.own_abort_after(text, result.stepped[0] if result.stepped else 0)
    _read_kill_sender(result, text)
    if crashed or any(a.kind == "crash" for a in result.anomalies):
        result.native_init = native_init.starting_library(text)
        result.diverged = divergence.diverged_before_fault(text)


# Rows whose kind is SIGKILL's (oom) by default; srun's needs memory evidence, the others lose it to another sender.
KILL_CODES = ("slurm_task_killed", "process_killed", "container_exit_137", "k8s_container_signal_exit")


def _mark_rank_zero_points(anomalies: list[Anomaly], text: str) -> None:
    """A watchdog timeout right after a line of a rank-0-only point (a save, an evaluation, metrics logged): that
    line, in details rank_zero_point, read by words/endings._rank_zero_alone."""
    timeouts = [a for a in anomalies if a.code == "c10d_watchdog_timeout"]
    if not timeouts:
        return
    lines = text.split("\n")
    for a in timeouts:
        before = [t for t in lines[max(0, a.line - 1 - 4 * RANK_ZERO_POINT_LINES) : a.line - 1] if t.strip()]
        point = next((t for t in reversed(before[-RANK_ZERO_POINT_LINES:]) if RANK_ZERO_POINT.search(t)), None)
        if point is not None:
            a.details["rank_zero_point"] = point.strip()[:200]


def _local_rank_under_a_launcher(result: FileScan, text: str) -> None:
    """A negative local rank where the log shows a launcher: it set LOCAL_RANK and the script read its own
    argument (knowledge/runtime_launcher.LOCAL_RANK_FROM_ENV), not a launch without one."""
    unset = [a for a in result.anomalies if a.code == "launcher_local_rank_unset"]
    if unset and LAUNCHER_EVIDENCE.search(text):
        for a in unset:
            a.details["remedy"], a.details["reference"] = LOCAL_RANK_FROM_ENV, LOCAL_RANK_FROM_ENV_REFERENCE


def _drop_options_with_no_launcher(result: FileScan, text: str) -> None:
    """A launcher-looking option the script rejected is the launcher's only where the log shows a launcher
    (knowledge/runtime_launcher.LAUNCHER_EVIDENCE); otherwise it is the script's own and no launch mistake."""
    if "launcher_option_after_script" not in {a.code for a in result.anomalies} or LAUNCHER_EVIDENCE.search(text):
        return
    result.anomalies[:] = [
        a
        for a in result.anomalies
        if a.code != "launcher_option_after_script" or SELF_EVIDENT_ARG.match(str(a.details.get("arg", "")))
    ]


def _read_kill_sender(result: FileScan, text: str) -> None:
    """A SIGKILL read as the OOM killer's only where the log shows memory evidence or no other sender
    (knowledge/kill_senders.py): srun tearing a step down, a runner's or Kubernetes' kill is no OOM."""
    killed = [a for a in result.anomalies if a.code in KILL_CODES]
    # Any SIGKILL reading (a launcher's exit report, a guess) asks who sent it, not only these rows'.
    if killed or kill_senders.mentions_kill(text):
        result.kill_sender = kill_senders.other_sender(text)
    for a in killed:
        if a.kind != "oom":
            continue
        if a.code == "slurm_task_killed" and not kill_senders.memory_shown(text):
            _killed_by(a, result.kill_sender or "srun (no memory evidence in the log)")
        elif result.kill_sender is not None:
            _killed_by(a, result.kill_sender)


def _killed_by(a: Anomaly, sender: str) -> None:
    """A kill the log shows another sender of: a crash, with that sender's check instead of the OOM killer's."""
    a.kind = "crash"
    a.details["killed_by"] = sender
    a.details["remedy"] = f"The log shows {sender}, not an out-of-memory kill. {kill_senders.sender_check(sender)}"


STACK_CODES = ("stack_in_collective", "stack_elsewhere")


def _mark_dumps_gone_past(result: FileScan) -> None:
    """Stack dumps quoted in a log that goes on past them: to a clean end (training finished, the program's own
    summary) or to later progress (a step or stage line after the dump): the process dumped was not stuck
    there, whatever it waited for at that moment."""
    if result.stop is None:
        return
    for a in result.anomalies:
        if a.code in STACK_CODES and a.line < result.stop.line:
            a.details["went_on"] = True


def _failed(result: FileScan) -> bool:
    return any(a.severity != "info" for a in result.anomalies)


def _cut_stack_in_collective(result: FileScan, text: str, rank: int | None, host: str | None) -> None:
    """A stack that ends in a collective with no error line of its own: a timeout, explained by the work
    the late rank printed before it (readers/cut_traceback.py, reasoning/late_rank.py)."""
    if any(a.code in STACK_CODES for a in result.anomalies):
        return  # the frames are a stack dump's threads (read as such by the scan), not a traceback cut short
    waiting = cut_traceback.waiting_in_collective(text, result.path)
    if waiting is None:
        return
    waiting.rank, waiting.host = rank, host
    result.anomalies.append(waiting)
    if result.late is None:
        result.late = late_rank.busy_work(text, cut_traceback.ANCHOR)


SETUP_STAGES = ("rendezvous", "comm_init")


def _crash_in_setup_stage(result: FileScan) -> None:
    """A crash no row knows, raised after the log's last set-up line (the rendezvous, communicator init) with
    nothing later: the stage's own reading of a stop there (the marker's meaning) is the first thing to check."""
    found, stop = result.guess, result.stop
    if found is None or found.kind != "crash" or stop is None or stop.stage not in SETUP_STAGES or not stop.why:
        return
    if found.line <= stop.line:
        return
    remedy = str(found.details.get("remedy", ""))
    found.details["remedy"] = f"It failed during set-up, after '{stop.text.strip()[:120]}': {stop.why}. {remedy}"


# A line that opens with a program's own prefix ('srun: error:', 'slurmstepd: ', 'wandb: ', 'libibverbs: '): lower
# case like a wrapped message's next line, but another program's
_PROGRAM_PREFIX = re.compile(r"[a-z][\w.-]*: ")


def _quote_own_advice(anomalies: list[Anomaly], text: str) -> None:
    """The fix an error line names itself (knowledge/own_advice.py), read from the line as the program printed
    it (scope's own lines are blanked in `text`) and its lower-case continuation lines (a message wrapped by
    the terminal or printed with newlines: reducer.cpp's 'and by \\n making sure ...')."""
    lines: list[str] | None = None
    for a in anomalies:
        if a.severity == "info" or not a.line:
            continue
        lines = lines if lines is not None else text.splitlines()
        if a.line > len(lines):
            continue
        said = [lines[a.line - 1]]
        for nxt in lines[a.line : a.line + 3]:
            if not nxt[:1].islower() or _PROGRAM_PREFIX.match(nxt):
                break  # not a continuation: a new sentence, or another program's line ('srun: error: ...')
            said.append(nxt)
        advice = own_advice(" ".join(s.strip() for s in said))
        if advice:
            a.details["_own_advice"] = advice  # private: words/endings.py quotes it, no metric
