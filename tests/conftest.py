"""Shared test helpers: where the external data lives, and session-scoped real runs."""

from __future__ import annotations

from pathlib import Path

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
