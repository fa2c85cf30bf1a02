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

from scope.analyzers.diagnose.model import STALL, Anomaly

_PREFIX = re.compile(r"(?:^|[\s\]:])([\w.\-<>]+):(\d+):\d+ \[(\d+)\] NCCL INFO (.*)$")
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
        "other on; open the ports between nodes",
    ),
    Phase(
        "topology",
        re.compile(
            r"Init START|nranks \d+|Setting affinity|NVLS multicast|Trees|Pattern \d|topo|Channel \d+/\d+ :\s*\d"
        ),
        "the connection set-up of the channels (P2P / SHM / NET)",
        "a hang right after topology detection is usually GPU peer-to-peer blocked by the IOMMU or PCIe ACS "
        "(boot with iommu=pt or intel_iommu=off, disable ACS; NCCL_P2P_DISABLE=1 to confirm) or a NET "
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
        re.compile(r"Connected NVLS|NVLS comm|nvls channels"),
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
_RESULT_ROW = re.compile(r"^\s*\d+\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+", re.M)
_TABLE_HEADER = re.compile(r"^#\s+(?:size|bytes)\s+(?:count|N)\s+type", re.M)
_BANNER = re.compile(r"^#\s+(?:Using devices|nThread \d+)", re.M)
# Signs of progress past init (not on '#' lines: the nccl-tests banner has 'step: 2(factor)').
_PROGRESS = re.compile(
    r"^(?!#).*?(?:Avg bus bandwidth|\bstep\s*[:=]?\s*\d+|\bIter(?:ation)? #?\d+|\bepoch\b)", re.I | re.M
)


def stalled(text: str, display: str) -> Anomaly | None:
    """The step a run stopped in, when its log shows it started and never got further."""
    banner = ("nThread" in text or "Using devices" in text) and bool(_BANNER.search(text))
    if banner:
        header = _TABLE_HEADER.search(text)
        if header and not _RESULT_ROW.search(text) and not _PROGRESS.search(text):
            # also after Init COMPLETE: a benchmark that never printed one row hangs in its first collective
            return _anomaly(
                display,
                text.count("\n", 0, header.start()) + 1,
                "the benchmark printed its result table header and no result: it hangs in its first collective",
                "first_collective",
                "a hang in the first collective after init is usually GPU peer-to-peer blocked by the IOMMU or PCIe "
                "ACS (boot with iommu=pt or intel_iommu=off; NCCL_P2P_DISABLE=1 to confirm), or one rank that "
                "never joined; rerun with NCCL_DEBUG=INFO",
                [],
            )
    if "Init COMPLETE" in text or "NCCL INFO" not in text or _PROGRESS.search(text):
        return None
    return _init_stall(text, display, banner)


def _init_stall(text: str, display: str, banner: bool) -> Anomaly | None:
    """Each rank's furthest init phase. Without a benchmark banner the log must narrate init from its start
    (bootstrap, then a later step) for at least two ranks: a snippet of INFO lines proves nothing."""
    last: dict[tuple[str, int, int], tuple[int, int]] = {}  # (host, pid, dev) -> (phase index, line)
    began: set[tuple[str, int, int]] = set()
    ranks: dict[tuple[str, int, int], int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        m = _PREFIX.search(raw)
        if not m:
            continue
        key, body = (m.group(1), int(m.group(2)), int(m.group(3))), m.group(4)
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
    if not banner and sum(1 for k in began if last[k][0] > 0) < 2:
        return None
    furthest = max(p for p, _ in last.values())
    behind = sorted(k for k, (p, _) in last.items() if p < furthest)
    stop = min(p for p, _ in last.values())
    ph = INIT_PHASES[stop]
    line = max(ln for _, ln in last.values())
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
