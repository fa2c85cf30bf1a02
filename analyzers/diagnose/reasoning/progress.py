"""Where a run stopped when no line says why: NCCL init phases per rank, and benchmarks that printed no result.

NCCL_DEBUG=INFO narrates communicator init in a fixed order (bootstrap, topology, channel set-up over
P2P / SHM / NET, NVLS, CollNet, connected, Init COMPLETE). A run whose ranks all stop after the same
step, with no error, hangs in the step after it; ranks that stop earlier than their peers are the ones
the others wait for. nccl-tests print a table header and one row per size: a header and no row is a hang
in the first collective. These are guesses (the log may simply be cut), reported with low confidence and
only when nothing else explains the failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.line_shapes import NCCL_TESTS_ROW
from scope.analyzers.diagnose.knowledge.remedies import CONSUMER_GPU, CONSUMER_GPU_P2P, P2P_BLOCKED
from scope.analyzers.diagnose.knowledge.stage_marker import Marker
from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO
from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.readers.nccl_prefix import nccl_lines, read_prefix
from scope.analyzers.diagnose.reasoning import startup, topology
from scope.analyzers.diagnose.reasoning.excerpt import CUT, cut_after, cut_inside_nccl_init, excerpted, line_start
from scope.analyzers.diagnose.reasoning.stages import message_marker

from scope.units import clip

QUOTE_CHARS = 80  # characters of a log line quoted in a finding's sentence

_COMM_RANK = re.compile(r"comm 0x[0-9a-f]+ rank (\d+) nranks (\d+)")


@dataclass(frozen=True)
class Phase:
    name: str
    pattern: re.Pattern[str]
    # What a hang right after this step usually is, and what to do.
    next_step: str
    remedy: str


# In init order; a line's phase is the last that matches.
INIT_PHASES: tuple[Phase, ...] = (
    Phase(
        "bootstrap",
        re.compile(r"Bootstrap ?:|NET/Plugin|NET/\w+ ?: Using|Using network|cudaDriverVersion|NCCL version"),
        "the bootstrap exchange between ranks (out-of-band TCP)",
        "check that every rank started and that NCCL_SOCKET_IFNAME names an interface the hosts reach each "
        "other on; open the ports between nodes; in Kubernetes a service-mesh sidecar (Istio / Envoy) that "
        "intercepts the pods' TCP stops the bootstrap: run NCCL pods without sidecar injection",
    ),
    Phase(
        "topology",
        re.compile(
            r"Init START|nranks \d+|Setting affinity|NVLS multicast|Trees|Pattern \d|topo|Channel \d+/\d+ :\s*\d"
        ),
        "the connection set-up of the channels (P2P / SHM / NET)",
        "a hang right after topology detection is usually " + P2P_BLOCKED + "; or a NET "
        "transport that cannot connect (NCCL_IB_DISABLE=1 / NCCL_SOCKET_IFNAME to confirm)",
    ),
    Phase(
        "connect",
        re.compile(r" via (?:P2P|SHM|NET|direct|CollNet)"),
        "the remaining channel connections or NVLS / CollNet set-up",
        "a hang during connection set-up is usually P2P blocked by the IOMMU / ACS (iommu=pt, "
        "NCCL_P2P_DISABLE=1 to confirm) or NVLS set-up (NCCL_NVLS_ENABLE=0 to confirm)",
    ),
    Phase(
        "nvls",
        re.compile(r"Connected NVLS|NVLS comm|nvls channels|NVLS Bind mem|NVLS .*(?:UC|MC) handle|NVLS multicast"),
        "the end of init after NVLS",
        "try NCCL_NVLS_ENABLE=0; check Fabric Manager and the driver on NVSwitch systems",
    ),
    Phase(
        "connected",
        re.compile(r"Connected all (?:rings|trees)|threadThresholds|coll channels"),
        "the final init barrier or the first collective",
        "a rank that never reached the first collective: check every rank's log; with NCCL_P2P_DISABLE=1 / "
        "NCCL_SHM_DISABLE=1 tell transport hangs apart",
    ),
)
_RESULT_ROW = re.compile(NCCL_TESTS_ROW, re.M)  # nccl-tests result rows (knowledge/stages.py)
_COLL_ENQUEUE = re.compile(r"\b[A-Z][A-Za-z]+: opCount ([0-9a-f]+) ")
_TABLE_HEADER = re.compile(r"^#\s+(?:size|bytes)\s+(?:count|N)\s+type", re.M)
_BANNER = re.compile(r"^#\s+(?:Using devices|nThread \d+)", re.M)
# A line the run printed before its table (nccl-tests' banner, NCCL's INFO lines): where the run's output starts.
_RUN_LINE = re.compile(r"^(?:.*NCCL INFO|#\s+(?:Using devices|nThread \d+|Rank\s+\d+)).*$", re.M)
# Signs of progress past init (not on '#' lines: the nccl-tests banner has 'step: 2(factor)').
_PROGRESS = re.compile(
    r"^(?!#).*?(?:Avg bus bandwidth|\bstep\s*[:=]?\s*\d+|\bIter(?:ation)? #?\d+|\bepoch\b)", re.I | re.M
)


def stalled(text: str, display: str) -> Anomaly | None:
    """The step a run stopped in, when its log shows it started and never got further."""
    raw, text = text, untag(text)
    found = _stalled(text, display)
    found = (
        found
        # ranks that never printed say more than the stage the rest is in (read with the launcher's rank tags)
        or startup.missing_ranks(raw, display)
        or ends_inside_a_stage(text, display)
        or topology.pcie_root_complex_paths(text, display)
    )
    if found is not None and P2P_BLOCKED in str(found.details.get("remedy", "")) and CONSUMER_GPU.search(text):
        remedy = str(found.details["remedy"])
        found.details["remedy"] = f"{CONSUMER_GPU_P2P} {remedy[0].upper()}{remedy[1:]}"
    return found


def _stalled(text: str, display: str) -> Anomaly | None:
    banner = ("nThread" in text or "Using devices" in text) and bool(_BANNER.search(text))
    if banner:
        header = _TABLE_HEADER.search(text)
        cut_after_header = cut_after(text, header.start()) if header else False
        if header and not _RESULT_ROW.search(text) and not _PROGRESS.search(text) and not cut_after_header:
            # also after Init COMPLETE: a benchmark that never printed one row hangs in its first collective
            return _anomaly(
                display,
                text.count("\n", 0, header.start()) + 1,
                "the benchmark printed its result table header and no result: it hangs in its first collective",
                "first_collective",
                "a hang in the first collective after init is usually " + P2P_BLOCKED + "; or one rank that "
                "never joined; rerun with NCCL_DEBUG=INFO",
                [],
            )
    if "Init COMPLETE" in text or "NCCL INFO" not in text or _PROGRESS.search(text) or _RESULT_ROW.search(text):
        return None  # result rows of a benchmark are progress past init too
    return _init_stall(text, display, banner)


def _init_stall(text: str, display: str, banner: bool) -> Anomaly | None:
    """Each rank's furthest init phase. Without a benchmark banner the log must narrate init from its start
    (bootstrap, then a later step) for at least two ranks: a snippet of INFO lines proves nothing."""
    last: dict[tuple[str, int, int], tuple[int, int]] = {}  # (host, pid, dev) -> (phase index, line)
    began: set[tuple[str, int, int]] = set()
    ranks: dict[tuple[str, int, int], int] = {}
    for lineno, nccl in nccl_lines(text):
        if nccl.level != "INFO":
            continue
        key, body = (nccl.host, nccl.pid, nccl.device), nccl.message
        cr = _COMM_RANK.search(body)
        if cr:
            ranks[key] = int(cr.group(1))
        phase = max((i for i, ph in enumerate(INIT_PHASES) if ph.pattern.search(body)), default=None)
        if phase == 0:
            began.add(key)
        if phase is not None and phase >= last.get(key, (-1, 0))[0]:
            last[key] = (phase, lineno)
    if not last:
        return None
    line = max(ln for _, ln in last.values())
    if cut_after(text, line_start(text, line)) or ("Init COMPLETE" in text and cut_inside_nccl_init(text)):
        # lines were left out after the last init line, or among them after a rank completed init (the others'
        # completions may be among those left out): the excerpt's cut, not the run's stop
        return None
    if not banner and sum(1 for k in began if last[k][0] > 0) < 2:
        return None
    furthest = max(p for p, _ in last.values())
    if furthest == 0 and len({(host, pid) for host, pid, _ in last}) < 2:
        # one process's bootstrap lines (interface, plugin, version) are the first lines NCCL prints in any run,
        # and the ones a healthy run is quoted with: with no second process there is no peer to wait for yet
        # (knowledge/stages.py reads a log ending on them as no stop, for the same reason)
        return None
    behind = sorted(k for k, (p, _) in last.items() if p < furthest)
    stop = min(p for p, _ in last.values())
    ph = INIT_PHASES[stop]
    if behind and len(behind) < len(last):
        who = [ranks[k] for k in behind if k in ranks]
        why = (
            f"NCCL init stopped: {len(behind)} of {len(last)} ranks never got past {ph.name} while the others "
            f"reached {INIT_PHASES[furthest].name}; the others wait for them"
        )
        return _anomaly(display, line, why, ph.name, ph.remedy, who)
    why = f"NCCL init stopped on all {len(last)} ranks after {ph.name}, with no error: a hang in {ph.next_step}"
    return _anomaly(display, line, why, ph.name, ph.remedy, [])


def _anomaly(display: str, line: int, message: str, phase: str, remedy: str, ranks: list[int]) -> Anomaly:
    return Anomaly(
        code="init_stalled" if phase != "first_collective" else "benchmark_stalled",
        kind="hang",
        level=STALL,
        message=message,
        file=display,
        line=line,
        rank=ranks[0] if len(ranks) == 1 else None,
        severity="critical",
        details={"phase": phase, "remedy": remedy, "confidence": "low", "ranks": ranks},
    )


# ---- where the log ends ----------------------------------------------------------------------------
# Launcher tags before each line (Open MPI --tag-output, horovodrun, torchrun --tee, torch's [rankN]:);
# the stage patterns are written for the bare message, and '^#' must see nccl-tests' comment lines.
_LAUNCHER_TAG = re.compile(r"^(?:\[\d+(?:,\d+)?\]<std(?:out|err)>:|\[default\d+\]:|\[rank\d+\]:)", re.M)
# tqdm / accelerate / vLLM progress bar that never left 0 (e.g. 'Processed prompts:   0%|   | 0/16 [00:00<?').
_MAX_BYTES = re.compile(r"^#\s+nThread \d+ .*?maxBytes (\d+)", re.M)
_BAR_AT_ZERO = re.compile(r"(?:^|:)\s*0%\|[^|]*\|\s*0/\d+")
# NCCL INFO lines printed after init or at tear-down: ending on one says nothing about a stalled stage.
# INFO lines that open a step whose end NCCL also prints. Most INFO lines report a step done (a transport
# chosen, a channel connected): a snippet that ends on one says nothing. A log that ends on an opener, with
# nothing after it, stopped inside that step.
STEP_OPENERS: tuple[Phase, ...] = (
    Phase(
        "nvls",
        re.compile(r"NVLS Bind mem|NVLS (?:register|Register)|nvlsGroupBindMem"),
        "binding NVLS (NVLink SHARP) multicast memory",
        "rerun with NCCL_NVLS_ENABLE=0 to confirm; NVLS needs a running nvidia-fabricmanager matching the driver "
        "and, in containers, access to the NVSwitch fabric (IMEX / multicast support)",
    ),
    Phase(
        "init",
        re.compile(r"Init START\b"),
        "communicator init",
        "every rank of the communicator must reach init: check that all ranks started and that the bootstrap "
        "interface (NCCL_SOCKET_IFNAME) is reachable between hosts",
    ),
)


def untag(text: str) -> str:
    if "]<std" not in text and "[default" not in text and "[rank" not in text:
        return text
    return _LAUNCHER_TAG.sub("", text)


def _last_lines(text: str, n: int = 3) -> list[str]:
    out: list[str] = []
    end = len(text)
    while end > 0 and len(out) < n:
        start = text.rfind("\n", 0, end - 1) + 1 if end > 1 else 0
        line = text[start:end].strip()
        if line:
            out.append(line)
        if start == 0:
            break
        end = start - 1 if text[start - 1] == "\n" else start
    return out


def _rows_quoted(text: str) -> bool:
    """Result rows quoted in parts: the table header nccl-tests prints before its first row is not there and an
    excerpt marker follows the run's first line (its banner or NCCL's first INFO line), so the poster chose which
    of the run's lines to show: the rows are a quote, and the last one is where the quote ends, not the run (a
    healthy run posted in pieces ends on a completed row the same way). A cut above all of the run's lines only
    leaves out the log's head (the launch): it hides nothing of the table."""
    if _TABLE_HEADER.search(text):
        return False
    first = _RUN_LINE.search(text)
    return cut_after(text, first.start()) if first else excerpted(text)


def _table_alone(text: str) -> bool:
    """The log is nccl-tests' result table and nothing else (its header lines and rows): the head of a table
    quoted to show a run's results, as posts of healthy runs do. Where such a quote ends says nothing of the
    run; a console capture shows what the run printed before its table (the banner, NCCL's init lines)."""
    if _BANNER.search(text):
        return False  # the run's banner: the log shows the benchmark from its start
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return all(ln.lstrip().startswith("#") or _RESULT_ROW.match(ln) for ln in lines)


def _evaluation_bar(line: str) -> Marker | None:
    """The evaluation marker of a bar at 0 that is an evaluation's (Lightning's 'Validation DataLoader 0:   0%|',
    'Sanity Checking DataLoader 0:   0%|', 'Evaluating:   0%|'): no first training step."""
    marker = message_marker(line)
    return marker if marker is not None and marker.stage == "evaluation" else None


def _evaluation_stalled(display: str, line: int, marker: Marker) -> Anomaly:
    """A log that ends on an evaluation's bar at 0: the evaluation's first batch never finished. The remedy is the
    marker's own (Lightning's sanity check) and the evaluation stage's known causes (knowledge/stages.py)."""
    why = f"{marker.why}; " if marker.why else ""
    return _anomaly(
        display,
        line,
        "the log ends on an evaluation's progress bar at 0 with no error: the evaluation never finished its first "
        "batch, a hang in evaluation (a healthy run quoted up to the bar ends the same way: the bar past 0 in the "
        "live log, or each rank's stack, tells them apart)",
        "evaluation",
        f"dump each rank's stack (py-spy dump --pid) to see where it waits; {why}{STAGE_INFO['evaluation'].causes}",
        [],
    )


def ends_inside_a_stage(text: str, display: str) -> Anomaly | None:
    """Progress models read at the end of the log: a run whose log ends inside a stage, with no error and no
    exit, hangs in that stage. An excerpt marker as the last line means the log goes on: no conclusion."""
    tail = _last_lines(text, 1)
    if not tail or CUT.match(tail[0]):
        return None
    last = tail[0]
    line = text.count("\n", 0, text.rstrip().rfind("\n") + 1) + 1
    if _BAR_AT_ZERO.search(last) and (evaluation := _evaluation_bar(last)) is not None:
        return _evaluation_stalled(display, line, evaluation)
    if _BAR_AT_ZERO.search(last):
        after_init = "Init COMPLETE" in text
        where = "the first collective after NCCL init" if after_init else "its first step"
        return _anomaly(
            display,
            line,
            f"the log ends on a progress bar at 0 with no error: the run never finished its first step, a hang in "
            f"{where} (a healthy run's start quoted up to its first bar ends the same way: the bar past 0 in the "
            "live log, or each rank's stack, tells them apart)",
            "first_step",
            FIRST_COLLECTIVE_REMEDY if after_init else FIRST_STEP_REMEDY,
            [],
        )
    if (
        _RESULT_ROW.match(last)
        and "Avg bus bandwidth" not in text
        and not _table_alone(text)
        and not _rows_quoted(text)
    ):
        size = last.split()[0]
        top = _MAX_BYTES.search(text)
        if top and int(size) >= int(top.group(1)):
            return None  # every size printed: only the summary is missing (an excerpt)
        return _anomaly(
            display,
            line,
            f"the benchmark printed results up to {size} bytes and the log ends there with no error and no summary: "
            "it hangs in the collective of the next size",
            "benchmark_sizes",
            FIRST_COLLECTIVE_REMEDY,
            [],
        )
    if P2P_COPY.pattern.search(last) and ("P2P" in text or "Peer" in text):
        return _anomaly(
            display,
            line,
            f"the log ends as the test begins {P2P_COPY.next_step} ('{clip(last, QUOTE_CHARS)}'), with no error: "
            "the copy hangs",
            P2P_COPY.name,
            P2P_COPY.remedy,
            [],
        )
    nccl = read_prefix(last)
    info = nccl.message if nccl and nccl.level == "INFO" else None  # the last line's NCCL INFO message
    if info and _COLL_ENQUEUE.search(info) and not any(int(c, 16) for c in _COLL_ENQUEUE.findall(text)):
        # NCCL_DEBUG_SUBSYS=COLL prints each collective as it is enqueued: only opCount 0, then nothing
        return _anomaly(
            display,
            line,
            "the log ends after the ranks enqueued their first collective (opCount 0), with no error and no "
            "second one: it hangs in the first collective",
            "first_collective",
            FIRST_COLLECTIVE_REMEDY,
            [],
        )
    opener = next((o for o in STEP_OPENERS if o.pattern.search(info)), None) if info else None
    if info and opener and not _PROGRESS.search(text) and "Init COMPLETE" not in text:
        return _anomaly(
            display,
            line,
            f"the log ends as NCCL begins {opener.next_step} ('{clip(info, QUOTE_CHARS)}'), with no error and "
            f"nothing after it: init hangs in {opener.name}",
            opener.name,
            opener.remedy,
            [],
        )
    return None


# CUDA samples that test peer-to-peer copies (simpleP2P, p2pBandwidthLatencyTest): a copy that never returns.
P2P_COPY = Phase(
    "p2p_copy",
    re.compile(
        r"cudaMemcpyPeer / cudaMemcpy between GPU\d+ and GPU\d+|P2P=Enabled .*Matrix|^\s*D\\D(?:\s++\d++)++\s*$"
    ),
    "a GPU peer-to-peer copy",
    "a P2P copy that never completes is PCIe ACS or the IOMMU redirecting peer traffic: check `lspci -vvv | grep "
    "ACSCtl` (SrcValid+ ReqRedir+ means on; disable it in the BIOS or with setpci), boot with iommu=pt / "
    "intel_iommu=off; NCCL_P2P_DISABLE=1 avoids it for NCCL",
)


# What to try for a hang in the first collective (P2P and NVLS are the usual suspects on one node).
FIRST_COLLECTIVE_REMEDY = (
    "a hang in a collective with no error is usually "
    + P2P_BLOCKED
    + "; on NVSwitch systems try NCCL_NVLS_ENABLE=0; across "
    "nodes NCCL_IB_DISABLE=1 tells an IB fault apart; over NVLink check the links are up (nvidia-smi nvlink -s; "
    "a loose NVLink bridge)"
)
FIRST_STEP_REMEDY = (
    "dump each rank's stack (py-spy dump --pid) to see where it waits; a rank that never reached the first "
    "collective, a data loader that does not start, or a collective blocked by P2P (NCCL_P2P_DISABLE=1 as a test)"
)
