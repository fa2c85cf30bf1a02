"""The analysis as JSON: the contract of `scope analyze --json` (scope.result.Analysis.to_dict)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scope.compare.result import ComparisonResult
    from scope.goodput_result import GoodputResult
    from scope.render import Style
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


def json_of(analysis: Analysis, style: Style) -> str:
    """The renderer table's entry (scope.render.RENDERERS) for an analysis."""
    return render_json(analysis)


def contract_of(result: GoodputResult | ComparisonResult, style: Style) -> str:
    """A goodput or comparison result as its JSON contract (its to_dict): what --json FILE writes."""
    import json

    return json.dumps(result.to_dict(), indent=2, allow_nan=False, default=jsonable) + "\n"
