"""Parallel-layout checks whose remedy does the arithmetic with the log's numbers: the expert layout of Megatron
Core / NeMo 2.0 / Megatron-Bridge (expert tensor x expert model x pipeline parallel against the world size), the
attention heads against tensor parallel, the layers against pipeline (and virtual pipeline) parallel. Each row names
a `derive` function (DERIVE below) that reads the message's numbers and says the product, how far it is from the
world size and which counts would fit; readers/signature_scan.py adds its fields before the remedy is filled.
The dense world-size check's rows are in parallel_layout.py; its remedy takes the same arithmetic ('dense').

Sources (where each message is raised):
- Megatron-LM megatron/core/parallel_state.py initialize_model_parallel: 'world_size (W) is not divisible by
  expert_tensor_model_pipeline_parallel size (N)' (N = expert_tensor_parallel_size x expert_model_parallel_size x
  pipeline_model_parallel_size; 'decoder world_size (W)' from MoE parallel folding, 7f22e210cd 2024-11, until the
  encoder split was removed, b600e38d7b 2025-07); before folding 'data_parallel_size (D) is not divisible by
  expert_model_parallel_size' (e8c22152ea 2023-10). NeMo nemo/lightning/megatron_init.py
  fake_initialize_model_parallel keeps the 'decoder world_size' wording; Megatron-Bridge's 'is not divisible by
  expert_tensor_model_pipeline size (N)'.
- megatron/core/transformer/transformer_config.py: 'num_attention_heads (H) must be a multiple of
  tensor_model_parallel_size (T).', 'num_query_groups (G) must be a multiple of tensor_model_parallel_size (T).';
  the pipeline split: 'number of middle layers: L must be divisible by middle pipeline_model_parallel_size P',
  'num_layers: L after enable...must be divisible by pipeline_model_parallel_size P', '... must be divisible by
  virtual pipeline parallel degree V' (f-strings joined without spaces); megatron/training/arguments.py: 'number
  of layers of the model must be divisible pipeline model parallel size', 'Number of layers should be divisible by the
  pipeline-model-parallel size', 'number of layers per pipeline stage must be divisible number of layers per
  virtual pipeline stage'.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

MEGATRON_PS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/parallel_state.py"
MEGATRON_TC = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/core/transformer/transformer_config.py"
MEGATRON_ARGS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/arguments.py"
NEMO_INIT = "https://github.com/NVIDIA/NeMo/blob/main/nemo/lightning/megatron_init.py"
NEMO_DSV2_FIX = "https://github.com/NVIDIA/NeMo/pull/12550"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _divisors(n: int, limit: int = 12) -> str:
    """'1, 2, 4, 8' (the first `limit` divisors of n; n itself last when they are cut)."""
    found = [k for k in range(1, min(n, 1 << 20) + 1) if n % k == 0]
    if len(found) > limit:
        found = [*found[: limit - 1], n]
    return ", ".join(str(k) for k in found)


def _fit(names: str, n: int, w: int) -> dict[str, str]:
    """The product N of the sizes NAMES against the world size W: how far off it is and which counts fit."""
    if n > w:
        arith = f"{names} = {n} > W = {w} GPUs"
        shrink = f"{n} / {w}: {n // w}x smaller" if n % w == 0 else ""
        launch = f"{n} GPUs (or a multiple of {n})"
    else:
        arith = f"W = {w} GPUs is not a multiple of {names} = {n} ({w} = {w // n} x {n} + {w % n})"
        shrink = ""
        launch = f"a multiple of {n} GPUs ({(w // n) * n or n} or {(w // n + 1) * n})"
    return {"arith": arith, "shrink": shrink, "launch": launch, "fits": _divisors(w)}


def expert_layout(d: dict[str, Any]) -> dict[str, str]:
    w, n = _int(d.get("world")), _int(d.get("size"))
    return _fit("ETP x EP x PP", n, w) if w and n else {}


def expert_data_parallel(d: dict[str, Any]) -> dict[str, str]:
    dp = _int(d.get("dp"))
    return {"fits": _divisors(dp)} if dp else {}


def dense_layout(d: dict[str, Any]) -> dict[str, str]:
    """The dense check's words (parallel_layout.py's 'check' field): the factors where the message names them
    (older Megatron, the forks: 'tensor_model_parallel_size (4) x pipeline_model_parallel_size (2)'), else the
    product it states ('is not divisible by 16'). vLLM's 'is not equal to' needs the product itself: no fit."""
    check = str(d.get("check") or "")
    m = re.search(r"world[_ ]size`? \((\d+)\) is not divisible by\s*(\d+)?", check)
    if not m:
        return {}
    w = int(m.group(1))
    factors = [
        (label, int(f.group(1)))
        for label, word in (("TP", "tensor"), ("PP", "pipeline"), ("CP", "context"), ("SP", "sequence"))
        if (f := re.search(word + r"[_ ]\w*?parallel[_ ]size`? \((\d+)\)", check))
    ]
    if factors:
        n = 1
        for _, v in factors:
            n *= v
        names = " x ".join(label for label, _ in factors) + " = " + " x ".join(str(v) for _, v in factors)
    elif m.group(2):
        n, names = int(m.group(2)), "TP x PP x CP"
    else:
        return {}
    return _fit(names, n, w) if w and n else {}


def heads_split(d: dict[str, Any]) -> dict[str, str]:
    heads, tp = _int(d.get("heads")), _int(d.get("tp"))
    if not heads or not tp:
        return {}
    what = d.get("what") or "attention heads"
    return {"heads": str(heads), "arith": f"{heads} {what} / TP {tp} = {heads / tp:g}", "fits": _divisors(heads)}


def layers_split(d: dict[str, Any]) -> dict[str, str]:
    layers, by = _int(d.get("layers")), _int(d.get("by"))
    if not layers or not by:
        return {}
    return {"arith": f"{layers} layers / {by} = {layers / by:g}", "fits": _divisors(layers)}


DERIVE: dict[str, Callable[[dict[str, Any]], dict[str, str]]] = {
    "expert_layout": expert_layout,
    "expert_data_parallel": expert_data_parallel,
    "dense_layout": dense_layout,
    "heads_split": heads_split,
    "layers_split": layers_split,
}

_SIZES = (
    "Megatron flags --tensor-model-parallel-size / --pipeline-model-parallel-size / --expert-model-parallel-size / "
    "--expert-tensor-parallel-size; NeMo 2.0 recipe fields (trainer.strategy) tensor_model_parallel_size, "
    "pipeline_model_parallel_size, expert_model_parallel_size, expert_tensor_parallel_size"
)

LAYOUT_ARITHMETIC_SIGNATURES: tuple[Signature, ...] = (
    row(
        "expert_layout_world_size",
        "expert_tensor_model_pipeline",
        r"world_size \(\d+\) is not divisible by expert_tensor_model_pipeline(?:_parallel)? size \(\d+\)",
        era="Megatron Core >= 0.10 (MoE parallel folding; 'decoder world_size' until mid-2025), NeMo 2.0 "
        "(megatron_init.fake_initialize_model_parallel), Megatron-Bridge",
        cause="configuration",
        meaning="The expert layout does not fit the ranks launched: expert tensor x expert model x pipeline "
        "parallel size must divide the world size, so the expert groups cannot be built.",
        remedy=(
            "{arith|The product expert_tensor_parallel_size x expert_model_parallel_size x "
            "pipeline_model_parallel_size does not divide the world size}: choose sizes whose product divides "
            "{world|the world size}{shrink| } (it can be {fits|a divisor of the GPUs}), e.g. lower "
            "tensor_model_parallel_size (the expert tensor size defaults to it) / expert_model_parallel_size / "
            "pipeline_model_parallel_size; or launch {launch|as many GPUs as the product} (nodes x GPUs per node). "
            "Settings: " + _SIZES + "."
        ),
        reference=MEGATRON_PS + "; " + NEMO_INIT + "; " + NEMO_DSV2_FIX,
        fields_re=r"world_size \((?P<world>\d+)\) is not divisible by expert_tensor_model_pipeline(?:_parallel)? "
        r"size \((?P<size>\d+)\)",
        derive="expert_layout",
    ),
    row(
        "expert_parallel_data_size",
        "is not divisible by expert_model_parallel_size",
        r"data_parallel_size \(\d+\) is not divisible by expert_model_parallel_size",
        era="Megatron Core 0.4 to 0.9 (initialize_model_parallel before MoE parallel folding), its forks",
        cause="configuration",
        meaning="Expert parallelism was laid inside data parallelism: the data-parallel size (world / (TP x PP x "
        "CP)) must be a multiple of expert_model_parallel_size.",
        remedy=(
            "data_parallel_size {dp|D} = world size / (TP x PP x CP) is not a multiple of "
            "expert_model_parallel_size: set --expert-model-parallel-size to one of {fits|its divisors}, or change "
            "TP / PP / CP or the GPUs launched so that the data-parallel size is a multiple of it. Settings: "
            + _SIZES
            + "."
        ),
        reference=MEGATRON_PS,
        fields_re=r"data_parallel_size \((?P<dp>\d+)\) is not divisible by expert_model_parallel_size",
        derive="expert_data_parallel",
    ),
    # Megatron's wording alone: vLLM's 'Total number of attention heads (H) must be divisible by tensor parallel
    # size (T)' keeps framework_config.py's reading (framework_setting_refused), which quotes it
    row(
        "attention_heads_tensor_parallel",
        "must be a multiple of tensor_model_parallel_size",
        r"(?:num_attention_heads|num_query_groups) \(\d+\) must be a multiple of tensor_model_parallel_size",
        era="Megatron Core (TransformerConfig.__post_init__), NeMo 2.0 / Megatron-Bridge through it",
        cause="configuration",
        meaning="Tensor parallelism splits the attention heads (and query groups) evenly across its ranks, and "
        "this tensor parallel size does not divide the model's count.",
        remedy=(
            "{arith|The heads do not split evenly across tensor parallel}: use a tensor parallel size that divides "
            "{heads|the model's head count} ({fits|its divisors}) - Megatron --tensor-model-parallel-size, NeMo "
            "tensor_model_parallel_size - and spread the other GPUs over data / pipeline parallel."
        ),
        reference=MEGATRON_TC,
        fields_re=r"(?P<what>num_attention_heads|num_query_groups) \((?P<heads>\d+)\) must be a multiple of "
        r"tensor_model_parallel_size \((?P<tp>\d+)\)",
        derive="heads_split",
    ),
    row(
        "layers_pipeline_split",
        ("must be divisible", "should be divisible by the pipeline"),
        (
            r"(?i)(?:num_layers|number of (?:middle )?layers|layers at (?:first|last|middle) stage|layers on each "
            r"(?:middle )?pipeline rank)[^\n]{0,160}?must be divisible\s*by\s*(?:the )?(?:middle )?(?:pipeline|"
            r"virtual)",
            r"number of layers of the model must be divisible pipeline model parallel size",
            r"Number of layers should be divisible by the pipeline-model-parallel size",
            r"number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage",
        ),
        era="Megatron Core (TransformerConfig's pipeline split), megatron/training/arguments.py, NeMo 2.0 / "
        "Megatron-Bridge through them",
        cause="configuration",
        meaning="The pipeline split gives each stage (and each virtual stage) the same number of layers, and the "
        "model's layer count does not divide by the pipeline (or virtual pipeline) size.",
        remedy=(
            "{arith|The layers do not split evenly across the pipeline stages}: use a pipeline_model_parallel_size "
            "(x virtual pipeline size) that divides {layers|the layer count} ({fits|its divisors}) - Megatron "
            "--pipeline-model-parallel-size / --num-layers-per-virtual-pipeline-stage, NeMo "
            "pipeline_model_parallel_size / virtual_pipeline_model_parallel_size - or set an uneven split "
            "(--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, NeMo "
            "num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage, or "
            "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split)."
        ),
        reference=MEGATRON_TC + "; " + MEGATRON_ARGS,
        fields_re=r"(?i)(?P<layers>\d+)\s*\)?\s*(?:[^\n\d]{0,120}?)must be divisible\s*by\s*[^\n\d]{0,80}?"
        r"(?P<by>\d+)",
        derive="layers_split",
    ),
)
