"""A Slurm step whose tasks never started (srun / slurmstepd, the MPI plugin, pyxis; knowledge/slurm_step.py).
Every log here is written in the emitting program's own format (Slurm's src/srun, src/api, slurmstepd and mpi/pmix
plugin, NVIDIA pyxis), never a thread's text."""

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
