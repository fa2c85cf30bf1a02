"""Whose rank and which process group a c10d line names: the global rank of the job, or the rank within one group.

A job with several process groups (tensor, pipeline, data, expert parallel) prints the same watchdog lines for each,
and their ranks are not the same numbers:

- The '[rankN]:' before a C++ line is c10 logging's own prefix of the global rank: distributed_c10d.py's
  _update_default_pg calls torch._C._distributed_c10d._set_global_rank(the default group's rank), and the
  excepthook distributed_c10d.py installs prints a Python traceback's lines under the same '[rankN]:'. It is not
  torchrun's: torchrun's per-line template defaults to '[${role_name}${local_rank}]:' ('[default0]:', the local
  rank; torch/distributed/elastic/agent/server/local_elastic_agent.py), '[${rank}]:' only where a user sets it.
- ProcessGroupNCCL's own prefix (createLogPrefix) and the bare '[Rank R]' of WorkNCCL::checkTimeout (torch <= 2.5)
  carry rank_, the rank *within that group*: rank 1 of an expert-parallel group may be global rank 13. The number
  after 'PG' changes meaning by release:
    torch 2.3   '[PG N Rank R]'                        N = uid_, a counter of the groups *this process* made:
                                                       parallel tensor-parallel groups on different ranks share it
    torch 2.4   '[PG N (desc) Rank R]' / '[PG N Rank R]'  N = pg_name_, the group's name, the same on every rank
    torch 2.5+  '[PG ID I PG GUID G(desc) Rank R]'     I = local_id_ (per process), G = pg_uid_, which the source
                                                       calls "a global unique ID across ranks"
  A bare '[PG N Rank R]' is 2.3's or 2.4's: only with a description ('(tp)', 2.4 only) or N = 0 (every rank's
  first group, the default one) is it one group across ranks.
- One process's watchdog says the same failure two or three times: the timeout line ('[Rank R] Watchdog caught
  collective operation timeout: WorkNCCL(SeqNum=S, ...)', no group named before torch 2.6), the group's status
  line ('[PG ID I PG GUID G Rank R] Exception (either an error or timeout) detected by watchdog at work: S, last
  enqueued NCCL work: E, last completed NCCL work: C'), which names the timeout's group, and (torch 2.4/2.5)
  'Process group watchdog thread terminated with exception: [Rank R] Watchdog caught ...' repeating the timeout.
  An 8-GPU node's watchdogs fire together, so the lines of several processes interleave or come in batches.

Sequence numbers count per group, so two timeouts are one collective only within one group: a timeout of group
GUID 119 at SeqNum 216 and one of GUID 112 at SeqNum 57 are two waits, not ranks that disagree.

Sources: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (createLogPrefix in torch 2.3, 2.4 and 2.5+,
WorkNCCL::checkTimeout); torch/distributed/distributed_c10d.py (_update_default_pg -> _set_global_rank);
torch/distributed/elastic/agent/server/local_elastic_agent.py (log_line_prefix_template's default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# '[PG 1 Rank 0]' / '[PG ID 0 PG GUID 0(default_pg) Rank 1]' / '[PG 0 (default_pg) Rank 7]' / '[Rank 3]': the
# group's local id (1), its GUID (2), its description (3) and the rank within it (4).
GROUP_RANK = re.compile(r"\[(?:PG (?:ID )?(\d+)(?: PG GUID ([\w.:-]+?))?\s*(?:\(([^)]*)\))? )?Rank (\d+)\]")
# The default group: every rank's first, under every release's numbering.
DEFAULT_GROUP_ID = "0"


def group_fields(match: re.Match[str] | None) -> dict[str, str]:
    """The group a c10d prefix names, as details: 'pg' (the number after 'PG'), 'pg_guid' and 'pg_desc' (its
    description: 'tp', 'default_pg') where printed."""
    if match is None or match.group(1) is None:
        return {}
    fields = {"pg": match.group(1)}
    if match.group(2):
        fields["pg_guid"] = match.group(2)
    if match.group(3):
        fields["pg_desc"] = match.group(3)
    return fields


def group_key(details: Mapping[str, object]) -> str | None:
    """One group across ranks: its GUID where printed (unique across ranks); else the number of a bare '[PG N ...]'
    where it is the same on every rank (torch 2.4's name, told by its description, or the default group's 0);
    else None: no group named, or only torch 2.3's per-process counter, which parallel groups share."""
    guid = details.get("pg_guid")
    if guid is not None:
        return f"guid {guid}"
    pg = details.get("pg")
    if pg is not None and (details.get("pg_desc") is not None or pg == DEFAULT_GROUP_ID):
        return f"pg {pg}"
    return None


def group_label(details: Mapping[str, object]) -> str | None:
    """How a sentence names the group a line prints: 'GUID 9 (tp)', 'PG 1'; None where it prints none."""
    pg = details.get("pg")
    if pg is None:
        return None
    guid = details.get("pg_guid")
    desc = details.get("pg_desc")
    return (f"GUID {guid}" if guid is not None else f"PG {pg}") + (f" ({desc})" if desc else "")
