"""The classes of failure whose cause or remedy scope once got wrong, each on a real excerpt (a corpus case or a
public thread's lines): the kind chosen and the words of the fix the thread confirmed."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from benchmarks.failure_corpus import strip_header
from scope.finding import FAILURE_KINDS, Finding
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


def _top(tmp_path: Path, text: str) -> Finding:
    (tmp_path / "job.log").write_text(text)
    found = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert found, "no failure finding"
    return found[0]


def _case(name: str) -> str:
    return strip_header(shared_data("failure_corpus", f"{name}.txt").read_text())[1]


def test_a_connection_closed_by_a_process_on_the_same_host_is_that_process_exiting(tmp_path: Path) -> None:
    # NCCL#795: 'Connection closed by remote peer a100-st-p4d24xlarge-22.<domain>' logged by that same host
    top = _top(tmp_path, _case("NVIDIA-nccl_795"))
    assert top.kind == "crash" and "same host" in top.summary
    assert "network fault" in top.suggestion  # says it is not one


def test_a_connection_closed_by_a_peer_on_another_host_stays_a_network_reading(tmp_path: Path) -> None:
    # the same lines with the closing peer renamed to another host: the fabric may have dropped it
    log = _case("NVIDIA-nccl_795").replace(
        "closed by remote peer a100-st-p4d24xlarge-22.", "closed by remote peer a100-st-p4d24xlarge-23."
    )
    assert _top(tmp_path, log).kind == "network_fault"
