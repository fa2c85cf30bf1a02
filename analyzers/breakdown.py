"""Time breakdown per rank and step: compute, exposed communication (waiting for peers / transfer),
overlapped communication, exposed memcpy/memset and idle, adding up to the step time.

The definitions (GPU kernels on GPU traces, the training thread on CPU/gloo traces) are in
scope/rankpass/timeline.py; the cross-rank wait intervals come from scope/rankpass/match.py. The table's
extra columns: `comm_launch_us` (CPU: time on the training thread in the op that launches a
collective, outside any child op; counted in exposed transfer), `comm_us` (all communication time,
exposed or not), `start_ns`/`end_ns` (the step window), `timeline` (gpu | cpu).
"""

from __future__ import annotations

from scope.analysis import Context, Result


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    table = ctx.table("breakdown")
    return Result(tables={"breakdown": table}) if not table.empty else Result()
