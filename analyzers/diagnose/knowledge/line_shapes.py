"""Line shapes several readings share, each with where the text comes from: an excerpt's cut marker, an
nccl-tests result row, and NCCL's INFO lines that report a set-up step done (knowledge/stages.py's markers,
reasoning/progress.py, stages.py and recovered_warns.py read them).
"""

from __future__ import annotations

import re

# An explicit excerpt marker ('[... cut ...]', '[truncated]', a lone '...'): lines were left out there, so what is
# before it is not where the run stopped (how issue threads and this corpus quote long logs).
# The bracketed note alone: '[... cut ...]', '[...truncated...]', '[ ... 40 lines omitted ... ]', '[... snipped ...]'.
EXCERPT_CUT_NOTE = re.compile(r"^\s*\[\s*\.\.\.?.*\b(?:cut|truncated|omitted|snip\w*)\b.*\]\s*$", re.I)
EXCERPT_CUT = re.compile(f"{EXCERPT_CUT_NOTE.pattern}|^\\s*(?:\\.\\.\\.|…)\\s*$", re.I)
# The poster's own note, as the last line of a log pasted into an issue, that the job hung there: '<HANGED>',
# '[hangs here]', '... stuck ...', '(training freezes here)' (mosaicml/streaming#145 ends its output on '<HANGED>').
# A note of one or two words in brackets or alone, never a sentence the program printed.
HANG_NOTE = re.compile(
    r"^[<\[(*=#.\s-]*(?:(?:it|training|the (?:job|training|program|process))\s+)?"
    r"(?:hang(?:s|ed|ing)?|stuck|freez(?:es|ing)|frozen)(?:\s+(?:here|forever|at this point))?[>\])*=.\s-]*$",
    re.I,
)
# size, count, type, [redop], [root], time, algbw, busbw: nccl-tests result rows of every era (src/common.cu; no
# root column before 2.11, no redop for all_gather).
NCCL_TESTS_ROW = r"^[^\S\n]*\d+\s+\d+\s+\w+\s+(?:\w+\s+)?(?:-?\d+\s+)?[\d.]+\s+[\d.]+\s+[\d.]+"

# NCCL INFO lines (NCCL's own and its net plugins') that report a set-up step done: a connection made or
# accepted, a channel's transport chosen, the communicator complete (NCCL src/transport/*.cc 'Channel NN/N :
# ... via NET/...', init.cc 'Init COMPLETE', 'Connected all rings/trees'; net plugins' 'Connected' / 'Accepted',
# e.g. google/nccl-fastsocket net_fastsocket.cc). A return chain ('file.cc:12 -> 2') is an INFO line too, and it
# is an error's echo: it never counts (reasoning/recovered_warns.py reads a WARN the run went past by these).
NCCL_PROGRESS = re.compile(
    r"NCCL INFO (?!.*-> \d)(?:.*\b(?:Connected|Accepted|Init COMPLETE|connected all)\b|.* via (?:P2P|SHM|NET)|"
    r"Channel \d+/\d+ :|comm 0x[0-9a-f]+ rank \d+ nranks \d+ .*Init COMPLETE)"
)

# A shell prompt in front of a command a log quotes ('$ ', 'user@host:~$ ', 'root@host:~# '), never a comment's
# '# ': a commented-out line in a printed run script is no command. Possessive, so a long line cannot backtrack.
SHELL_PROMPT = r"(?:[^\s$#]*+\$[ \t]++|[^\s$#]++#[ \t]++)?"
# Variables assigned in front of a command ('A=1 B=2 mpirun ...'), on one line; possessive: 'A=1 ' * 25000 is read
# once, not tried from every split (regex_safety.backtracking_risk).
SHELL_ASSIGNMENT_RUN = r"(?:\w++=\S*+[ \t]++)*+"
# A line of a shell's settings: optional prompt, optional `export`, then assignments (group 'env').
SHELL_SETTINGS = re.compile(rf"^[ \t]*+{SHELL_PROMPT}(?:export[ \t]++)?(?P<env>(?:\w++=\S*+(?:[ \t]++|$))++)", re.M)
_ASSIGNMENT = re.compile(r"(\w+)=['\"]?([^\s'\"]*)")


def shell_settings(text: str) -> list[tuple[str, str, int]]:
    """(name, value, offset) for each variable a shell line of `text` sets, in front of a command or exported
    ('export NCCL_IB_DISABLE=1', '$ NCCL_P2P_LEVEL=NVL torchrun ...'); comment lines ('# export X=1') are none."""
    found = []
    for m in SHELL_SETTINGS.finditer(text):
        for a in _ASSIGNMENT.finditer(m.group("env")):
            found.append((a.group(1), a.group(2), m.start()))
    return found


# The launchers a job's command line starts with (knowledge/stages.py's launch marker and LAUNCH_COMMAND).
LAUNCHERS = (
    r"mpirun|mpiexec|srun|horovodrun|torchrun|deepspeed|accelerate launch|"
    r"python3?\s+-m\s+torch\.distributed\.(?:launch|run)|python3?\s+\S*torch/distributed/(?:launch|run)\.py"
)
# The command a job was started with, as a log quotes it (a shell prompt optional): a launcher's command line or a
# run script, the `launch` group being what a remedy quotes (modded-nanogpt's './run.sh', HRNet's 'python -m
# torch.distributed.launch --nproc_per_node=4 ...'). A script counts only where its name says it runs the job
# (run, train, launch, submit): a './download_data.sh --shards 8' after the launcher is not the launch.
LAUNCH_COMMAND = (
    r"^\s*(?:\S*[$#]\s+)?(?P<launch>(?:(?:bash|sh)\s+|\./)(?:[\w.-]*/)*[\w.-]*(?:run|train|launch|submit)[\w.-]*"
    rf"\.sh\b[^\n]{{0,60}}|(?:{LAUNCHERS})\s[^\n]{{0,80}})"
)

# The collective or store timeout as c10d and gloo state it, so a remedy can quote the log's own words: the watchdog's
# 'Timeout(ms)=600000' (ProcessGroupNCCL.cpp WorkNCCL), TCPStore's 'timed out after 1800000ms' (socket.cpp
# waitForInput), the store's 'Timed out after 901 seconds waiting for clients' (TCPStore.cpp), gloo's 'Timed out
# waiting 1800000ms for recv operation' (gloo/transport/tcp/unbound_buffer.cc), monitored_barrier's 'failed to pass
# monitoredBarrier in 1800000 ms' (ProcessGroupGloo.cpp). Groups: ms, else seconds.
TIMEOUT_LIMIT = re.compile(
    r"Timeout\(ms\)=(?P<ms>\d+)|[Tt]imed out after (?P<ms2>\d+) ?ms\b|[Tt]imed out after (?P<s>\d+) seconds|"
    r"Timed out waiting (?P<ms3>\d+) ?ms\b|monitoredBarrier in (?P<ms4>\d+) ms"
)


def timeout_limit_ms(m: re.Match[str]) -> int:
    """The limit a TIMEOUT_LIMIT match states, in ms."""
    ms = m.group("ms") or m.group("ms2") or m.group("ms3") or m.group("ms4")
    return int(ms) if ms else int(m.group("s")) * 1000
