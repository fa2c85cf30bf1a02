"""Shared test helpers: where the external data lives, and session-scoped real runs."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def _run_against_the_installed_package() -> None:
    """The suite tests scope as installed, never the checkout's folders by their own names: with the
    repository root on sys.path (`python -m pytest` puts the working directory there) `import app` or
    `import collectors` would work in the tests and fail for every user, which once hid a dashboard the
    demo could not find. Tests are imported by pytest's importlib mode (pyproject), which needs no
    sys.path entry; the benchmarks some tests reuse are exposed by their own package name only."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    if "benchmarks" not in sys.modules:
        spec = importlib.util.spec_from_loader("benchmarks", loader=None, is_package=True)
        assert spec is not None and spec.submodule_search_locations is not None
        spec.submodule_search_locations.append(str(ROOT / "benchmarks"))
        sys.modules["benchmarks"] = importlib.util.module_from_spec(spec)


_run_against_the_installed_package()


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
