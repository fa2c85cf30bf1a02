"""A synthetic run at any scale, written straight into the store layout the dashboard reads.

Not a trace generator: it writes what `scope ingest` + `scope analyze` would leave behind (per-rank
events, steps and collectives partitions; analyzer tables; analysis.json; sidecar counters), so the
dashboard can be timed at 1,024 ranks without running 1,024 processes. Planted, for the eye and the
tests: a persistent straggler (slow compute), one hot cell, a slow tensor-parallel group, a hang
culprit in the Flight Recorder table, and four pipeline stages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from scope import __version__
from scope.ingest.tables import COLLECTIVES_SCHEMA, STEP_KINDS, STEPS_SCHEMA
from scope.result import records
from scope.store import STORE_VERSION, analysis_path, part_path, table_path

BASE_NS = 1_700_000_000_000_000_000
KERNELS_PER_STEP = 40
TP = 8  # ranks per tensor-parallel group (and per host)
STAGES = 4


@dataclass(frozen=True)
class Plan:
    ranks: int
    steps: int
    straggler: int
    hot_rank: int
    hot_step: int
    slow_tp: int  # index of the slow tensor-parallel group
    seed: int = 0


def plan_for(ranks: int, steps: int) -> Plan:
    return Plan(
        ranks=ranks,
        steps=steps,
        straggler=min(ranks - 1, 37 % ranks if ranks > 37 else ranks // 2),
        hot_rank=ranks * 3 // 4,
        hot_step=steps // 2,
        slow_tp=min(3, ranks // TP - 1),
    )


def breakdown(plan: Plan) -> pd.DataFrame:
    """Per rank and step, in µs: synchronous data parallelism, so the fast ranks wait for the slow one."""
    rng = np.random.default_rng(plan.seed)
    r, s = np.meshgrid(np.arange(plan.ranks), np.arange(plan.steps), indexing="ij")
    compute = 80_000 * (1 + 0.04 * rng.standard_normal(r.shape))
    compute[plan.straggler, :] *= 1.35
    compute[plan.hot_rank, plan.hot_step] *= 2.5
    transfer = 12_000 * (1 + 0.05 * rng.standard_normal(r.shape))
    wait = compute.max(axis=0, keepdims=True) - compute
    idle = 3_000 * (1 + 0.3 * np.abs(rng.standard_normal(r.shape)))
    df = pd.DataFrame(
        {
            "rank": r.ravel(),
            "step": s.ravel(),
            "compute_us": compute.ravel(),
            "exposed_comm_wait_us": wait.ravel(),
            "exposed_comm_transfer_us": transfer.ravel(),
            "overlapped_comm_us": 0.3 * transfer.ravel(),
            "memcpy_us": 500.0,
            "idle_us": idle.ravel(),
        }
    )
    df["exposed_comm_us"] = df["exposed_comm_wait_us"] + df["exposed_comm_transfer_us"]
    df["step_us"] = df["compute_us"] + df["exposed_comm_us"] + df["memcpy_us"] + df["idle_us"]
    return df


def step_starts(bd: pd.DataFrame) -> np.ndarray:
    """Each step starts when the slowest rank finished the previous one."""
    longest = bd.groupby("step")["step_us"].max().to_numpy() * 1000
    return BASE_NS + np.concatenate([[0], np.cumsum(longest + 50_000)[:-1]]).astype(np.int64)


def rank_events(rank: int, bd: pd.DataFrame, starts: np.ndarray) -> pd.DataFrame:
    """One rank's events: a ProfilerStep, compute kernels back to back, a TP all-gather, a DP all-reduce."""
    rows: dict[str, list[Any]] = {
        k: []
        for k in ("ts_ns", "dur_ns", "name", "kind", "device", "stream", "thread", "step", "coll_op", "pg", "bytes")
    }

    def add(
        ts: int, dur: int, name: str, kind: str, stream: int, step: int, op: Any = None, pg: Any = None, nbytes: int = 0
    ) -> None:
        for key, value in zip(
            rows,
            (ts, dur, name, kind, 0 if stream >= 0 else -1, stream, -1 if stream >= 0 else 1, step, op, pg, nbytes),
            strict=True,
        ):
            rows[key].append(value)

    for row in bd.itertuples(index=False):
        step, t = int(row.step), int(starts[int(row.step)])
        add(t, int(row.step_us * 1000), f"ProfilerStep#{step}", "step", -1, step)
        t += int(row.idle_us * 500)
        add(t, 2_000_000, "ncclDevKernel_AllGather_RING_LL", "comm", 13, step, "all_gather", f"tp{rank // TP}", 8 << 20)
        t += 2_000_000
        chunk = int(row.compute_us * 1000 / KERNELS_PER_STEP)
        for k in range(KERNELS_PER_STEP):
            add(t, chunk - 2_000, f"sm90_xmma_gemm_{k % 5}", "compute", 7, step)
            t += chunk
        add(
            t,
            int(row.exposed_comm_us * 1000),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "comm",
            13,
            step,
            "all_reduce",
            "0",
            100 << 20,
        )
    df = pd.DataFrame(rows)
    df.insert(0, "rank", np.int32(rank))
    df.insert(1, "event_id", np.arange(len(df), dtype=np.int64))
    df["peer"] = np.int32(-1)  # no sends or recvs: every collective is a group's
    return df


def rank_collectives(events: pd.DataFrame) -> pd.DataFrame:
    comm = events[events["kind"] == "comm"].copy()
    comm["seq"] = comm.groupby("pg").cumcount()
    comm["op"] = comm["coll_op"]
    comm["end_ns"] = comm["ts_ns"] + comm["dur_ns"]
    comm["dtype"] = "Float"
    comm["group_size"] = np.where(comm["pg"] == "0", -1, TP).astype("int32")
    comm["group_ranks"] = None
    comm["on_gpu"] = True
    return comm[[f.name for f in COLLECTIVES_SCHEMA]]


def write_rank(store: Path, rank: int, bd: pd.DataFrame, starts: np.ndarray) -> None:
    events = rank_events(rank, bd, starts)
    table = pa.Table.from_pandas(events, preserve_index=False)
    for col in ("name", "kind", "coll_op", "pg"):
        table = table.set_column(table.schema.get_field_index(col), col, table[col].dictionary_encode())
    pq.write_table(table, part_path(store, "events", rank))
    steps = bd[["rank", "step", "step_us"]].copy()
    steps["start_ns"] = starts[steps["step"].to_numpy()]
    steps["end_ns"] = steps["start_ns"] + (steps["step_us"] * 1000).astype(np.int64)
    for kind in STEP_KINDS:
        steps[f"n_{kind}"] = int((events["kind"] == kind).sum() // max(1, len(bd)))
    pq.write_table(
        pa.Table.from_pandas(steps[[f.name for f in STEPS_SCHEMA]], schema=STEPS_SCHEMA, preserve_index=False),
        part_path(store, "steps", rank),
    )
    coll = rank_collectives(events)
    pq.write_table(
        pa.Table.from_pandas(coll, schema=COLLECTIVES_SCHEMA, preserve_index=False),
        part_path(store, "collectives", rank),
    )


def matched_collectives(plan: Plan, bd: pd.DataFrame) -> pd.DataFrame:
    """What the collectives analyzer reports per instance: skew, last arriver, bus bandwidth."""
    rows = []
    wide = bd.pivot(index="rank", columns="step", values="compute_us")
    n = plan.ranks
    for step in range(plan.steps):
        compute = wide[step]
        transfer = float(bd[bd["step"] == step]["exposed_comm_transfer_us"].median())
        rows.append(
            {
                "pg": "0",
                "seq": step,
                "op": "all_reduce",
                "step": step,
                "bytes": 100 << 20,
                "ranks": n,
                "skew_us": float(compute.max() - compute.min()),
                "last_arriver": int(compute.idxmax()),
                "latency_us": transfer,
                "busbw_gbps": (100 << 20) / (transfer * 1e3) * 2 * (n - 1) / n,
            }
        )
        for g in range(n // TP):
            slow = 6.0 if g == plan.slow_tp else 1.0
            rows.append(
                {
                    "pg": f"tp{g}",
                    "seq": step,
                    "op": "all_gather",
                    "step": step,
                    "bytes": 8 << 20,
                    "ranks": TP,
                    "skew_us": 40.0 * slow * (1 + (g * 7 + step) % 5 / 10),
                    "last_arriver": g * TP + step % TP,
                    "latency_us": 2000.0 * slow,
                    "busbw_gbps": (8 << 20) / (2e6 * slow) * (TP - 1) / TP,
                }
            )
    return pd.DataFrame(rows)


def analyzer_tables(plan: Plan, bd: pd.DataFrame) -> dict[str, pd.DataFrame]:
    n, last_seq = plan.ranks, plan.steps - 1
    per_stage = max(1, n // STAGES)
    pipeline = bd[["rank", "step", "idle_us", "step_us"]].copy()
    pipeline["stage"] = np.minimum(pipeline["rank"] // per_stage, STAGES - 1)
    pipeline["bubble_us"] = pipeline["idle_us"] + 4_000 * pipeline["stage"]
    pipeline["bubble_pct"] = 100 * pipeline["bubble_us"] / pipeline["step_us"]
    pipeline["theory_pct"] = 100 * (STAGES - 1) / (8 + STAGES - 1)
    for col in ("warmup_us", "steady_us", "cooldown_us"):
        pipeline[col] = pipeline["bubble_us"] / 3
    fr = pd.DataFrame({"pg": "0", "rank": np.arange(n), "last_enqueued": last_seq + 1, "last_completed": last_seq})
    fr.loc[fr["rank"] == plan.straggler, ["last_enqueued", "last_completed"]] = [last_seq, last_seq]
    hosts = pd.DataFrame(
        {
            "host": [f"node{h:03d}" for h in range(-(-n // TP))],
            "ranks": [f"{h * TP}-{min(n, h * TP + TP) - 1}" for h in range(-(-n // TP))],
            "status": "ok",
        }
    )
    return {
        "breakdown": bd,
        "collectives": matched_collectives(plan, bd),
        "fr": fr,
        "hosts": hosts,
        "pipeline": pipeline.drop(columns=["idle_us", "step_us"]),
    }


def findings(plan: Plan) -> list[dict[str, Any]]:
    s, culprit = plan.straggler, plan.straggler
    return [
        {
            "kind": "hang",
            "severity": "critical",
            "ranks": [culprit],
            "steps": [],
            "summary": f"rank {culprit} never enqueued all_reduce #{plan.steps} of pg 0; every other rank waits in it",
            "evidence": [f"ranks/{culprit}/stderr.log:3", f"fr: pg 0 seq {plan.steps}"],
            "metrics": {"pg": "0"},
            "suggestion": f"look at rank {culprit}'s stack dump",
        },
        {
            "kind": "straggler",
            "severity": "warning",
            "ranks": [s],
            "steps": [],
            "summary": f"rank {s} computes 1.35x slower than the fastest rank in every step",
            "evidence": [],
            "metrics": {"score": 0.74, "time_lost_us": 28_000.0},
            "suggestion": "check the host",
        },
        {
            "kind": "slow_collective",
            "severity": "warning",
            "ranks": list(range(plan.slow_tp * TP, plan.slow_tp * TP + TP)),
            "steps": [],
            "summary": f"all_gather on pg tp{plan.slow_tp} runs at 1/6 of its peers' bus bandwidth",
            "evidence": [],
            "metrics": {"pg": f"tp{plan.slow_tp}", "op": "all_gather"},
            "suggestion": "check the links",
        },
        {
            "kind": "pipeline_bubble",
            "severity": "info",
            "ranks": [],
            "steps": [plan.hot_step],
            "summary": "the last stage idles 3x the schedule's bubble",
            "evidence": [],
            "metrics": {},
            "suggestion": "rebalance layers",
        },
    ]


def write_counters(root: Path, plan: Plan, starts: np.ndarray, samples: int = 120) -> None:
    span = int(starts[-1] - starts[0]) + 200_000_000
    ts = starts[0] + np.linspace(0, span, samples).astype(np.int64)
    for h in range(-(-plan.ranks // TP)):
        folder = root / "hosts" / f"node{h:03d}" / "counters" / "gpu"
        folder.mkdir(parents=True, exist_ok=True)
        gpu = np.repeat(np.arange(TP), samples)
        util = 85 + 10 * np.sin(np.tile(ts, TP) / 1e9) - (40 if h == plan.straggler // TP else 0) * (gpu == 0)
        df = pd.DataFrame(
            {
                "ts_ns": np.tile(ts, TP),
                "gpu": gpu.astype("int32"),
                "util_gpu_pct": util.astype(int),
                "power_mw": (500_000 + 1000 * util).astype(int),
                "pcie_tx_bytes": np.cumsum(np.full(samples * TP, 1 << 20)),
            }
        )
        df.to_parquet(folder / f"{ts[0]}-1-00001.parquet", index=False)


def synthesize(root: Path, ranks: int = 1024, steps: int = 50, evidence: bool = True) -> Path:
    """Write RUN/store (+ RUN/hosts counters); returns the store folder (serve it with analyze=False)."""
    plan = plan_for(ranks, steps)
    store = Path(root) / "store"
    for sub in ("events", "steps", "collectives", "tables"):
        (store / sub).mkdir(parents=True, exist_ok=True)
    bd = breakdown(plan)
    starts = step_starts(bd)
    for rank, rank_bd in bd.groupby("rank"):
        write_rank(store, int(rank), rank_bd, starts)
    tables = analyzer_tables(plan, bd)
    for name, df in tables.items():
        df.to_parquet(table_path(store, name), index=False)
    hosts = [
        {"name": f"node{h:03d}", "ranks": list(range(h * TP, min(ranks, h * TP + TP))), "clock_offset_ns": 0}
        for h in range(-(-ranks // TP))
    ]
    run = {
        "run_id": "synthetic",
        "world_size": ranks,
        "backend": "nccl",
        "status": "hung",
        "hosts": hosts,
        "source": str(root),
        "layout": "run",
    }
    meta = {
        "store_version": STORE_VERSION,
        "scope_version": __version__,
        "source": str(root),
        "layout": "run",
        "ranks": {str(r): {"n_events": 0} for r in range(ranks)},
        "warnings": [],
        "errors": [],
        "run": run,
    }
    (store / "meta.json").write_text(json.dumps(meta))
    steps_df = pd.concat([pd.read_parquet(part_path(store, "steps", r)) for r in range(min(ranks, 1))])
    report = {
        "scope_version": __version__,
        "run": run,
        "ranks": [],
        "steps": records(steps_df),
        "findings": findings(plan),
        "warnings": ["synthetic run: no traces behind this store"],
    }
    report.update({name: records(df) for name, df in tables.items()})
    analysis_path(store).write_text(json.dumps(report))
    write_counters(Path(root), plan, starts)
    if evidence:
        log = Path(root) / "ranks" / str(plan.straggler) / "stderr.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("step 48 done\nentering all_reduce\nRuntimeError: stuck here (synthetic)\nexiting\n")
    return store
