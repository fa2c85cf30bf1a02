"""Two launcher classes: a Slurm step whose tasks never started (srun / slurmstepd, the MPI plugin, pyxis;
knowledge/slurm_step.py) and Ray's summaries of a failure whose error is elsewhere (Tune's error file, Ray Train's
TrainingFailedError, a RayTaskError cut before its message, a worker or node that died; knowledge/ray_failures.py).
Every log here is written in the emitting program's own format (Slurm's src/srun, src/api, slurmstepd and mpi/pmix
plugin, NVIDIA pyxis, Ray's exceptions.py / node_manager.cc / tune.py), never a thread's text."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure


def _code(finding: object) -> str:
    return str(getattr(finding, "metrics", {}).get("signature") or "")


def _codes(tmp_path: Path, log: str) -> list[str]:
    return [_code(f) for f in diagnose_failures(tmp_path, log)]


# ---- Slurm: the step's tasks never started ---------------------------------------------------------------------


def test_a_step_aborted_before_launch_with_unspecified_errors_is_the_launch_config(tmp_path: Path) -> None:
    log = (
        "srun: StepId=31337.0 aborted before step completely launched.\n"
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"
        "srun: error: task 0 launch failed: Unspecified error\n"
        "srun: error: task 1 launch failed: Unspecified error\n"
        "srun: error: task 2 launch failed: Unspecified error\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "never started" in found.summary
    assert "--mpi=pmi2" in found.suggestion and "srun --mpi=list" in found.suggestion
    assert "SlurmdLogFile" in found.suggestion and "Unspecified error" in found.suggestion
    assert "py-spy" not in found.suggestion  # no Python crash: the program never ran


def test_the_launch_quotes_the_mpi_type_and_image_the_srun_line_names(tmp_path: Path) -> None:
    log = (
        "+ srun --nodes=4 --ntasks-per-node=8 --mpi=pmix_v4 --container-image=nvcr.io#nvidia/nemo:24.12 "
        "python pretrain.py\n"
        "srun: error: task 9 launch failed: Unspecified error\n"
        "srun: StepId=5120.0 aborted before step completely launched.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error"
    assert "srun --mpi=pmix_v4" in found.suggestion and "nvcr.io#nvidia/nemo:24.12" in found.suggestion


def test_a_launch_timeout_names_the_timeout(tmp_path: Path) -> None:
    log = (
        "srun: error: timeout waiting for task launch, started 2 of 16 tasks\n"
        "srun: StepId=7001.3 aborted before step completely launched.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "started 2 of 16 tasks" in found.suggestion


def test_a_launch_refused_for_the_execve_reason_gets_the_path_fix(tmp_path: Path) -> None:
    found = top_failure(tmp_path, "srun: error: task 3 launch failed: Slurmd could not execve job\n")
    assert found.kind == "config_error" and "full path" in found.suggestion and "--mpi" not in found.suggestion


def test_an_mpi_plugin_this_slurm_lacks_quotes_the_type(tmp_path: Path) -> None:
    log = (
        "srun: error: Couldn't find the specified plugin name for mpi/pmix_v3 looking at all files\n"
        "srun: error: cannot find mpi plugin for mpi/pmix_v3\n"
        "srun: error: cannot create mpi context for mpi/pmix_v3\n"
        "srun: error: Invalid MPI type 'pmix_v3', --mpi=list for acceptable types\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and _code(found) == "slurm_mpi_plugin_missing"
    assert "--mpi=pmix_v3" in found.suggestion and "srun --mpi=list" in found.suggestion


def test_a_pmix_library_that_does_not_load_is_the_plugin_missing(tmp_path: Path) -> None:
    log = (
        "srun: error:  mpi/pmix_v5: init: (null) [0]: mpi_pmix.c:171: pmi/pmix: can not load PMIx library\n"
        "srun: error: Couldn't load specified plugin name for mpi/pmix_v5: Plugin init() callback failed\n"
    )
    found = top_failure(tmp_path, log)
    assert _code(found) == "slurm_mpi_plugin_missing" and "libpmix" in found.suggestion


def test_the_pmix_plugins_step_setup_is_the_root_and_srun_its_consequence(tmp_path: Path) -> None:
    log = (
        "slurmstepd: error:  mpi/pmix_v4: pmixp_libpmix_job_set: dgx-b07 [3]: pmixp_client.c:493: "
        "PMIx_server_register_nspace failed: -46\n"
        "slurmstepd: error:  mpi/pmix_v4: p_mpi_hook_slurmstepd_prefork: dgx-b07 [3]: mpi_pmix.c:246: "
        "pmixp_libpmix_job_set() failed\n"
        "slurmstepd: error: Failed mpi_g_slurmstepd_prefork\n"
        "srun: error: task 24 launch failed: Unspecified error\n"
        "srun: StepId=66.0 aborted before step completely launched.\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert _code(found[0]) == "slurm_mpi_step_setup_failed" and found[0].kind == "config_error"
    assert "--mpi=pmix_v4" in found[0].suggestion and "PMIX_MCA_gds=hash" in found[0].suggestion
    launch = [f for f in found if _code(f) == "slurm_step_launch_aborted"]
    assert launch and launch[0].caused_by == found[0].id


def test_open_mpi_started_by_srun_without_pmi_support(tmp_path: Path) -> None:
    log = (
        '3: The application appears to have been direct launched using "srun",\n'
        "3: but OMPI was not built with SLURM's PMI support and therefore cannot\n"
        "3: execute.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "mpirun" in found.suggestion and "--mpi=pmix" in found.suggestion


def test_a_step_slurmctld_refuses_gets_the_reasons_fix(tmp_path: Path) -> None:
    found = top_failure(
        tmp_path, "srun: error: Unable to create step for job 90210: Memory required by task is not available\n"
    )
    assert found.kind == "config_error" and "--mem" in found.suggestion and "90210" in found.suggestion
    ended = top_failure(
        tmp_path, "srun: error: Unable to create step for job 4411: Job/step already completing or completed\n"
    )
    assert "sacct -j 4411" in ended.suggestion


def test_a_pyxis_image_import_failure_quotes_the_image(tmp_path: Path) -> None:
    log = (
        "pyxis: importing docker image: registry.example.org/team/trainer:3.1\n"
        "slurmstepd: error: pyxis: child 40411 failed with error code: 1\n"
        "slurmstepd: error: pyxis: failed to import docker image: registry.example.org/team/trainer:3.1\n"
        "slurmstepd: error: pyxis: printing enroot log file:\n"
        "slurmstepd: error: pyxis:     [ERROR] URL https://registry.example.org/v2/ returned error code: 403\n"
        "slurmstepd: error: spank: required plugin spank_pyxis.so: task_init_privileged() failed with rc=-1\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert _code(found[0]) == "pyxis_image_import_failed"
    assert "registry.example.org/team/trainer:3.1" in found[0].suggestion and ".credentials" in found[0].suggestion
    spank = [f for f in found if _code(f) == "slurm_spank_plugin_failed"]
    assert spank and spank[0].caused_by == found[0].id


def test_a_pyxis_mount_the_node_lacks_quotes_the_path(tmp_path: Path) -> None:
    log = "slurmstepd: error: pyxis: --container-mounts: source path does not exist: /scratch/u42/ckpt\n"
    found = top_failure(tmp_path, log)
    assert found.kind == "config_error" and "/scratch/u42/ckpt" in found.suggestion


def test_a_pyxis_container_that_does_not_start_reads_enroots_log(tmp_path: Path) -> None:
    log = (
        "slurmstepd: error: pyxis: container start failed with error code: 1\n"
        "slurmstepd: error: pyxis: if the image has an unusual entrypoint, try using --no-container-entrypoint\n"
        "slurmstepd: error: pyxis: printing enroot log file:\n"
        "slurmstepd: error: pyxis:     /etc/enroot/hooks.d/98-nvidia.sh: line 17: nvidia-container-cli: "
        "command not found\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert _code(found[0]) == "pyxis_container_start_failed" and "--no-container-entrypoint" in found[0].suggestion
    assert all(f.caused_by == found[0].id for f in found[1:])


# ---- Slurm: the lookalikes that must stay quiet --------------------------------------------------------------


def test_pyxis_info_lines_and_a_retried_step_creation_are_no_failure(tmp_path: Path) -> None:
    log = (
        "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.03-py3\n"
        "pyxis: imported docker image: nvcr.io#nvidia/pytorch:24.03-py3\n"
        "srun: Job step creation temporarily disabled, retrying (Requested nodes are busy)\n"
        "srun: Step created for StepId=812.2\n"
        "step 10/300 loss 4.113\n"
        "step 20/300 loss 3.870\n"
        "step 300/300 loss 1.902\n"
        "Training complete.\n"
    )
    assert diagnose_failures(tmp_path, log) == []
    # the same start where the import failed: the container never started, nothing trained
    failed = log.split("srun: Job", 1)[0].replace(
        "pyxis: imported docker image:", "slurmstepd: error: pyxis: failed to import docker image:"
    )
    assert _code(top_failure(tmp_path, failed)) == "pyxis_image_import_failed"


def test_a_pmix_error_the_run_went_past_is_no_failure(tmp_path: Path) -> None:
    log = (
        "[gpu-n03:88121] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line 750\n"
        "[gpu-n04:77120] PMIX ERROR: OUT-OF-RESOURCE in file base/bfrop_base_unpack.c at line 750\n"
        "step 100 loss 2.01\n"
        "step 200 loss 1.87\n"
        "Training complete.\n"
    )
    assert "pmix_library_error" not in _codes(tmp_path, log)
    # where nothing ran after it, it is the PMIx mismatch
    alone = "[node7:4410] PMIX ERROR: UNREACHABLE in file server/pmix_server.c at line 3198\n"
    found = top_failure(tmp_path, alone)
    assert found.kind == "config_error" and "UNREACHABLE" in found.suggestion and "--mpi=pmi2" in found.suggestion


def test_sruns_teardown_of_a_running_step_is_not_a_launch_failure(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    main()\n"
        "ZeroDivisionError: division by zero\n"
        "srun: error: node17: task 3: Exited with exit code 1\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
    )
    assert "slurm_step_launch_aborted" not in _codes(tmp_path, log)
    # a step that never got as far as its program: srun's own words for that
    never = (
        "srun: error: task 3 launch failed: Unspecified error\n"
        "srun: StepId=88.0 aborted before step completely launched.\n"
    )
    assert "slurm_step_launch_aborted" in _codes(tmp_path, never)


def test_a_step_that_failed_to_launch_before_a_later_step_trained_is_no_failure(tmp_path: Path) -> None:
    failed = (
        "srun: error: task 0 launch failed: Unspecified error\n"
        "srun: StepId=14.0 aborted before step completely launched.\n"
    )
    assert "slurm_step_launch_aborted" in _codes(tmp_path, failed)
    relaunched = failed + (
        "+ srun --mpi=pmi2 python train.py\nstep 1 loss 5.0\nstep 2 loss 4.0\nstep 3 loss 3.0\nTraining complete.\n"
    )
    assert "slurm_step_launch_aborted" not in _codes(tmp_path, relaunched)


# ---- Ray: the summary names where the error is ---------------------------------------------------------------

TUNE_SUMMARY = (
    "Number of errored trials: 1\n"
    "+----------------------------+--------------+-------------------------------------------------------------+\n"
    "| Trial name                 |   # failures | error file                                                  |\n"
    "|----------------------------+--------------+-------------------------------------------------------------|\n"
    "| TorchTrainer_c0ffe_00000   |            1 | /data/runs/exp7/TorchTrainer_c0ffe_00000_0_2024-02-02/error.txt |\n"
    "+----------------------------+--------------+-------------------------------------------------------------+\n"
    "\n"
    "2024-02-02 08:31:44,271\tERROR tune.py:941 -- Trials did not complete: [TorchTrainer_c0ffe_00000]\n"
)


def test_tunes_summary_alone_points_at_the_error_file(tmp_path: Path) -> None:
    found = top_failure(tmp_path, TUNE_SUMMARY)
    assert found.kind == "crash" and _code(found) == "ray_tune_trials_failed"
    assert "/data/runs/exp7/TorchTrainer_c0ffe_00000_0_2024-02-02/error.txt" in found.suggestion
    assert "TorchTrainer_c0ffe_00000" in found.suggestion and "/tmp/ray/session_latest/logs" in found.suggestion


def test_tunes_summary_is_a_clue_beside_the_trials_own_error(tmp_path: Path) -> None:
    log = (
        "ray.exceptions.RayTaskError(RuntimeError): ray::_RayTrainWorker__execute() (pid=901, ip=10.9.8.7)\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled "
        "system error, NCCL version 2.18.1\n" + TUNE_SUMMARY
    )
    found = diagnose_failures(tmp_path, log)
    assert found[0].kind == "nccl_error"
    tune = [f for f in found if _code(f) == "ray_tune_trials_failed"]
    assert tune and tune[0].severity == "warning"


def test_ray_trains_summary_alone_says_where_the_workers_error_is(tmp_path: Path) -> None:
    log = (
        "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the previous error "
        "messages for a cause. After fixing the issue, you can restart the run from scratch or continue this run.\n"
        'To continue this run, you can use: `trainer = TransformersTrainer.restore("/mnt/r/exp")`.\n'
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "crash" and "TransformersTrainer.restore" in found.suggestion
    assert "worker" in found.suggestion and "/tmp/ray/session_latest/logs" in found.suggestion


def test_a_ray_task_error_cut_before_its_message_names_the_worker(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "rl_main.py", line 30, in <module>\n'
        "    ray.get(handles)\n"
        "ray.exceptions.RayTaskError(AssertionError): ray::RolloutActor.generate() (pid=5150, ip=10.3.3.3, "
        "actor_id=0a0b, repr=<rollout.RolloutActor object at 0x7f00>)\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "crash" and "AssertionError" in found.suggestion
    assert "RolloutActor.generate()" in found.suggestion and "worker-*-5150.err" in found.suggestion
    assert "--node-ip 10.3.3.3" in found.suggestion


def test_a_ray_task_errors_own_exception_is_the_root(tmp_path: Path) -> None:
    log = (
        "ray.exceptions.RayTaskError(KeyError): ray::Learner.update() (pid=7, ip=10.0.0.2)\n"
        '  File "/app/learner.py", line 88, in update\n'
        '    batch["advantages"]\n'
        "KeyError: 'advantages'\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert "advantages" in found[0].summary
    assert [f.severity for f in found if _code(f) == "ray_task_error_raised"] == ["warning"]


def test_a_worker_killed_without_a_python_error_reads_the_exit_detail(tmp_path: Path) -> None:
    log = (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
        "troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffff01 Worker ID: 7e7e "
        "Node ID: 3c3c Worker IP address: 172.31.4.9 Worker port: 40000 Worker PID: 60606 Worker exit type: "
        "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. "
        "There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high "
        "memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or "
        "other unexpected errors.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "crash" and "dmesg" in found.suggestion
    assert "60606" in found.suggestion and "172.31.4.9" in found.suggestion


def test_an_actor_dead_in_a_kubernetes_pod_reads_the_actor_lines(tmp_path: Path) -> None:
    log = (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: RewardModel\n"
        "\tactor_id: 1f2e3d4c5b6a\n"
        "\tpid: 4321\n"
        "\tnamespace: 0000-1111\n"
        "\tip: 10.244.1.17\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
        "detail: Worker exits unexpectedly. Worker exits with an exit code None. The worker may have exceeded K8s "
        "pod memory limits.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "crash" and "kubectl describe pod" in found.suggestion and "4321" in found.suggestion


def test_a_worker_exit_code_names_the_code(tmp_path: Path) -> None:
    log = (
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
        "detail: Worker exits unexpectedly. Worker exits with an exit code 3.\n"
    )
    found = top_failure(tmp_path, log)
    assert "exited with code 3" in found.suggestion


def test_a_node_marked_dead_names_its_address(tmp_path: Path) -> None:
    log = (
        "2024-03-03 03:03:03,303\tWARNING worker.py:1950 -- The node with node id: 9a9a9a and address: 10.7.7.7 "
        "and node name: gpu-7 has been marked dead because the detector has missed too many heartbeats from it. "
        "This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) \n"
        "\t(2) raylet has lagging heartbeats due to slow network or busy workload.\n"
    )
    found = top_failure(tmp_path, log)
    assert found.kind == "missing_rank" and "10.7.7.7" in found.suggestion and "raylet.out" in found.suggestion


# ---- Ray: the lookalikes that must stay quiet or keep their own reading ---------------------------------------


def test_a_worker_ray_restarted_while_training_went_on_is_no_failure(tmp_path: Path) -> None:
    log = (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker PID: "
        "818 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
        "code 2. End of file.\n"
        "(RayTrainWorker pid=1001) step 500 loss 0.91\n"
        "(RayTrainWorker pid=1001) step 510 loss 0.90\n"
        "(RayTrainWorker pid=1001) step 520 loss 0.88\n"
        "Training finished successfully.\n"
    )
    assert "ray_worker_died" not in _codes(tmp_path, log)
    # the same death as the log's last word: the run ended there
    assert "ray_worker_died" in _codes(tmp_path, log.split("\n", 1)[0] + "\n")


def test_rays_memory_monitor_kill_stays_an_oom(tmp_path: Path) -> None:
    log = (
        "The actor is dead because its worker process has died. Worker exit type: NODE_OUT_OF_MEMORY Worker exit "
        "detail: Task was killed due to the node running low on memory.\n"
    )
    assert top_failure(tmp_path, log).kind == "oom"
    # a SIGKILL Ray cannot explain is no OOM of Ray's own: the kernel's log says whether it was one
    killed = log.replace("NODE_OUT_OF_MEMORY", "SYSTEM_ERROR").replace(
        "Task was killed due to the node running low on memory.",
        "Worker unexpectedly exits with a connection error code 2. End of file.",
    )
    found = top_failure(tmp_path, killed)
    assert found.kind == "crash" and "dmesg" in found.suggestion
