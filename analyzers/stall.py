"""A stall the run survived: the hang watchdog fired (no rank stepped for --hang-timeout seconds), then
the ranks stepped again or all exited 0 (a slow checkpoint, a long evaluation). The run is "completed"
in run.json; the stall is time the job did not train, so it is a finding with its length and when.

A hang the run did not survive is the diagnosis's (analyzers/diagnose): this reads only recovered ones.
"""

from __future__ import annotations

from scope.analysis import Context, Result
from scope.finding import Finding
from scope.manifest import RunManifest


def analyze(ctx: Context) -> Result:
    manifest = _manifest(ctx)
    hang = manifest.hang if manifest is not None else None
    if not isinstance(hang, dict):
        return Result()
    earlier = [h for h in hang.get("earlier") or [] if isinstance(h, dict) and h.get("recovered")]
    stalls = [*earlier, hang] if hang.get("recovered") else earlier
    return Result(findings=[_finding(h) for h in stalls])


def _manifest(ctx: Context) -> RunManifest | None:
    return ctx.inputs.manifest  # read once, with the inventory (scope.inputs)


def _finding(hang: dict) -> Finding:  # type: ignore[type-arg]
    steps = {int(r): int(s) for r, s in (hang.get("last_steps") or {}).items() if str(s).lstrip("-").isdigit()}
    last_ns = [int(t) for t in (hang.get("last_step_ns") or {}).values() if isinstance(t, int)]
    start_ns = max(last_ns) if last_ns else hang.get("detected_ns")
    end_ns = hang.get("recovered_ns") or hang.get("detected_ns")
    stall_s = (end_ns - start_ns) / 1e9 if isinstance(start_ns, int) and isinstance(end_ns, int) else None
    timeout = float(hang.get("timeout_s") or 0)
    behind = [int(r) for r in hang.get("behind_ranks") or []]
    step = max(steps.values()) if steps else None
    how = "all ranks then exited 0" if hang.get("outcome") == "completed" else "the ranks then stepped again"
    dumps = [f"ranks/{r}/{p}" for r, paths in (hang.get("dumps") or {}).items() for p in paths]
    length = f"{stall_s:,.0f} s" if stall_s is not None else f"over {timeout:.0f} s"
    return Finding(
        kind="stall",
        severity="warning",
        summary=f"no rank stepped for {length} after step {step} (hang watchdog at {timeout:.0f} s); {how}",
        ranks=behind,
        steps=[step] if step is not None else [],
        evidence=["run.json: hang (recovered)", *dumps[:8]],
        metrics={"stall_s": round(stall_s, 3) if stall_s is not None else None, "hang_timeout_s": timeout},
        suggestion="a checkpoint or evaluation this long stops training: make it asynchronous or less frequent; "
        "if it is expected, raise --hang-timeout above it so the watchdog's dumps are kept for real hangs",
    )
