"""Where the shared real data is: SCOPE_SHARED_DATA where it is set (as tests/conftest.py reads it), else the first
shared/data folder above this checkout (../shared/data beside the main checkout, ../../shared/data beside a git
worktree under wt/), else ../shared/data beside the checkout (missing: the benchmark says so when it reads it)."""

from __future__ import annotations

import os
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def shared_data() -> Path:
    set_to = os.environ.get("SCOPE_SHARED_DATA")
    if set_to:
        return Path(set_to)
    above = (p / "shared" / "data" for p in _CHECKOUT.parents)
    return next((p for p in above if p.is_dir()), _CHECKOUT.parent / "shared" / "data")
