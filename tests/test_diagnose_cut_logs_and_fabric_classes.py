"""Classes the seventh never-seen set exposed, each on short excerpts of public threads other than that set's
(tests/data/diagnose_threads/README.md gives each URL) or on failure-corpus logs read in place."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import corpus_log, diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _log(name: str) -> str:
    return (THREADS / name).read_text()


# ---- a log that stops at a JIT extension build: the stale lock of a build killed part-way ---------------------


def test_a_log_ending_at_the_extension_lock_warning_is_the_stale_lock(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("nvdiffrec_39_extension_lock.log"))
    assert found.kind == "config_error" and "extension" in found.summary
    assert "lock" in found.suggestion and "torch_extensions" in found.suggestion


def test_a_stack_dump_waiting_in_file_baton_is_the_stale_lock(tmp_path: Path) -> None:
    # faulthandler's dump of a test run's timeout: the import waits in FileBaton.wait under cpp_extension.load
    found = top_failure(tmp_path, _log("openequivariance_156_file_baton_wait.log"))
    assert found.kind == "config_error" and "lock" in found.suggestion


def test_an_extension_build_the_log_goes_past_is_no_stop(tmp_path: Path) -> None:
    text = _log("nvdiffrec_39_extension_lock.log")
    # the extensions-root line alone at the end: a stop there, read as a hang (the lock is not shown)
    bare = "\n".join(line for line in text.splitlines() if "Lock file" not in line) + "\n"
    assert top_failure(tmp_path, bare).kind == "hang"
    # the load went on: the lock was released, nothing stopped there
    went_on = text + "Loading extension module renderutils_plugin...\n"
    assert not any("extension is built" in f.summary for f in diagnose_failures(tmp_path, went_on))


# ---- a DeepSpeed launcher teardown cut before its return code -------------------------------------------------


def test_a_deepspeed_teardown_cut_before_its_code_names_the_codes_fixes(tmp_path: Path) -> None:
    text = _log("llamafactory_2061_deepspeed_teardown_cut.log")
    found = top_failure(tmp_path, text)
    # no code: not SIGKILL's reading (oom) by default, a crash whose code decides the fix
    assert found.kind == "crash" and "sigkill_handler" in found.summary
    assert "cut before its return code" in found.suggestion
    assert "/dev/shm" in found.suggestion and "dmesg" in found.suggestion
    # the whole line, as the thread's launcher printed it: SIGBUS, the larger /dev/shm
    whole = top_failure(tmp_path, text.rstrip("\n") + ", ...] exits with return code = -7\n")
    assert whole.kind == "config_error" and "--shm-size" in whole.suggestion


def test_the_launchers_kill_lines_alone_are_a_failure(tmp_path: Path) -> None:
    # a paste that stops after the INFO lines: the launcher tore the workers down, never a healthy log
    text = "".join(line + "\n" for line in _log("llamafactory_2061_deepspeed_teardown_cut.log").splitlines()[1:4])
    found = top_failure(tmp_path, text)
    assert found.kind == "crash" and "cut before its return code" in found.suggestion


_TEARDOWN = (
    "[2024-01-01 10:05:00,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1234\n"
    "[2024-01-01 10:05:00,001] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 1235\n"
)


def test_a_deepspeed_launcher_stopped_by_a_signal_is_an_interrupted_run_not_a_cut_report(tmp_path: Path) -> None:
    # launch.py's sigkill_handler, the launcher itself sent SIGINT / SIGTERM: 'Main process received SIGINT,
    # exiting' and no return code - the cause is shown, not a report cut before it
    for name in ("SIGINT", "SIGTERM"):
        text = (
            "{'loss': 1.2, 'learning_rate': 2e-05, 'epoch': 0.1}\n" + _TEARDOWN + "[2024-01-01 10:05:00,100] [INFO] "
            f"[launch.py:330:sigkill_handler] Main process received {name}, exiting\n"
        )
        found = top_failure(tmp_path, text)
        assert "cut before its return code" not in found.suggestion, name
        assert f"'{name}' is {name}" in found.suggestion, name


def test_a_checkpoint_load_that_finished_before_the_teardown_is_no_oom_killers_reading(tmp_path: Path) -> None:
    loaded = "Loading checkpoint shards: 100%|##########| 2/2 [00:05<00:00,  2.50s/it]\n"
    built = "trainable params: 4,194,304 || all params: 6,742,609,920\n"
    # the load finished and the model was built: the silent end is as often SIGBUS (/dev/shm) - the codes' fixes
    found = top_failure(tmp_path, loaded + built + _TEARDOWN)
    assert found.kind == "crash" and "cut before its return code" in found.suggestion
    # still loading (a bar redrawn with '\r', last at 50%), or the teardown right after the bar: the OOM killer's
    loading = "Loading checkpoint shards:   0%|  | 0/2\rLoading checkpoint shards:  50%|#####  | 1/2\n"
    for text in (loading + _TEARDOWN, loaded + _TEARDOWN):
        found = top_failure(tmp_path, text)
        assert found.kind == "oom" and "cut before its return code" not in found.suggestion


# ---- a traceback cut before its exception line ----------------------------------------------------------------


def test_a_traceback_cut_before_its_exception_is_read_from_its_frames(tmp_path: Path) -> None:
    # both raised in torch.save's writer (the disk was full): a cut checkpoint save is an input problem whose checks
    # start with the volume's free space (reasoning/cut_activity.py), the exception line still asked for
    for name in ("databrickslabs-dolly_139", "h2oai-h2o-llmstudio_214"):
        whole = corpus_log(name)
        cut = "\n".join(whole.rstrip("\n").splitlines()[:-1]) + "\n[... cut ...]\n"
        found = top_failure(tmp_path, cut)
        assert found.kind == "input_problem" and "cut before its exception line" in found.summary, name
        assert "saving a checkpoint (_save in torch/serialization.py" in found.summary
        assert "free space" in found.suggestion and "exception line" in found.suggestion
        # the whole traceback names its own error: no cut read
        assert not any(
            "cut away" in f.summary or "cut before its exception" in f.summary
            for f in diagnose_failures(tmp_path, whole)
        ), name


def test_an_exception_named_without_error_after_its_frames_is_a_whole_traceback(tmp_path: Path) -> None:
    # StopIteration, torch._dynamo's BackendCompilerFailed: no 'Error' in the name, still the exception line
    frame = '  File "/w/train.py", line 10, in <module>\n    batch = next(it)\n'
    for exception in ("StopIteration", "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"):
        text = "step 10 loss 2.3\nTraceback (most recent call last):\n" + frame + exception + "\n"
        assert not any("cut away" in f.summary for f in diagnose_failures(tmp_path, text)), exception
    # one frame, cut: its count says 'frame'
    found = top_failure(tmp_path, "step 10 loss 2.3\nTraceback (most recent call last):\n" + frame)
    assert "(1 frame, innermost shown: <module> (train.py))" in found.summary


def test_a_cut_teardown_while_a_checkpoint_loads_keeps_the_oom_killers_reading(tmp_path: Path) -> None:
    # the ranks were loading checkpoint shards into host RAM when the launcher tore them down: SIGKILL's reading
    found = top_failure(tmp_path, _log("chatglm_finetuning_102_kill_at_checkpoint_load.log"))
    assert found.kind == "oom" and "dmesg" in found.suggestion
    assert "cut before its return code" not in found.suggestion


# ---- NVLS multicast refused in the present state (CUDA 401): the node's fabric, not a setting ---------------------


def test_nvls_multicast_refused_with_cuda_401_is_the_nodes_fabric(tmp_path: Path) -> None:
    for name in ("nccl_1788_nvls_cuda_401.log", "dcgm_304_nvls_bind_401.log"):
        found = top_failure(tmp_path, _log(name))
        assert found.kind == "hardware_fault", name
        assert "nvidia-fabricmanager" in found.suggestion and "NCCL_NVLS_ENABLE=0" in found.suggestion


def test_nvls_set_up_refused_as_an_invalid_argument_stays_a_configuration(tmp_path: Path) -> None:
    # the corpus' nvls.cc 'invalid argument' (an NCCL release on too old a driver): not the 401 row
    found = top_failure(tmp_path, corpus_log("pytorch-pytorch_150852"))
    assert found.kind == "config_error"


# ---- NVSHMEM's init with no transport to a peer ------------------------------------------------------------------


def test_nvshmem_building_no_transport_map_is_a_configuration(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("pytorch_170479_nvshmem_transport_map.log"))
    assert found.kind == "config_error" and "NVSHMEM" in found.summary
    assert "nvidia-peermem" in found.suggestion and "CUDA_VISIBLE_DEVICES" in found.suggestion


def test_nvshmem_skipping_its_ib_transport_names_the_peer_memory_module(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("deepep_55_nvshmem_no_peermem.log"))
    assert found.kind == "config_error" and "modprobe nvidia-peermem" in found.suggestion


# ---- Ray's OutOfMemoryError is host RAM, not the GPU's ----------------------------------------------------------


def test_rays_out_of_memory_error_is_its_memory_monitor_not_the_gpu(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log("flingbot_11_ray_node_low_on_memory.log"))
    assert found.kind == "oom" and "host memory" in found.summary
    assert "RAY_memory_usage_threshold" in found.suggestion and "PYTORCH_CUDA_ALLOC_CONF" not in found.suggestion
    # the bare name on the monitor's line (the raylet's worker report) is the same host-RAM kill
    bare = top_failure(
        tmp_path,
        "(raylet) A worker died or was killed while executing a task by an unexpected system error.\n"
        "OutOfMemoryError: Task was killed due to the node running low on memory.\n",
    )
    assert bare.kind == "oom" and "PYTORCH_CUDA_ALLOC_CONF" not in bare.suggestion
    assert "RAY_memory_usage_threshold" in bare.suggestion
    # a Ray task wrapping torch's CUDA OOM stays the GPU's
    wrapped = top_failure(
        tmp_path,
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::Trainer.train() (pid=77, ip=10.0.0.1)\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    )
    assert "PYTORCH_CUDA_ALLOC_CONF" in wrapped.suggestion
    # torch's own OutOfMemoryError stays the GPU's
    gpu = top_failure(tmp_path, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert "PYTORCH_CUDA_ALLOC_CONF" in gpu.suggestion
