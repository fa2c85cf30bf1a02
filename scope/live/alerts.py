"""Alerts where operators look: a command run, or JSON POSTed, once per new live finding and once when it clears.

`submit` only puts the event on a bounded queue (a full queue drops it and counts it); one daemon thread
sends, each send bounded by a timeout, so a hanging endpoint or a stuck command costs the detector
nothing and the job less. Rate limits: the same (finding, action) is not sent twice within `repeat_s`
(a flapping finding), and no more than `per_minute` alerts a minute in all.

The command runs through the shell with the event as JSON on its standard input and in SCOPE_ALERT
(SCOPE_ALERT_ACTION, SCOPE_ALERT_KIND, SCOPE_ALERT_RANKS, SCOPE_ALERT_SUMMARY beside it); the POST body is
the same JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
import urllib.request
from collections import deque
from typing import Any

from scope.live.detector import LiveEvent

TIMEOUT_S = 10.0
QUEUE_MAX = 256


class AlertSender:
    def __init__(
        self,
        cmd: str | None = None,
        url: str | None = None,
        *,
        run_dir: str = "",
        timeout_s: float = TIMEOUT_S,
        repeat_s: float = 60.0,
        per_minute: int = 30,
    ) -> None:
        self.cmd, self.url, self.run_dir = cmd, url, run_dir
        self.timeout_s = timeout_s
        self.repeat_s = repeat_s
        self.per_minute = per_minute
        self.sent = 0
        self.failed = 0
        self.dropped = 0  # queue full or over the rate
        self.errors: deque[str] = deque(maxlen=20)
        self._last: dict[tuple[str, str], float] = {}
        self._recent: deque[float] = deque()
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_MAX)
        self._thread: threading.Thread | None = None
        if self.enabled:
            # Started here, on the thread that builds the sender (the launcher's main thread), not on the first
            # alert: a thread and the commands it runs inherit their creator's nice value, and the live look that
            # submits alerts runs at nice +10; the operator's command keeps the launcher's priority.
            self._start()

    @property
    def enabled(self) -> bool:
        return bool(self.cmd or self.url)

    def submit(self, event: LiveEvent) -> bool:
        """Queue one alert (never blocks); False when rate-limited, dropped or alerts are off."""
        if not self.enabled:
            return False
        now = time.monotonic()
        key = (event.key, event.action)
        while self._recent and now - self._recent[0] > 60.0:
            self._recent.popleft()
        if now - self._last.get(key, -1e18) < self.repeat_s or len(self._recent) >= self.per_minute:
            self.dropped += 1
            return False
        payload = {"run_dir": self.run_dir, **event.to_dict()}
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            self.dropped += 1
            return False
        self._last[key] = now
        self._recent.append(now)
        if self._thread is None:
            self._start()
        return True

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._drain, name="scope-alerts", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            payload = self._queue.get()
            try:
                if payload is None:
                    return
                self._send(payload)
            finally:
                self._queue.task_done()

    def _send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, default=str)
        for target, send in ((self.cmd, self._run_cmd), (self.url, self._post)):
            if not target:
                continue
            try:
                send(body, payload)
                self.sent += 1
            except Exception as exc:  # a failing alert is counted and said in the metrics, never raised
                self.failed += 1
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def _run_cmd(self, body: str, payload: dict[str, Any]) -> None:
        finding = payload["finding"]
        env = {
            **os.environ,
            "SCOPE_ALERT": body,
            "SCOPE_ALERT_ACTION": payload["action"],
            "SCOPE_ALERT_KIND": finding["kind"],
            "SCOPE_ALERT_RANKS": ",".join(str(r) for r in finding["ranks"]),
            "SCOPE_ALERT_SUMMARY": finding["summary"],
        }
        assert self.cmd is not None
        # Its own session, so a timeout ends the whole command (a shell's children too), and no output
        # pipe a left-over child could hold open.
        proc = subprocess.Popen(
            self.cmd,
            shell=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        try:
            proc.communicate(body.encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        if proc.returncode != 0:
            raise RuntimeError(f"alert command exited {proc.returncode}")

    def _post(self, body: str, payload: dict[str, Any]) -> None:
        assert self.url is not None
        req = urllib.request.Request(
            self.url, data=body.encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
            resp.read(1 << 16)

    def close(self, wait_s: float = 5.0) -> None:
        """Send what is queued, waiting at most `wait_s` (a hanging endpoint is left behind)."""
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(wait_s)
