"""Headless Chromium for dashboard tests (../shared/BROWSER_TESTING.md, option B: Playwright)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
# Without the networking flags Chromium's background connections hit the closed network and log errors.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> Path | None:
    if CHROMIUM.exists():
        return CHROMIUM
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return Path(found) if found else None


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve a Dash app on 127.0.0.1 (free port) from a thread; yields its base URL."""
    import logging

    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request in the test output
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="dash-test-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def browser_session() -> Iterator[Any]:
    """One headless Chromium (the system one; never `playwright install`)."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("chromium not found (apt-get install chromium chromium-driver)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(path), args=CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browser_page(browser: Any, timeout_ms: int, *, expect_too: bool = True) -> Iterator[Any]:
    """A 1400x1000 page of its own context, waiting at most TIMEOUT_MS for each action (and, with
    EXPECT_TOO, for each Playwright `expect`); the context is closed after."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    if expect_too:
        from playwright.sync_api import expect

        expect.set_options(timeout=timeout_ms)
    try:
        yield page
    finally:
        context.close()


class ConsoleLog:
    """Collects console errors and uncaught page errors of one Playwright page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def take(self) -> list[str]:
        out, self.errors = self.errors, []
        return out
