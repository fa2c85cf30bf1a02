"""Review of the launcher and layout rows (knowledge/deepspeed_launcher.py, layout_arithmetic.py,
torch_autograd_collectives.py,
the derive step of readers/signature_scan.py): the arithmetic for every wording and edge, the derived words kept
out of the finding's metrics, a derive that raises costing only its own words, and the lookalikes that must keep
their own reading. Lines written here in each program's format (Megatron-LM's f-strings are joined as printed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge import layout_arithmetic

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


# ---- the derived words: remedy text, not metrics ------------------------------------------------------------------


def test_the_derived_sums_stay_out_of_the_finding_s_metrics(tmp_path: Path) -> None:
    root = _root(
        tmp_path, "RuntimeError: world_size (24) is not divisible by expert_tensor_model_pipeline_parallel size (64)\n"
    )
    assert "ETP x EP x PP = 64 > W = 24 GPUs" in root.suggestion
    details = root.metrics.get("details") or {}
    # the log's own numbers are the finding's; the sentences made of them are the remedy's
    assert details.get("world") == 24 and details.get("size") == 64
    leaked = {"arith", "shrink", "launch", "fits", "heads"} & set(details)
    assert not leaked, (leaked, json.dumps(details)[:400])


def test_a_derive_function_that_raises_costs_only_its_own_words(tmp_path: Path, monkeypatch) -> None:
    def broken(_d: dict) -> dict:
        raise ZeroDivisionError("a bug in a derive function")

    monkeypatch.setitem(layout_arithmetic.DERIVE, "expert_layout", broken)
    log = (
        "RuntimeError: world_size (24) is not divisible by expert_tensor_model_pipeline_parallel size (64)\n"
        "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).\n"
    )
    (tmp_path / "job.log").write_text(log)
    found = {_code(f): f for f in diagnose(tmp_path).findings}
    expert = found["expert_layout_world_size"]
    assert "does not divide the world size" in expert.suggestion  # the row's own fallback words
    assert "28 num_attention_heads / TP 8 = 3.5" in found["attention_heads_tensor_parallel"].suggestion


def test_huge_numbers_neither_crash_the_diagnosis_nor_hide_the_failure(tmp_path: Path) -> None:
    big = "9" * 400
    line = f"ValueError: num_attention_heads ({big}) must be a multiple of tensor_model_parallel_size (7).\n"
    root = _root(tmp_path, line)
    assert _code(root) == "attention_heads_tensor_parallel"
    (tmp_path / "b").mkdir()
    longer = "9" * 5000  # past Python's int-from-string digit limit
    line = f"RuntimeError: world_size ({longer}) is not divisible by expert_tensor_model_pipeline_parallel size (8)\n"
    assert _code(_root(tmp_path / "b", line)) == "expert_layout_world_size"


# ---- the arithmetic's edges ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("w", "n"), [(64, 64), (7, 1), (48, 16)])
def test_numbers_that_divide_are_no_arithmetic_to_show(w: int, n: int) -> None:
    # the check fails only where N does not divide W: numbers that divide were misread, and saying '48 = 3 x 16 + 0
    # is not a multiple' would be false
    assert layout_arithmetic.expert_layout({"world": w, "size": n}) == {}


def test_the_fits_list_is_exact_for_a_large_prime_world() -> None:
    fits = layout_arithmetic.expert_layout({"world": 2000003, "size": 2})["_fits"]
    assert fits == "1, 2000003"
    assert layout_arithmetic.expert_layout({"world": 3 * 2**21, "size": 5})["_fits"].endswith(str(3 * 2**21))


def test_the_dense_check_s_total_pipelining_wording_gives_no_false_product(tmp_path: Path) -> None:
    # Megatron Core mid-2024 (encoder pipeline): PP is 'name=value' inside total_pipelining; reading TP x CP alone
    # would say 12 is not a multiple of 4
    log = (
        "RuntimeError: world_size (12) is not divisible by tensor_model_parallel_size (4) x total_pipelining "
        "(encoder_pipeline_model_parallel_size=0 + pipeline_model_parallel_size=2) x context_parallel_size (1)\n"
    )
    root = _root(tmp_path, log)
    assert _code(root) == "world_size_not_layout_multiple"
    assert "= 4 x 1 = 4" not in root.suggestion and "(12 = 3 x 4 + 0)" not in root.suggestion


def test_the_older_tensor_model_parallel_wording_is_multiplied(tmp_path: Path) -> None:
    log = (
        "AssertionError: world size (10) is not divisible by tensor parallel size (4) times pipeline parallel "
        "size (1)\n"
    )
    root = _root(tmp_path, log)
    assert "TP x PP = 4 x 1 = 4" in root.suggestion


# ---- Megatron's layer and head wordings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # megatron/training/arguments.py before the uneven-VPP change (2024-11), and the older lowercase assert
        "AssertionError: Number of layers per pipeline stage must be divisible by number of layers per virtual "
        "pipeline stage",
        "AssertionError: number of layers should be divisible by the pipeline parallel size",
    ],
)
def test_older_layer_split_wordings_are_the_layer_row(tmp_path: Path, line: str) -> None:
    assert _code(_root(tmp_path, line + "\n")) == "layers_pipeline_split"


def test_a_stage_s_layers_against_the_virtual_pipeline_name_the_virtual_size(tmp_path: Path) -> None:
    root = _root(
        tmp_path,
        "ValueError: number of layers at last stage: 10must be divisible by virtual pipelineparallel degree 4\n",
    )
    assert _code(root) == "layers_pipeline_split"
    assert "10 layers / VPP 4 = 2.5" in root.suggestion
    assert "virtual pipeline size that divides 10" in root.suggestion
    assert "pipeline_model_parallel_size (x virtual pipeline size) that divides" not in root.suggestion


def test_query_groups_as_multiple_or_divisor_is_the_heads_row(tmp_path: Path) -> None:
    # Megatron Core since Dec 2025 (f7dfb99795): TP may also be a multiple of the query groups
    root = _root(
        tmp_path, "ValueError: num_query_groups (6) must be a multiple or divisor of tensor_model_parallel_size (4).\n"
    )
    assert _code(root) == "attention_heads_tensor_parallel"
    assert "1, 2, 3, 6" in root.suggestion and "multiple of 6" in root.suggestion


# ---- lookalikes -------------------------------------------------------------------------------------------------


def test_a_script_s_own_mpi4py_import_is_no_deepspeed_discovery(tmp_path: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/hvd_bench.py", line 4, in <module>\n'
        "    from mpi4py import MPI\n"
        "ModuleNotFoundError: No module named 'mpi4py'\n"
    )
    found = _roots(tmp_path, log)
    assert found and all(_code(f) != "deepspeed_mpi_discovery_no_mpi4py" for f in found)


def test_an_index_error_below_a_forward_frame_of_torch_s_collectives_is_not_the_backward_bug(tmp_path: Path) -> None:
    log = (
        '[rank2]:   File "/usr/lib/python3/dist-packages/torch/distributed/nn/functional.py", line 120, in all_gather\n'
        "[rank2]:     return _AllGather.apply(group, tensor)\n"
        '[rank2]:   File "/w/hooks.py", line 9, in on_gather\n'
        "[rank2]:     return xs[7]\n"
        "[rank2]: IndexError: list index out of range\n"
    )
    assert all(_code(f) != "torch_dist_nn_subgroup_rank_index" for f in _roots(tmp_path, log))
