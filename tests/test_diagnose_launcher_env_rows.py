"""Errors whose cause is how the process was started, each a signature row with its source: a variable a launcher
sets read without that launcher (knowledge/runtime_launcher.py), SLURM's compressed per-node count read with
int(), ProcessGroupNCCL finding no GPU in the worker's environment (runtime_process_group.py), and Accelerate
refusing a quantized model spread over GPUs (framework_config.py); DDP's unused-parameter remedy naming each framework's
switch and LayerDrop. Short tracebacks written in Python's format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure


def _traceback(call: str, error: str) -> str:
    return f'Traceback (most recent call last):\n  File "/work/train.py", line 40, in <module>\n    {call}\n{error}\n'


def test_a_launcher_variable_missing_is_a_config_error_naming_its_launcher(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _traceback("local = int(os.environ['SLURM_LOCALID'])", "KeyError: 'SLURM_LOCALID'"))
    assert top.kind == "config_error"
    assert "SLURM_LOCALID is set by the launcher" in top.suggestion and "srun" in top.suggestion


def test_any_other_key_error_stays_the_programs_crash(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _traceback("loss = batch['labels']", "KeyError: 'labels'"))
    assert top.kind == "crash"


def test_slurms_compressed_count_read_with_int_is_a_config_error_quoting_it(tmp_path: Path) -> None:
    log = _traceback(
        "n = int(os.environ['SLURM_TASKS_PER_NODE'])", "ValueError: invalid literal for int() with base 10: '4(x2)'"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error"
    assert "'4(x2)' is SLURM's compressed per-node list" in top.suggestion and "SLURM_NTASKS" in top.suggestion


def test_nccl_process_group_with_no_gpu_names_the_workers_environment(tmp_path: Path) -> None:
    log = _traceback(
        "dist.init_process_group('nccl')", "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error"
    assert "LD_LIBRARY_PATH" in top.suggestion and ".deepspeed_env" in top.suggestion


def test_a_quantized_model_spread_over_gpus_names_the_accelerate_upgrade_and_the_per_process_map(
    tmp_path: Path,
) -> None:
    log = _traceback(
        "model = accelerator.prepare(model)",
        "ValueError: You can't train a model that has been loaded in 8-bit or 4-bit precision on multiple devices "
        "in any distributed mode.",
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error"
    assert "pip install --upgrade accelerate" in top.suggestion and "local_process_index" in top.suggestion


def test_unused_parameters_name_speechbrains_flag_and_layer_drop(tmp_path: Path) -> None:
    # DDP's reducer line; the remedy lists each framework's switch and the model setting that skips layers
    log = _traceback(
        "loss.backward()",
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one.",
    )
    top = top_failure(tmp_path, log)
    assert "--find_unused_parameters=True" in top.suggestion and "LayerDrop" in top.suggestion
