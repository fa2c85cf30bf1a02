"""What a program's exit status means, from the program's own source: a launcher that only reports
'exit code N' (mpirun, srun, torchrun) then names the class of failure the program itself returned.

nccl-tests return their testResult_t from main() (src/common.h: testSuccess 0, testInternalError 1,
testCudaError 2, testNcclError 3, testTimeout 4, ...), so `mpirun ... Exit code: 3` after an nccl-tests
banner is an NCCL call that failed, whatever the rank printed before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.model import COMM_ERROR, Anomaly


@dataclass(frozen=True)
class ExitMeaning:
    code: int
    name: str
    kind: str
    meaning: str


NCCL_TESTS_SOURCE = "https://github.com/NVIDIA/nccl-tests/blob/master/src/common.h"
NCCL_TESTS_EXITS: dict[int, ExitMeaning] = {
    m.code: m
    for m in (
        ExitMeaning(2, "testCudaError", "crash", "a CUDA call of the benchmark failed"),
        ExitMeaning(3, "testNcclError", "nccl_error", "an NCCL call of the benchmark returned an error"),
        ExitMeaning(4, "testTimeout", "timeout", "a collective of the benchmark timed out (-T)"),
    )
}
_NCCL_TESTS = re.compile(r"^#\s+nThread \d+|^#\s+Using devices|^#\s+\(B\)\s+\(elements\)|out-of-place\s+in-place", re.M)
_EXIT_CODE = re.compile(r"^\s*Exit code:\s+(\d+)", re.M)
_LAUNCHER_EXITS = ("mpirun_nonzero_exit",)
_LOOK_AHEAD = 12


def is_nccl_tests(text: str) -> bool:
    return ("nThread" in text or "out-of-place" in text or "(elements)" in text) and bool(_NCCL_TESTS.search(text))


def read_benchmark_exits(anomalies: list[Anomaly], lines: list[str], text: str) -> None:
    """A launcher's report of an nccl-tests rank's exit status becomes what that status means."""
    if not any(a.code in _LAUNCHER_EXITS for a in anomalies) or not is_nccl_tests(text):
        return
    for a in anomalies:
        if a.code not in _LAUNCHER_EXITS or not a.line:
            continue
        window = "\n".join(lines[a.line - 1 : a.line - 1 + _LOOK_AHEAD])
        m = _EXIT_CODE.search(window)
        meaning = NCCL_TESTS_EXITS.get(int(m.group(1))) if m else None
        if meaning is None:
            continue
        a.kind = meaning.kind
        a.level = min(a.level, COMM_ERROR) if meaning.kind == "nccl_error" else a.level
        a.message = (
            f"an nccl-tests rank exited with status {meaning.code} ({meaning.name}): {meaning.meaning}; "
            f"the launcher ended the job. {a.message}"
        )
        a.details.update(
            exit_code=meaning.code,
            exit_meaning=meaning.name,
            exit_source=NCCL_TESTS_SOURCE,
            remedy="Rerun the benchmark with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) to see the WARN line "
            "of the failing rank; check that NCCL, CUDA and the driver match, and that no other process (a display "
            "server, another job) holds the GPUs.",
        )
