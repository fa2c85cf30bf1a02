"""A loss that went NaN or infinite before a native fault: training diverged first, and the CUDA illegal memory
access or segmentation fault that ended the run is its consequence (a kernel indexing with NaN-derived boxes or
indices). The words are the loss lines trainers print; the sources are threads whose maintainers read such a
crash as divergence and whose fix was a smaller learning rate.

Sources: facebookresearch/detectron2#214 ('loss_cls': tensor(nan ...) then exit 139, SIGSEGV; fixed by the
1-GPU base_lr), facebookresearch/maskrcnn-benchmark#45 (an illegal memory access; maintainer fmassa: a too
high learning rate made training diverge, giving large indices), graphdeco-inria/gaussian-splatting#447 (an
illegal memory access only with a too-large learning rate), detectron2's own check
(detectron2/engine/train_loop.py: 'Loss became infinite or NaN at iteration=N').
"""

from __future__ import annotations

import re

# a loss value printed as nan / inf: 'loss: nan', 'loss=inf', "'loss_cls': tensor(nan", 'total_loss: nan',
# detectron2's FloatingPointError, 'Training has diverged'
_DIVERGED = re.compile(
    r"\b\w*loss\w*['\"]?\s*[:=]\s*(?:tensor\()?\s*-?(?:nan|inf)\b"
    r"|Loss became infinite or NaN|Training has diverged|\bloss (?:is|became) (?:nan|inf)\b",
    re.IGNORECASE,
)
# the native faults a diverged run ends with
_FAULT = re.compile(
    r"illegal memory access|unspecified launch failure|device-side assert|Caught signal 11|Segmentation fault|"
    r"SIGSEGV|signal 11\b|exit code 139\b"
)

REMEDY = (
    "The loss was already {value} at line {line} ('{text}'), before the fault: training diverged first and the "
    "native error is its consequence. Lower the learning rate (scale it with the total batch: fewer GPUs or a "
    "smaller batch need a smaller one), add warm-up and gradient clipping, and find the first NaN "
    "(torch.autograd.set_detect_anomaly(True), check the inputs and labels) before chasing the CUDA error."
)


def diverged_before_fault(text: str) -> tuple[int, str] | None:
    """(line number, line) of the first NaN / inf loss line that comes before the log's first native fault; None
    when the loss never diverged or the fault came first."""
    lines = text.splitlines()
    fault = next((i for i, line in enumerate(lines) if _FAULT.search(line)), None)
    if fault is None:
        return None
    for i in range(fault):
        if _DIVERGED.search(lines[i]):
            return i + 1, lines[i].strip()
    return None


def diverged_value(line: str) -> str:
    m = re.search(r"\b(nan|inf)\b", line, re.IGNORECASE)
    return m.group(1).lower() if m else "NaN or infinite"
