"""Python-level failures of distributed training that read as 'fix the exception' before: a model attribute read on
the parallel wrapper, torch.load's weights_only default refusing a checkpoint, a module DDP cannot wrap because its
parameters are not materialised, and DDP's unused parameters with what the log names (knowledge/training_code.py,
runtime_process_group.py). Lines written here in the emitting programs' formats, not copied from any held-out log."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

TORCH = "/opt/venv/lib/python3.11/site-packages/torch"


def _traceback(*frames: tuple[str, int, str, str], prefix: str = "") -> list[str]:
    lines = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines += [f'{prefix}  File "{path}", line {line}, in {func}', f"{prefix}    {code}"]
    return lines


def _log(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


# ---- a model attribute read on the parallel wrapper ---------------------------------------------------------------


def _attribute_error(wrapper: str, attribute: str, prefix: str = "[rank1]:") -> str:
    return _log(
        [
            f"{prefix}[W1203 10:02:11.123 init.cpp:12] starting epoch 0",
            *_traceback(
                ("/home/u/proj/train.py", 212, "<module>", "main(cfg)"),
                ("/home/u/proj/train.py", 188, "evaluate", "out = model.generate(ids, max_new_tokens=64)"),
                (f"{TORCH}/nn/modules/module.py", 1931, "__getattr__", "raise AttributeError("),
                prefix=prefix,
            ),
            f"{prefix}AttributeError: '{wrapper}' object has no attribute '{attribute}'",
        ]
    )


def test_an_attribute_read_on_ddp_quotes_the_attribute_the_reader_and_the_unwrap(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _attribute_error("DistributedDataParallel", "generate"))
    assert found.kind == "crash"
    assert "model.module.generate" in found.suggestion
    assert "accelerator.unwrap_model(model).generate" in found.suggestion
    assert "evaluate()" in found.suggestion and "model.generate(ids" in found.suggestion
    assert "Fix the exception" not in found.suggestion


def test_a_data_parallel_subclass_reads_the_same(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _attribute_error("MMDistributedDataParallel", "train_step", prefix=""))
    assert "model.module.train_step" in found.suggestion


def test_a_wrapper_that_passes_reads_on_says_the_model_lacks_it(tmp_path: Path) -> None:
    # DeepSpeedEngine / FSDP hand a read on to the model: the model itself has no such attribute
    for wrapper in ("DeepSpeedEngine", "FullyShardedDataParallel"):
        found = top_failure(tmp_path, _attribute_error(wrapper, "gradient_checkpointing_enable"))
        assert "model itself has no 'gradient_checkpointing_enable'" in found.suggestion
        assert "model.module." not in found.suggestion


def test_torch_compiles_wrapper_points_at_orig_mod(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _attribute_error("OptimizedModule", "forward_orig", prefix=""))
    assert "model._orig_mod.forward_orig" in found.suggestion


def test_an_attribute_error_on_another_class_is_no_wrapper_finding(tmp_path: Path) -> None:
    for cls in ("NoneType", "LlamaForCausalLM", "DataLoader"):
        found = top_failure(tmp_path, _attribute_error(cls, "generate", prefix=""))
        assert "wrapper" not in found.summary and "unwrap_model" not in found.suggestion
    # the same traceback on the wrapper is the wrapper's finding
    assert "unwrap_model" in top_failure(tmp_path, _attribute_error("DataParallel", "generate")).suggestion


# ---- torch.load's weights_only default -------------------------------------------------------------------------


def _weights_only_error(unpickler: str, prefix: str = "[rank0]: ") -> list[str]:
    return [
        *_traceback(
            ("/srv/job/scripts/train.py", 77, "build", "state = torch.load(ckpt_path, map_location='cpu')"),
            (
                f"{TORCH}/serialization.py",
                1524,
                "load",
                "raise pickle.UnpicklingError(_get_wo_message(str(e))) from None",
            ),
            prefix=prefix,
        ),
        f"{prefix}_pickle.UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have "
        "two options, do those steps only if you trust the source of the checkpoint. ",
        f"{prefix}\t(1) In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
        "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but "
        "it can result in arbitrary code execution. Do it only if you got the file from a trusted source.",
        f"{prefix}\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
        "following error message.",
        f"{prefix}\tWeightsUnpickler error: {unpickler}",
        f"{prefix}",
        f"{prefix}Check the documentation of torch.load to learn more about types accepted by default with "
        "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.",
    ]


_GLOBAL = (
    "Unsupported global: GLOBAL omegaconf.dictconfig.DictConfig was not an allowed global by default. Please use "
    "`torch.serialization.add_safe_globals([DictConfig])` or the `torch.serialization.safe_globals([DictConfig])` "
    "context manager to allowlist this global if you trust this class/function."
)


def test_a_refused_global_is_quoted_in_add_safe_globals(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log(_weights_only_error(_GLOBAL)))
    assert found.kind == "crash"
    assert "add_safe_globals([omegaconf.dictconfig.DictConfig])" in found.suggestion
    assert "weights_only=False" in found.suggestion and "torch<2.6" in found.suggestion


def test_the_weights_only_error_stays_the_root_under_a_wrapper_that_reraises_it(tmp_path: Path) -> None:
    lines = [
        *_weights_only_error(_GLOBAL, prefix=""),
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        *_traceback(
            ("/srv/job/scripts/train.py", 30, "run", "net = cfg.resolve('network')"),
            ("/srv/lib/config/item.py", 91, "evaluate", 'raise RuntimeError(f"Failed to evaluate {self}") from e'),
        ),
        "RuntimeError: Failed to evaluate Expression: $torch.load(@ckpt)",
    ]
    found = top_failure(tmp_path, _log(lines))
    assert "weights_only" in found.summary
    assert "add_safe_globals([omegaconf.dictconfig.DictConfig])" in found.suggestion


def test_an_excerpt_with_only_the_errors_last_line_is_still_weights_only(tmp_path: Path) -> None:
    tail = _weights_only_error(_GLOBAL)[-1]
    lines = [tail, *_traceback(("/srv/a.py", 3, "<module>", "main()")), "RuntimeError: could not build the model"]
    found = top_failure(tmp_path, _log(lines))
    assert "weights_only=True" in found.suggestion


def test_a_blocked_module_and_an_operand_are_quoted(tmp_path: Path) -> None:
    blocked = "Trying to load unsupported GLOBAL posix.system whose module posix is blocked."
    found = top_failure(tmp_path, _log(_weights_only_error(blocked)))
    assert "posix.system, of a module it blocks" in found.suggestion
    assert "no allowlist admits" in found.suggestion and "add_safe_globals" not in found.suggestion
    found = top_failure(tmp_path, _log(_weights_only_error("Unsupported operand 149")))
    assert "pickle operand 149" in found.suggestion


def test_the_future_warning_of_a_healthy_run_stays_quiet(tmp_path: Path) -> None:
    warning = (
        f"{TORCH}/serialization.py:1040: FutureWarning: You are using `torch.load` with `weights_only=False` (the "
        "current default value), which uses the default pickle module implicitly. It is possible to construct "
        "malicious pickle data which will execute arbitrary code during unpickling. In a future release, the "
        "default value for `weights_only` will be flipped to `True`. Arbitrary objects will no longer be allowed "
        "to be loaded via this mode unless they are explicitly allowlisted by the user via "
        "`torch.serialization.add_safe_globals`. We recommend you start setting `weights_only=True` for any use "
        "case where you don't have full control of the loaded file."
    )
    lines = [warning, "  checkpoint = torch.load(path, map_location='cpu')"]
    lines += [f"step {i} loss {2.5 - i * 0.01:.3f}" for i in range(1, 40)]
    assert diagnose_failures(tmp_path, _log(lines)) == []
    # the error of the default it warns about, in the same run, is the finding
    found = top_failure(tmp_path, _log([*lines, *_weights_only_error(_GLOBAL, prefix="")]))
    assert "weights_only" in found.summary


# ---- a module DDP cannot wrap ------------------------------------------------------------------------------------

_UNINITIALIZED = (
    "RuntimeError: Modules with uninitialized parameters can't be used with `DistributedDataParallel`. Run a dummy "
    "forward pass to correctly initialize the modules"
)


def test_uninitialized_parameters_name_the_dummy_forward(tmp_path: Path) -> None:
    lines = [
        *_traceback(
            ("/work/fit.py", 40, "main", "model = DDP(model, device_ids=[local_rank])"),
            (f"{TORCH}/nn/parallel/distributed.py", 784, "__init__", "self._log_and_throw("),
        ),
        _UNINITIALIZED,
    ]
    found = top_failure(tmp_path, _log(lines))
    assert found.kind == "crash"
    assert "forward with a batch of the real shape before DistributedDataParallel" in found.suggestion
    assert "Fix the exception" not in found.suggestion


def test_uninitialized_parameters_after_a_quantised_base_quote_the_quantiser(tmp_path: Path) -> None:
    lines = ["2024-08-20 11:02:33 INFO Quantising transformer with optimum.quanto: qfloat8", _UNINITIALIZED]
    found = top_failure(tmp_path, _log(lines))
    assert "the log shows optimum.quanto quantisation" in found.suggestion


# ---- DDP's unused parameters, with what the log names -------------------------------------------------------------

_REDUCTION = (
    "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error "
    "indicates that your module has parameters that were not used in producing loss. You can enable unused "
    "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by "
)


def _unused(prefix: str, checkpointed: bool = False, names: bool = True) -> list[str]:
    frames = [
        ("/code/train.py", 301, "train_step", "logits = self.student(batch['pixels'])"),
        (f"{TORCH}/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{TORCH}/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        (
            f"{TORCH}/nn/parallel/distributed.py",
            1633,
            "forward",
            "inputs, kwargs = self._pre_forward(*inputs, **kwargs)",
        ),
    ]
    if checkpointed:
        frames.insert(1, (f"{TORCH}/utils/checkpoint.py", 488, "checkpoint", "return CheckpointFunction.apply("))
    out = [*_traceback(*frames, prefix=prefix), prefix + _REDUCTION]
    out.append(prefix + "making sure all `forward` function outputs participate in calculating loss. ")
    if names:
        out.append(prefix + "Parameters which did not receive grad for rank 2: head.proj.weight, head.proj.bias")
    out.append(prefix + "Parameter indices which did not receive grad for rank 2: 118 119")
    return out


def test_unused_parameters_quote_the_names_indices_and_the_wrapped_module(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log(_unused("[rank2]: ")))
    assert "head.proj.weight, head.proj.bias" in found.suggestion
    assert "118 119" in found.suggestion
    assert "'self.student'" in found.suggestion
    assert "requires_grad_(False)" in found.suggestion and "find_unused_parameters=True" in found.suggestion
    assert "static_graph" not in found.suggestion  # no checkpointing frame in this traceback


def test_unused_parameters_under_checkpointing_offer_static_graph(tmp_path: Path) -> None:
    found = top_failure(tmp_path, _log(_unused("", checkpointed=True, names=False)))
    assert "static_graph=True" in found.suggestion and "torch/utils/checkpoint.py" in found.suggestion
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL names the parameters" in found.suggestion
