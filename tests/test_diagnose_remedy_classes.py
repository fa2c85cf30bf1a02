"""The classes of failure whose cause or remedy scope once got wrong, each on a real excerpt (a corpus case or a
public thread's lines): the kind chosen and the words of the fix the thread confirmed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scope.finding import Finding
from tests.conftest import shared_data
from tests.helpers import corpus_log, top_failure

pytestmark = pytest.mark.shared_data


def _top(tmp_path: Path, text: str) -> Finding:
    return top_failure(tmp_path, text)


_case = corpus_log


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


def _sample_block(group: str, index: int) -> str:
    text = shared_data("failure_log_samples.txt").read_text()
    block = next(b for b in re.split(r"^### GROUP: ", text, flags=re.M) if b.startswith(group))
    src = re.split(r"^# source: ", block, flags=re.M)[1 + index]
    return "\n".join(ln for ln in src.split("\n")[1:] if ln.strip() and not ln.startswith("#")) + "\n"


# torchrun's ChildFailedError block as Topdu/OpenOCR#71 posted it (two ranks ended by SIGBUS)
OPENOCR_71 = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
======================================================
tools/train_rec.py FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2024-12-31_16:45:52
  host      : server
  rank      : 1 (local_rank: 1)
  exitcode  : -7 (pid: 467398)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 467398
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-12-31_16:45:52
  host      : server
  rank      : 0 (local_rank: 0)
  exitcode  : -7 (pid: 467397)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 467397
==============================================
"""


@pytest.mark.parametrize(
    ("log", "said", "fix"),
    [
        (OPENOCR_71, "The exit status -7 in the log is signal 7, SIGBUS", "--shm-size"),
        (("torchrun_elastic_failure", 3), "The exit status -9 in the log is signal 9, SIGKILL", "OOM kill"),
        (("torchrun_elastic_failure", 0), "The exit status -6 in the log is signal 6, SIGABRT", "first error"),
    ],
)
def test_a_launchers_exit_status_is_read_as_its_signal_in_the_logs_words(
    tmp_path: Path, log: str | tuple[str, int], said: str, fix: str
) -> None:
    text = log if isinstance(log, str) else _sample_block(*log)
    top = _top(tmp_path, text)
    assert top.suggestion.startswith(said) and fix in top.suggestion
    # the signal's kind: SIGBUS is the container's /dev/shm, SIGKILL the OOM killer's, SIGABRT a crash
    assert top.kind == {"SIGBUS": "config_error", "SIGKILL": "oom"}.get(said.rsplit(" ", 1)[-1], "crash")


def test_a_spawned_process_killed_by_a_signal_is_read_as_that_signal(tmp_path: Path) -> None:
    # torch/multiprocessing/spawn.py's ProcessExitedException, the words of pytorch#5247's shared-memory bus error
    log = (
        '  File "/opt/conda/lib/python3.8/site-packages/torch/multiprocessing/spawn.py", line 130, in join\n'
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGBUS\n"
    )
    top = _top(tmp_path, log)
    assert (
        top.kind == "config_error"
        and "/dev/shm" in top.suggestion
        and "Process 1 was ended by SIGBUS" in top.suggestion
    )


@pytest.mark.parametrize(
    ("case", "fix"),
    [
        ("pytorch-xla_2604", "XRT_TPU_CONFIG"),  # no TPU runtime configured: process 1 exits with code 17
        ("pytorch-xla_2651", "only inside the function the spawned replicas run"),  # xm.rendezvous after spawn
    ],
)
def test_a_process_that_cannot_reach_the_xla_mesh_master_gets_both_known_causes(
    tmp_path: Path, case: str, fix: str
) -> None:
    top = _top(tmp_path, _case(case))
    assert top.kind == "config_error" and fix in top.suggestion


def test_a_late_ranks_timeout_made_fatal_by_async_error_handling_names_the_setting(tmp_path: Path) -> None:
    # IGNF/myria3d#123: one process prepares the test set for 29 min; c10d takes the waiting ranks down
    top = _top(tmp_path, _case("IGNF-myria3d_123"))
    assert top.kind == "timeout" and "Pre-process once" in top.suggestion
    assert "NCCL_ASYNC_ERROR_HANDLING=1 or NCCL_BLOCKING_WAIT=1" in top.suggestion


def test_a_late_ranks_timeout_without_the_take_down_line_leaves_the_setting_out(tmp_path: Path) -> None:
    log = _case("huggingface-accelerate_314")  # rank 6 timed out while a data reader initialised
    assert "taking the entire process down" not in log
    top = _top(tmp_path, log)
    assert top.kind == "timeout" and "NCCL_BLOCKING_WAIT" not in top.suggestion
    # the log names no framework (the thread's accelerate is in its header only): torch's own timeout knob
    assert "init_process_group(timeout=" in top.suggestion and "--ddp_timeout" not in top.suggestion


def test_a_topology_failure_with_a_net_plugin_loaded_names_the_plugin(tmp_path: Path) -> None:
    # aws/aws-ofi-nccl#785: 'Loaded net plugin AWS Libfabric (v7)', then 'Attribute arch of node cpu not found'
    top = _top(tmp_path, _case("aws-aws-ofi-nccl_785"))
    assert top.kind == "config_error"
    assert top.suggestion.startswith("This log loads the net plugin AWS Libfabric (v7)")
    assert "upgrade aws-ofi-nccl" in top.suggestion


def test_transformer_engines_userbuffers_init_failure_names_the_group_creation(tmp_path: Path) -> None:
    # NVIDIA/TransformerEngine#994: 'Failed, NCCL error .../userbuffers/userbuffers-host.cpp:223' with TP < world
    top = _top(tmp_path, _case("NVIDIA-TransformerEngine_994"))
    assert top.kind == "nccl_error" and "use_local_synchronization=True" in top.suggestion
    assert "init_process_group(device_id=" in top.suggestion


def test_an_unhandled_cuda_error_in_nccl_is_read_past_the_source_line_that_raises_it(tmp_path: Path) -> None:
    # vllm#7896: Ray + vLLM prefixes, an excerpt cut inside the traceback; one bad node of the cluster
    top = _top(tmp_path, _case("vllm-project-vllm_7896"))
    assert top.kind == "nccl_error" and top.summary.startswith("RuntimeError: NCCL error: unhandled cuda error")
    assert "drain that node" in top.suggestion and "dcgmi diag" in top.suggestion


def test_a_silent_collective_timeout_in_a_serving_engines_workers_names_its_cuda_graphs(tmp_path: Path) -> None:
    # vllm#2770: RayWorkerVllm watchdog timeouts with no rank busy elsewhere; enforce_eager made them go away
    top = _top(tmp_path, _case("vllm-project-vllm_2770"))
    assert top.kind == "timeout" and top.suggestion.startswith("vLLM captures its collectives in CUDA graphs")
    assert "--enforce-eager" in top.suggestion and "NCCL_GRAPH_MIXING_SUPPORT=0" in top.suggestion


def test_a_training_timeout_outside_a_serving_engine_keeps_the_find_the_rank_advice(tmp_path: Path) -> None:
    log = _case("huggingface-accelerate_223")  # a BROADCAST timeout in an accelerate training run
    top = _top(tmp_path, log)
    assert top.kind == "timeout" and "CUDA graphs" not in top.suggestion and "Flight Recorder" in top.suggestion


def test_a_containers_signal_exit_in_kubectl_describe_is_read_as_that_signal(tmp_path: Path) -> None:
    # kubectl describe pod's container state, in the layout of the Kubernetes page the row cites (128 + 7)
    block = "    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    135\n"
    top = _top(tmp_path, block)
    assert top.kind == "config_error" and top.suggestion.startswith("The exit status 135 in the log is signal 7")
    assert "--shm-size" in top.suggestion and "kubectl logs --previous" in top.suggestion
    oom = _top(tmp_path, block.replace("Error", "OOMKilled").replace("135", "137"))
    assert oom.kind == "oom"  # the reason Kubernetes gives says more than the number
