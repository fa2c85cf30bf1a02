"""The analysis as JSON: the contract of `scope analyze --json` (scope.result.Analysis.to_dict)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scope.result import Analysis


def render_json(analysis: Analysis) -> str:
    """The same text as `--json FILE` writes: indented, each table row on one line."""
    return "".join(analysis.iter_json(indent=2, default=jsonable, allow_nan=False)) + "\n"


def jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
