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

import math
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


# the divisors are listed by trial up to sqrt(n): GPU counts are small, and a larger number (a misread line) gets
# no list rather than a million-step loop
_DIVISOR_TRIAL_LIMIT = 1 << 16


def _divisors(n: int, limit: int = 12) -> str:
    """'1, 2, 4, 8': n's divisors (the first `limit`, n itself last when they are cut); '' past the trial limit."""
    root = math.isqrt(n)
    if root > _DIVISOR_TRIAL_LIMIT:
        return ""
    small = [k for k in range(1, root + 1) if n % k == 0]
    found = small + [n // k for k in reversed(small) if n // k != k]
    if len(found) > limit:
        found = [*found[: limit - 1], n]
    return ", ".join(str(k) for k in found)


def _ratio(a: int, b: int) -> str:
    """a / b as the log's reader would write it ('3.5'); quotient and remainder where a float cannot hold it."""
    try:
        return f"{a / b:g}"
    except OverflowError:
        return f"{a // b} remainder {a % b}"


def _fit(names: str, n: int, w: int) -> dict[str, str]:
    """The product N of the sizes NAMES against the world size W: how far off it is and which counts fit. Keys
    start with '_': they are the remedy's words, not the finding's metrics (words/findings.py). Nothing where N
    divides W: the check fails only where it does not, so such numbers were misread (a factor the line gives in
    another shape), and the sums would be false."""
    if w % n == 0:
        return {}
    if n > w:
        arith = f"{names} = {n} > W = {w} GPUs"
        shrink = f"{n} / {w}: {n // w}x smaller" if n % w == 0 else ""
        launch = f"{n} GPUs (or a multiple of {n})"
    else:
        arith = f"W = {w} GPUs is not a multiple of {names} = {n} ({w} = {w // n} x {n} + {w % n})"
        shrink = ""
        launch = f"a multiple of {n} GPUs ({(w // n) * n} or {(w // n + 1) * n})"
    return {"_arith": arith, "_shrink": shrink, "_launch": launch, "_fits": _divisors(w)}


def expert_layout(d: dict[str, Any]) -> dict[str, str]:
    w, n = _int(d.get("world")), _int(d.get("size"))
    return _fit("ETP x EP x PP", n, w) if w and n else {}


def expert_data_parallel(d: dict[str, Any]) -> dict[str, str]:
    dp = _int(d.get("dp"))
    return {"_fits": _divisors(dp)} if dp else {}


# a size the dense check names: 'tensor_model_parallel_size (4)' (Megatron Core), 'tensor parallel size (4)'
# (megatron/arguments.py before 2023); a size given another way ('total_pipelining (encoder_... + ...=2)', mid-2024)
# is not read, and _fit then finds the product divides the world and says nothing
_FACTOR = r"[_ ](?:model[_ ])?parallel[_ ]size`? \((\d+)\)"


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
        if (f := re.search(r"(?<![a-z])" + word + _FACTOR, check))
    ]
    if factors:
        n = math.prod(v for _, v in factors)
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
    return {"_arith": f"{heads} {what} / TP {tp} = {_ratio(heads, tp)}", "_fits": _divisors(heads)}


def layers_split(d: dict[str, Any]) -> dict[str, str]:
    """The layers against the pipeline size, or (a stage's, a rank's layers) against the virtual pipeline size."""
    layers, by = _int(d.get("layers")), _int(d.get("by"))
    if not layers or not by:
        return {}
    size = "VPP " if "virtual" in str(d.get("by_name") or "").lower() else ""
    return {"_arith": f"{layers} layers / {size}{by} = {_ratio(layers, by)}", "_fits": _divisors(layers)}


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

_TP_FLAGS = "Megatron --tensor-model-parallel-size, NeMo tensor_model_parallel_size"

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
            "{_arith|The product expert_tensor_parallel_size x expert_model_parallel_size x "
            "pipeline_model_parallel_size does not divide the world size}: choose sizes whose product divides "
            "{world|the world size}{_shrink| } (it can be {_fits|a divisor of the GPUs}), e.g. lower "
            "tensor_model_parallel_size (the expert tensor size defaults to it) / expert_model_parallel_size / "
            "pipeline_model_parallel_size; or launch {_launch|as many GPUs as the product} (nodes x GPUs per node). "
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
            "expert_model_parallel_size: set --expert-model-parallel-size to one of {_fits|its divisors}, or change "
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
        ("must be a multiple of tensor_model_parallel_size", "must be a multiple or divisor of tensor_model_parallel"),
        r"(?:num_attention_heads|num_query_groups) \(\d+\) must be a multiple (?:or divisor )?of "
        r"tensor_model_parallel_size",
        era="Megatron Core (TransformerConfig.__post_init__), NeMo 2.0 / Megatron-Bridge through it",
        cause="configuration",
        meaning="Tensor parallelism splits the attention heads (and query groups) evenly across its ranks, and "
        "this tensor parallel size does not divide the model's count.",
        remedy=(
            "{_arith|The heads do not split evenly across tensor parallel}: use a tensor parallel size that divides "
            "{heads|the model's head count} ({_fits|its divisors}) - " + _TP_FLAGS + " - and spread the other GPUs "
            "over data / pipeline parallel."
        ),
        # Megatron Core since Dec 2025 (f7dfb99795) lets TP exceed the query groups, replicating them
        remedy_when=(
            (
                r"must be a multiple or divisor of",
                "{_arith|The query groups and tensor parallel do not divide one another}: use a tensor parallel "
                "size that divides {heads|the query groups} ({_fits|its divisors}) or is a multiple of {heads|it} "
                "(each group then replicated on TP / {heads|G} ranks) - " + _TP_FLAGS + ".",
            ),
        ),
        reference=MEGATRON_TC,
        fields_re=r"(?P<what>num_attention_heads|num_query_groups) \((?P<heads>\d+)\) must be a multiple "
        r"(?:or divisor )?of tensor_model_parallel_size \((?P<tp>\d+)\)",
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
            # arguments.py: 'should' in every release ('the pipeline parallel size' before 2023), 'must be divisible
            # by number of layers per virtual' until the uneven-VPP change (ef490839e8, 2024-11)
            r"(?i)number of layers should be divisible by the pipeline(?:-model-| )parallel size",
            r"(?i)number of layers per pipeline stage must be divisible (?:by )?number of layers per virtual "
            r"pipeline stage",
        ),
        era="Megatron Core (TransformerConfig's pipeline split), megatron/training/arguments.py, NeMo 2.0 / "
        "Megatron-Bridge through them",
        cause="configuration",
        meaning="The pipeline split gives each stage (and each virtual stage) the same number of layers, and the "
        "model's layer count does not divide by the pipeline (or virtual pipeline) size.",
        remedy=(
            "{_arith|The layers do not split evenly across the pipeline stages}: use a pipeline_model_parallel_size "
            "(x virtual pipeline size) that divides {layers|the layer count} ({_fits|its divisors}) - Megatron "
            "--pipeline-model-parallel-size / --num-layers-per-virtual-pipeline-stage, NeMo "
            "pipeline_model_parallel_size / virtual_pipeline_model_parallel_size - or set an uneven split "
            "(--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, NeMo "
            "num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage, or "
            "account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split)."
        ),
        # a stage's (or a pipeline rank's) layers against the virtual pipeline size: that size is the one to change
        remedy_when=(
            (
                r"(?i)must be divisible\s*(?:by\s*)?(?:number of layers per )?virtual",
                "{_arith|A pipeline stage's layers do not split evenly across its virtual stages}: use a virtual "
                "pipeline size that divides {layers|that stage's layer count} ({_fits|its divisors}) - Megatron "
                "--num-virtual-stages-per-pipeline-rank / --num-layers-per-virtual-pipeline-stage, NeMo "
                "virtual_pipeline_model_parallel_size - or give that stage a multiple of it in layers "
                "(--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers, NeMo "
                "num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage), or change "
                "pipeline_model_parallel_size so that each stage's share divides by it.",
            ),
        ),
        reference=MEGATRON_TC + "; " + MEGATRON_ARGS,
        fields_re=r"(?i)(?P<layers>\d+)\s*\)?\s*(?:[^\n\d]{0,120}?)must be divisible\s*by\s*"
        r"(?P<by_name>[^\n\d]{0,80}?)(?P<by>\d+)",
        derive="layers_split",
    ),
)
