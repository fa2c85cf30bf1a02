"""Whose rank and which process group a c10d line names: the global rank of the job, or the rank within one group.

A job with several process groups (tensor, pipeline, data, expert parallel) prints the same watchdog lines for each,
and their ranks are not the same numbers:

- torchrun's per-line prefix '[rankN]:' is the job's global rank: the elastic agent fills its log-line template's
  ${rank} with worker.global_rank (torch/distributed/elastic/agent/server/local_elastic_agent.py, _start_workers;
  torchrun's default template '[rank${rank}]:', torch >= 2.2).
- ProcessGroupNCCL's own prefix '[PG ID I PG GUID G(desc) Rank R]' (createLogPrefix, torch >= 2.3) and the bare
  '[Rank R]' of WorkNCCL::checkTimeout (torch <= 2.5) carry rank_, the rank *within that group*: rank 1 of an
  expert-parallel group may be global rank 13. 'PG ID' is local_id_, a counter of the groups this process made;
  'PG GUID' is pg_uid_ (the group's name), which the source calls "a global unique ID across ranks". Older
  releases print '[PG I Rank R]' / '[PG I (desc) Rank R]'.
- One process's watchdog says the same failure twice: the timeout line ('[Rank R] Watchdog caught collective
  operation timeout: WorkNCCL(SeqNum=S, ...)', no group named before torch 2.6) and, right after it, the group's
  status line ('[PG ID I PG GUID G Rank R] Exception (either an error or timeout) detected by watchdog at work: S,
  last enqueued NCCL work: E, last completed NCCL work: C'): the status line names the timeout's group.

Sequence numbers count per group, so two timeouts are one collective only within one group: a timeout of group
GUID 119 at SeqNum 216 and one of GUID 112 at SeqNum 57 are two waits, not ranks that disagree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# '[PG 1 Rank 0]' / '[PG ID 0 PG GUID 0(default_pg) Rank 1]' / '[PG 0 (default_pg) Rank 7]' / '[Rank 3]': the
# group's local id (1), its GUID (2), its description (3) and the rank within it (4).
GROUP_RANK = re.compile(r"\[(?:PG (?:ID )?(\d+)(?: PG GUID ([\w.:-]+?))?\s*(?:\(([^)]*)\))? )?Rank (\d+)\]")
SOURCE = (
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (createLogPrefix, WorkNCCL::checkTimeout); "
    "torch/distributed/elastic/agent/server/local_elastic_agent.py (log_line_prefix_template)"
)


def group_fields(match: re.Match[str] | None) -> dict[str, str]:
    """The group a c10d prefix names, as details: 'pg' (the local id, as before) and 'pg_guid' where printed."""
    if match is None or match.group(1) is None:
        return {}
    fields = {"pg": match.group(1)}
    if match.group(2):
        fields["pg_guid"] = match.group(2)
    return fields


def group_key(details: Mapping[str, object]) -> str | None:
    """One group across ranks: its GUID where printed (unique across ranks), else its local id (the same on every
    rank of a job whose ranks all make the same groups in the same order), else None (no group named)."""
    guid = details.get("pg_guid")
    if guid is not None:
        return f"guid {guid}"
    pg = details.get("pg")
    return f"pg {pg}" if pg is not None else None
