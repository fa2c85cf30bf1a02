"""Review of three diagnose changes (94aac17 libibverbs' absent providers, e1c5ab3 DDP's parameter counts, 86ba15c
lines after the run's own end): the lookalikes each now misread, in the emitting programs' formats (rdma-core
libibverbs/dynamic_driver.c load_driver, torch/csrc/distributed/c10d/reducer.cpp verify_params_across_processes,
wandb's console prefix, vLLM's multiproc_worker_utils)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import diagnose_failures, top_failure

# ---- libibverbs: only the provider's own library absent is benign -----------------------------------------------


@pytest.mark.parametrize(
    ("provider", "missing"),
    [
        # the provider is there, a library it links is not (two rdma-core / MOFED installs mixed, a slim image)
        ("libmlx5-rdmav34.so", "libnl-route-3.so.200"),
        ("libefa-rdmav41.so", "libmlx5.so.1"),
        ("/usr/lib64/libibverbs/libbnxt_re-rdmav25.so", "libnl-3.so.200"),
    ],
)
def test_a_provider_whose_dependency_is_missing_is_still_read(tmp_path: Path, provider: str, missing: str) -> None:
    line = (
        f"libibverbs: Warning: couldn't load driver '{provider}': {missing}: cannot open shared object file: "
        "No such file or directory\n"
    )
    found = top_failure(tmp_path, line)
    assert found.kind == "config_error" and missing in found.suggestion


def test_a_provider_absent_under_its_own_name_stays_benign(tmp_path: Path) -> None:
    # rdma-core names the library it tried in both places; libibverbs 1.1 the provider, then its library
    log = (
        "libibverbs: Warning: couldn't load driver 'libhns-rdmav34.so': libhns-rdmav34.so: cannot open shared "
        "object file: No such file or directory\n"
        "libibverbs: Warning: couldn't load driver '/opt/rdma/lib/libqedr-rdmav34.so': "
        "/opt/rdma/lib/libqedr-rdmav34.so: cannot open shared object file: No such file or directory\n"
        "libibverbs: Warning: couldn't load driver 'mthca': libmthca-rdmav2.so: cannot open shared object file: "
        "No such file or directory\n"
    )
    assert diagnose_failures(tmp_path, log) == []


# ---- DDP's parameter counts: a rank's own slot that came back wrong is the all-gather's ---------------------------


def _ddp(message: str, rank: int) -> str:
    return (
        f"[rank{rank}]: Traceback (most recent call last):\n"
        f'[rank{rank}]:   File "/opt/app/finetune.py", line 212, in <module>\n'
        f"[rank{rank}]:     ddp_model = DDP(net, device_ids=[device])\n"
        f'[rank{rank}]:   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/utils.py", line 288, in '
        "_verify_param_shape_across_processes\n"
        f"[rank{rank}]:     return dist._verify_params_across_processes(process_group, tensors, logger)\n"
        f"[rank{rank}]: RuntimeError: {message}\n"
    )


@pytest.mark.parametrize("theirs", ["0", "12", "96"])
def test_a_rank_that_disagrees_with_itself_is_the_all_gather(tmp_path: Path, theirs: str) -> None:
    # the count compared with rank 6's own slot: a model cannot differ from itself, so nothing arrived there
    message = (
        f"DDP expects same model across all ranks, but Rank 6 has 98 params, while rank 6 has inconsistent "
        f"{theirs} params."
    )
    found = top_failure(tmp_path, _ddp(message, 6))
    assert found.kind == "network_fault"
    assert "NCCL_SOCKET_IFNAME" in found.suggestion and f"received {theirs} as rank 6's" in found.suggestion


def test_two_real_counts_of_two_ranks_stay_two_models(tmp_path: Path) -> None:
    message = (
        "DDP expects same model across all ranks, but Rank 6 has 98 params, while rank 2 has inconsistent 96 params."
    )
    found = top_failure(tmp_path, _ddp(message, 6))
    assert found.kind == "config_error" and "98" in found.suggestion and "96" in found.suggestion


# ---- after the run's own end: a new start ends the end's reach ------------------------------------------------------

FIRST_RUN_ENDED = (
    "[2025-11-03 10:00:01] step 2380/2400 loss=0.388 lr=2.0e-06\n"
    "[2025-11-03 10:00:41] step 2400/2400 loss=0.386 lr=2.0e-06\n"
    "Training finished.\n"
    "wandb: Synced 5 W&B file(s), 0 media file(s), 2 artifact file(s) and 0 other file(s)\n"
)


def test_a_requeued_runs_tracker_error_after_its_own_steps_is_read(tmp_path: Path) -> None:
    # the scheduler requeued the job into the same file: the first run's end does not cover the second run
    log = FIRST_RUN_ENDED + (
        "[2025-11-04 08:00:02] resuming from ./out/checkpoint-2400, run id 7hx0p2\n"
        "[2025-11-04 08:00:40] step 2410/4800 loss=0.385 lr=2.0e-06\n"
        "wandb: ERROR Error while calling W&B API: run 7hx0p2 was previously created and deleted; try a new run "
        "name (<Response [409]>)\n"
    )
    assert "previously created and deleted" in top_failure(tmp_path, log).summary


def test_a_trackers_start_up_failure_after_an_earlier_end_is_read(tmp_path: Path) -> None:
    # a pipeline's second stage: its tracker never started, which no teardown does
    log = FIRST_RUN_ENDED + (
        "[2025-11-03 10:01:05] stage 2/2: reward model\n"
        "wandb: ERROR Run initialization has timed out after 120.0 sec. Please try increasing the timeout with the "
        "`init_timeout` setting\n"
    )
    assert "initialization has timed out" in top_failure(tmp_path, log).summary


def test_a_long_teardown_after_the_end_stays_no_failure(tmp_path: Path) -> None:
    # the tracker's monitor goes on sampling while the run uploads: more lines than the look-back's bound
    log = FIRST_RUN_ENDED + "wandb: ERROR Failed to sample metric: Not Supported\n" * 600
    assert diagnose_failures(tmp_path, log) == []


def test_the_teardown_lines_are_read_in_linear_time() -> None:
    # each teardown line after the end once: not the whole log again per line
    from scope.analyzers.diagnose.reasoning.guess import first_error

    steps = "".join(f"[2025-11-03 09:{i % 60:02d}:00] step {i}/60000 loss=0.5 lr=1e-05\n" for i in range(60_000))
    noise = "wandb: ERROR Failed to sample metric: Not Supported\n"
    t0 = time.process_time()
    first_error(steps + "Training finished.\n" + noise * 100, "train.log")
    small = time.process_time() - t0
    t0 = time.process_time()
    assert first_error(steps + "Training finished.\n" + noise * 3000, "train.log") is None
    large = time.process_time() - t0
    assert large < 5 * small + 0.5, (small, large)
