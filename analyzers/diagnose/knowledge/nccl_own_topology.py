"""Topology-detection WARNs that are NCCL's own failure, not the user's configuration.

Most graph/ WARNs say NCCL could not model the node from what it was shown (a VM's PCI view, a topology file),
a configuration fault (knowledge/emitters.py SUBSYSTEMS["topology"]). These rows are the exceptions: the WARN
site returns ncclInternalError ("internal error - please report this issue to the NCCL developers") because
NCCL's own search or its own dictionaries failed, and the maintainers traced each to a bug that a later release
fixed. Their remedy is another NCCL release, not the PCI view; only where the log shows a topology the user
supplied (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, or a net plugin's own file) is that the first suspect again
(words/endings.nccl_own_topology).

Columns: id; the WARN message as NCCL prints it (a regex on the line); what went wrong inside NCCL; the release
that fixed it, or "" where no public source names one; the public sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class OwnTopologyFailure:
    id: str
    message: re.Pattern[str]
    what: str
    fixed_in: str
    source: str


OWN_TOPOLOGY_FAILURES: tuple[OwnTopologyFailure, ...] = (
    # graph/topo.h ncclTopoIdToNetDev: WARN("Could not find NET with id %lx") then return ncclInternalError
    # (present since v2.21.5).
    # NVIDIA/nccl#1748 (labelled bug; kiskra-nvidia): the tree search fails ('Could not find a path for pattern
    # 1, falling back to simple order'), the fallback uses a hard-coded NET id 0 that NIC fusion removed in
    # 2.25 / 2.26; NCCL_NET_MERGE_LEVEL=LOC did not help, NCCL 2.27 (torch 2.8) did.
    OwnTopologyFailure(
        "nccl_net_id_fallback",
        re.compile(r"Could not find NET with id"),
        "NCCL's graph search found no path over the node's topology and its fallback asked for a NET device id "
        "that topology does not hold (the WARN exists since 2.21.5; in 2.25 / 2.26 NIC fusion removed the id 0 "
        "the fallback assumed, NVIDIA/nccl#1748)",
        "2.27",
        "https://github.com/NVIDIA/nccl/issues/1748; graph/topo.h ncclTopoIdToNetDev returns ncclInternalError",
    ),
    # graph/xml.h kvConvertToInt / kvConvertToStr: a value missing from NCCL's own dictionaries (PCI classes,
    # link speeds). In NCCL 2.6 kvConvertToInt WARNed and returned ncclInternalError on a half-filled GPU node
    # (NVIDIA/nccl#326, sjeaugey: "indeed that was a bug in NCCL", patch in topo.cc / xml.cc); later releases
    # print it as INFO '..., falling back to N' and go on (NVIDIA/nccl-tests#233, ultralytics/ultralytics#12905).
    # kvConvertToStr still WARNs and returns ncclInternalError (graph/xml.h, v2.18-v2.28).
    OwnTopologyFailure(
        "nccl_kv_dictionary",
        re.compile(r"KV Convert to (?:int|str) : could not find value(?!.*falling back)"),
        "NCCL could not convert a value it read itself (sysfs or its own XML) with its own dictionary and gave "
        "up on topology detection; releases after 2.6 fall back to a default value instead",
        "",
        "https://github.com/NVIDIA/nccl/issues/326; https://github.com/NVIDIA/nccl-tests/issues/233 (the later "
        "'falling back' INFO); graph/xml.h kvConvertToInt / kvConvertToStr",
    ),
)

# What the user supplied that NCCL reads its topology from: where the log shows one set, it is the first suspect.
USER_TOPOLOGY_VARIABLES = ("NCCL_TOPO_FILE", "NCCL_GRAPH_FILE")


def own_topology_failure(message: str) -> OwnTopologyFailure | None:
    """The row whose WARN the message is, if any."""
    return next((r for r in OWN_TOPOLOGY_FAILURES if r.message.search(message)), None)


# Where a failure at or past the release that fixed its row is reported: NCCL's issue tracker.
NCCL_ISSUES = "https://github.com/NVIDIA/nccl/issues"


def row_of(row_id: str) -> OwnTopologyFailure | None:
    return next((r for r in OWN_TOPOLOGY_FAILURES if r.id == row_id), None)


def runs_nccl(version: str | None) -> str:
    """How a fix names the NCCL release the log runs, or where to read it."""
    return f"this log runs NCCL {version}" if version else "NCCL_DEBUG=VERSION prints the version"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def remedy(row: OwnTopologyFailure, version: str | None, supplied: str = "") -> str:
    """The fix for NCCL's own topology failure, from what the log shows: the topology someone handed NCCL
    (`supplied`: a net plugin, NCCL_TOPO_FILE) first where there is one; a release at or past the fix a regression
    to report; else the release that fixed it, named with the one the log runs."""
    runs = runs_nccl(version)
    if supplied:
        return (
            f"NCCL was handed its topology by {supplied}, which the log shows: that is the first suspect, not NCCL's "
            "own detection; fix or remove it and rerun. If the failure stays without it, it is NCCL's own "
            f"({runs}; source: {row.source})."
        )
    if version and row.fixed_in and _release(version) >= _release(row.fixed_in):
        return (
            f"This log already runs NCCL {version}, at or past {row.fixed_in}, the release that fixed the known "
            f"cause: a regression or another bug in NCCL's topology detection. Report it at {NCCL_ISSUES} with the "
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH log and the topology dump (NCCL_TOPO_DUMP_FILE=topo.xml); "
            f"meanwhile go back to the last release that worked, the same on every node. Source: {row.source}."
        )
    target = f"NCCL {row.fixed_in} or newer (the release that fixed it)" if row.fixed_in else "a newer NCCL release"
    return (
        f"This is a bug in NCCL's topology detection, not the node's set-up ({runs}): upgrade to {target}, the "
        "same on every node (a newer container or PyTorch build that ships it, or pip install "
        f"nvidia-nccl-cu12==VERSION); or go back to the last release that worked. Source: {row.source}."
    )
