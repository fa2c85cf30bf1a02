"""One row of the signature tables (knowledge/signatures.py, runtime_errors.py, the user's config file):
its fields are described in signatures.py."""

from __future__ import annotations

from dataclasses import dataclass

CAUSES = ("hardware", "network", "configuration", "application", "nccl_bug", "desync", "stall")


@dataclass(frozen=True)
class Signature:
    id: str
    needles: tuple[str, ...]
    patterns: tuple[str, ...]
    era: str
    kind: str
    cause: str
    meaning: str
    remedy: str
    reference: str
    confidence: str = "high"
    ranks_re: str = ""
    ranks_ready: bool = False
    before_re: str = ""
    fields_re: str = ""
    min_count: int = 1
    severity: str = "critical"
    echo: bool = False
    cuda_named: bool = False
    origin: str = "scope"  # where the row comes from: scope's table, or the user's config file
