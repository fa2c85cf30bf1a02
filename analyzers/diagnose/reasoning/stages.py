"""Where a log stopped: the stage of its last marker line (knowledge/stages.py), and what a stop there means.

Every log gets a stage. A log that ends, with no error, in a stage that should have been left (set-up, an
evaluation, a save) is a finding worded for a log that may be cut ("if the job is still running, it is stuck
in ..."); a log that ends in the middle of training gets no finding (an excerpt of a healthy run looks the
same), only the stage in the diagnosis' sections. Silence of other shapes: a log that is only the command
that started the job, and a log whose last lines are every rank's same start-up line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.addresses import loopback_bootstrap
from scope.analyzers.diagnose.knowledge.line_shapes import HANG_NOTE
from scope.analyzers.diagnose.knowledge.stage_marker import Marker
from scope.analyzers.diagnose.knowledge.stages import (
    C10D_CONNECTED_WHY,
    C10D_SIDECAR_WHY,
    KUBERNETES_SHOWN,
    MARKERS,
    STAGE_INFO,
    line_marker,
)
from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.readers.lines import parse_line
from scope.analyzers.diagnose.readers.nccl_prefix import nccl_lines
from scope.analyzers.diagnose.reasoning.excerpt import CUT, cut_inside_nccl_init
from scope.analyzers.diagnose.reasoning.stop_causes import stop_causes

from scope.units import clip

QUOTE_CHARS = 90  # characters of a log line quoted in a finding's sentence
# Only the end of a log says where it stopped; a bounded tail keeps huge logs cheap (a log with no marker in
# its last 16 KiB - a kernel log, a long traceback - has no stage worth naming).
TAIL_BYTES = 16_384
# Lines read back from the end for the last marker: more lines than this after it say the run went on anyway.
MAX_SCAN_LINES = 300
# Lines after the last marker that a stop still allows (a user's own prints: 'loading data ...').
MAX_TRAILING = 3
# A progress bar on the last line: an evaluation that was moving (Lightning prints one per batch), not one that
# never began.
_BAR = re.compile(r"\d+%\||\d+/\d+ \[\d")
_CONTINUED = re.compile(r"\\\s*$")  # a command line continued on the next line
_RANK_NUM = re.compile(r"(?i)\brank\s*[:=#]?\s*(\d+)")
# Set-up stages a log should leave; a stop in one of them is a finding.
SETUP = ("rendezvous", "comm_init", "first_collective")
MIDWAY = ("evaluation", "checkpoint")
# Ranks that must have printed the same last line for "every rank started and none got further": a few ranks'
# identical lines are how a healthy console is quoted too.
MIN_SAME_LINE_RANKS = 8
# A log of one line (one rank's file holding its start-up line) says nothing about a stop.
MIN_LINES = 2


@dataclass(frozen=True)
class StageStop:
    stage: str
    line: int  # 1-based line of the last marker
    emitter: str
    text: str
    ends: bool  # the marker closes its stage (the next stage was expected)
    stops: bool  # a log ending on the marker in a set-up stage is stuck there
    trailing: int  # non-empty lines after the marker
    cut: bool  # an excerpt marker follows the last marker line (as the log's last line or before it)
    alone: bool = False  # the marker's line says the run is stuck without the rest of the log (a retry loop)
    one_line: bool = False  # a log of the marker's line alone is a stop (a program's last line before a call)
    why: str = ""  # what a stop on the marker's line means beyond its stage's known causes

    @property
    def clean(self) -> bool:
        return clean_end(self.stage, self.ends)

    def to_dict(self) -> dict[str, object]:
        info = STAGE_INFO[self.stage]
        return {
            "stage": self.stage,
            "line": self.line,
            "emitter": self.emitter,
            "clean_end": self.clean,
            "cut": self.cut,
            "expected_next": info.expected_next,
        }


def clean_end(stage: str, ends: bool) -> bool:
    """A marker of this stage closes the run cleanly: the exit, or the marker that ends the training steps."""
    return stage == "exit" or (stage == "steps" and ends)


def message_marker(line: str) -> Marker | None:
    """The marker of a line as printed, else of its message once the prefixes a console adds are stripped
    (kubectl --timestamps, srun --label, Ray's '(Worker pid=N)', '[rankN]:'; readers/lines.parse_line): a
    marker's pattern anchored at the message's start reads the same line under any collector."""
    if "\r" in line:
        # tqdm's bars rewritten in place, joined by carriage returns on one line: the terminal showed the last
        # one, so the last part with a marker is the line's (Lightning's 'Epoch 0: 100%|...' then
        # '\rValidation DataLoader 0:   0%|' is in validation; the same after it, '\rEpoch 1:   5%|', is training)
        parts = (message_marker(part) for part in reversed(line.split("\r")))
        return next((found for found in parts if found is not None), None)
    found = line_marker(line)
    if found is not None or not line.strip():
        return found
    message = parse_line(line, 1970).text
    return line_marker(message) if message and message != line.strip() else None


def where_it_stopped(text: str) -> StageStop | None:
    """The stage of the log's last marker line (None: no line of any known program). Read from the end, line
    by line: most logs end on a marker, so this costs a few lines."""
    start = max(0, len(text) - TAIL_BYTES)
    tail = text[start:]
    lines = tail.split("\n")
    found = None
    for idx in range(len(lines) - 1, max(-1, len(lines) - 1 - MAX_SCAN_LINES), -1):
        found = message_marker(lines[idx])
        if found is not None:
            break
    if found is None:
        return None
    rest = [ln for ln in lines[idx + 1 :] if ln.strip()]
    last_line = rest[-1] if rest else lines[idx]
    return StageStop(
        stage=found.stage,
        line=text.count("\n", 0, start) + idx + 1,
        emitter=found.emitter,
        text=_quoted_line(lines[idx]),
        ends=found.ends,
        stops=found.stops,
        trailing=len(rest),
        # an excerpt marker after the last marker: lines were left out there, the run went on past them
        cut=any(CUT.match(ln.strip()) for ln in rest) or bool(CUT.match(last_line.strip())),
        alone=found.alone,
        one_line=found.one_line,
        why=found.why,
    )


def _quoted_line(line: str) -> str:
    """A stage's line as a finding quotes it: a tqdm bar's padding squeezed ('Epoch 0:  5%|    | 3/60'); any
    other line as printed (an nccl-tests header keeps its columns)."""
    return (" ".join(line.split()) if _BAR.search(line) else line.strip())[:200]


def silence(text: str, display: str, stop: StageStop | None) -> Anomaly | None:
    """A finding for a log that ends, with no error, where a run does not stop."""
    only_command = _only_command(text)
    if only_command is not None:
        return _anomaly(
            display,
            "launch",
            only_command[0],
            f"the log holds only the command that started the job "
            f"('{clip(only_command[1], QUOTE_CHARS)}'): nothing the job itself printed",
        )
    noted = _hang_note(text, display, stop)
    if noted is not None:
        return noted
    if (stop is None or stop.stage in ("launch", "rendezvous", "comm_init")) and not (stop and stop.cut):
        every_rank = _same_line_every_rank(text, display)  # its lines are not markers: any number may trail
        if every_rank is not None:
            return every_rank
    if stop is None or stop.cut or stop.trailing > MAX_TRAILING:
        return None
    if stop.trailing and _RAISED.search(text, _offset_of_line(text, stop.line + 1)):
        return None  # a process raised after the stage's line: its exception, not a silent stop (guess.py)
    if stop.stage == "data_prep":
        return _data_prep_stop(display, stop)
    if stop.line + stop.trailing < MIN_LINES and not stop.one_line:
        return None  # one line says nothing of a stop, unless it is a program's last before a call
    if stop.stage == "launch" and stop.emitter == "shell" and stop.trailing >= 1:
        # the launch, then a few lines of the job's own and nothing more: the ranks never got through start-up
        return _anomaly(
            display,
            "rendezvous",
            stop.line,
            f"the log ends {stop.trailing} line{'s' if stop.trailing > 1 else ''} after the launch "
            f"({stop.emitter}: '{_quote(stop.text)}') with no error and no later stage",
            text=text,
        )
    if stop.stage in SETUP and stop.stops and not stop.ends and (stop.emitter != "nccl" or _init_narrated(text, stop)):
        if stop.emitter == "nccl" and "Init COMPLETE" in text and cut_inside_nccl_init(text):
            # ranks completed init and lines were left out among theirs: the others' completions may be among them
            # (with no 'Init COMPLETE' shown, a cut among the init lines leaves the stop where it is: init hangs are
            # quoted with cuts too)
            return None
        return _anomaly(
            display,
            stop.stage,
            stop.line,
            f"the log ends in {STAGE_INFO[stop.stage].words} "
            f"({stop.emitter}: '{_quote(stop.text)}') with no error and no later stage",
            why=_why(text, stop),
            text=text,
        )
    if stop.stage in MIDWAY and not stop.ends and stop.trailing <= 1 and not _BAR.search(stop.text):
        return _anomaly(
            display,
            stop.stage,
            stop.line,
            f"the log ends as {STAGE_INFO[stop.stage].words} began "
            f"({stop.emitter}: '{_quote(stop.text)}') with no result and no error",
            why=_why(text, stop),
            text=text,
        )
    return None


# What an NCCL INFO line that begins a process's init says first (after the prefix nccl_prefix.py reads).
_BEGINS_INIT = re.compile(r"Bootstrap|NET/|Using network|cudaDriverVersion")
# The same bootstrap lines as quoted with the host:pid:tid prefix cut away ('[1] NCCL INFO Bootstrap : ...'):
# each device's own bootstrap line then stands for its process.
_NCCL_BEGIN_BARE = re.compile(r"^\s*\[(\d+)\] NCCL INFO (?:Bootstrap|NET/|Using network|cudaDriverVersion)", re.M)


_NCCL_DEV = re.compile(r"\[(\d+)\] NCCL INFO (?:comm 0x|Init START|Channel \d+|Trees|Setting affinity|.* via )", re.M)
_BANNER = re.compile(r"^[#>]?[^\S\n]*(?:n?Thread \d+ nGpus \d+|nThread \d+|Using devices)", re.M)


# A process's NCCL line setting up its connections ('host:pid:tid [dev] NCCL INFO Channel 00 : 2[1d000] -> 3[1e000]
# via P2P/IPC', 'Connected all rings'): several processes narrating their connections, interleaved, is the console
# of a job in init, not one process's lines quoted from a healthy run.
_CONNECTING = re.compile(r"Channel \d+|Connected all|.* via (?:P2P|SHM|NET)")
# Processes that must narrate their connections for a log without bootstrap lines to be a job stuck in init.
MIN_CONNECTING_PROCESSES = 3


def _init_narrated(text: str, stop: StageStop) -> bool:
    """A stop on an NCCL line is a stop when the line says so alone (a retry loop), when the log narrates init
    from its start, or when several processes narrate their connections."""
    if stop.alone or _init_from_start(text):
        return True
    # a named host only: a blanked-out one (':pid:tid [dev]') cannot tell a process of one host from another's
    return len(_info_processes(text[-TAIL_BYTES:], _CONNECTING, named_host=True)) >= MIN_CONNECTING_PROCESSES


def _info_processes(text: str, says: re.Pattern[str], named_host: bool = False) -> set[tuple[str, int]]:
    """The processes (host, pid) with an NCCL INFO line whose message begins as `says` matches."""
    return {
        (p.host, p.pid)
        for _, p in nccl_lines(text)
        if p.level == "INFO" and not p.source and says.match(p.message) and (p.host or not named_host)
    }


def _quote(line: str) -> str:
    """A marker line as a finding quotes it: a progress bar's padding ('Sanity Checking: |      | 0/?') squeezed."""
    return clip(" ".join(line.split()), QUOTE_CHARS)


def _why(text: str, stop: StageStop) -> str:
    """What the stop means beyond its stage's causes: the marker's own meaning, and a loopback bootstrap the log
    names (a peer on another host cannot reach it)."""
    parts = [stop.why] if stop.why else []
    if stop.why == C10D_CONNECTED_WHY and KUBERNETES_SHOWN.search(text):
        parts.append(C10D_SIDECAR_WHY)
    loop = loopback_bootstrap(text[-TAIL_BYTES:]) if stop.stage == "comm_init" else None
    if loop is not None:
        parts.append(
            f"the log shows NCCL bootstrapping on {loop}, a loopback address no other host can reach: for ranks on "
            "more than one host set NCCL_SOCKET_IFNAME to the interface the hosts share"
        )
    return "; ".join(parts)


# A progress bar's count ('422000/3643454'): the pre-processing is done when the two are equal.
_COUNT = re.compile(r"(\d+)/(\d+) \[")


# A process that raised after the last stage line (the traceback's head; sglang's scheduler logs 'Scheduler hit an
# exception: Traceback ...'): the log stops on an error, even where the traceback itself is cut away.
_RAISED = re.compile(r"Traceback \(most recent call last\)|\bhit an exception\b")


def _offset_of_line(text: str, line: int) -> int:
    """Offset of 1-based `line` in text (its end where the text has fewer lines)."""
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return pos


def _data_prep_stop(display: str, stop: StageStop) -> Anomaly | None:
    """A log that ends while the dataset is pre-processed, short of its end: one line is enough (a progress bar
    part-way is not where a run ends)."""
    counts = _COUNT.findall(stop.text)
    if counts and int(counts[-1][0]) >= int(counts[-1][1]):
        return None  # the pre-processing finished: the log ends between stages
    done = f", {int(counts[-1][0]):,} of {int(counts[-1][1]):,} done," if counts else ""
    return _anomaly(
        display,
        "data_prep",
        stop.line,
        f"the log ends during {STAGE_INFO['data_prep'].words} ({stop.emitter}: '{_quote(stop.text)}'){done} "
        "with no error and no later stage",
    )


def _init_from_start(text: str) -> bool:
    """NCCL INFO lines are often quoted as a snippet of a healthy run: a stop in init needs a log that narrates
    init from its start (the bootstrap lines) for two processes or more; or, under an nccl-tests banner (whose
    next line after init is its table header), one process that drives two GPUs or more (-g N: one bootstrap
    line, then each device's own init lines)."""
    tail = text[-TAIL_BYTES:]
    # The host may be empty: NCCL prints the hostname the process got, and posters blank it out.
    beginning = _info_processes(tail, _BEGINS_INIT)
    if len(beginning) >= 2:
        return True
    if len({m.group(1) for m in _NCCL_BEGIN_BARE.finditer(tail)}) >= 2:
        return True
    return bool(beginning and _BANNER.search(text) and len(set(_NCCL_DEV.findall(tail))) >= 2)


def _hang_note(text: str, display: str, stop: StageStop | None) -> Anomaly | None:
    """The log's last line is the poster's note that the job hung there ('<HANGED>'): the line before it is
    the last thing the job did."""
    lines = [(i, ln.strip()) for i, ln in enumerate(text[-TAIL_BYTES:].split("\n")) if ln.strip()]
    if len(lines) < MIN_LINES or not HANG_NOTE.match(lines[-1][1]):
        return None
    line = text.count("\n", 0, max(0, len(text) - TAIL_BYTES)) + lines[-1][0] + 1
    known = stop is not None and stop.stage in SETUP + MIDWAY
    where = f" in {STAGE_INFO[stop.stage].words}" if stop is not None and known else ""
    causes = f" Known causes of a stop there: {STAGE_INFO[stop.stage].causes}." if stop is not None and known else ""
    return Anomaly(
        code="stopped_marked_hang",
        kind="hang",
        level=STALL,
        message=f"The log ends on a note that the job hung{where} ('{clip(lines[-1][1], QUOTE_CHARS)}'), after "
        f"'{clip(lines[-2][1], QUOTE_CHARS)}', with no error: the job stopped after that line",
        file=display,
        line=line,
        severity="critical",
        details={"confidence": "low", "phase": stop.stage if stop else "", "remedy": HANG_NOTE_REMEDY + causes},
    )


# What to do first for a hang the poster marked: where each rank waits says which one the others wait for.
HANG_NOTE_REMEDY = (
    "Dump every rank's stack while it hangs (py-spy dump --pid PID per rank; TORCH_NCCL_DUMP_ON_TIMEOUT=1 for "
    "the collectives): the rank that is not where the others are is the cause, and the line before the note "
    "is the last thing the job did."
)


def _only_command(text: str) -> tuple[int, str] | None:
    """A log whose every line is the launch command (possibly continued with '\\'): (line, command)."""
    lines = [(i, ln) for i, ln in enumerate(text.split("\n"), 1) if ln.strip()]
    if not lines or len(lines) > 8:
        return None
    first = lines[0][1]
    m = message_marker(first)
    if m is None or m.emitter != "shell":
        return None
    if any(not _CONTINUED.search(prev) for _, prev in lines[:-1]):
        return None
    return lines[0][0], first.strip()


def _same_line_every_rank(text: str, display: str) -> Anomaly | None:
    """The log's last lines are one line printed by many ranks (numbers aside), and nothing after it."""
    lines = [ln.strip() for ln in text[-TAIL_BYTES:].split("\n") if ln.strip()]
    if len(lines) < MIN_SAME_LINE_RANKS:
        return None
    shape = re.sub(r"\d+", "N", lines[-1])
    ranks: set[int] = set()
    for ln in reversed(lines):
        if re.sub(r"\d+", "N", ln) != shape:
            break
        m = _RANK_NUM.search(ln)
        if m is None:
            return None
        ranks.add(int(m.group(1)))
    if len(ranks) < MIN_SAME_LINE_RANKS:
        return None
    why = (
        f"the log ends with {len(ranks)} ranks each printing the same start-up line "
        f"('{clip(lines[-1], QUOTE_CHARS)}') and nothing after it: every rank started and none got further"
    )
    return _anomaly(display, "comm_init", text.rstrip().count("\n") + 1, why, text=text)


def _anomaly(display: str, stage: str, line: int, what: str, why: str = "", text: str = "") -> Anomaly:
    info = STAGE_INFO[stage]
    known = "Known causes of a stop here: " + stop_causes(stage, text) + "."
    remedy = f"{why[0].upper()}{why[1:]}. {known}" if why else known
    message = (
        f"{what[0].upper()}{what[1:]}. If the job is still running, it is stuck in {info.words}; expected next: "
        f"{info.expected_next}. (The log may be cut: its later lines would say more.)"
    )
    return Anomaly(
        code=f"stopped_in_{stage}",
        kind="hang",
        level=STALL,
        message=message,
        file=display,
        line=line,
        severity="critical",
        details={"confidence": "low", "phase": stage, "remedy": remedy},
    )


# ---- training finished before a crash --------------------------------------------------------------
_LAST_OF_N = re.compile(r"(?i)\b(?:iteration|step|epoch)\s*[:=]?\s*(\d+)\s*/\s*(\d+)\b")


def training_finished(text: str) -> tuple[int, str] | None:
    """(line, text) of the line saying training finished: a closing marker, or a step counter at its total."""
    found: tuple[int, str] | None = None
    for m in MARKERS:
        if not (m.ends and m.stage == "steps"):
            continue
        for hit in re.finditer(m.pattern, text, re.M):
            found = _later(found, text, hit.start())
    for hit in _LAST_OF_N.finditer(text):
        if hit.group(1) == hit.group(2) and int(hit.group(2)) > 1:
            found = _later(found, text, hit.start())
    return found


def last_step(text: str) -> tuple[int, str] | None:
    """(line, text) of the last training-step line in the log's tail: a run that had been training when it
    ended (a signal's end mid-run, knowledge/signals.py)."""
    start = max(0, len(text) - TAIL_BYTES)
    lines = text[start:].split("\n")
    for idx in range(len(lines) - 1, max(-1, len(lines) - 1 - MAX_SCAN_LINES), -1):
        found = message_marker(lines[idx])
        if found is not None and found.stage == "steps" and not found.ends:
            return text.count("\n", 0, start) + idx + 1, lines[idx].strip()[:120]
    return None


def _later(found: tuple[int, str] | None, text: str, pos: int) -> tuple[int, str]:
    line = text.count("\n", 0, pos) + 1
    if found and found[0] >= line:
        return found
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return line, text[start : end if end >= 0 else len(text)].strip()[:200]
