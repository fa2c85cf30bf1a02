"""InfiniBand / RoCE port counters from sysfs (`/sys/class/infiniband/<dev>/ports/<n>/`).

`counters/port_xmit_data` and `counters/port_rcv_data` count 4-byte words (the IB PortCounters
convention, kept by mlx5 for RoCE too): the sampler stores them as bytes (`xmit_bytes`,
`rcv_bytes` = words x 4). All other counters keep their sysfs names and raw values; `hw_counters/`
(mlx5 retries and timeouts) are read when present and null otherwise. The root is injectable so
tests can build a tree in the real layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pyarrow as pa
from scope.collectors.sidecar.base import Row, Rows, SourceContext, read_int, read_text

IB_ROOT = Path("/sys/class/infiniband")
WORD_BYTES = 4
DATA_COUNTERS = {"port_xmit_data": "xmit_bytes", "port_rcv_data": "rcv_bytes"}
PORT_COUNTERS = (
    "port_xmit_packets",
    "port_rcv_packets",
    "port_xmit_wait",  # ticks the port had data to send but no credit: congestion, not an error
    "symbol_error",
    "link_downed",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
)
HW_COUNTERS = (
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "req_transport_retries_exceeded",
    "rnr_nak_retry_err",
    "implied_nak_seq_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "np_cnp_sent",
    "rp_cnp_handled",
)
# Which of these count errors is scope.counter_signals.ERROR_COUNTERS (the reader decides, not the sampler).
IB_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),
        ("device", pa.string()),
        ("port", pa.int32()),
        ("link_layer", pa.string()),  # InfiniBand | Ethernet (RoCE)
        ("rate", pa.string()),  # e.g. "400 Gb/sec (4X NDR)"
        ("state", pa.string()),  # ACTIVE | DOWN | INIT | ...
        ("phys_state", pa.string()),  # LinkUp | Polling | Disabled | ...
        ("xmit_bytes", pa.int64()),
        ("rcv_bytes", pa.int64()),
    ]
    + [(name, pa.int64()) for name in PORT_COUNTERS + HW_COUNTERS]
)


def _state_word(text: str | None) -> str | None:
    """sysfs writes '4: ACTIVE' / '5: LinkUp': keep the word."""
    if text is None:
        return None
    return text.strip().partition(":")[2].strip() or text.strip()


def find_ports(root: Path) -> list[tuple[str, int, Path]]:
    """(device, port number, port folder) for every port under `root`, sorted."""
    ports = []
    try:
        devices = sorted(root.iterdir())
    except OSError:
        return []
    for device in devices:
        try:
            port_dirs = sorted((device / "ports").iterdir())
        except OSError:
            continue
        for port_dir in port_dirs:
            if port_dir.name.isdigit():
                ports.append((device.name, int(port_dir.name), port_dir))
    return ports


def counter_files(port_dir: Path) -> list[tuple[str, str]]:
    """(column, file path) of every counter this port has; absent files are not read each tick."""
    files = [(column, port_dir / "counters" / name) for name, column in DATA_COUNTERS.items()]
    files += [(name, port_dir / "counters" / name) for name in PORT_COUNTERS]
    files += [(name, port_dir / "hw_counters" / name) for name in HW_COUNTERS]
    return [(column, str(path)) for column, path in files if path.exists()]


def read_port(port_dir: Path, files: list[tuple[str, str]] | None = None) -> Row:
    """One port's counters now: data in bytes, everything else raw (None when absent)."""
    row: Row = {}
    for column, path in counter_files(port_dir) if files is None else files:
        row[column] = read_int(path)
    for column in DATA_COUNTERS.values():
        if row.get(column) is not None:
            row[column] *= WORD_BYTES
    row["state"] = _state_word(read_text(port_dir / "state"))
    row["phys_state"] = _state_word(read_text(port_dir / "phys_state"))
    return row


def read_snapshot(root: Path = IB_ROOT) -> dict[tuple[str, int], Row]:
    return {(device, port): read_port(path) for device, port, path in find_ports(Path(root))}


class InfinibandSource:
    """Per-port InfiniBand / RoCE counters; unavailable when the sysfs root has no ports."""

    name = "infiniband"
    tables: ClassVar[dict[str, pa.Schema]] = {"ib": IB_SCHEMA}

    def __init__(self, root: Path | str = IB_ROOT) -> None:
        self.root = Path(root)
        self.ports: list[tuple[str, int, Path]] = []
        self.static: dict[tuple[str, int], Row] = {}
        self.files: dict[tuple[str, int], list[tuple[str, str]]] = {}

    def open(self, ctx: SourceContext) -> str | None:
        self.ports = find_ports(self.root)
        if not self.ports:
            return f"no InfiniBand/RoCE ports under {self.root}"
        for device, port, path in self.ports:
            rate = read_text(path / "rate")
            layer = read_text(path / "link_layer")
            self.files[(device, port)] = counter_files(path)
            self.static[(device, port)] = {
                "link_layer": layer.strip() if layer else None,
                "rate": rate.strip() if rate else None,
            }
        return None

    def sample(self, ts_ns: int) -> Rows:
        rows = []
        for device, port, path in self.ports:
            row: Row = {"ts_ns": ts_ns, "device": device, "port": port, **self.static[(device, port)]}
            row.update(read_port(path, self.files[(device, port)]))
            rows.append(row)
        return {"ib": rows}

    def close(self) -> None:
        return None
