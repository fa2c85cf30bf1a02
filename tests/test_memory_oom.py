"""OOM forensics: the allocator's out-of-memory message read for its own figures in every wording torch
gave it (real messages, sources in knowledge/oom_messages.py), a large unallocated reserve turned into a
fragmentation finding under the OOM, and the OOM scenario end to end (rank 3 of 4 runs out; its peers
time out): one root on rank 3, its peers' failures as consequences."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scope.analyzers.diagnose.knowledge.oom_messages import WORDINGS
from scope.analyzers.memory.oom import parse_oom_message, size_bytes

from scope.analysis import run
from tests.conftest import ROOT, shared_data

GIB, MIB = 2**30, 2**20


def test_sizes_are_binary_units() -> None:
    assert size_bytes("12.19 MiB") == round(12.19 * MIB)
    assert size_bytes("0 bytes") == 0
    assert size_bytes("4.00 GiB") == 4 * GIB


@pytest.mark.parametrize("row", WORDINGS, ids=lambda w: w.id)
def test_each_wording_is_recognised_and_its_figures_read(row) -> None:  # type: ignore[no-untyped-def]
    figures = parse_oom_message(row.example)
    assert figures is not None and figures["wording"] == row.id
    assert figures["gpu"] == 0 and figures["tried_to_allocate"] > 0 and figures["capacity"] > 0
    assert figures["allocated"] >= 0 and figures["reserved"] >= 0


def test_current_wording_gives_reserve_and_memory_outside_pytorch() -> None:
    cads = next(w for w in WORDINGS if w.id == "capacity_of_which_free").example
    f = parse_oom_message(cads)
    assert f is not None
    assert f["capacity"] == round(31.47 * GIB) and f["free"] == round(12.73 * GIB)
    assert f["allocated"] == round(9.08 * GIB) and f["reserved_unallocated"] == round(9.35 * GIB)
    assert f["reserved"] == f["allocated"] + f["reserved_unallocated"]
    assert f["non_pytorch"] == round(18.73 * GIB) - f["reserved"]  # CUDA context, NCCL buffers: 0.30 GiB


def test_old_wordings_give_the_unallocated_reserve_by_difference() -> None:
    old = next(w for w in WORDINGS if w.id == "reserved_in_total").example
    f = parse_oom_message(old)
    assert f is not None and f["reserved_unallocated"] == round(19.15 * GIB) - round(17.20 * GIB)
    assert "non_pytorch" not in f  # releases before 2.1 do not state the process's use
    cached = parse_oom_message(next(w for w in WORDINGS if w.id == "cached").example)
    assert cached is not None and cached["reserved_unallocated"] == round(4.68 * MIB)
    assert cached["reserved"] == round(8.57 * MIB) + round(4.68 * MIB)


def test_hip_and_private_pool_wordings() -> None:
    hip = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.00 GiB. GPU 5 has a total capacity of "
        "191.98 GiB of which 1.02 GiB is free. Of the allocated memory 180.10 GiB is allocated by PyTorch, with "
        "2.00 GiB allocated in private pools (e.g., CUDA Graphs), and 8.50 GiB is reserved by PyTorch but "
        "unallocated."
    )
    f = parse_oom_message(hip)
    assert f is not None and f["gpu"] == 5 and f["wording"] == "capacity_of_which_free"
    assert f["private_pools"] == 2 * GIB and f["reserved_unallocated"] == round(8.5 * GIB)
    assert parse_oom_message("RuntimeError: CUDA error: out of memory") is None  # no figures: nothing to read


@pytest.mark.shared_data
def test_a_demand_oom_from_the_corpus_is_not_called_fragmentation(tmp_path: Path) -> None:
    case = shared_data("failure_corpus", "Instruction-Tuning-with-GPT-4-GPT-4-LLM_16.txt")
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.log").write_text("\n".join(s for s in case.read_text().splitlines() if not s.startswith("#")))
    analysis = run(job, {"store": tmp_path / "store"})
    figures = analysis.tables["oom_figures"]
    assert figures["wording"].tolist()[0] == "reserved_in_total"
    assert figures["reserved_unallocated"].iloc[0] == round(76.80 * GIB) - round(73.95 * GIB)
    assert not [f for f in analysis.findings if f.kind == "fragmentation"]  # 3.7% of the reserve: demand


@pytest.fixture(scope="module")
def oom_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OOM scenario under `scope run`: rank 3 of 4 runs out at step 3 (on a CPU machine the workload
    raises the allocator's error itself); the others time out in the next all-reduce."""
    out = tmp_path_factory.mktemp("oom") / "run"
    cmd = [sys.executable, "-m", "scope", "run", "--out", str(out), "--nproc-per-node", "4", "--no-sidecar"]
    cmd += ["--profile-memory", "--memory-snapshot-on-oom", "1000", "--profile-start", "1", "--profile-active", "1"]
    cmd += ["--quiet", "--", "-m", "scope.collectors.workloads.ddp", "--steps", "8", "--fault", "oom"]
    cmd += ["--fault-rank", "3", "--fault-step", "3", "--pg-timeout-s", "10"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0 and "out of memory" in proc.stdout + proc.stderr, proc.stderr[-2000:]
    return out


@pytest.mark.multirank
def test_the_oom_scenario_is_one_root_on_the_rank_that_ran_out(oom_run: Path, tmp_path: Path) -> None:
    analysis = run(oom_run, {"store": tmp_path / "store"})
    roots = [f for f in analysis.findings if f.severity == "critical" and not f.caused_by]
    assert [(f.kind, f.ranks) for f in roots] == [("oom", [3])], [f.summary for f in analysis.findings]
    oom = roots[0]
    cascade = oom.metrics["cascade"]
    assert {0, 1, 2} <= set(cascade["ranks"])  # the peers' timeouts and exits are its consequences
    frag = [f for f in analysis.findings if f.kind == "fragmentation"]
    assert len(frag) == 1 and frag[0].caused_by == oom.id and frag[0].id in oom.explains
    assert frag[0].metrics["reserved_unallocated_bytes"] == round(5.41 * GIB)
    assert "expandable_segments:True" in frag[0].suggestion
    row = analysis.tables["oom_figures"].iloc[0]
    assert row["rank"] == 3 and row["capacity"] == round(15.77 * GIB) and row["non_pytorch"] > 0
    # every rank's memory before the OOM, from the traced step (profile_memory through `scope run`)
    assert set(analysis.tables["memory_ranks"]["rank"]) == {0, 1, 2, 3}
    # snapshot-on-OOM was asked for; this machine has no CUDA device, and the hook says so
    assert "no CUDA device, not armed" in (oom_run / "ranks" / "3" / "hook.log").read_text()
