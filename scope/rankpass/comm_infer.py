"""Kernels that look like communication without being in the catalog or a user rule.

A GPU kernel is counted as communication with confidence `inferred` (family `inferred` in the step
budget) when both hold:

- its own name says so: a token of a collective (all_reduce / allreduce, all_gather, reduce_scatter,
  all_to_all / alltoall, multimem, nvshmem) anywhere in its identifier, or its identifier (template
  arguments and a trailing `kernel` / `impl` / number left out) ending in dispatch, combine, send, recv
  or barrier (so `get_dispatch_layout` and `dispatch_copy_epilogue` stay compute);
- its structure says so: it runs on a side stream (not the stream that carries most of the rank's
  compute) or is launched from inside a communication op on the host (one with a collective op).

Inductor's fused kernels (`triton_*`) carry op names of the graph they fuse and are never inferred.
The report names each inferred kernel with the `--comm-kernel` rule that makes it certain.
"""

from __future__ import annotations

import re

import numpy as np

from scope.typed_cache import typed_lru_cache

STRONG = re.compile(r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|multimem|nvshmem", re.IGNORECASE)
WEAK_ENDINGS = ("dispatch", "combine", "send", "recv", "barrier")
_TRAILING = re.compile(r"(?:_?(?:kernel|impl|\d+))+$", re.IGNORECASE)
_TEMPLATE = re.compile(r"<[^<>]*>")


def identifier(name: str) -> str:
    """`void ns::sub::my_dispatch_kernel<8, true>(int*, ...)` -> `my_dispatch_kernel`."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    for _ in range(6):  # nested template arguments
        stripped = _TEMPLATE.sub("", text)
        if stripped == text:
            break
        text = stripped
    text = text.split("(", 1)[0].strip()
    return text.rsplit("::", 1)[-1]


# Every name that looks like communication holds one of these (lower-cased): a substring test skips the rest.
_WORDS = ("reduce", "gather", "scatter", "all", "multimem", "nvshmem", "dispatch", "combine", "send", "recv", "barrier")


@typed_lru_cache(maxsize=1 << 16)
def looks_like_comm(name: str) -> str:
    """The op the name suggests, or '' when the name does not look like communication."""
    low = name.lower()
    if name.startswith("triton_") or not any(w in low for w in _WORDS):
        return ""
    ident = identifier(name)
    strong = STRONG.search(ident)
    if strong:
        return _op_of(strong.group(0))
    tail = _TRAILING.sub("", ident)
    low = tail.lower()
    for word in WEAK_ENDINGS:
        if low == word or low.endswith("_" + word) or tail.endswith(word.capitalize()):
            return word if word in ("dispatch", "combine", "barrier") else "send_recv"
    return ""


def _op_of(token: str) -> str:
    flat = token.lower().replace("_", "")
    return {
        "allreduce": "all_reduce",
        "allgather": "all_gather",
        "reducescatter": "reduce_scatter",
        "alltoall": "all_to_all",
        "multimem": "all_reduce",
        "nvshmem": "",
    }.get(flat, "")


def rule_for(name: str, op: str) -> str:
    """The --comm-kernel rule that makes this kernel communication for certain."""
    ident = identifier(name)
    return re.escape(ident) + (f"={op}" if op else "")


def main_stream(streams: np.ndarray, dur: np.ndarray) -> int | None:
    """The stream that carries most of the compute kernels' time."""
    if streams.size == 0:
        return None
    values, inverse = np.unique(streams, return_inverse=True)
    return int(values[np.argmax(np.bincount(inverse, weights=dur.astype(np.float64)))])
