"""A loss gone NaN before a native fault: the printed fix leads with the divergence (lower the learning rate),
not the CUDA error's checklist (knowledge/divergence.py, words/diverged.py); real lines of public threads."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.knowledge.divergence import diverged_before_fault

from tests.helpers import top_failure

# facebookresearch/detectron2#214 (https://github.com/facebookresearch/detectron2/issues/214): the loss dict with
# a NaN, then the process died of SIGSEGV; fixed by the 1-GPU base_lr
DETECTRON2_NAN_SEGV = (
    "FloatingPointError: Loss became infinite or NaN at iteration=3!\n"
    "loss_dict = {'loss_cls': tensor(nan, device='cuda:0', grad_fn=<DivBackward0>), 'loss_box_reg': "
    "tensor(1310.0702, device='cuda:0', grad_fn=<DivBackward0>)}\n"
    "\n"
    "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)\n"
)

# facebookresearch/maskrcnn-benchmark#45 (https://github.com/facebookresearch/maskrcnn-benchmark/issues/45): the
# fault alone; its maintainer suspected divergence, but this log shows no NaN loss, so none is claimed
ILLEGAL_ACCESS_ALONE = (
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "terminate called after throwing an instance of 'c10::Error'\n"
)


def test_a_nan_loss_before_a_segfault_leads_with_the_learning_rate(tmp_path: Path) -> None:
    top = top_failure(tmp_path, DETECTRON2_NAN_SEGV)
    text = top.suggestion
    assert text.startswith("The loss was already nan at line 1")
    assert "Lower the learning rate" in text and "set_detect_anomaly" in text


def test_a_fault_without_a_nan_loss_before_it_claims_no_divergence(tmp_path: Path) -> None:
    assert "learning rate" not in top_failure(tmp_path, ILLEGAL_ACCESS_ALONE).suggestion
    assert diverged_before_fault(ILLEGAL_ACCESS_ALONE) is None


def test_a_nan_loss_after_the_fault_is_not_its_cause() -> None:
    assert diverged_before_fault("Segmentation fault (core dumped)\nloss: nan\n") is None
    assert diverged_before_fault("step 9 loss: 2.31\nstep 10 loss: nan\nSegmentation fault\n") == (
        2,
        "step 10 loss: nan",
    )
