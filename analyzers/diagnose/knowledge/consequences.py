"""Errors that are the consequence of another error printed before them, as data.

A rule says: an error line matching `effect`, printed after an incident of one of the `causes` codes in the
same file (or later in time), is that cause's consequence. The effect stays a finding of its own, linked
under its cause (caused_by / explains), instead of outranking it: the causal levels of model.py put an
application error (a CUDA fault) before a communication error, which is the right order only when nothing
says otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Consequence:
    effect: re.Pattern[str]
    causes: tuple[str, ...]
    why: str
    source: str


CONSEQUENCES: tuple[Consequence, ...] = (
    Consequence(
        re.compile(r"illegal memory access|unhandled cuda error|unspecified launch failure|illegal instruction"),
        ("nccl_ib_completion_error", "nccl_net_transport_failed", "ofi_completion_error", "nccl_remote_error"),
        "a network transport error aborts NCCL's communicator while its kernels still run: the CUDA fault at "
        "shutdown comes from the aborted kernels, not from the program",
        "https://github.com/NVIDIA/nccl-tests/issues/24 (the fix was the RoCE GID index; the illegal access went "
        "with the completion errors)",
    ),
)


def consequence_of(message: str, cause_codes: set[str]) -> Consequence | None:
    for c in CONSEQUENCES:
        if c.effect.search(message) and cause_codes & set(c.causes):
            return c
    return None
