"""Reading the sidecar's counters back, and the signals analyzers and the dashboard use.

The sidecar (`scope.collectors.sidecar`, whose docstring documents the tables) writes raw cumulative
counters per host under `RUN/hosts/<host>/counters/<table>/*.parquet`. Here they become:

- `nvlink_bandwidth`, `ib_bandwidth`: bytes/s per NVLink link and per IB/RoCE port;
- `host_utilization`, `net_rates`: CPU busy %, memory used %, NIC bytes/s;
- `error_increments`: each rise of an error counter (IB symbol errors, NVLink CRC/replay, ECC,
  remapped rows, NIC errors) with the sample time it was seen;
- `throttle_intervals`: [start, end) of each clock-event (throttle) reason per GPU;
- `xid_events`: Xid events from NVML and the kernel log, with their meaning;
- `assign_steps`: the training step each row falls in, by time, per host (`steps` of the store).

Every timestamp is put on the run clock with the host's `clock_offset_ns` from run.json.
A counter that went down (reset, wrap) yields no rate and no increment, never a negative one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from scope.inputs import Inventory

TABLES = ("host", "net", "disk", "ib", "gpu", "nvlink", "events")
KIB = 1024
# Error counters per table: (entity key columns, counters whose rise means trouble).
ERROR_COUNTERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ib": (
        ("device", "port"),
        (
            "symbol_error",
            "link_downed",
            "link_error_recovery",
            "port_rcv_errors",
            "port_xmit_discards",
            "port_rcv_remote_physical_errors",
            "local_link_integrity_errors",
            "excessive_buffer_overrun_errors",
            "out_of_sequence",
            "packet_seq_err",
            "local_ack_timeout_err",
            "req_transport_retries_exceeded",
            "rnr_nak_retry_err",
            "implied_nak_seq_err",
        ),
    ),
    "nvlink": (("gpu", "link"), ("replay_errors", "recovery_errors", "crc_errors")),
    "gpu": (
        ("gpu",),
        (
            "ecc_corrected_volatile",
            "ecc_uncorrected_volatile",
            "remapped_rows_correctable",
            "remapped_rows_uncorrectable",
            "remap_pending",
            "remap_failure",
        ),
    ),
    "net": (("iface",), ("rx_errs", "tx_errs", "rx_drop", "tx_drop")),
}
# nvmlClocksEventReason* bits that cost performance (idle, app-clock and display settings do not).
THROTTLE_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}
XID_MEANINGS = {
    13: "graphics engine exception (often an application bug)",
    31: "GPU memory page fault (MMU)",
    43: "GPU stopped processing (reset channel)",
    45: "preemptive cleanup after a previous error",
    48: "double-bit ECC error",
    63: "ECC page retirement or row remap recorded",
    64: "ECC page retirement or row remap failed",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}


# ----- reading ---------------------------------------------------------------------------------


def clock_offsets(run_dir: Path | str) -> dict[str, int]:
    """Host -> clock_offset_ns from run.json (empty when there is no manifest)."""
    try:
        data = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return {h.get("name", ""): int(h.get("clock_offset_ns") or 0) for h in data.get("hosts", []) if isinstance(h, dict)}


def hosts_of_ranks(run_dir: Path | str) -> dict[int, str]:
    """Rank -> host from run.json (empty when there is no manifest)."""
    try:
        data = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    ranks = data.get("ranks", []) if isinstance(data, dict) else []
    return {int(r["rank"]): str(r.get("host") or "") for r in ranks if isinstance(r, dict) and "rank" in r}


def read_counters(source: Path | str | Inventory, table: str, hosts: list[str] | None = None) -> pd.DataFrame:
    """All chunks of `table` from every host (or `hosts`), with a `host` column, sorted by time: the
    chunks and clock offsets of the run's inventory (scope.inputs: no second look).

    Unreadable chunks are skipped and named in `df.attrs["skipped"]`.
    """
    from scope.inputs import inventory_of

    inputs = inventory_of(source)
    manifest = inputs.manifest
    offsets = {h.name: int(h.clock_offset_ns or 0) for h in manifest.hosts} if manifest else {}
    listed = inputs.counter_chunks(table)
    return read_chunks({h: sorted(listed.get(h, [])) for h in hosts or sorted(listed)}, offsets)


def read_chunks(files_by_host: dict[str, list[Path]], offsets: dict[str, int]) -> pd.DataFrame:
    """Counter chunks by host, on the run's clock (each host's OFFSETS), in one table sorted by time."""
    parts: list[pa.Table] = []
    skipped: list[str] = []
    for host, files in files_by_host.items():
        for path in files:
            try:
                part = pq.read_table(path)
            except Exception as exc:
                skipped.append(f"{path}: {exc}")
                continue
            part = part.append_column("host", pa.array([host] * part.num_rows, pa.string()))
            if offsets.get(host):
                ts = pc.add(part.column("ts_ns"), offsets[host])
                part = part.set_column(part.schema.get_field_index("ts_ns"), "ts_ns", ts)
            parts.append(part)
    if not parts:
        df = pd.DataFrame({"host": pd.Series(dtype=str), "ts_ns": pd.Series(dtype="int64")})
    else:
        df = pa.concat_tables(parts, promote_options="permissive").to_pandas()
        df = df.sort_values(["host", "ts_ns"], kind="stable").reset_index(drop=True)
    df.attrs["skipped"] = skipped
    return df


# ----- rates -----------------------------------------------------------------------------------


def counter_rates(
    df: pd.DataFrame,
    keys: list[str],
    counters: dict[str, float],
    dt_col: str | None = None,
    dt_scale: float = 1e-9,
) -> pd.DataFrame:
    """Per entity (`host` + `keys`), the rate of each counter between consecutive samples.

    `counters` maps a column to the factor that turns its unit into the output's (1024 for KiB to
    bytes); the output column is `<name>_per_s`. Time comes from `ts_ns`, or from `dt_col` (in
    units of `dt_scale` seconds) when given and present. Rows: host, keys, start_ns, ts_ns, dt_s.
    """
    group = ["host", *keys]
    out_cols = [*group, "start_ns", "ts_ns", "dt_s"] + [f"{c}_per_s" for c in counters]
    present = [c for c in counters if c in df.columns]
    if df.empty or not present:
        return pd.DataFrame(columns=out_cols)
    df = df.sort_values([*group, "ts_ns"], kind="stable")
    grouped = df.groupby(group, sort=False, dropna=False)
    time_col = dt_col if dt_col and dt_col in df.columns and df[dt_col].notna().all() else "ts_ns"
    scale = dt_scale if time_col == dt_col else 1e-9
    dt_s = _group_diff(df, grouped, time_col) * scale
    out = df[group].copy()
    out["start_ns"] = grouped["ts_ns"].shift(1, fill_value=-1)  # stays int64: ns need all 19 digits
    out["ts_ns"] = df["ts_ns"]
    out["dt_s"] = dt_s
    for column, factor in counters.items():
        if column not in df.columns:
            out[f"{column}_per_s"] = np.nan
            continue
        delta = _group_diff(df, grouped, column)
        rate = delta * factor / dt_s.where(dt_s > 0)
        out[f"{column}_per_s"] = rate.where(delta >= 0)
    out = out[grouped.cumcount().to_numpy() > 0]
    return out[out_cols].reset_index(drop=True)


def _group_diff(df: pd.DataFrame, grouped: Any, column: str) -> pd.Series:
    """Difference to the previous row of the group, exact for int64 (groupby.diff goes through
    float64 first, which rounds epoch nanoseconds to 256 ns)."""
    values = df[column]
    if pd.api.types.is_integer_dtype(values.dtype):
        return (values - grouped[column].shift(1, fill_value=0)).astype("float64")
    return (values - grouped[column].shift(1)).astype("float64")


def nvlink_bandwidth(nvlink: pd.DataFrame) -> pd.DataFrame:
    """Bytes/s per GPU link from the cumulative KiB counters (timed by NVML's own timestamps)."""
    rates = counter_rates(nvlink, ["gpu", "link"], {"tx_kib": KIB, "rx_kib": KIB}, dt_col="nvml_ts_us", dt_scale=1e-6)
    return rates.rename(columns={"tx_kib_per_s": "tx_bytes_per_s", "rx_kib_per_s": "rx_bytes_per_s"})


def ib_bandwidth(ib: pd.DataFrame) -> pd.DataFrame:
    """Bytes, packets and congestion-wait ticks per second per IB/RoCE port."""
    counters: dict[str, float] = {
        "xmit_bytes": 1,
        "rcv_bytes": 1,
        "port_xmit_packets": 1,
        "port_rcv_packets": 1,
        "port_xmit_wait": 1,
    }
    return counter_rates(ib, ["device", "port"], counters)


def net_rates(net: pd.DataFrame) -> pd.DataFrame:
    return counter_rates(net, ["iface"], {"rx_bytes": 1, "tx_bytes": 1, "rx_packets": 1, "tx_packets": 1})


def host_utilization(host: pd.DataFrame) -> pd.DataFrame:
    """CPU busy % (all cores, from cumulative CPU seconds), memory used %, load, per sample interval."""
    cpu_cols = [c for c in host.columns if c.startswith("cpu_") and c.endswith("_s")]
    if host.empty or "cpu_idle_s" not in host.columns:
        return pd.DataFrame(columns=["host", "start_ns", "ts_ns", "cpu_busy_pct", "mem_used_pct", "load1"])
    host = host.sort_values(["host", "ts_ns"], kind="stable").copy()
    host["_total"] = host[cpu_cols].sum(axis=1)
    host["_idle"] = host["cpu_idle_s"] + host.get("cpu_iowait_s", 0.0)
    grouped = host.groupby("host", sort=False)
    total = grouped["_total"].diff()
    idle = grouped["_idle"].diff()
    out = host[["host", "ts_ns"]].copy()
    out.insert(1, "start_ns", grouped["ts_ns"].shift(1, fill_value=-1))
    out["cpu_busy_pct"] = (100.0 * (1.0 - idle / total.where(total > 0))).clip(0, 100)
    out["mem_used_pct"] = 100.0 * (1.0 - host["mem_available_bytes"] / host["mem_total_bytes"])
    out["load1"] = host.get("load1")
    return out[grouped.cumcount().to_numpy() > 0].reset_index(drop=True)


# ----- events: errors, throttling, Xid ---------------------------------------------------------


def error_increments(tables: dict[str, pd.DataFrame], include_baseline: bool = False) -> pd.DataFrame:
    """One row per rise of an error counter: host, table, entity, counter, ts_ns, prev_ts_ns,
    increment, total. With `include_baseline`, counters already non-zero at the first sample are
    reported too (at_start=True, increment = the value)."""
    rows: list[dict[str, Any]] = []
    for table, (keys, counters) in ERROR_COUNTERS.items():
        df = tables.get(table)
        if df is None or df.empty or not set(keys) <= set(df.columns):
            continue
        df = df.sort_values(["host", *keys, "ts_ns"], kind="stable")
        for key, group in df.groupby(["host", *keys], sort=False, dropna=False):
            entity = "/".join(str(k) for k in key[1:])
            for counter in counters:
                if counter in group.columns:
                    rows.extend(_rises(group, key[0], table, entity, counter, include_baseline))
    columns = ["host", "table", "entity", "counter", "ts_ns", "prev_ts_ns", "increment", "total", "at_start"]
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["ts_ns", "host"], kind="stable").reset_index(drop=True) if rows else out


def _rises(group: pd.DataFrame, host: str, table: str, entity: str, counter: str, baseline: bool) -> list[dict]:
    values = group[["ts_ns", counter]].dropna()
    if values.empty:
        return []
    ts = values["ts_ns"].to_numpy()
    v = values[counter].to_numpy(dtype="int64")
    base = {"host": host, "table": table, "entity": entity, "counter": counter}
    rows = []
    if baseline and v[0] > 0:
        rows.append(
            {
                **base,
                "ts_ns": int(ts[0]),
                "prev_ts_ns": int(ts[0]),
                "increment": int(v[0]),
                "total": int(v[0]),
                "at_start": True,
            }
        )
    for i in np.flatnonzero(np.diff(v) > 0) + 1:
        rows.append(
            {
                **base,
                "ts_ns": int(ts[i]),
                "prev_ts_ns": int(ts[i - 1]),
                "increment": int(v[i] - v[i - 1]),
                "total": int(v[i]),
                "at_start": False,
            }
        )
    return rows


def throttle_intervals(gpu: pd.DataFrame, reasons: dict[int, str] | None = None) -> pd.DataFrame:
    """[start_ns, end_ns) per GPU and clock-event reason: from the first sample with the bit set to
    the first sample without it (or the last sample, when it never clears)."""
    reasons = reasons or THROTTLE_REASONS
    columns = ["host", "gpu", "reason", "start_ns", "end_ns", "dur_ns", "samples"]
    if gpu.empty or "clocks_event_reasons" not in gpu.columns:
        return pd.DataFrame(columns=columns)
    rows = []
    gpu = gpu.dropna(subset=["clocks_event_reasons"]).sort_values(["host", "gpu", "ts_ns"], kind="stable")
    for (host, index), group in gpu.groupby(["host", "gpu"], sort=False):
        ts = group["ts_ns"].to_numpy()
        mask = group["clocks_event_reasons"].to_numpy(dtype="int64")
        for bit, name in reasons.items():
            on = (mask & bit) != 0
            edges = np.diff(np.concatenate([[0], on.astype(np.int8), [0]]))
            for start, stop in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True):
                end = ts[stop] if stop < len(ts) else ts[-1]
                rows.append(
                    [
                        host,
                        int(index),
                        name,
                        int(ts[start]),
                        int(end),
                        int(end - ts[start]),
                        int(stop - start),
                    ]
                )
    out = pd.DataFrame(rows, columns=columns)
    return out.sort_values(["start_ns", "host", "gpu"], kind="stable").reset_index(drop=True) if rows else out


def normalize_pci(address: Any) -> str | None:
    """'00000000:9B:00.0' (NVML) and '0000:9b:00' (Xid line) -> '0000:9b:00'."""
    if not isinstance(address, str) or address.count(":") < 2:
        return None
    domain, bus, rest = address.lower().split(":", 2)
    return f"{int(domain, 16):04x}:{bus}:{rest.split('.')[0]}"


def xid_events(events: pd.DataFrame, gpu: pd.DataFrame | None = None) -> pd.DataFrame:
    """Xid events (NVML and kernel log, both kept: `source` says which) with their meaning; a kernel
    line's PCI address is mapped to the NVML GPU index through the `gpu` table when it can be."""
    columns = ["host", "ts_ns", "source", "gpu", "pci", "code", "meaning", "message"]
    if events.empty or "kind" not in events.columns:
        return pd.DataFrame(columns=columns)
    xid = events[events["kind"] == "xid"].copy()
    if gpu is not None and not gpu.empty and "pci" in gpu.columns:
        index = {
            (h, normalize_pci(p)): int(g)
            for h, p, g in gpu[["host", "pci", "gpu"]].drop_duplicates().itertuples(index=False)
        }
        mapped = [
            index.get((h, normalize_pci(p)), g) if g < 0 else g
            for h, p, g in zip(xid["host"], xid["pci"], xid["gpu"], strict=True)
        ]
        xid["gpu"] = pd.Series(mapped, index=xid.index, dtype="int64")
    xid["meaning"] = xid["code"].map(lambda c: XID_MEANINGS.get(int(c), "see NVIDIA's Xid catalog"))
    return xid[columns].sort_values("ts_ns", kind="stable").reset_index(drop=True)


# ----- joining to steps ------------------------------------------------------------------------


def step_windows(steps: pd.DataFrame, rank_hosts: dict[int, str] | None = None) -> pd.DataFrame:
    """Per host and step, [first start, last end] over the host's ranks; host '*' when unknown."""
    if steps is None or steps.empty:
        return pd.DataFrame(columns=["host", "step", "start_ns", "end_ns"])
    hosts = steps["rank"].map(lambda r: (rank_hosts or {}).get(int(r)) or "*")
    windows = (
        steps.assign(host=hosts)
        .groupby(["host", "step"], as_index=False)
        .agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max"))
    )
    return windows.sort_values(["host", "start_ns"]).reset_index(drop=True)


def assign_steps(df: pd.DataFrame, windows: pd.DataFrame, ts_col: str = "ts_ns") -> pd.DataFrame:
    """`df` with a `step` column: the step whose window holds `ts_col` on that host (-1 outside)."""
    out = df.copy()
    out["step"] = -1
    if df.empty or windows.empty:
        return out
    for host in out["host"].unique():
        own = windows[windows["host"] == host]
        if own.empty:
            own = windows[windows["host"] == "*"]
        if own.empty:
            continue
        rows = out.index[out["host"] == host]
        left = out.loc[rows, [ts_col]].astype("int64").reset_index().sort_values(ts_col)
        right = own[["start_ns", "end_ns", "step"]].astype("int64").sort_values("start_ns")
        merged = pd.merge_asof(left, right, left_on=ts_col, right_on="start_ns", direction="backward")
        inside = merged[ts_col] < merged["end_ns"]
        out.loc[merged.loc[inside, "index"], "step"] = merged.loc[inside, "step"].astype("int64").to_numpy()
    return out


def derive_tables(
    run_dir: Path | str, steps: pd.DataFrame | None = None, rank_hosts: dict[int, str] | None = None
) -> dict[str, pd.DataFrame]:
    """Every derived counter table of a run (names as they go into the store), with the step of each
    row when `steps` (the store's steps table) is given; ranks are placed on hosts by run.json
    unless `rank_hosts` says otherwise."""
    from scope.inputs import Inventory

    inputs = Inventory.scan(run_dir)  # listed once for every table
    raw = {name: read_counters(inputs, name) for name in TABLES}
    derived = {
        "counter_host": host_utilization(raw["host"]),
        "counter_nvlink_bw": nvlink_bandwidth(raw["nvlink"]),
        "counter_ib_bw": ib_bandwidth(raw["ib"]),
        "counter_errors": error_increments(raw),
        "counter_throttle": throttle_intervals(raw["gpu"]),
        "counter_xid": xid_events(raw["events"], raw["gpu"]),
    }
    if rank_hosts is None:
        rank_hosts = hosts_of_ranks(run_dir)
    windows = step_windows(steps, rank_hosts) if steps is not None else pd.DataFrame()
    if not windows.empty:
        for name, df in derived.items():
            ts_col = "start_ns" if name == "counter_throttle" else "ts_ns"
            derived[name] = assign_steps(df, windows, ts_col)
    return derived
