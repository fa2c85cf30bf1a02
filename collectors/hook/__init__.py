"""The in-process hook: per-rank profiler windows, heartbeat, on-demand triggers, stack and
Flight Recorder dumps.

Under `scope run` it is active with no code change (a `sitecustomize` on PYTHONPATH calls
`activate_from_env()` in every rank). For a job launched otherwise, one line does it:

    import scope.collectors.hook; scope.collectors.hook.install(run_dir="RUN")

Steps are counted from optimizer steps (`torch.optim` global post-hook); a job without an optimizer
marks its steps with `scope.collectors.hook.step()`. Nothing here ever raises into the job: errors go to
`RUN/ranks/<rank>/hook.log`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from scope.collectors.hook.config import ENV_ENABLED, ENV_OWNER_PID, HookConfig, config_from_env

_HOOK: Any = None  # the process's Hook, once installed


def install(
    run_dir: str | os.PathLike[str] | None = None,
    *,
    rank: int | None = None,
    profile_start: int | None = None,
    profile_every: int | None = None,
    profile_active: int | None = None,
    profile_flops: bool | None = None,
) -> Any:
    """Start the hook in this process (once); returns it, or None when it could not start.

    Arguments left out come from the environment (`SCOPE_RUN_DIR`, `SCOPE_PROFILE_*`), then defaults.
    """
    global _HOOK
    if _HOOK is not None:
        return _HOOK
    try:
        overrides = {
            "run_dir": Path(run_dir) if run_dir is not None else None,
            "rank": rank,
            "profile_start": profile_start,
            "profile_every": profile_every,
            "profile_active": profile_active,
            "profile_flops": profile_flops,
        }
        config = config_from_env(overrides)
        if config is None:
            _warn("no run directory: pass install(run_dir=...) or set SCOPE_RUN_DIR")
            return None
        return _start(config)
    except Exception as exc:
        _warn(f"could not start: {type(exc).__name__}: {exc}")
        return None


def activate_from_env() -> Any:
    """Called from sitecustomize: start only in a rank process that `scope run` started."""
    if os.environ.get(ENV_ENABLED, "1") == "0" or not os.environ.get("SCOPE_RUN_DIR"):
        return None
    owner = os.environ.get(ENV_OWNER_PID)
    if owner and owner != str(os.getpid()):
        return None  # a child of a rank (spawned worker, compiler subprocess): not a rank itself
    return install()


def step() -> None:
    """Mark the end of a training step (for loops that do not call `optimizer.step()`)."""
    if _HOOK is not None:
        _HOOK.explicit_step()


def dump(reason: str = "manual") -> list[Path]:
    """Dump the Python stacks and the Flight Recorder buffer of this rank now."""
    if _HOOK is None:
        return []
    return _HOOK.dump(reason)


def current() -> Any:
    return _HOOK


def _start(config: HookConfig) -> Any:
    global _HOOK
    from scope.collectors.hook.core import Hook

    hook = Hook(config)
    os.environ[ENV_OWNER_PID] = str(os.getpid())
    hook.start()
    _HOOK = hook
    return hook


def _warn(message: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"[scope hook] {message}\n")
