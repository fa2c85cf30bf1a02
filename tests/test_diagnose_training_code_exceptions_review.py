"""A review of the training-code exception rows (knowledge/training_code.py): read what the log names, and only that.
The wrapped module DDP's unused-parameters row
quotes is the one whose call entered DDP's forward, never a function whose arguments hold that call; a message's
detail lines are its own rank's, not those another rank printed in between; a weights_only refusal the program
caught (and retried with weights_only=False) in a run that trained on is no root cause. Lines written here in the
programs' formats, not copied from any held-out log."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

TORCH = "/opt/conda/lib/python3.10/site-packages/torch"

_REDUCTION = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable unused "
    "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by "
)
_MAKING_SURE = "making sure all `forward` function outputs participate in calculating loss. "


def _log(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _into_ddp_forward(code: str, prefix: str = "") -> list[str]:
    """A traceback from the program's line CODE through nn.Module's call frames into DDP's forward."""
    frames = [
        ("/srv/exp/fit.py", 142, "run_epoch", code),
        (f"{TORCH}/nn/modules/module.py", 1518, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{TORCH}/nn/modules/module.py", 1527, "_call_impl", "return forward_call(*args, **kwargs)"),
        (
            f"{TORCH}/nn/parallel/distributed.py",
            1515,
            "forward",
            "inputs, kwargs = self._pre_forward(*inputs, **kwargs)",
        ),
    ]
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, src in frames:
        out += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {src}"]
    return [
        *out,
        prefix + _REDUCTION,
        prefix + _MAKING_SURE,
        f"{prefix}Parameter indices which did not receive grad for rank {prefix[5:6] or 0}: 12 13",
    ]


def test_the_module_quoted_is_the_call_into_ddp_not_a_function_around_it(tmp_path: Path) -> None:
    # `criterion(model(images), labels)`: the DDP module is `model`, `criterion` only takes its output
    fix = top_failure(tmp_path, _log(_into_ddp_forward("loss = criterion(model(images), labels)"))).suggestion
    assert "'criterion'" not in fix and "of criterion" not in fix, fix
    assert "requires_grad_(False) on those parameters" in fix
    # a call alone on its line is still quoted
    fix = top_failure(tmp_path, _log(_into_ddp_forward("out = self.backbone(images)"))).suggestion
    assert "DDP-wrapped module 'self.backbone'" in fix, fix


def test_a_ranks_detail_lines_are_its_own_not_another_ranks_printed_between(tmp_path: Path) -> None:
    # two ranks' messages interleaved, each with its own unused set (a branch chosen per batch)
    lines = [
        "[rank1]:" + _REDUCTION,
        "[rank0]:" + _REDUCTION,
        "[rank1]:" + _MAKING_SURE,
        "[rank0]:" + _MAKING_SURE,
        "[rank0]:Parameters which did not receive grad for rank 0: aux_head.weight, aux_head.bias",
        "[rank0]:Parameter indices which did not receive grad for rank 0: 200 201",
        "[rank1]:Parameters which did not receive grad for rank 1: decoder.layers.3.mlp.weight",
        "[rank1]:Parameter indices which did not receive grad for rank 1: 77",
    ]
    found = diagnose_failures(tmp_path, _log(lines))
    fix = found[0].suggestion
    # rank 1's names never go with rank 0's indices, nor rank 0's names with rank 1's
    assert "decoder.layers.3.mlp.weight (parameter indices 200 201" not in fix, fix
    assert "aux_head.weight, aux_head.bias (parameter indices 77 " not in fix, fix
    assert "decoder.layers.3.mlp.weight (parameter indices 77 " in fix, fix
    assert "aux_head.weight, aux_head.bias (parameter indices 200 201 " in fix, fix


_WO_FIRST = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only "
    "if you trust the source of the checkpoint. "
)


def test_a_weights_only_refusal_the_program_retried_past_is_no_root_cause(tmp_path: Path) -> None:
    # a loader that tries weights_only=True first, logs torch's words and loads again with weights_only=False
    lines = [
        "2025-03-11 08:14:02,551 INFO resume: loading /data/runs/r7/ckpt_00400.pt",
        f"2025-03-11 08:14:03,010 WARNING strict load refused ({_WO_FIRST}), loading again with weights_only=False",
    ]
    lines += [
        f"2025-03-11 08:{15 + i // 60:02d}:{i % 60:02d},000 INFO step {400 + i} loss {3.1 - i * 0.002:.3f}"
        for i in range(120)
    ]
    lines.append("2025-03-11 09:20:00,000 INFO training done, wrote /data/runs/r7/ckpt_00520.pt")
    assert diagnose_failures(tmp_path, _log(lines)) == []
    # the same refusal as the exception that ended the process stays the finding
    died = [
        "Traceback (most recent call last):",
        '  File "/srv/exp/resume.py", line 31, in <module>',
        "    sd = torch.load(args.ckpt)",
        "_pickle.UnpicklingError: " + _WO_FIRST,
        "\tWeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar was not an allowed global "
        "by default.",
    ]
    found = top_failure(tmp_path, _log([*lines[:1], *died]))
    assert "weights_only" in found.summary and "numpy.core.multiarray.scalar" in found.suggestion
