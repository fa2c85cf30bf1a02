"""Host counters from /proc: CPU time, memory, load, network interfaces and whole disks.

Values are stored as the kernel reports them: cumulative counters stay cumulative (CPU seconds,
bytes, packets), so a missed sample never corrupts a rate; `scope.counter_signals` derives rates. The proc
root is injectable for tests; reading five small files costs well under a millisecond.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
from scope.collectors.sidecar.base import Row, Rows, SourceContext, read_text

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
MEMINFO_FIELDS = {
    "MemTotal": "mem_total_bytes",
    "MemAvailable": "mem_available_bytes",
    "MemFree": "mem_free_bytes",
    "Cached": "mem_cached_bytes",
    "SwapTotal": "swap_total_bytes",
    "SwapFree": "swap_free_bytes",
}
NET_FIELDS = (
    ("rx_bytes", 0),
    ("rx_packets", 1),
    ("rx_errs", 2),
    ("rx_drop", 3),
    ("tx_bytes", 8),
    ("tx_packets", 9),
    ("tx_errs", 10),
    ("tx_drop", 11),
)
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size

HOST_SCHEMA = pa.schema(
    [("ts_ns", pa.int64()), ("n_cpus", pa.int32())]
    + [(f"cpu_{name}_s", pa.float64()) for name in CPU_FIELDS]
    + [("procs_running", pa.int32()), ("load1", pa.float64()), ("load5", pa.float64())]
    + [(column, pa.int64()) for column in MEMINFO_FIELDS.values()]
)
NET_SCHEMA = pa.schema([("ts_ns", pa.int64()), ("iface", pa.string())] + [(n, pa.int64()) for n, _ in NET_FIELDS])
DISK_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),
        ("disk", pa.string()),
        ("reads", pa.int64()),
        ("writes", pa.int64()),
        ("read_bytes", pa.int64()),
        ("write_bytes", pa.int64()),
        ("io_ms", pa.int64()),  # time the device had I/O in flight: busy % = d(io_ms) / d(wall ms)
    ]
)


def parse_stat(text: str, ticks_per_s: float) -> Row:
    row: Row = {}
    n_cpus = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            values = [int(v) for v in parts[1 : 1 + len(CPU_FIELDS)]]
            for name, value in zip(CPU_FIELDS, values, strict=False):
                row[f"cpu_{name}_s"] = value / ticks_per_s
        elif parts[0].startswith("cpu"):
            n_cpus += 1
        elif parts[0] == "procs_running":
            row["procs_running"] = int(parts[1])
    row["n_cpus"] = n_cpus
    return row


def parse_meminfo(text: str) -> Row:
    row: Row = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        column = MEMINFO_FIELDS.get(key)
        if column:
            parts = rest.split()
            scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
            row[column] = int(parts[0]) * scale
    return row


def parse_net_dev(text: str, ts_ns: int) -> list[Row]:
    rows = []
    for line in text.splitlines()[2:]:  # two header lines
        iface, sep, rest = line.partition(":")
        if not sep:
            continue
        values = rest.split()
        if len(values) < 12:
            continue
        row: Row = {"ts_ns": ts_ns, "iface": iface.strip()}
        row.update({name: int(values[i]) for name, i in NET_FIELDS})
        rows.append(row)
    return rows


def parse_diskstats(text: str, ts_ns: int, whole_disks: set[str] | None) -> list[Row]:
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        name = parts[2]
        if name.startswith(("loop", "ram", "zram")):
            continue
        if whole_disks is not None and name not in whole_disks:
            continue  # a partition: its I/O is already counted in its disk
        rows.append(
            {
                "ts_ns": ts_ns,
                "disk": name,
                "reads": int(parts[3]),
                "writes": int(parts[7]),
                "read_bytes": int(parts[5]) * SECTOR_BYTES,
                "write_bytes": int(parts[9]) * SECTOR_BYTES,
                "io_ms": int(parts[12]),
            }
        )
    return rows


class HostSource:
    """CPU, memory, network and disk counters of this host from procfs."""

    name = "host"
    tables: ClassVar[dict[str, pa.Schema]] = {"host": HOST_SCHEMA, "net": NET_SCHEMA, "disk": DISK_SCHEMA}

    def __init__(self, proc_root: Path | str = "/proc", sys_block: Path | str = "/sys/block") -> None:
        self.proc = Path(proc_root)
        self.sys_block = Path(sys_block)
        self.ticks_per_s = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self.whole_disks: set[str] | None = None

    def open(self, ctx: SourceContext) -> str | None:
        if read_text(self.proc / "stat") is None:
            return f"{self.proc / 'stat'} is not readable (not Linux?)"
        try:
            self.whole_disks = {p.name for p in self.sys_block.iterdir()}
        except OSError:
            self.whole_disks = None
        return None

    def sample(self, ts_ns: int) -> Rows:
        host: Row = {"ts_ns": ts_ns}
        stat = read_text(self.proc / "stat")
        if stat is not None:
            host.update(parse_stat(stat, self.ticks_per_s))
        meminfo = read_text(self.proc / "meminfo")
        if meminfo is not None:
            host.update(parse_meminfo(meminfo))
        loadavg = read_text(self.proc / "loadavg")
        if loadavg:
            parts = loadavg.split()
            host["load1"], host["load5"] = float(parts[0]), float(parts[1])
        out: Rows = {"host": [host]}
        net = read_text(self.proc / "net" / "dev")
        out["net"] = parse_net_dev(net, ts_ns) if net else []
        disk = read_text(self.proc / "diskstats")
        out["disk"] = parse_diskstats(disk, ts_ns, self.whole_disks) if disk else []
        return out

    def close(self) -> None:
        return None
