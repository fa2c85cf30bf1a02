"""Which native library was starting up when a process died of SIGSEGV: the library's own start-up lines just
before the crash name it, and the crash is then that library's install or build, not the program's code. One
row a library; the pattern is the words its start-up prints, the source a public thread where a crash came right
after those lines and the fix was that library's install.

NCCL has no row: its own WARN lines name the cause of a crash in it (knowledge/nccl_warns.py) better than its
start-up INFO lines do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NativeInit:
    library: str
    pattern: str  # the library's start-up lines (a search on each line before the crash)
    check: str
    source: str


NATIVE_INITS: tuple[NativeInit, ...] = (
    NativeInit(
        "NVSHMEM",
        r"\bNVSHMEM (?:INFO|WARN|ERROR)\b|nvshmem_src/|/nvshmem/src/|\bnvshmem_init\b|libnvshmem\w*\.so",
        "check the NVSHMEM install on every host against the one the extension (DeepEP, sglang / vLLM's EP "
        "kernels) was built with: nvshmem-info -a on each host, the same NVSHMEM build and version everywhere, "
        "the GPUDirect RDMA module loaded (lsmod | grep -e nvidia_peermem -e nv_peer_mem) for its IB transports; "
        "reinstall NVSHMEM by the extension's install steps and rebuild the extension against it",
        "deepseek-ai/DeepEP#145 (NVSHMEM INFO / ibrc.cpp start-up lines, then 'Caught signal 11'), "
        "deepseek-ai/DeepEP#150 (the reporter: the host's NVSHMEM was the wrong build; reinstalling it fixed the "
        "crash), https://docs.nvidia.com/nvshmem/api/gen/env.html",
    ),
    NativeInit(
        "UCX",
        r"\bUCX\s+(?:WARN|ERROR)\b|\blibuc[sptm]\.so|\bucp_init\b",
        "check the UCX install (ucx_info -v on each host; the same UCX release everywhere, the one the MPI / "
        "NVSHMEM / UCC build was linked against; UCX_TLS to rule a transport out) and rebuild what links it",
        "openucx/ucx#6675 ('UCX  ERROR address version mismatch', then 'Caught signal 11': linked with UCX 1.9, "
        "loaded 1.8), https://openucx.readthedocs.io/en/master/faq.html",
    ),
)

_SEGFAULT = re.compile(r"Caught signal 11\b|Segmentation fault|SIGSEGV|signal 11\b")
_COMPILED = tuple((row, re.compile(row.pattern)) for row in NATIVE_INITS)


def starting_library(text: str) -> tuple[int, str, NativeInit] | None:
    """(line number, line, row) of the last start-up line of a known library before the log's first
    segmentation fault; None when no fault or no such line comes before it."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _SEGFAULT.search(line)), None)
    if first is None:
        return None
    for i in range(first - 1, -1, -1):
        for row, pattern in _COMPILED:
            if pattern.search(lines[i]):
                return i + 1, lines[i].strip(), row
    return None
