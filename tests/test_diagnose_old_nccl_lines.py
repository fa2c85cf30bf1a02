"""NCCL <= 2.3 wrote its debug lines without the NCCL token: 'host:pid:tid [dev] INFO msg' and 'host:pid:tid [dev]
file.h:NNN WARN msg' (readers/nccl.py). Its INFO lines are information, whatever subsystem they name ('NET/IB');
its WARN lines stay errors. Short logs written in that format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

OLD_INFO = """\
nodeA:1001:1010 [0] INFO NET : Using interface ib0:192.168.1.1<0>
nodeA:1001:1010 [0] INFO NET/IB : Using interface ib0 for sideband communication
nodeA:1001:1010 [0] INFO NET/IB: [0] mlx5_0:1/IB
nodeA:1001:1010 [0] INFO Using internal Network IB
NCCL version 2.2.13+cuda9.2
nodeA:1002:1011 [1] INFO NET/IB : Using interface ib0 for sideband communication
"""


def test_old_nccl_info_lines_naming_net_ib_are_no_failure(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, OLD_INFO) == []


def test_old_nccl_warn_lines_are_still_errors(tmp_path: Path) -> None:
    warn = "nodeA:1001:1010 [0] include/socket.h:361 WARN Connect to 192.168.1.2<43311> failed : Connection refused\n"
    top = top_failure(tmp_path, OLD_INFO + warn)
    assert top.kind in ("network_fault", "nccl_error")
