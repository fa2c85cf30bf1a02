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


def test_a_whole_nodes_share_of_ranks_never_joining_is_that_nodes_launch(tmp_path: Path) -> None:
    # Lightning#8707: 'MEMBER: n/8' of ranks 0-3 only; sbatch ran plain python, so the second node never started
    top = _top(tmp_path, _case("Lightning-AI-pytorch-lightning_8707"))
    assert top.kind == "missing_rank" and top.ranks == [4, 5, 6, 7]
    assert "Ranks 4-7" in top.suggestion and "srun" in top.suggestion and "--ntasks-per-node=4" in top.suggestion


def test_one_rank_never_joining_is_named_with_its_own_checks(tmp_path: Path) -> None:
    # Lightning#4420: the store barrier counts 7 of 8 and rank 4 never printed its waiting line
    top = _top(tmp_path, _case("Lightning-AI-pytorch-lightning_4420"))
    assert top.kind == "missing_rank" and top.ranks == [4]
    assert top.suggestion.startswith("Rank 4 alone never joined") and "init_process_group(timeout=" in top.suggestion


def test_a_store_timeout_quotes_how_many_ranks_reached_it(tmp_path: Path) -> None:
    # c10d TCPStore's wording (torch/csrc/distributed/c10d/TCPStore.cpp), as knowledge/c10d_messages.py keeps it
    line = "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 7/8 clients joined.\n"
    top = _top(tmp_path, line)
    assert top.kind == "missing_rank" and top.suggestion.startswith("7 of 8 ranks reached the store")
