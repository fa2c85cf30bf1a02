"""Review of the Slurm step, Ray summary and 'after the failure' readings (knowledge/slurm_step.py,
knowledge/ray_failures.py, reasoning/setting_refused._after_the_failure): the lookalikes they misread. Lines
written in each program's own format (torch.distributed's store and rendezvous errors, bash's and pdsh's
prefixes, srun's 'Unable to create step for job N: REASON' from src/srun/launch.c, Ray's GCS node manager's
'has been marked dead' line), values varied.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# ---- a missing program printed after an error that it may itself have caused ------------------------------------

# the job's first host waited for the others at the rendezvous; the second host's launcher was never found. Per-host
# logs concatenated (or a pdsh stream flushed late) print the waiting host's timeout first.
STORE_WAIT = (
    "gpu-a17: [2025-04-09 02:11:40,118] torch.distributed.DistStoreError: Timed out after 1801 seconds waiting "
    "for clients. 4/8 clients joined.\n"
)
RDZV_WAIT = "gpu-a17: torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n"


def test_a_missing_launcher_printed_after_the_rendezvous_timeout_it_caused_stays_the_cause(tmp_path: Path) -> None:
    log = STORE_WAIT + "gpu-a18: bash: line 1: torchrun: command not found\n"
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error" and "torchrun" in str(top.suggestion)


def test_a_missing_python_printed_after_the_rendezvous_timeout_it_caused_stays_the_cause(tmp_path: Path) -> None:
    log = RDZV_WAIT + "gpu-a18: /bin/bash: line 1: /opt/conda/envs/pt/bin/python: No such file or directory\n"
    assert top_failure(tmp_path, log).kind == "config_error"


def test_a_clean_up_tools_missing_program_after_a_crash_is_still_a_clue(tmp_path: Path) -> None:
    # the program crashed on its own (a CUDA error); the script's clean-up then lacked a tool
    log = (
        "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "cleanup.sh: line 9: nvidia-smi: command not found\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert found[0].kind == "crash"
    assert all(f.kind != "config_error" or f.severity == "warning" for f in found)


# ---- srun refused a step because the job was already over ------------------------------------------------------

FINISHED = """\
{'loss': 0.3121, 'learning_rate': 1.2e-07, 'epoch': 2.99}
{'train_runtime': 8123.4, 'train_samples_per_second': 41.2, 'train_loss': 0.412, 'epoch': 3.0}
Training completed. Do not forget to share your model on huggingface.co/models =)
"""


def test_a_step_refused_after_the_run_had_finished_is_no_failure(tmp_path: Path) -> None:
    log = FINISHED + (
        "+ srun --ntasks=1 python push_to_hub.py\n"
        "srun: error: Unable to create step for job 730112: Job/step already completing or completed\n"
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_step_refused_for_want_of_resources_after_the_run_finished_stays_a_failure(tmp_path: Path) -> None:
    # the evaluation step asked for more than the allocation holds: a step that failed, not a job already over
    log = FINISHED + (
        "+ srun --ntasks=1 --gpus=9 python eval.py\n"
        "srun: error: Unable to create step for job 730112: Requested node configuration is not available\n"
    )
    assert top_failure(tmp_path, log).kind == "config_error"


def test_a_step_refused_because_the_job_was_over_with_no_end_shown_stays_read(tmp_path: Path) -> None:
    log = "+ srun python train.py\nsrun: error: Unable to create step for job 730112: Job is not running\n"
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error" and "730112" in str(top.suggestion)


# ---- Ray: a node lost while the run went on ---------------------------------------------------------------------

NODE_LOST = (
    "(raylet) [2025-07-14 03:02:11,402 E 311 311] The node with node id: 3f9e0c1d2b and address: 10.42.7.19 and "
    "node name: 10.42.7.19 has been marked dead because the detector has missed too many heartbeats from it. "
    "This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) \n"
)


def test_a_lost_ray_node_the_run_trained_past_is_no_failure(tmp_path: Path) -> None:
    # a spot node preempted; the autoscaler replaced it and Ray Train restored from its checkpoint
    log = (
        "2025-07-14 03:00:00,001\tINFO worker.py:1749 -- Connected to Ray cluster.\n"
        + NODE_LOST
        + "2025-07-14 03:04:00,000\tINFO autoscaler.py:410 -- Adding 1 node(s) of type gpu_spot.\n"
        "(RayTrainWorker pid=20411, ip=10.42.7.23) step 1200 loss=0.811\n"
        "(RayTrainWorker pid=20411, ip=10.42.7.23) step 1300 loss=0.794\n"
    )
    assert diagnose_failures(tmp_path, log) == []


def test_a_lost_ray_node_the_run_ended_on_stays_the_failure(tmp_path: Path) -> None:
    log = (
        "(RayTrainWorker pid=20411, ip=10.42.7.19) step 1200 loss=0.811\n"
        + NODE_LOST
        + "ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 3f9e0c1d2b\n"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "missing_rank" and "10.42.7.19" in str(top.suggestion)


def test_a_lost_ray_node_the_run_trained_past_is_a_clue_beside_its_later_failure(tmp_path: Path) -> None:
    # the node was replaced and training went on for hours; then a worker ran out of GPU memory
    log = (
        NODE_LOST + "(RayTrainWorker pid=20411, ip=10.42.7.23) step 1200 loss=0.811\n"
        "(RayTrainWorker pid=20411, ip=10.42.7.23) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "3.50 GiB. GPU 0 has a total capacity of 79.14 GiB of which 2.11 GiB is free.\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert found[0].kind == "oom"
    assert all(f.kind != "missing_rank" or f.severity == "warning" for f in found)
