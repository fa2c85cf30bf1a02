"""A remedy quotes only what the failing host's own lines say, and reads each quoted token as what it is: the
review of the printed-remedy work reproduced each of these on a small log (an HCA from another host's line, an
exclusion list read as an interface, a git-LFS pointer called a truncated checkpoint, a limit the log never wrote)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"
_A = "hostA:100:110 [0]"
_B = "hostB:200:210 [0]"
_QP_FAIL = f"{_A} misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device\n"


def test_an_hca_is_never_quoted_from_another_hosts_line(tmp_path: Path) -> None:
    log = (
        f"{_B} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.2<0>\n"
        f"{_A} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>\n" + _QP_FAIL
    )
    top = top_failure(tmp_path, log)
    assert "NCCL_IB_HCA=^<name>" in top.suggestion and "^mlx5_0" not in top.suggestion


def test_the_failing_hosts_own_hca_is_quoted_past_another_hosts_later_line(tmp_path: Path) -> None:
    log = (
        f"{_A} NCCL INFO NET/IB : Using [0]mlx5_3:1/IB ; OOB ib0:10.0.0.1<0>\n"
        f"{_B} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.2<0>\n" + _QP_FAIL
    )
    assert "NCCL_IB_HCA=^mlx5_3" in top_failure(tmp_path, log).suggestion


def test_an_hca_is_quoted_from_current_nccls_relaxed_ordering_form(tmp_path: Path) -> None:
    # NCCL >= 2.12 prints '[RO]' after an HCA with relaxed ordering: '[0]mlx5_2:1/RoCE [RO]; OOB ...'
    log = f"{_A} NCCL INFO NET/IB : Using [0]mlx5_2:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n" + _QP_FAIL
    assert "NCCL_IB_HCA=^mlx5_2" in top_failure(tmp_path, log).suggestion


_SOCKET_FAIL = (
    f"{_A} NCCL INFO NCCL_SOCKET_IFNAME set by environment to {{value}}\n"
    f"{_A} bootstrap.cc:1245 NCCL WARN Bootstrap : no socket interface found\n"
    f"{_A} NCCL INFO init.cc:1630 -> 3\n"
)


def test_an_interface_exclusion_list_is_read_as_the_interfaces_it_leaves_out(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _SOCKET_FAIL.format(value="^docker0,lo"))
    assert "NCCL_SOCKET_IFNAME=^docker0,lo" in top.suggestion
    assert "names an interface" not in top.suggestion
    assert "leaves out docker0, lo" in top.suggestion


def test_an_exact_interface_list_is_read_without_its_equals_sign(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _SOCKET_FAIL.format(value="=eth0"))
    assert "that eth0 names an interface that is up" in top.suggestion and "that =eth0" not in top.suggestion


def test_an_hca_exclusion_is_not_told_to_check_the_hca_it_leaves_out(tmp_path: Path) -> None:
    log = f"{_A} NCCL INFO NCCL_IB_HCA set by environment to ^mlx5_3\n" + _QP_FAIL
    top = top_failure(tmp_path, log)
    assert "NCCL_IB_HCA=^mlx5_3" in top.suggestion and "leaves out mlx5_3" in top.suggestion
    assert "check that each HCA it names is up" not in top.suggestion


def test_the_net_transport_variable_is_a_transport_name_not_a_file(tmp_path: Path) -> None:
    log = (
        f"{_A} NCCL INFO NCCL_NET set by environment to IB\n"
        f"{_A} NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v6 symbol.\n"
        f"{_A} init.cc:1100 NCCL WARN Could not find net plugin NET/Plugin for network IB\n"
        f"{_A} NCCL INFO init.cc:1300 -> 5\n"
    )
    top = top_failure(tmp_path, log)
    assert "NCCL_NET=IB" in top.suggestion and "it forces the IB transport" in top.suggestion
    assert "point it at a file" not in top.suggestion


def _traceback(frames: list[tuple[str, str]], error: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, fn in frames:
        lines += [f'  File "{path}", line 10, in {fn}', "    x = call()"]
    return "\n".join([*lines, error]) + "\n"


_TORCH = "/opt/conda/lib/python3.10/site-packages/torch"


def test_an_error_in_a_load_state_dict_hook_is_not_called_a_shape_mismatch(tmp_path: Path) -> None:
    log = _traceback(
        [("train.py", "<module>"), (f"{_TORCH}/nn/modules/module.py", "load_state_dict"), ("model.py", "_hook")],
        "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    )
    top = top_failure(tmp_path, log)
    assert top.suggestion.startswith("Fix the exception raised on the rank") and "names or shapes" not in top.suggestion


def test_a_state_dict_size_mismatch_keeps_the_shape_remedy(tmp_path: Path) -> None:
    log = _traceback(
        [("train.py", "<module>"), (f"{_TORCH}/nn/modules/module.py", "load_state_dict")],
        "RuntimeError: Error(s) in loading state_dict for GPT:\n\tsize mismatch for wte.weight: copying a param",
    )
    assert "names or shapes differ" in top_failure(tmp_path, log).suggestion


def _load_error(message: str) -> str:
    return _traceback([("train.py", "<module>"), (f"{_TORCH}/serialization.py", "load")], message)


def test_a_git_lfs_pointer_is_not_called_a_truncated_checkpoint(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _load_error("_pickle.UnpicklingError: invalid load key, 'v'."))
    assert "truncated or corrupt" not in top.suggestion and "git lfs pull" in top.suggestion


def test_an_html_page_is_not_called_a_truncated_checkpoint(tmp_path: Path) -> None:
    top = top_failure(tmp_path, _load_error("_pickle.UnpicklingError: invalid load key, '<'."))
    assert "truncated or corrupt" not in top.suggestion and "HTML" in top.suggestion


def test_a_member_inside_the_archive_is_not_quoted_as_the_checkpoint_file(tmp_path: Path) -> None:
    message = "RuntimeError: PytorchStreamReader failed locating file constants.pkl: file not found"
    top = top_failure(tmp_path, _load_error(message))
    assert "truncated or corrupt" in top.suggestion and "constants.pkl" not in top.suggestion


def test_torch_2s_missing_parent_directory_gets_the_save_remedy(tmp_path: Path) -> None:
    log = _traceback(
        [("train.py", "<module>"), (f"{_TORCH}/serialization.py", "save"), (f"{_TORCH}/serialization.py", "__init__")],
        "RuntimeError: Parent directory /ckpt/run1 does not exist.",
    )
    top = top_failure(tmp_path, log)
    assert "could not be created by torch.save" in top.suggestion and "folder exists" in top.suggestion


def test_a_limit_read_from_other_words_is_stated_not_quoted() -> None:
    # gloo's 'Timed out waiting 1800000ms for recv' fills timeout_ms; 'Timeout(ms)=' is on no line of the log
    from scope.analyzers.diagnose.knowledge.late_work import LATE_WORK
    from scope.analyzers.diagnose.reasoning.late_rank import Busy
    from scope.analyzers.diagnose.words.endings import explain_timeout

    from scope.finding import Finding

    finding = Finding("timeout", "critical", "gloo timed out", metrics={"code": "gloo_timeout"})
    finding.metrics["details"] = {"timeout_ms": 1_800_000}
    explain_timeout(finding, [Busy(LATE_WORK[0], 1, "Running evaluation", None)])
    assert finding.suggestion.startswith("The waiting ranks gave up after 30 min. ")
    assert "Timeout(ms)" not in finding.suggestion


def test_gloos_own_words_for_the_limit_are_quoted_as_written() -> None:
    from scope.analyzers.diagnose.reasoning.late_rank import busy_work

    log = (
        "[rank0]: Running evaluation on the validation set\n"
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
        "1800000ms for recv operation to complete\n"
    )
    busy = busy_work(log)
    assert busy is not None and busy.limit == "Timed out waiting 1800000ms"


def test_a_helper_script_after_the_launch_command_is_not_quoted_as_the_launch(tmp_path: Path) -> None:
    log = "$ torchrun --nproc_per_node=8 train.py\n./download_data.sh --shards 8\n" + (
        (THREADS / "modded_nanogpt_61_invalid_device_ordinal.log").read_text().replace("./run.sh\n", "", 1)
    )
    top = top_failure(tmp_path, log)
    assert "download_data" not in top.suggestion
    assert "in the launch command (torchrun --nproc_per_node=8 train.py)" in top.suggestion
