"""How the hook is configured: keyword arguments of `install()`, or environment variables that
`scope run` sets for every rank (so the job needs no code change).

    SCOPE_RUN_DIR          run directory (required for activation through sitecustomize)
    SCOPE_HOOK=0           disable the hook even when SCOPE_RUN_DIR is set
    SCOPE_PROFILE_START    first profiled step (default 2; -1: no scheduled window)
    SCOPE_PROFILE_EVERY    a new window every N steps after that (default 0: only one)
    SCOPE_PROFILE_ACTIVE   steps per window (default 3)
    SCOPE_PROFILE_FLOPS=1  estimate FLOPs in the traces
    SCOPE_PROFILE_MEMORY=1 record allocations in the traces (profile_memory=True)
    SCOPE_MEMORY_SNAPSHOT  N > 0: record the allocator's last N events, snapshot on OOM (memsnap.py)
    SCOPE_HEARTBEAT_S      minimum seconds between heartbeat writes (default 1; raise it when
                           thousands of ranks share a metadata server)
    SCOPE_TIME_DDP=1       time a gloo DDP reducer's all-reduces through a comm hook (ddp_reducer.py; off by
                           default: it adds a pass over the gradients, up to 0.9% of a small CPU model's step)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

ENV_RUN_DIR = "SCOPE_RUN_DIR"
ENV_ENABLED = "SCOPE_HOOK"
# Set by the process that activated the hook: children started with spawn inherit it and stay out.
ENV_OWNER_PID = "SCOPE_HOOK_PID"

_ENV_NAMES = {
    "profile_start": "SCOPE_PROFILE_START",
    "profile_every": "SCOPE_PROFILE_EVERY",
    "profile_active": "SCOPE_PROFILE_ACTIVE",
    "profile_flops": "SCOPE_PROFILE_FLOPS",
    "profile_memory": "SCOPE_PROFILE_MEMORY",
    "memory_snapshot_entries": "SCOPE_MEMORY_SNAPSHOT",
    "heartbeat_s": "SCOPE_HEARTBEAT_S",
    "time_ddp": "SCOPE_TIME_DDP",
}


def window_schedule(every: int, active: int) -> tuple[int, int]:
    """(every, active) as they will run: a window starts every `every` steps, as asked. Each window is
    warmed up during the step before it, so at most every - 1 of those steps are profiled; a longer
    `active` is shortened (it once moved the windows instead: `--profile-every 3` profiled every 4 steps)."""
    every, active = max(0, every), max(1, active)
    if every:
        every = max(every, 2)  # one profiled step and its warm-up step
        active = min(active, every - 1)
    return every, active


@dataclass
class HookConfig:
    run_dir: Path
    rank: int | None = None
    profile_start: int = 2
    profile_every: int = 0
    profile_active: int = 3
    profile_flops: bool = False
    profile_memory: bool = False
    memory_snapshot_entries: int = 0  # 0: off
    heartbeat_s: float = 1.0
    time_ddp: bool = False  # opt-in: a gloo DDP reducer's all-reduces timed through a comm hook (live slow links)
    poll_s: float = 0.5
    # Longest wait for a Flight Recorder dump at exit: a wedged communicator must not keep the
    # process alive.
    dump_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        self.profile_active = max(1, int(self.profile_active))
        self.profile_every, self.profile_active = window_schedule(int(self.profile_every), self.profile_active)

    def env(self) -> dict[str, str]:
        """The variables that reproduce this configuration in a child process."""
        out = {ENV_RUN_DIR: str(self.run_dir)}
        for name, var in _ENV_NAMES.items():
            value = getattr(self, name)
            if name == "time_ddp" and not value:
                continue  # off unless asked for: a SCOPE_TIME_DDP=1 of the user's reaches the ranks
            out[var] = str(int(value)) if isinstance(value, bool) else str(value)
        return out


def config_from_env(overrides: dict[str, Any] | None = None) -> HookConfig | None:
    """The configuration in the environment, with explicit values on top; None without a run dir."""
    values: dict[str, Any] = {}
    types = {f.name: f.type for f in fields(HookConfig)}
    for name, var in _ENV_NAMES.items():
        raw = os.environ.get(var)
        if raw in (None, ""):
            continue
        try:
            values[name] = _parse(types[name], raw)
        except ValueError:
            continue  # a bad variable falls back to the default; the hook never fails on it
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if values.get("run_dir") is None:
        run_dir = os.environ.get(ENV_RUN_DIR)
        if not run_dir:
            return None
        values["run_dir"] = run_dir
    return HookConfig(**values)


def _parse(type_name: Any, raw: str) -> Any:
    text = str(type_name)
    if "bool" in text:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if "float" in text:
        return float(raw)
    return int(raw)
