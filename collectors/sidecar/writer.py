"""Chunked columnar writer: each table's rows are buffered and written as one Parquet file per chunk.

A chunk is written to a hidden temporary name and renamed into place, so a reader (or a sampler
killed with SIGKILL) never leaves a half-written Parquet file behind: what is on disk is always
readable, and a crash loses at most the rows still buffered (one chunk).

Layout: ``<counters_dir>/<table>/<first_ts_ns>-<pid>-<seq>.parquet``. File names sort in time
order; the pid keeps two samplers (say `scope run` then `scope attach`) from colliding.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

Row = dict[str, Any]


class ChunkedWriter:
    """Buffers rows per table; `flush()` writes each non-empty buffer as one Parquet chunk."""

    def __init__(self, counters_dir: Path, schemas: dict[str, pa.Schema]) -> None:
        self.counters_dir = Path(counters_dir)
        self.schemas = dict(schemas)
        self._rows: dict[str, list[Row]] = {name: [] for name in self.schemas}
        self._seq = 0
        self._lock = threading.Lock()
        self.chunks_written = 0
        self.rows_written = 0
        # rows a write refused (a full disk): counted and said (sidecar.json, `scope sample`), never silent
        self.rows_lost = 0
        self.write_error = ""

    @staticmethod
    def warm_up() -> None:
        """Write one tiny chunk to memory: pyarrow loads its compute and codec modules lazily on the
        first write (~0.3 s of CPU), better paid at start than in the middle of the job."""
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"ts_ns": pa.array([0], pa.int64())}), sink, compression="zstd")

    def add_schemas(self, schemas: dict[str, pa.Schema]) -> None:
        with self._lock:
            for name, schema in schemas.items():
                self.schemas[name] = schema
                self._rows.setdefault(name, [])

    def append(self, table: str, rows: list[Row]) -> None:
        if not rows:
            return
        with self._lock:
            self._rows[table].extend(rows)

    def buffered(self, table: str | None = None) -> int:
        with self._lock:
            if table is not None:
                return len(self._rows.get(table, ()))
            return sum(len(rows) for rows in self._rows.values())

    def flush(self, tables: list[str] | None = None) -> list[Path]:
        """Write the buffered rows of `tables` (all by default); returns the chunk paths written."""
        with self._lock:
            names = list(self._rows) if tables is None else [t for t in tables if t in self._rows]
            batches = {name: self._rows[name] for name in names if self._rows[name]}
            for name in batches:
                self._rows[name] = []
        written = []
        for name, rows in batches.items():
            try:
                written.append(self._write_chunk(name, rows))
            except OSError as exc:  # the other tables' chunks are still tried; the disk may free up later
                self.rows_lost += len(rows)
                self.write_error = f"{exc.filename or self.counters_dir / name}: {exc.strerror or exc}"
        return written

    def _write_chunk(self, table: str, rows: list[Row]) -> Path:
        schema = self.schemas[table]
        # Columns a source did not fill in this chunk become nulls, so every chunk has one schema.
        columns = {f.name: [row.get(f.name) for row in rows] for f in schema}
        arrow = pa.Table.from_pydict(columns, schema=schema)
        folder = self.counters_dir / table
        folder.mkdir(parents=True, exist_ok=True)
        self._seq += 1
        first_ts = rows[0].get("ts_ns") or 0
        path = folder / f"{first_ts}-{os.getpid()}-{self._seq:05d}.parquet"
        tmp = folder / f".{path.name}.tmp"
        try:
            pq.write_table(arrow, tmp, compression="zstd")
            os.replace(tmp, path)
        except BaseException:  # a full disk: no partial chunk stays behind
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self.chunks_written += 1
        self.rows_written += len(rows)
        return path
