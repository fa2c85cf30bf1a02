"""Serving engines whose collectives run inside CUDA graphs, as data: a collective timeout in their workers with
no rank busy elsewhere and no error of its own can be a graph-captured collective that deadlocked.

Sources: NCCL's environment documentation (NCCL_GRAPH_MIXING_SUPPORT: graphs of several communicators launched
from one thread can deadlock; https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html), vLLM's
engine arguments (--enforce-eager: no CUDA graphs; --disable-custom-all-reduce), vllm-project/vllm#2770 (the
reporter's hang in ALLREDUCE / GATHER of RayWorkerVllm workers went away with enforce_eager).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Engine:
    name: str
    needles: tuple[str, ...]  # one of these substrings must be in the log before the pattern is tried
    pattern: re.Pattern[str]  # words only this engine's workers print
    timeout_remedy: str


ENGINES: tuple[Engine, ...] = (
    Engine(
        "vLLM",
        ("RayWorker", "vllm", "vLLM"),
        re.compile(r"RayWorkerVllm|RayWorkerWrapper|vllm[./]|\bvLLM\b"),
        "vLLM captures its collectives in CUDA graphs by default, and a collective that times out with no "
        "rank busy elsewhere can be a graph-captured NCCL call that deadlocked (NCCL's CUDA-graph mixing): run "
        "with enforce_eager=True (--enforce-eager, no CUDA graphs) to confirm, or keep graphs with "
        "NCCL_GRAPH_MIXING_SUPPORT=0; if it persists, --disable-custom-all-reduce.",
    ),
    Engine(
        "SGLang",
        ("sglang", "SGLang"),
        re.compile(r"\bsglang[./]|\bSGLang\b"),
        "SGLang captures its collectives in CUDA graphs by default, and a collective that times out with no "
        "rank busy elsewhere can be a graph-captured NCCL call that deadlocked: run with --disable-cuda-graph "
        "to confirm, or keep graphs with NCCL_GRAPH_MIXING_SUPPORT=0; if it persists, "
        "--disable-custom-all-reduce.",
    ),
)


def engine_of(text: str) -> Engine | None:
    """The serving engine whose workers wrote this log, if its words are in it."""
    return next((e for e in ENGINES if any(n in text for n in e.needles) and e.pattern.search(text)), None)
