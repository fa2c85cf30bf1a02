"""Signature rows for the errors a training program raises around the communication stack: the CUDA runtime
and its libraries (cuBLAS, cuDNN, the driver), DDP's reducer, the DataLoader's workers, the process-group
start-up barrier and the file system. Same fields as knowledge/signatures.py (whose table ends with these
rows); each message is quoted as its source prints it, the reference is that source or the public page
that gives the fix. Rows are built with signature_row.row: the id, the needles and the patterns come first
(a single needle or pattern bare), and `kind` is written only where it is not the cause's usual finding
(signature_row.KIND_OF_CAUSE).

A remedy may quote what the line states: `{name}` is filled from the row's `fields_re` group of that name
and `{name|fallback}` falls back to the text after the bar when the line does not state it
(readers/signature_scan.py fills them).

The rows live in themed modules, joined here in their match order: the process group's start-up and DDP
(runtime_process_group.py), the training code's own errors that show once it runs wrapped or under a newer torch
(training_code.py), the launcher, the build and MPI (runtime_launcher.py), the DataLoader and the
host's limits (runtime_host.py), the GPU driver and the CUDA runtime (runtime_cuda.py).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.runtime_cuda import CUDA_SIGNATURES
from scope.analyzers.diagnose.knowledge.runtime_host import HOST_SIGNATURES
from scope.analyzers.diagnose.knowledge.runtime_launcher import LAUNCHER_SIGNATURES
from scope.analyzers.diagnose.knowledge.runtime_process_group import PROCESS_GROUP_SIGNATURES
from scope.analyzers.diagnose.knowledge.signature_row import Signature
from scope.analyzers.diagnose.knowledge.training_code import TRAINING_CODE_SIGNATURES

RUNTIME_SIGNATURES: tuple[Signature, ...] = (
    *PROCESS_GROUP_SIGNATURES,
    *TRAINING_CODE_SIGNATURES,
    *LAUNCHER_SIGNATURES,
    *HOST_SIGNATURES,
    *CUDA_SIGNATURES,
)
