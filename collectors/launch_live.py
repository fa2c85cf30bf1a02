"""`scope run`'s live detection: the detector on a launcher thread of its own (a lower priority than the ranks),
and the hang watchdog's limit from it.

The detector (scope.live) runs in the launcher, never in the job. With `--hang-timeout` left at its
default, the hang watchdog's limit is the job's rhythm as the detector knows it (10 typical steps), never
under AUTO_HANG_FLOOR_S, and nothing once the detector said a hang: its dumps follow the verdict at once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scope.collectors.watchdog import HangWatchdog

if TYPE_CHECKING:
    from scope.collectors.launch_manifest import NodeRecord
    from scope.collectors.launcher import LaunchConfig

FIXED_HANG_TIMEOUT_S = 300.0
# With the rhythm: the dumps wait at least this long (a checkpoint or an evaluation pauses a job for
# seconds; the live verdict, with its own 10 s floor, names the culprit before).
AUTO_HANG_FLOOR_S = 30.0


def start_live(cfg: LaunchConfig, node: NodeRecord) -> Any:
    """The live detector (scope.live) for its thread in the launcher: in this process, never in the job. One node
    judges the whole job (node 0: every launcher sees every rank's files in the shared run directory)."""
    if not cfg.live or node.node_rank not in (None, 0):
        return None
    from scope.live.monitor import build_monitor

    try:
        monitor = build_monitor(
            cfg.run_dir,
            metrics_port=cfg.metrics_port,
            alert_cmd=cfg.alert_cmd,
            alert_url=cfg.alert_url,
            hang_floor_s=cfg.hang_floor_s,
        )
        if monitor.metrics is not None:
            print(f"scope: live metrics on :{monitor.metrics.port}/metrics", file=sys.stderr)
        return monitor
    except Exception as exc:  # a port in use, say: the job runs without live detection
        print(f"scope: live detection not started: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def watchdog_for(cfg: LaunchConfig, session: Any, live: Any) -> HangWatchdog | None:
    """The hang watchdog: a fixed timeout, or the job's rhythm as the live detector knows it."""
    if cfg.hang_timeout_s == 0:
        return None
    auto = cfg.hang_timeout_s is None and live is not None
    timeout = AUTO_HANG_FLOOR_S if auto else (cfg.hang_timeout_s or FIXED_HANG_TIMEOUT_S)
    limit = RhythmLimit(live) if auto else None
    return HangWatchdog(
        cfg.run_dir,
        timeout,
        host=session.node.host,
        local_pids=session.registry.pids,
        on_hang=session.on_hang,
        on_recover=_rearming(session.on_recover, limit),
        startup_timeout_s=cfg.hang_startup_timeout_s or (3 * FIXED_HANG_TIMEOUT_S if auto else None),
        limit=limit,
    )


class RhythmLimit:
    """The watchdog's limit from the live detector: once it says a hang, at once (the stacks and Flight
    Recorder are collected while the ranks still stand where they hang, before a process-group timeout
    ends them); else the job's rhythm, never under AUTO_HANG_FLOOR_S.

    The look runs on a thread of its own: after the ranks step again (the watchdog re-arms), a hang verdict
    counts only from a look that began after that moment. Until such a look, the verdict is the stall that
    just ended, and taking it would report a second hang at once."""

    def __init__(self, live: Any) -> None:
        self.live = live
        self._armed_at_look = -1  # looks begun when the watchdog last re-armed

    def rearmed(self) -> None:
        self._armed_at_look = self.live.looks_started

    def __call__(self) -> float:
        if self.live.detector.hang is not None and self.live.ticks > self._armed_at_look:
            return 0.0
        return max(AUTO_HANG_FLOOR_S, self.live.hang_limit_s())


def _rearming(
    on_recover: Callable[[dict[str, Any]], None], limit: RhythmLimit | None
) -> Callable[[dict[str, Any]], None]:
    if limit is None:
        return on_recover

    def recovered(record: dict[str, Any]) -> None:
        limit.rearmed()
        on_recover(record)

    return recovered
