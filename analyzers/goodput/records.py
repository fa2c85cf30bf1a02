"""Goodput from scope's own records in a run directory (filled in below)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import GoodputReport


def has_records(path: Path) -> bool:
    return False


def records_report(path: Path, mtbf_s: float | None = None) -> GoodputReport:
    raise NotImplementedError
