"""What a counter source is: a name, the tables it fills, `open`, `sample` and `close`.

A source answers `open()` with None when it can sample, or with a one-line reason when this machine
lacks it (no GPU, no InfiniBand, kernel log not readable); the sampler reports that reason once as
a notice and never calls the source again. `sample(ts_ns)` returns rows per table; an exception
there is caught and logged by the sampler, never raised into the job.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

Row = dict[str, Any]
Rows = dict[str, list[Row]]

# Tables whose rows are rare and precious (Xid, kernel errors): flushed as soon as they appear.
URGENT_TABLES = frozenset({"events"})

EVENTS_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),
        ("source", pa.string()),  # nvml | kmsg
        ("kind", pa.string()),  # xid | nvrm | aer | mlx5 | segfault | oom | peermem | nvswitch | pcie
        ("gpu", pa.int32()),  # NVML index, -1 when unknown
        ("pci", pa.string()),  # PCI address from the kernel line, when it names one
        ("code", pa.int64()),  # the Xid number, -1 otherwise
        ("message", pa.string()),
    ]
)

# Every sidecar.log line carries it, so the diagnosis knows scope's own words wherever the file goes.
OWN_PREFIX = "[scope sidecar]"


@dataclass
class SourceContext:
    """What a source may use: its host folder (for side files such as kmsg.log) and the notice sink."""

    host_dir: Path
    hz: float = 1.0
    notify: Callable[[str], None] = field(default=lambda message: None)


class Source(Protocol):
    name: str

    @property
    def tables(self) -> dict[str, pa.Schema]: ...  # read-only: a class variable or a field

    def open(self, ctx: SourceContext) -> str | None: ...

    def sample(self, ts_ns: int) -> Rows: ...

    def close(self) -> None: ...


def read_text(path: Path | str) -> str | None:
    """A sysfs or procfs file's text, or None when it is missing or unreadable (never raises).

    Plain os.open/os.read: a few microseconds, against ~20 for open() and its text wrapper, which
    matters when a tick reads hundreds of counter files.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def read_int(path: Path | str) -> int | None:
    """A counter file's integer (sysfs counters are one decimal number and a newline)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return int(os.read(fd, 64).split()[0], 0)
    except (OSError, ValueError, IndexError):
        return None
    finally:
        os.close(fd)
