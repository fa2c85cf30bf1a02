"""Op classes of the path's segments: the first rule whose pattern matches an op's name wins.

A data table, not code: add a row when a new kind of op shows up on paths under the wrong class.
Sources: PyTorch's profiler names (torch/autograd/profiler.py: `enumerate(DataLoader)#...`,
`Optimizer.step#...`, `autograd::engine::evaluate_function: ...`), CUDA runtime API names
(cudaLaunchKernel, cudaStreamSynchronize, ...), c10d's `c10d::<op>_` and gloo's `gloo:<op>`.
"""

from __future__ import annotations

import re

from scope.typed_cache import typed_lru_cache

CLASS_RULES: tuple[tuple[str, str], ...] = (
    (r"DataLoader|dataloader", "dataloader"),
    (r"Synchronize|cudaStreamWaitEvent|hipStreamWaitEvent", "sync"),
    # synchronous copies and sets: the host waits for them (cuda_sync.py)
    (r"^(cuda|hip)(Memcpy|Memset|Memcpy2D)$", "sync"),
    (r"^(cuda|hip)(Launch|LaunchKernel|GraphLaunch)|^cuLaunch", "launch"),
    (r"^(cuda|hip)Memcpy|^(cuda|hip)Memset", "memcpy_call"),
    (r"^(cuda|hip|cu)[A-Z]", "runtime"),
    (r"^(nccl|rccl)|^gloo:|^c10d::|^nccl:|all_reduce|allreduce|all_gather|reduce_scatter", "comm"),
    (r"^Optimizer\.|optimizer|\.step#", "optimizer"),
    (r"^autograd::engine|Backward", "backward"),
    (r"[Mm]emcpy|[Mm]emset", "memcpy"),
)
_COMPILED = tuple((re.compile(p), c) for p, c in CLASS_RULES)


@typed_lru_cache(maxsize=65536)
def op_class(name: str, on_gpu: bool = False) -> str:
    for pattern, cls in _COMPILED:
        if pattern.search(name):
            return cls
    return "kernel" if on_gpu else "cpu"
