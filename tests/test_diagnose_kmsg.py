"""Kernel and driver messages (real gpud captures): each classified by what its Xid means."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge.xid import APPLICATION_XIDS, xid_info
from scope.analyzers.diagnose.readers.scan import scan_text

from scope.finding import FAILURE_KINDS
from tests.conftest import shared_data

NVIDIA = ("components", "accelerator", "nvidia")
XID_119 = (*NVIDIA, "xid", "testdata", "dmesg-with-xid-119.log")
XID_13 = ("components", "memory", "testdata", "dmesg.decode.iso.log")
NCCL_SEGV = (*NVIDIA, "nccl", "testdata", "dmesg.decode.iso.log")
FABRIC = (*NVIDIA, "fabric-manager", "testdata", "fabricmanager.log")
NVLINK_OK = (*NVIDIA, "fabric-manager", "testdata", "nvidia-smi.nvlink.status.a100")
KMSG_QUIET = ("pkg", "kmsg", "testdata", "kmsg.1.log")
PEERMEM = ("pkg", "kmsg", "testdata", "kmsg.2.peermem.log")


def findings_of(*parts: str) -> list:
    return [f for f in diagnose(shared_data("gpud", *parts)).findings if f.severity != "info"]


def test_xid_119_is_a_gsp_timeout_to_drain() -> None:
    (top,) = findings_of(*XID_119)
    assert top.kind == "hardware_fault" and top.metrics["details"]["xid"] == 119
    assert top.metrics["details"]["pci"] == "0000:9b:00" and "GSP" in top.summary
    assert "drain" in top.suggestion.lower()


def test_xid_13_burst_alone_is_the_applications_fault_and_the_oom_killer_its_own_finding() -> None:
    found = findings_of(*XID_13)
    assert found[0].kind == "crash" and found[0].metrics["details"]["xid"] == 13
    assert found[0].metrics["details"]["blame"] == "application"
    assert "not by a bad GPU" in found[0].suggestion
    assert any(f.kind == "oom" and "OOM killer" in f.summary for f in found[1:])


def test_segfault_in_libnccl_alone_is_a_crash() -> None:
    (top,) = findings_of(*NCCL_SEGV)
    assert top.kind == "crash" and top.metrics["details"]["library"] == "libnccl.so.2"


def test_nvswitch_non_fatal_error_is_a_warning() -> None:
    (top,) = findings_of(*FABRIC)
    assert (top.kind, top.severity) == ("hardware_fault", "warning")
    assert top.metrics["details"]["nvswitch_error"] == 12028


@pytest.mark.parametrize("parts", [NVLINK_OK, KMSG_QUIET])
def test_healthy_captures_raise_nothing(parts: tuple[str, ...]) -> None:
    assert findings_of(*parts) == []


def test_peermem_invalid_context_is_a_network_warning() -> None:
    (top,) = findings_of(*PEERMEM)
    assert (top.kind, top.severity, top.metrics["code"]) == ("network_fault", "warning", "nvidia_peermem")


def link(tmp: Path, name: str, parts: tuple[str, ...]) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    os.symlink(shared_data("gpud", *parts), tmp / name)


def test_xid_13_with_a_libnccl_segfault_in_the_same_second_is_an_application_fault(tmp_path: Path) -> None:
    link(tmp_path, "dmesg-gpu.log", XID_13)
    link(tmp_path, "dmesg-nccl.log", NCCL_SEGV)
    top = diagnose(tmp_path).findings[0]
    assert top.kind == "crash" and top.metrics["code"] == "gpu_application_fault"
    assert "not bad" in top.summary and "do not drain" in top.suggestion
    assert {"dmesg-gpu.log:1", "dmesg-nccl.log:1"} <= set(top.evidence)


def test_the_whole_gpud_folder_leads_with_the_application_fault() -> None:
    found = diagnose(shared_data("gpud")).findings
    assert found[0].metrics["code"] == "gpu_application_fault"
    kinds = [(f.kind, f.metrics.get("details", {}).get("xid")) for f in found]
    assert ("hardware_fault", 119) in kinds


def test_xid_and_crash_on_different_hosts_are_not_combined(tmp_path: Path) -> None:
    xid = (
        "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', "
        "name=<unknown>, Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors\n"
    )
    segv = (
        "kern  :warn  : 2025-01-21T04:41:44,285060+00:00 pt_main_thread[2536443]: segfault at 7f797fe00000 "
        "ip 00007f7c7ac69996 sp 00007f7c12fd7c30 error 4 in libnccl.so.2[7f7c7ac00000+d3d3000]\n"
    )
    for host, text in (("node-a", xid), ("node-b", segv)):
        (tmp_path / "hosts" / host).mkdir(parents=True)
        (tmp_path / "hosts" / host / "kmsg.log").write_text(text)
    codes = {f.metrics["code"] for f in diagnose(tmp_path).findings}
    assert "gpu_application_fault" not in codes and {"xid", "segfault"} <= codes


def test_wrapped_fallen_off_the_bus_message_without_an_xid_number() -> None:
    text = (
        "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
        "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
        "               NVRM: fallen off the bus and is not responding to commands.\n"
    )
    (a,) = scan_text(text, "dmesg").anomalies
    assert a.details["xid"] == 79 and a.details["pci"] == "0000:b3:00" and a.mono_s == pytest.approx(1843.308145)


def test_xid_catalog_knows_who_is_to_blame() -> None:
    assert {13, 31, 43} <= APPLICATION_XIDS and 79 not in APPLICATION_XIDS
    assert "drain" in xid_info(79).action and "drain" in xid_info(48).action and "drain" in xid_info(119).action
    assert xid_info(9999).blame == "driver"


def _completed_run(root: Path, exit_code: int) -> Path:
    from scope.manifest import HostInfo, RankInfo, RunManifest, write_manifest

    ranks = [RankInfo(rank=r, host="vm", pid=1678 + r, exit_code=exit_code if r == 1 else 0) for r in range(4)]
    write_manifest(root, RunManifest(run_id="t", world_size=4, ranks=ranks, hosts=[HostInfo("vm", [0, 1, 2, 3])]))
    (root / "hosts" / "vm").mkdir(parents=True)
    # a segfault of another process on the shared host, in the window the sidecar read
    (root / "hosts" / "vm" / "kmsg.log").write_text(
        "kern  :info  : 2026-12-04T03:50:01,000000+00:00 python[1358]: segfault at 0 ip 00007f2a sp 00007ffd "
        "error 4 in libc.so.6[7f2a+195000]\n"
    )
    return root


def test_a_segfault_of_another_process_is_not_the_failure_of_a_run_that_completed(tmp_path: Path) -> None:
    report = diagnose(_completed_run(tmp_path, exit_code=0))
    assert not [f for f in report.findings if f.kind in FAILURE_KINDS]
    assert any("python (pid 1358) segfaulted" in w and "not a rank of this run" in w for w in map(str, report.warnings))


def test_the_same_segfault_stays_evidence_when_a_rank_failed(tmp_path: Path) -> None:
    report = diagnose(_completed_run(tmp_path, exit_code=1))
    assert any(f.kind == "crash" for f in report.findings)
