"""The analysis as JSON: the contract of `scope analyze --json` (scope.result.Analysis.to_dict)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scope.result import Analysis


def render_json(analysis: Analysis) -> str:
    return json.dumps(analysis.to_dict(), indent=2, default=jsonable, allow_nan=False) + "\n"


def jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
