"""Values made JSON-safe, for every typed result's contract (scope.result, scope.goodput_result,
scope.compare.result): a module of its own, so that a result model needs no other to write its JSON."""

from __future__ import annotations

import contextlib
import math
from typing import Any


def clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, recursively."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if getattr(value, "ndim", 0) > 0 and hasattr(value, "tolist"):  # arrays (list columns read from parquet)
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        with contextlib.suppress(ValueError, AttributeError):
            value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values, without importing pandas
        return None
    return value
