"""One live look at a run directory: read what the hook wrote since the last, judge, tell.

`LiveMonitor.tick` is called by `scope run`'s live thread (in the launcher at a lower priority, never in the job) and by
`scope watch`'s loop. Each new or cleared finding becomes one terminal line, one alert, and one line of
RUN/live/events.jsonl (the record `scope watch` and the dashboard read back); the metrics snapshot is
published after every look. Nothing here may raise into its caller: a failing look is counted and said
once.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from scope.live.alerts import AlertSender
from scope.live.detector import LiveDetector, LiveEvent
from scope.live.metrics import MetricsServer, Snapshot
from scope.live.tail import RunTail

EVENTS = Path("live") / "events.jsonl"
# The detector's own cost, written when the watch ends: looks, CPU seconds of the thread that looked, samples.
STATS = Path("live") / "stats.json"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class LiveMonitor:
    def __init__(
        self,
        run_dir: Path,
        *,
        detector: LiveDetector | None = None,
        say: Callable[[str], None] = _stderr,
        alerts: AlertSender | None = None,
        metrics: MetricsServer | None = None,
        record: bool = True,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.detector = detector or LiveDetector()
        self.tail = RunTail(self.run_dir)
        self.say = say
        self.alerts = alerts
        self.metrics = metrics
        self.record = record
        self.events: list[LiveEvent] = []
        self.errors = 0
        self.ticks = 0
        self.cpu_s = 0.0  # CPU seconds in tick(), on the calling thread (benchmarks/live.py --overhead)
        self.looks_started = 0  # with `ticks` (looks ended): whether a look began after a moment (RhythmLimit)
        # One look at a time: `scope run` looks on its live thread, then once more from the main thread at the end.
        self._lock = threading.Lock()
        self._hang_limit_s = self.detector.hang_limit_s()

    def tick(self, now: float | None = None) -> list[LiveEvent]:
        with self._lock:
            return self._look(now)

    def _look(self, now: float | None) -> list[LiveEvent]:
        cpu0 = time.thread_time()
        self.looks_started += 1
        try:
            return self._tick(time.time() if now is None else now)
        except Exception as exc:  # the detector's bug must not end the launcher's watch
            self.errors += 1
            if self.errors == 1:
                self.say(f"scope live: detection stopped working ({type(exc).__name__}: {exc}); the job goes on")
            return []
        finally:
            with contextlib.suppress(Exception):
                self._hang_limit_s = self.detector.hang_limit_s()
            self.ticks += 1
            self.cpu_s += time.thread_time() - cpu0

    def _tick(self, now: float) -> list[LiveEvent]:
        samples, beats = self.tail.poll()
        det = self.detector
        for s in samples:
            det.add_sample(s)
        for b in beats:
            det.add_beat(b)
        events = det.evaluate(now)
        for event in events:
            self.events.append(event)
            self.say(event.line())
            if self.alerts is not None:
                self.alerts.submit(event)
            if self.record:
                self._record(event)
        if self.metrics is not None:
            self.metrics.publish(self.snapshot(now))
        return events

    def snapshot(self, now: float) -> Snapshot:
        det, alerts = self.detector, self.alerts
        return Snapshot(
            ranks=det.rank_metrics(now),
            verdicts=[(f.kind, key, ",".join(map(str, f.ranks))) for key, f in det.active.items()],
            hang=det.hang is not None,
            samples=det.samples,
            dropped=det.dropped + self.tail.dropped,
            alerts={"sent": alerts.sent, "failed": alerts.failed, "dropped": alerts.dropped} if alerts else {},
        )

    def _record(self, event: LiveEvent) -> None:
        path = self.run_dir / EVENTS
        with contextlib.suppress(OSError):
            path.parent.mkdir(exist_ok=True)
            with open(path, "a") as fh:
                fh.write(json.dumps(event.to_dict(), default=str) + "\n")

    def hang_limit_s(self) -> float:
        """The hang limit as of the last look: the watchdog's thread reads this, never the detector's rings,
        which the look's own thread changes meanwhile."""
        return self._hang_limit_s

    def close(self) -> None:
        if self.record:
            stats = {"ticks": self.ticks, "cpu_s": self.cpu_s, "samples": self.detector.samples, "errors": self.errors}
            with contextlib.suppress(OSError):
                (self.run_dir / STATS).parent.mkdir(exist_ok=True)
                (self.run_dir / STATS).write_text(json.dumps(stats) + "\n")
        if self.alerts is not None:
            self.alerts.close()
        if self.metrics is not None:
            self.metrics.close()


def build_monitor(
    run_dir: Path,
    *,
    metrics_port: int | None = None,
    alert_cmd: str | None = None,
    alert_url: str | None = None,
    hang_floor_s: float | None = None,
    say: Callable[[str], None] = _stderr,
) -> LiveMonitor:
    """The monitor `scope run` and `scope watch` use, with the sinks asked for."""
    alerts = AlertSender(alert_cmd, alert_url, run_dir=str(run_dir)) if (alert_cmd or alert_url) else None
    metrics = MetricsServer(metrics_port) if metrics_port is not None else None
    det = LiveDetector(hang_floor_s=hang_floor_s) if hang_floor_s is not None else LiveDetector()
    return LiveMonitor(run_dir, detector=det, say=say, alerts=alerts, metrics=metrics)
