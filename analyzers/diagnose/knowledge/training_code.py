"""Signature rows (knowledge/runtime_errors.py's themes): Python errors of the training code that only show once
it runs distributed, or once torch moves under it: a model attribute read on the parallel wrapper instead of the
model, a checkpoint torch.load's weights_only default now refuses, a module DDP cannot wrap because its parameters
are not materialised. Each would otherwise be 'fix the exception'; each row says which code to change and quotes
what the message names (the attribute and the wrapper, the refused global). Same fields as knowledge/signatures.py.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"
DS = "https://github.com/deepspeedai/DeepSpeed/blob/master/"

# ---- a model attribute read through a parallel wrapper ----------------------------------------------------------
# nn.Module.__getattr__ (torch/nn/modules/module.py) raises "'<class>' object has no attribute '<name>'" for what
# the object's own parameters, buffers and submodules lack. DistributedDataParallel and DataParallel (and their
# subclasses: mmcv's MMDistributedDataParallel / MMDataParallel, apex's DistributedDataParallel) keep the model as
# `.module` and do not pass attribute reads on: code that reads a model attribute works on one GPU and fails once
# the launcher (accelerate.prepare, Lightning, the script's own DDP) wraps the model.
_UNWRAPPING = r"\w*DataParallel(?<!FullyShardedDataParallel)"
# DeepSpeedEngine / PipelineEngine (deepspeed/runtime/engine.py __getattr__: 'Pass through attributes defined in the
# model') and FullyShardedDataParallel (torch/distributed/fsdp/fully_sharded_data_parallel.py, fairscale's: 'Forward
# missing attributes to the wrapped module') hand a read on to the wrapped model and raise only when it lacks the
# name too: unwrapping does not help there, the model has no such attribute.
_FORWARDING = r"DeepSpeedEngine|PipelineEngine|FullyShardedDataParallel"
# torch.compile's OptimizedModule (torch/_dynamo/eval_frame.py) passes instance reads on to _orig_mod; what fails
# on it is a lookup that skips __getattr__ (on the class: type(model).X, a method patched by name) or a read before
# _orig_mod is set.
_COMPILED = r"OptimizedModule"
# DeepSpeed >= 0.16 with a compiled module words it "None of DeepSpeedEngine, CompiledModuleWrapper, or the wrapped
# model has the attribute 'X'" (engine.py __getattr__)
_WRAPPER_ATTRIBUTE = (
    r"(?:'|None of )(?P<wrapper>" + _UNWRAPPING + "|" + _FORWARDING + "|" + _COMPILED + r")(?:' object has no "
    r"attribute|,.*? has the attribute) '(?P<attribute>[^']+)'"
)
# The frame that read it: the one right above nn.Module.__getattr__ (its source line may carry carets, 3.11+).
_READER = (
    r'(?m)^File "[^"\n]*", line \d+, in (?P<reader><?[\w.]+>?)\n(?P<reader_code>[^\n]*)\n(?:[\s~^]*\n)?'
    r'File "[^"\n]*torch/nn/modules/module\.py", line \d+, in __getattr__'
)
_READ_THERE = "{reader?The read is in @()}{reader_code?: '@'}{reader?. }"
_WRAPPER_REMEDY = (
    "The code reads '{attribute}' on the {wrapper|parallel wrapper} object, which keeps the model in its 'module' "
    "attribute and does not pass attribute reads on: it works on one GPU and fails once the model is wrapped. "
    + _READ_THERE
    + "Read it on the wrapped model: model.module.{attribute} (accelerate: accelerator.unwrap_model(model)."
    "{attribute}; Lightning / HF Trainer: the unwrapped model they keep), or keep a reference to the model from "
    "before wrapping for such reads."
)

_WRAPPER_ROWS: tuple[Signature, ...] = (
    row(
        "wrapped_model_attribute",
        ("DataParallel' object has no", "Engine' object has no", "OptimizedModule' object has no", "has the attribute"),
        _WRAPPER_ATTRIBUTE,
        era="all torch releases (nn.Module.__getattr__); DeepSpeed engines; torch >= 2.0 torch.compile",
        cause="application",
        meaning="The code read a model attribute on the parallel wrapper around the model, not on the model.",
        remedy=_WRAPPER_REMEDY,
        remedy_when=(
            (
                r"'(?:" + _FORWARDING + r")' object has no attribute|None of DeepSpeedEngine",
                "The {wrapper} passes attribute reads it cannot answer on to the wrapped model, so the model itself "
                "has no '{attribute}' either: unwrapping does not help. " + _READ_THERE + "Check the name against "
                "the model class the run builds (a config that builds another class, a renamed or removed "
                "attribute in the installed version of the model's library, a submodule that is frozen or created "
                "only in some modes), and read it where the model defines it.",
            ),
            (
                r"'" + _COMPILED + r"' object has no attribute",
                "torch.compile returned an OptimizedModule, and '{attribute}' was looked up on it in a way that "
                "skips its pass-through (on the class: type(model).{attribute}, a method patched by name, or "
                "before the wrapper is set up). " + _READ_THERE + "Read it on the module torch.compile was given: "
                "model._orig_mod.{attribute}, or compile in place (model.compile(), torch >= 2.2) so the object "
                "keeps its class, or compile only the submodules that need it.",
            ),
        ),
        reference=PT
        + "torch/nn/modules/module.py (__getattr__); "
        + PT
        + "torch/nn/parallel/distributed.py; "
        + DS
        + "deepspeed/runtime/engine.py (__getattr__); "
        + PT
        + "torch/_dynamo/eval_frame.py (OptimizedModule); "
        "https://github.com/kohya-ss/sd-scripts/issues/994",
        fields_re=_WRAPPER_ATTRIBUTE,
        traceback_re=_READER,
    ),
)

# ---- torch.load's weights_only default ---------------------------------------------------------------------------
# torch 2.6 made weights_only=True torch.load's default (torch/serialization.py UNSAFE_MESSAGE: "In PyTorch 2.6, we
# changed the default value of the `weights_only` argument in `torch.load` from `False` to `True`"); its restricted
# unpickler (torch/_weights_only_unpickler.py) refuses what is not a tensor, a container or an allowlisted type.
# torch.load re-raises its error as pickle.UnpicklingError("Weights only load failed. ...") (_get_wo_message: the
# two options, then "WeightsUnpickler error: <the unpickler's words>", then DOCS_MESSAGE "Check the documentation of
# torch.load to learn more about types accepted by default with weights_only <url>"). The unpickler's words across
# 2.4-2.9: "Unsupported global: GLOBAL a.b.C was not an allowed global by default. Please use
# `torch.serialization.add_safe_globals([C])` [or the `torch.serialization.safe_globals([C])` context manager] to
# allowlist this global if you trust this class/function.", "Trying to load unsupported GLOBAL a.b.C whose module
# a is blocked.", "Unsupported operand N", "Unsupported class a.b.C" (before 2.4), "Can only build Tensor,
# Parameter, OrderedDict or types allowlisted via `add_safe_globals`, but got <class>". Before 2.6 the same error
# comes only from an explicit weights_only=True. The 2.4-2.5 FutureWarning ("You are using `torch.load` with
# `weights_only=False` (the current default value)...") is a warning of a run that goes on: no row reads it.
# `any_named`: the message names what it refused; `never_allowed`: what no allowlist admits (a blocked module, an
# opcode the unpickler does not implement), where only weights_only=False loads the file
_REFUSED = (
    r"(?P<any_named>(?:GLOBAL (?=[\w.]+ was not an allowed global)|Unsupported class )(?P<refused_global>[\w.]+)|"
    r"(?P<never_allowed>GLOBAL (?P<blocked_global>[\w.]+) whose module (?P<blocked_module>[\w.]+) is blocked|"
    r"Unsupported operand (?P<operand>\S+)))|"
    r"types allowlisted via `?add_safe_globals`?, but got (?P<built_type>[^\n]+?)\.?$"
)
_WEIGHTS_ONLY_REMEDY = (
    "Since torch 2.6 torch.load loads with weights_only=True by default, and this checkpoint holds what that mode "
    "refuses{refused_global? (@)}{built_type? (@)}{blocked_global? (@, of a module it blocks)}{operand? (pickle "
    "operand @)}: the code that loads it predates torch 2.6 and calls torch.load without weights_only. For a file "
    "you trust: {never_allowed!allowlist the class before loading, torch.serialization.add_safe_globals([}"
    "{refused_global?@}{any_named!the classes the message names}{never_allowed!]) (or the "
    "torch.serialization.safe_globals([...]) context manager around the load), or }pass weights_only=False to "
    "that torch.load{never_allowed? (no allowlist admits this one)}; or use a release of the library that passes "
    "weights_only itself, or pin torch<2.6."
)

_WEIGHTS_ONLY_ROWS: tuple[Signature, ...] = (
    row(
        "torch_load_weights_only",
        ("Weights only load failed", "WeightsUnpickler error", "types accepted by default with weights_only"),
        (
            r"Weights only load failed",
            r"WeightsUnpickler error: ",
            # DOCS_MESSAGE, the error's last line: all an excerpt may keep of it
            r"Check the documentation of torch\.load to learn more about types accepted by default with weights_only",
        ),
        era="torch >= 2.6 by default (weights_only=True); torch 1.13-2.5 with an explicit weights_only=True",
        cause="configuration",
        kind="crash",
        meaning="torch.load's weights_only unpickler (the default since torch 2.6) refused an object in the "
        "checkpoint: the loading code predates that default.",
        remedy=_WEIGHTS_ONLY_REMEDY,
        reference=PT
        + "torch/serialization.py (_get_wo_message, UNSAFE_MESSAGE, DOCS_MESSAGE); "
        + PT
        + "torch/_weights_only_unpickler.py; https://pytorch.org/docs/stable/notes/serialization.html; "
        "https://github.com/Project-MONAI/research-contributions/issues/411",
        fields_re=_REFUSED,
        fields_after=6,
        fields_until=r"Traceback \(most recent call last\)|direct cause of the following exception",
    ),
)

# ---- a module DistributedDataParallel cannot wrap ----------------------------------------------------------------
# DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py): "Modules with uninitialized parameters can't
# be used with `DistributedDataParallel`. Run a dummy forward pass to correctly initialize the modules", raised when
# a parameter is an UninitializedParameter: a lazy module (nn.LazyLinear, LazyConv2d, ...) before its first forward,
# or a tensor subclass that reads as one (optimum-quanto's quantised weights under a PEFT adapter:
# bghira/SimpleTuner#644, blocked by the trainer in commit 8e2a644a2 with 'use --lora_type lycoris').
_QUANTISER = r"(?P<quantiser>\boptimum[.-]quanto\b|\b[\w-]*quanto\b|\btorchao\b)"

_UNINITIALIZED_ROWS: tuple[Signature, ...] = (
    row(
        "ddp_uninitialized_parameters",
        "uninitialized parameters can't be used",
        r"Modules with uninitialized parameters can't be used with `?DistributedDataParallel",
        era="torch >= 1.8 (DistributedDataParallel.__init__, lazy modules)",
        cause="configuration",
        kind="crash",
        meaning="DistributedDataParallel was given a model with parameters that are not materialised yet "
        "(UninitializedParameter): lazy modules before their first forward, or quantised weights that read as such.",
        remedy=(
            "DDP cannot wrap parameters whose shape is not known yet{quantiser? (the log shows @ quantisation)}. "
            "Lazy modules (nn.LazyLinear, nn.LazyConv2d, ...) take their shapes at the first forward: run one "
            "forward with a batch of the real shape before DistributedDataParallel (accelerator.prepare), or give "
            "the layers their sizes. A quantised base model (optimum-quanto weights under a PEFT LoRA) looks the "
            "same to DDP and is not supported by it: train on one GPU, without quantising the base model, or with "
            "an adapter type the trainer supports on several GPUs (SimpleTuner: --lora_type lycoris instead of "
            "base_model_precision quanto with PEFT LoRA); keep frozen base weights out of what DDP wraps."
        ),
        reference=PT + "torch/nn/parallel/distributed.py; "
        "https://pytorch.org/docs/stable/generated/torch.nn.modules.lazy.LazyModuleMixin.html; "
        "https://github.com/bghira/SimpleTuner/issues/644",
        context_re=_QUANTISER,
    ),
)

TRAINING_CODE_SIGNATURES: tuple[Signature, ...] = (*_WRAPPER_ROWS, *_WEIGHTS_ONLY_ROWS, *_UNINITIALIZED_ROWS)

# Rows whose error a program may catch and go on from: a loader that tries weights_only=True first and, refused, logs
# torch's words (str(e): 'Weights only load failed. ...', its 'WeightsUnpickler error:' line) and loads again with
# weights_only=False. Where the same process trains after the line it went past it (a note); where it does not, the
# error is the one it died at, whatever else failed after (reasoning/setting_refused.WENT_PAST_CODES).
CAUGHT_WENT_PAST_CODES = ("torch_load_weights_only",)
