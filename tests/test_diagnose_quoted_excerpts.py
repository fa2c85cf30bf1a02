"""Healthy starts quoted up to a line a hang also ends on: NCCL's init lines quoted in parts (an excerpt marker among
the processes' init lines: the poster chose which lines to show, so the last one shown is no stop, whether or not a
shown rank printed 'Init COMPLETE'). Short logs written in NCCL's INFO format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures

QUOTED_INIT = """\
hostA:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
hostA:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
hostB:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
hostB:200:200 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>
[... cut ...]
hostA:100:110 [1] NCCL INFO Channel 00 : 1[1000] -> 2[2000] [send] via NET/Socket/0
hostB:200:210 [1] NCCL INFO Channel 00 : 3[1000] -> 0[2000] [send] via NET/Socket/0
[... cut ...]
hostB:200:211 [0] NCCL INFO Channel 01 : 1[1000] -> 2[2000] [receive] via NET/Socket/0
hostA:100:111 [0] NCCL INFO Channel 01 : 3[1000] -> 0[2000] [receive] via NET/Socket/0
"""


def test_init_lines_quoted_in_parts_are_no_stop(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, QUOTED_INIT) == []


def test_the_same_init_lines_unbroken_still_stop_in_init(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, QUOTED_INIT.replace("[... cut ...]\n", ""))
    assert found and found[0].kind == "hang"
