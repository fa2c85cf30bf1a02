"""Two classes of start and end: a launcher's exit status as the only word (the signal's kind and what the log did
before it decide the finding, knowledge/signals.py), and a framework refusing its own settings
(knowledge/framework_config.py). Each class on a public thread's real excerpt in tests/data/diagnose_threads/
(README.md there gives the URL and the confirmed cause) or the thread's own line.
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.knowledge.stages import line_marker

from tests.helpers import top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def _log(name: str) -> str:
    return (THREADS / name).read_text()


def _folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def test_torchvision_metric_logger_line_is_a_training_step() -> None:
    # the format torchvision's references print and DETR-family repositories copy
    step = _log("dfine_311_sigabrt_after_steps.log").splitlines()[0]
    marker = line_marker(step)
    assert marker is not None and marker.stage == "steps" and not marker.ends


def test_sigabrt_after_training_steps_with_no_error_is_the_watchdog_timeout(tmp_path: Path) -> None:
    # Peterande/D-FINE#311: epoch 27 steps, then torchrun's 'failed (exitcode: -6)', the rank said nothing
    top = top_failure(tmp_path, _log("dfine_311_sigabrt_after_steps.log"))
    assert top.kind == "timeout"
    assert "SIGABRT" in top.summary and "watchdog" in top.summary and "line 1" in top.summary
    assert top.metrics["signal"] == {"name": "SIGABRT", "number": 6, "after_step": 1}


def test_sigabrt_with_no_step_before_it_stays_a_crash(tmp_path: Path) -> None:
    # the same report without the step line: an abort at start-up is a library's, not the watchdog's
    log = "".join(_log("dfine_311_sigabrt_after_steps.log").splitlines(keepends=True)[1:])
    top = top_failure(tmp_path, log)
    assert top.kind == "crash" and "SIGABRT" in top.summary and "watchdog, which aborts" not in top.summary


def test_a_bare_sigkill_from_the_launcher_is_read_as_the_oom_killer(tmp_path: Path) -> None:
    # ZhehengJiangLancaster/AMVUR#2: torchrun's ChildFailedError block, exitcode -9, host memory grew until the
    # OOM killer killed rank 2
    top = top_failure(tmp_path, _log("amvur_2_child_failed_exitcode_9.log"))
    assert top.kind == "oom" and top.metrics["signal"]["name"] == "SIGKILL"


# ---- a framework's check of its own settings ---------------------------------------------------------------


def test_a_framework_refusing_its_parallel_setting_is_a_config_error(tmp_path: Path) -> None:
    # gpustack/gpustack#814: vLLM's verify_with_parallel_config, 64 heads on 3 GPUs
    top = top_failure(tmp_path, _log("gpustack_814_tp_not_divisible.log"))
    assert top.kind == "config_error" and top.metrics["code"] == "framework_setting_refused"
    assert "must be divisible by tensor parallel size (3)" in top.suggestion


def test_the_same_words_in_an_assertion_and_a_cuda_error(tmp_path: Path) -> None:
    # vllm-project/vllm#52435's title: vLLM's expert-parallel assert
    said = "AssertionError: n_physical_experts=256 must be divisible by ep_size=3. Adjust num_redundant_experts.\n"
    assert top_failure(_folder(tmp_path, "ep"), said).kind == "config_error"
    # sgl-project/sglang#4814: the CUDA runtime's own 'not supported' is the driver's report, not a setting
    cuda = "RuntimeError: CUDART error: peer access is not supported between these two devices\n"
    top = top_failure(_folder(tmp_path, "cuda"), cuda)
    assert top.metrics["code"] != "framework_setting_refused"


def test_the_shells_bare_killed_is_read_as_the_oom_killer(tmp_path: Path) -> None:
    # LambdaLabsML/examples#41: 'Summoning checkpoint.' then the shell's 'Killed' (host RAM, the maintainer)
    top = top_failure(tmp_path, _log("lambdalabs_41_killed_while_saving.log"))
    assert top.kind == "oom" and top.metrics["code"] == "process_killed"
    assert "dmesg" in top.suggestion


def test_a_launcher_teardown_after_a_silent_worker_is_read_as_the_oom_killer(tmp_path: Path) -> None:
    # deepspeedai/DeepSpeed#3160: the launcher's sigkill_handler right after the optimizer states were built on
    # the CPU, the return code cut from the line, no rank's own error: a kill from outside, the host OOM killer
    top = top_failure(tmp_path, _log("deepspeed_3160_sigkill_handler_silent.log"))
    assert top.kind == "oom" and "killed from outside" in top.suggestion
