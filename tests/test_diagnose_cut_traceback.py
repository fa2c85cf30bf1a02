"""A traceback cut before its exception line whose frames wait in a collective (readers/cut_traceback.py):
a timeout, explained by the work the late rank printed before it (reasoning/late_rank.py). Excerpts written
here in the formats torch prints (C++ `frame #N:` lines, Python `File ..., in barrier` frames)."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose import diagnose

from scope.finding import FAILURE_KINDS

LIB = "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so"
NATIVE_BARRIER = (
    "Traceback (most recent call last):\n"
    "[... cut ...]\n"
    f"frame #10: <unknown function> + 0xb4c325 (0x7f09b3669325 in {LIB})\n"
    "frame #11: c10d::ProcessGroupNCCL::allreduce_impl(std::vector<at::Tensor, std::allocator<at::Tensor> >&, "
    f"c10d::AllreduceOptions const&) + 0xf (0x7f09b366a61f in {LIB})\n"
    "frame #12: c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor, std::allocator<at::Tensor> >&, "
    f"c10d::AllreduceOptions const&) + 0x2d3 (0x7f09b3670733 in {LIB})\n"
    f"frame #13: c10d::ProcessGroupNCCL::barrier(c10d::BarrierOptions const&) + 0x72a (0x7f09b367a18a in {LIB})\n"
    "frame #14: <unknown function> + 0x800291 (0x7f09f8d2b291 in libtorch_python.so)\n"
)
PY_BARRIER = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    dist.barrier()\n"
    '  File "/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py", line 79, in wrapper\n'
    "    return func(*args, **kwargs)\n"
    '  File "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py", line 4159, in barrier\n'
    "    work.wait()\n"
)


def _top(tmp_path: Path, text: str):
    (tmp_path / "job.log").write_text(text)
    failures = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert failures, "no failure finding"
    return failures[0]


def test_native_frames_in_a_barrier_after_tokenization_are_a_timeout_explained_by_it(tmp_path: Path) -> None:
    bar = "Running tokenizer on dataset:  38%|###8      | 32068/85249 [32:13<53:59, 16.42ba/s]"
    top = _top(tmp_path, bar + NATIVE_BARRIER)
    assert top.kind == "timeout"
    assert "barrier" in top.summary and "pre-processing" in top.summary
    assert "32 min" in top.summary
    assert "--ddp_timeout" in top.suggestion and "Pre-process once" in top.suggestion


def test_python_frames_in_a_barrier_after_an_evaluation_on_rank_0_name_the_evaluation(tmp_path: Path) -> None:
    log = "[rank0]: ***** Running Evaluation *****\n[rank0]:   Num examples = 50000\n" + "".join(
        f"[rank1]:{line}\n" for line in PY_BARRIER.splitlines()
    )
    top = _top(tmp_path, log)
    assert top.kind == "timeout"
    assert "evaluation" in top.summary
    assert "every rank" in top.suggestion


def test_a_cut_wait_with_no_work_before_it_says_what_to_look_for_in_the_peers(tmp_path: Path) -> None:
    top = _top(tmp_path, "epoch 3 step 1200 loss 2.31\n" + NATIVE_BARRIER.replace("\n", "\r\n"))
    assert top.kind == "timeout"
    assert "barrier" in top.summary
    assert "init_process_group(timeout=" in top.suggestion and "py-spy dump" in top.suggestion


def test_a_stack_with_its_exception_line_is_that_exception_not_a_cut_wait(tmp_path: Path) -> None:
    top = _top(tmp_path, NATIVE_BARRIER + "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert top.kind == "crash"
    assert "compute-sanitizer" in top.suggestion


def test_a_timeout_after_training_finished_is_a_post_training_collective_on_one_rank(tmp_path: Path) -> None:
    log = (
        "`Trainer.fit` stopped: `max_epochs=20` reached.\n"
        "[rank0]:[E1206 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
        "1800090 milliseconds before timing out.\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "timeout" and "past the end of training" in top.summary
    assert "every rank" in top.suggestion and "save_checkpoint" in top.suggestion


def test_a_timeout_at_the_first_collective_behind_a_kernel_build_names_the_build(tmp_path: Path) -> None:
    log = (
        "> compiling and loading fused kernels ...\n"
        "[rank1]:[E829 16:32:30.656674606 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600046 "
        "milliseconds before timing out.\n"
    )
    top = _top(tmp_path, log)
    assert "extension" in top.summary
    assert "build directory" in top.suggestion


def test_a_timeout_at_one_of_the_first_collectives_suspects_the_gpu_path_first(tmp_path: Path) -> None:
    log = (
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=42516042, NumelOut=42516042, Timeout(ms)=600000) ran for "
        "600089 milliseconds before timing out.\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "timeout"
    assert top.suggestion.startswith("The timeout hit collective #7") and "NCCL_P2P_DISABLE=1" in top.suggestion


def test_an_early_timeout_explained_by_late_work_keeps_the_late_works_remedy(tmp_path: Path) -> None:
    log = (
        "Running tokenizer on dataset:  38%|###8      | 32068/85249 [32:13<53:59, 16.42ba/s]\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
        "1800089 milliseconds before timing out.\n"
    )
    top = _top(tmp_path, log)
    assert "NCCL_P2P_DISABLE" not in top.suggestion and "Pre-process once" in top.suggestion


def test_a_hang_after_the_work_finished_is_a_teardown_hang(tmp_path: Path) -> None:
    log = (
        "[----------] Global test environment tear-down\n"
        "[E930 15:23:00.059980974 ProcessGroupNCCL.cpp:1487] [PG ID 4 PG GUID  Rank 2] ProcessGroupNCCL's watchdog "
        "got stuck for 10 seconds without making progress in monitoring enqueued collectives.\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "hang" and top.summary.startswith("The work finished")
    assert "in the same order" in top.suggestion
