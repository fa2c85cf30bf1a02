"""Shared test helpers: where the external data lives, and session-scoped real runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data; skips the test with a clear reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"external data not available: {path} (tests read ../shared/data beside the project)")
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests leave things worth looking at (screenshots, reports): test-artifacts/."""
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for every browser test: Playwright's sync API allows one at a time."""
    from tests.browser_util import browser_session, chromium_path

    if chromium_path() is None:
        pytest.skip("chromium is not installed (apt-get install chromium chromium-driver)")
    with browser_session() as b:
        yield b
