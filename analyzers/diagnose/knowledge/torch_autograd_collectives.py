"""Signature rows for known bugs inside PyTorch's own autograd collectives (torch/distributed/nn/functional.py:
_AllGather, _AlltoAll, _Reduce_Scatter, ... whose backward runs a collective). The row fires only where the
traceback's innermost frame is in that module (before_re), so an IndexError raised anywhere else keeps its generic
reading.

Source: torch.distributed.nn.functional.all_gather's backward (_AllGather.backward) indexed grad_outputs with
dist.get_rank(), the GLOBAL rank, although the gather ran over `group`: on a sub-group smaller than the world, every
rank whose global rank >= the group's size raised 'IndexError: tuple index out of range'
(https://github.com/pytorch/pytorch/issues/120213). Fixed by https://github.com/pytorch/pytorch/pull/120481
('Fix `get_rank` under a non-default group', merged 2024-03-11, before the 2.3 branch cut: rank =
dist.get_rank(group=ctx.group)), first released in PyTorch 2.3. DeepSpeed's Ulysses / ALST tutorial
(docs/_tutorials/ulysses-alst-sequence-parallelism.md, 'Note on PyTorch Versions < 2.3', PR #7809) documents the
same IndexError and the weighted all_reduce its callers switched to.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT_FIX = "https://github.com/pytorch/pytorch/pull/120481"
PT_ISSUE = "https://github.com/pytorch/pytorch/issues/120213"
DS_NOTE = "https://github.com/deepspeedai/DeepSpeed/pull/7809"
# a backward frame of torch's own autograd collectives close above the exception line: the bug is in
# _AllGather.backward; an IndexError below a forward frame (all_gather) is raised further in
_TORCH_DIST_NN_FRAME = r"torch[/\\]distributed[/\\]nn[/\\]functional\.py\", line \d+, in backward\b"

TORCH_AUTOGRAD_COLLECTIVE_SIGNATURES: tuple[Signature, ...] = (
    row(
        "torch_dist_nn_subgroup_rank_index",
        "index out of range",
        r"IndexError: (?:tuple|list) index out of range",
        era="PyTorch < 2.3 (torch.distributed.nn.functional._AllGather.backward used the global rank)",
        cause="application",
        meaning="The IndexError was raised inside torch.distributed.nn.functional's own autograd collective: "
        "before PyTorch 2.3, all_gather's backward indexed the gathered gradients by the GLOBAL rank, so on a "
        "process group smaller than the world (a sequence / tensor / expert parallel sub-group) every rank whose "
        "global rank is >= the group's size fails in backward.",
        remedy=(
            "This is PyTorch's bug, fixed in 2.3 (pytorch/pytorch#120481, dist.get_rank(group=ctx.group) in "
            "_AllGather.backward; raised in {frame|torch/distributed/nn/functional.py}, {func|backward}): upgrade "
            "to torch >= 2.3; or, "
            "on an older torch, do not backpropagate through torch.distributed.nn.functional.all_gather on a "
            "sub-group: reduce the loss with a weighted all_reduce over that group (dist.all_reduce(loss_sum, "
            "group=group) and dist.all_reduce(token_count, group=group), then divide), as DeepSpeed's Ulysses / "
            "ALST code does, or run the group over the whole world."
        ),
        reference=PT_FIX + "; " + PT_ISSUE + "; " + DS_NOTE,
        before_re=_TORCH_DIST_NN_FRAME,
        # the innermost frame: its frame line within the 3 lines above (source, 3.11's carets); an IndexError of the
        # program's own code that the backward called (a hook) has the backward frame 4 lines up
        before_lines=3,
        context_re=r"(?P<frame>torch[/\\]distributed[/\\]nn[/\\]functional\.py)\", line \d+, in (?P<func>\w+)",
    ),
)
