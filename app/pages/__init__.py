"""The dashboard's pages: each module has PATH, TITLE, `layout(data, params)` and `register(app, data)`."""

from __future__ import annotations

from types import ModuleType

from scope.app.pages import (
    collectives,
    compare,
    counters,
    failure,
    goodput,
    heatmap,
    live,
    memory,
    overview,
    timeline,
)

PAGES: tuple[ModuleType, ...] = (
    overview,
    heatmap,
    timeline,
    collectives,
    counters,
    memory,
    failure,
    compare,
    goodput,
    live,
)
