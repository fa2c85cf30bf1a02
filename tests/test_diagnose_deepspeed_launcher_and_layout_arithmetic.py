"""The deepspeed launcher's resource refusals (knowledge/deepspeed_launcher.py), the parallel layouts whose remedy
does the arithmetic with the log's numbers (knowledge/layout_arithmetic.py, parallel_layout.py's dense check), and
PyTorch < 2.3's global-rank index in torch.distributed.nn.functional's backward (torch_autograd_collectives.py).
Lines written here in each program's format, with other values and prefixes than any one report."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose

from scope.finding import FAILURE_KINDS


def _roots(tmp_path: Path, text: str) -> list:
    (tmp_path / "job.log").write_text(text)
    return [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


def _root(tmp_path: Path, text: str):
    found = _roots(tmp_path, text)
    assert found, text
    return found[0]


def _code(finding) -> str:
    return str(finding.metrics.get("signature") or finding.metrics.get("code") or "")


# ---- 1. the deepspeed launcher -------------------------------------------------------------------------------

_RUNNER_TB = (
    "[2025-03-02 10:11:12,345] [INFO] [runner.py:463:main] {said}\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/deepspeed", line 6, in <module>\n'
    "    main()\n"
    '  File "/usr/local/lib/python3.11/site-packages/deepspeed/launcher/runner.py", line 480, in main\n'
    "    active_resources = parse_inclusion_exclusion(resource_pool, args.include, args.exclude)\n"
    "{error}\n"
)


@pytest.mark.parametrize(
    ("error", "said", "code", "words"),
    [
        (
            "ValueError: No slot '5' specified on host 'node-a3'",
            "Detected CUDA_VISIBLE_DEVICES=1,5: setting --include=node-a3:1,5",
            "deepspeed_launcher_no_slot",
            ("slot 5 on host node-a3", "(1,5)", "unset CUDA_VISIBLE_DEVICES", ">= 0.15.2", "--include node-a3:"),
        ),
        (
            "ValueError: Hostname 'gpu17' not found in hostfile",
            "cmd = pdsh",
            "deepspeed_launcher_host_not_in_hostfile",
            ("Host gpu17", "localhost"),
        ),
        (
            "ValueError: Cannot specify num_nodes/gpus with include/exclude",
            "Using IP address of 10.0.0.1",
            "deepspeed_launcher_filter_conflict",
            ("--num_gpus", "Cannot specify num_nodes/gpus"),
        ),
        (
            "ValueError: Hostfile contains a bad entry: worker-1:8, unable to proceed with launching",
            "Reading hostfile",
            "deepspeed_launcher_bad_hostfile",
            ("worker-1:8", "slots=N"),
        ),
        (
            "RuntimeError: Unable to proceed, no GPU resources available",
            "Reading hostfile",
            "deepspeed_launcher_no_gpu",
            ("nvidia-smi", "--gpus all"),
        ),
        (
            "RuntimeError: Using hostfile at /job/hostfile but host=trn-07 was not reachable via ssh. If you are "
            "running with a single node please remove /job/hostfile or setup passwordless ssh.",
            "Reading hostfile",
            "deepspeed_launcher_ssh_check",
            ("trn-07", "/job/hostfile", "ssh-copy-id trn-07"),
        ),
        (
            "ValueError: Intel MPI requires same number of devices per node",
            "Reading hostfile",
            "deepspeed_launcher_backend_limits",
            ("slots=N",),
        ),
    ],
)
def test_the_deepspeed_launcher_refusal_is_a_config_error_that_quotes_its_names(
    tmp_path: Path, error: str, said: str, code: str, words: tuple[str, ...]
) -> None:
    root = _root(tmp_path, _RUNNER_TB.format(said=said, error=error))
    assert (root.kind, _code(root)) == ("config_error", code)
    for word in words:
        assert word in root.suggestion, (word, root.suggestion)


def test_mpi_discovery_without_mpi4py_is_the_launch_not_a_missing_package(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 30, in <module>\n'
        "    deepspeed.init_distributed()\n"
        '  File "/opt/venv/lib/python3.10/site-packages/deepspeed/comm/comm.py", line 670, in init_distributed\n'
        "    mpi_discovery(distributed_port=distributed_port, verbose=verbose)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/deepspeed/comm/comm.py", line 701, in mpi_discovery\n'
        "    from mpi4py import MPI\n"
        "ModuleNotFoundError: No module named 'mpi4py'\n"
    )
    root = _root(tmp_path, log)
    assert (root.kind, _code(root)) == ("config_error", "deepspeed_mpi_discovery_no_mpi4py")
    assert "torchrun" in root.suggestion


def test_mpi4py_missing_elsewhere_keeps_its_own_reading(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/work/bench.py", line 3, in <module>\n'
        "    import helpers\n"
        '  File "/work/helpers.py", line 1, in <module>\n'
        "    import numpy as np\n"
        "ModuleNotFoundError: No module named 'mpi4py'\n"
    )
    assert all(_code(f) != "deepspeed_mpi_discovery_no_mpi4py" for f in _roots(tmp_path, log))
    # the same import under deepspeed.comm's discovery is the launch's
    (tmp_path / "b").mkdir()
    framed = log.replace(
        '/work/helpers.py", line 1, in <module>', '/x/deepspeed/comm/comm.py", line 9, in mpi_discovery'
    )
    assert _code(_root(tmp_path / "b", framed)) == "deepspeed_mpi_discovery_no_mpi4py"


def test_the_runner_s_info_lines_stay_quiet(tmp_path: Path) -> None:
    log = (
        "[2025-03-02 10:11:12,001] [WARNING] [runner.py:215:main] Unable to find hostfile, will proceed with "
        "training with local resources only.\n"
        "Detected CUDA_VISIBLE_DEVICES=0,1: setting --include=localhost:0,1\n"
        "[2025-03-02 10:11:13,002] [INFO] [runner.py:568:main] cmd = /usr/bin/python3 -u -m "
        "deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMV19 --master_addr=127.0.0.1 train.py\n"
        "[2025-03-02 10:11:20,003] [INFO] [launch.py:351:main] Process 4242 exits successfully.\n"
    )
    assert _roots(tmp_path, log) == []
    (tmp_path / "b").mkdir()
    refused = log.replace("Process 4242 exits successfully.", "ValueError: No slot '1' specified on host 'localhost'")
    assert _code(_root(tmp_path / "b", refused)) == "deepspeed_launcher_no_slot"


# ---- 2. parallel layouts with their arithmetic ----------------------------------------------------------------


def test_the_expert_layout_remedy_does_the_sums_with_the_log_s_numbers(tmp_path: Path) -> None:
    log = (
        '[rank3]:   File "/opt/megatron-lm/megatron/core/parallel_state.py", line 677, in initialize_model_parallel\n'
        "[rank3]:     raise RuntimeError(\n"
        "[rank3]: RuntimeError: world_size (64) is not divisible by expert_tensor_model_pipeline_parallel size "
        "(256)\n"
    )
    root = _root(tmp_path, log)
    assert (root.kind, _code(root)) == ("config_error", "expert_layout_world_size")
    for word in (
        "ETP x EP x PP = 256 > W = 64 GPUs",
        "divides 64",
        "4x smaller",
        "launch 256 GPUs",
        "--expert-model-parallel-size",
        "expert_tensor_parallel_size",
    ):
        assert word in root.suggestion, (word, root.suggestion)


def test_an_expert_product_below_the_world_says_which_multiples_fit(tmp_path: Path) -> None:
    log = "RuntimeError: decoder world_size (48) is not divisible by expert_tensor_model_pipeline_parallel size (32)\n"
    root = _root(tmp_path, log)
    assert "W = 48 GPUs is not a multiple of ETP x EP x PP = 32" in root.suggestion
    assert "a multiple of 32 GPUs (32 or 64)" in root.suggestion
    assert "1, 2, 3, 4, 6, 8, 12, 16, 24, 48" in root.suggestion


def test_the_dense_check_with_named_sizes_multiplies_them(tmp_path: Path) -> None:
    log = (
        "AssertionError: world_size (12) is not divisible by tensor_model_parallel_size (4) x "
        "pipeline_model_parallel_size (2) x context_parallel_size (1)\n"
    )
    root = _root(tmp_path, log)
    assert _code(root) == "world_size_not_layout_multiple"
    assert "TP x PP x CP = 4 x 2 x 1 = 8" in root.suggestion
    assert "a multiple of 8 GPUs (8 or 16)" in root.suggestion


def test_heads_and_layers_remedies_list_the_divisors(tmp_path: Path) -> None:
    heads = _root(
        tmp_path, "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).\n"
    )
    assert (heads.kind, _code(heads)) == ("config_error", "attention_heads_tensor_parallel")
    assert "28 num_attention_heads / TP 8 = 3.5" in heads.suggestion
    assert "1, 2, 4, 7, 14, 28" in heads.suggestion
    (tmp_path / "b").mkdir()
    layers = _root(
        tmp_path / "b",
        "ValueError: number of middle layers: 30 must be divisible by middle pipeline_model_parallel_size 4\n",
    )
    assert (layers.kind, _code(layers)) == ("config_error", "layers_pipeline_split")
    assert "30 layers / 4 = 7.5" in layers.suggestion
    assert "1, 2, 3, 5, 6, 10, 15, 30" in layers.suggestion


# ---- 3. torch.distributed.nn.functional's global-rank index ----------------------------------------------------

_BACKWARD = (
    '[rank5]:   File "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", line 251, in backward\n'
    "[rank5]:     Variable._execution_engine.run_backward(\n"
    '[rank5]:   File "/usr/lib/python3/dist-packages/torch/autograd/function.py", line 288, in apply\n'
    "[rank5]:     return user_fn(self, *args)\n"
    '[rank5]:   File "{where}", line {line}, in backward\n'
    "[rank5]:     {code}\n"
    "[rank5]: IndexError: tuple index out of range\n"
)


def test_an_index_error_inside_torch_s_autograd_collective_names_the_torch_bug(tmp_path: Path) -> None:
    log = _BACKWARD.format(
        where="/usr/lib/python3/dist-packages/torch/distributed/nn/functional.py",
        line=331,
        code="gx = torch.empty_like(grad_outputs[rank])",
    )
    root = _root(tmp_path, log)
    assert _code(root) == "torch_dist_nn_subgroup_rank_index"
    assert "torch >= 2.3" in root.suggestion and "all_reduce" in root.suggestion
    assert "120481" in root.suggestion


def test_an_index_error_elsewhere_keeps_its_generic_reading(tmp_path: Path) -> None:
    log = _BACKWARD.format(where="/work/model/loss.py", line=88, code="return parts[rank] * scale")
    assert all(_code(f) != "torch_dist_nn_subgroup_rank_index" for f in _roots(tmp_path, log))
    (tmp_path / "b").mkdir()
    inside = log.replace(
        "/work/model/loss.py", "/opt/conda/lib/python3.9/site-packages/torch/distributed/nn/functional.py"
    )
    assert _code(_root(tmp_path / "b", inside)) == "torch_dist_nn_subgroup_rank_index"
