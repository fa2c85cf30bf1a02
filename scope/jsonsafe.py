"""Values made JSON-safe, for every typed result's contract (scope.result, scope.goodput_result,
scope.compare.result): a module of its own, so that a result model needs no other to write its JSON."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
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


def save_json(file: Path | str, data: dict[str, Any], **dumps_options: Any) -> Path:
    """DATA as JSON to FILE, atomically (a reader never sees half a file); the typed results' `save`."""
    from scope.store import write_text_atomic  # the store's writer, imported only when a file is written

    path = Path(file)
    write_text_atomic(path, [json.dumps(data, **dumps_options)])
    return path


def load_json_object(file: Path | str, what: str) -> dict[str, Any]:
    """The JSON object in FILE; a ScopeError naming the file when it cannot be read, is not JSON, or holds
    something else than an object ("FILE: not WHAT (...)"): the typed results' `load`."""
    from scope.errors import ScopeError

    try:
        data = json.loads(Path(file).read_text())
    except (OSError, ValueError) as exc:
        raise ScopeError(f"{file}: not {what} ({exc})") from None
    if not isinstance(data, dict):
        raise ScopeError(f"{file}: not {what} (a JSON object was expected)")
    return data
