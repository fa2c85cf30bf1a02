"""The live state as Prometheus metrics (prometheus_client), served on `--metrics-port`.

The monitor publishes a snapshot after each look (one reference swap); a scrape renders the latest
snapshot on the server's own thread, so scraping never waits on the detector nor the detector on it.

    scope_live_step_seconds{rank}               recent median step time
    scope_live_straggler_score{rank}            own time over its peers' median, worst class (1 = like them)
    scope_live_seconds_since_progress{rank}     since the rank's last completed step
    scope_live_verdict{kind,key,ranks}          1 per live finding now open (straggler, slow_collective,
                                                pipeline_imbalance, hang)
    scope_live_hang                             1 while the job is judged hung
    scope_live_samples_total                    step samples read
    scope_live_dropped_samples_total            samples refused (damaged lines, bad values)
    scope_live_alerts_total{outcome}            alerts sent, failed, dropped (rate limit, full queue)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Snapshot:
    ranks: dict[int, dict[str, float]] = field(default_factory=dict)
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, key, ranks)
    hang: bool = False
    samples: int = 0
    dropped: int = 0
    alerts: dict[str, int] = field(default_factory=dict)


class LiveCollector:
    """A prometheus_client collector of the latest snapshot."""

    def __init__(self) -> None:
        self.snapshot = Snapshot()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        snap = self.snapshot
        per_rank = (
            ("scope_live_step_seconds", "recent median step time (s)", "step_s"),
            ("scope_live_straggler_score", "own time over its peers' median, worst class (1 = like them)", "score"),
            ("scope_live_seconds_since_progress", "seconds since the rank's last completed step", "since_progress_s"),
        )
        for name, doc, key in per_rank:
            g = GaugeMetricFamily(name, doc, labels=["rank"])
            for rank, values in sorted(snap.ranks.items()):
                value = values.get(key)
                if value is not None and value == value:
                    g.add_metric([str(rank)], float(value))
            yield g
        verdict = GaugeMetricFamily("scope_live_verdict", "live findings now open", labels=["kind", "key", "ranks"])
        for kind, key, ranks in snap.verdicts:
            verdict.add_metric([kind, key, ranks], 1.0)
        yield verdict
        yield GaugeMetricFamily("scope_live_hang", "1 while the job is judged hung", value=float(snap.hang))
        yield CounterMetricFamily("scope_live_samples", "step samples read", value=snap.samples)
        yield CounterMetricFamily(
            "scope_live_dropped_samples", "samples refused (damaged, bad values)", value=snap.dropped
        )
        alerts = CounterMetricFamily("scope_live_alerts", "alerts by outcome", labels=["outcome"])
        for outcome, n in sorted(snap.alerts.items()):
            alerts.add_metric([outcome], n)
        yield alerts


class MetricsServer:
    def __init__(self, port: int, addr: str = "0.0.0.0") -> None:
        from prometheus_client import CollectorRegistry, start_http_server

        self.collector = LiveCollector()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)  # type: ignore[arg-type]
        started = start_http_server(port, addr=addr, registry=self.registry)
        self._server = started[0] if isinstance(started, tuple) else None
        self.port = self._server.server_address[1] if self._server is not None else port

    def publish(self, snapshot: Snapshot) -> None:
        self.collector.snapshot = snapshot

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
