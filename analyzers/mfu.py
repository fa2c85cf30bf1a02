"""Model FLOPs utilization per rank and step, when the FLOPs are known and the peak is given.

FLOPs come from the trace (operators profiled with `with_flops=True` carry a `flops` arg; nested
operators do not double count, as only the leaf math ops carry it) or from the user
(`--model-flops-per-step`, per rank). MFU = FLOPs / (step time x peak), with `--peak-tflops` per
device. Without a peak the table still gives the achieved TFLOP/s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scope.analysis import Context, Result

COLUMNS = ["rank", "step", "step_us", "flops", "flops_source", "achieved_tflops", "peak_tflops", "mfu_pct"]


def analyze(ctx: Context) -> Result:
    if ctx.store is None:
        return Result()
    steps = ctx.table("breakdown")[["rank", "step", "step_us"]]
    if steps.empty:
        return Result()
    model = ctx.option("model_flops_per_step")
    peak = ctx.option("peak_tflops")
    if model:
        flops = pd.Series(float(model), index=steps.index)
        source = "model"
    else:
        found = ctx.table("trace_flops")  # read in the per-rank pass (scope/rankpass)
        if found.empty:
            return Result()
        flops = steps.merge(found, on=["rank", "step"], how="left")["flops"]
        source = "trace"
    out = steps.assign(flops=flops.to_numpy(), flops_source=source)
    out["achieved_tflops"] = out["flops"] / (out["step_us"] * 1e-6) / 1e12
    out["peak_tflops"] = float(peak) if peak else np.nan
    out["mfu_pct"] = 100 * out["achieved_tflops"] / out["peak_tflops"]
    return Result(tables={"mfu": out[COLUMNS]})
