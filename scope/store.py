"""The store: per-rank Parquet partitions plus compact derived tables, next to the run.

    store/
      meta.json                 store version, inputs and their fingerprints, run info, warnings
      ranks.parquet             one row per rank: files, counts, status, trace header facts
      events/rank-NNNNN.parquet one file per rank (dictionary-encoded names; ts/dur in int ns)
      steps/rank-NNNNN.parquet  per-rank ProfilerStep windows
      collectives/rank-NNNNN.parquet  per-rank collectives in per-group sequence order
      tables/<name>.parquet     tables written by analyzers (breakdown, matched collectives, ...)
      analysis.json             the last `scope analyze` result (what the dashboard reads)

Every path of this layout is spelled once, here (part_path, table_path, ranks_path, analysis_path).

Readable by any Parquet reader (DuckDB, Spark, pandas) as is; `Store.connect()` gives DuckDB views.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import ScopeError

if TYPE_CHECKING:  # pyarrow and pandas load on first use: ingest never needs them
    import pandas as pd
    import pyarrow as pa

STORE_VERSION = 1
META_NAME = "meta.json"
PARTITIONED = ("events", "steps", "collectives")
ANALYSIS_NAME = "analysis.json"
RANKS_NAME = "ranks.parquet"


def part_path(root: Path, table: str, rank: int) -> Path:
    """One rank's partition of a per-rank table (events, steps, collectives)."""
    return Path(root) / table / f"rank-{rank:05d}.parquet"


def table_path(root: Path, name: str) -> Path:
    """An analyzer table."""
    return Path(root) / "tables" / f"{name}.parquet"


def write_table(root: Path, name: str, df: pd.DataFrame) -> Path:
    """An analyzer table, replaced atomically (a reader never sees half a file)."""
    path = table_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(path)
    return path


def ranks_path(root: Path) -> Path:
    return Path(root) / RANKS_NAME


def analysis_path(root: Path) -> Path:
    """The last analysis (scope.result.Analysis.save writes it)."""
    return Path(root) / ANALYSIS_NAME


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, default=str)
    os.replace(tmp, path)


def read_events_file(path: Path, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
    """An events partition with its name-like columns dictionary-encoded, whichever writer wrote it."""
    import pyarrow.parquet as pq

    # imported here: scope.ingest imports this module, so a module-level import would be a cycle
    from scope.ingest.tables_spec import EVENTS_DICT_COLUMNS

    wanted = [c for c in EVENTS_DICT_COLUMNS if columns is None or c in columns]
    return pq.read_table(path, columns=columns, filters=filters, read_dictionary=wanted)


class Store:
    def __init__(self, root: Path | str, meta: dict[str, Any]) -> None:
        self.root = Path(root)
        self.meta = meta

    @classmethod
    def open(cls, root: Path | str) -> Store:
        root = Path(root)
        meta_path = root / META_NAME
        try:
            meta = json.loads(meta_path.read_text())
        except FileNotFoundError:
            raise ScopeError(f"{root}: not a scope store (no {META_NAME}; run `scope ingest` first)") from None
        except json.JSONDecodeError as exc:
            raise ScopeError(f"{meta_path}: corrupt store metadata ({exc}); re-run `scope ingest`") from None
        if meta.get("store_version") != STORE_VERSION:
            raise ScopeError(
                f"{meta_path}: store version {meta.get('store_version')} is not {STORE_VERSION}; "
                "re-run `scope ingest --force`"
            )
        return cls(root, meta)

    @property
    def ranks(self) -> list[int]:
        return sorted(int(r) for r in self.meta.get("ranks", {}))

    @property
    def run(self) -> dict[str, Any]:
        return dict(self.meta.get("run", {}))

    @property
    def warnings(self) -> list[str]:
        return list(self.meta.get("warnings", []))

    def part_path(self, table: str, rank: int) -> Path:
        return part_path(self.root, table, rank)

    def read_events(self, rank: int, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
        """One rank's events (never all ranks at once: that is what the per-rank layout is for)."""
        return read_events_file(self.part_path("events", rank), columns=columns, filters=filters)

    def _concat(self, table: str) -> pd.DataFrame:
        import pandas as pd
        import pyarrow.dataset as ds

        paths = [self.part_path(table, r) for r in self.ranks if self.part_path(table, r).exists()]
        if not paths:
            return pd.DataFrame()
        return ds.dataset([str(p) for p in paths], format="parquet").to_table().to_pandas()

    def steps(self) -> pd.DataFrame:
        return self._concat("steps")

    def collectives(self) -> pd.DataFrame:
        return self._concat("collectives")

    def read_steps(self, rank: int, columns: list[str] | None = None) -> pd.DataFrame:
        """One rank's ProfilerStep windows (empty when the rank has none)."""
        return self._read_part("steps", rank, columns)

    def read_collectives(self, rank: int, columns: list[str] | None = None) -> pd.DataFrame:
        """One rank's collectives in per-group sequence order (empty when the rank has none)."""
        return self._read_part("collectives", rank, columns)

    def _read_part(self, table: str, rank: int, columns: list[str] | None) -> pd.DataFrame:
        import pandas as pd

        path = self.part_path(table, rank)
        return pd.read_parquet(path, columns=columns) if path.is_file() else pd.DataFrame(columns=columns)

    def ranks_table(self) -> pd.DataFrame:
        import pandas as pd

        path = ranks_path(self.root)
        return pd.read_parquet(path) if path.exists() else pd.DataFrame()

    @property
    def analysis_path(self) -> Path:
        return analysis_path(self.root)

    def table_path(self, name: str) -> Path:
        return table_path(self.root, name)

    def write_table(self, name: str, df: pd.DataFrame) -> Path:
        return write_table(self.root, name, df)

    def read_table(self, name: str) -> pd.DataFrame | None:
        import pandas as pd

        path = self.table_path(name)
        return pd.read_parquet(path) if path.exists() else None

    def connect(self) -> Any:
        """An in-memory DuckDB connection with views events, steps, collectives, ranks, and one per
        analyzer table (tables/*; `collectives_matched` for the matched collectives)."""
        import duckdb

        con = duckdb.connect()
        for table in PARTITIONED:
            if any((self.root / table).glob("*.parquet")):
                glob = str(self.root / table / "*.parquet").replace("'", "''")
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{glob}')")
        if ranks_path(self.root).exists():
            con.execute(f"CREATE VIEW ranks AS SELECT * FROM read_parquet('{ranks_path(self.root)}')")
        taken = {*PARTITIONED, "ranks"}
        for path in sorted((self.root / "tables").glob("*.parquet")):
            if path.stem.isidentifier():
                # analyzer tables keep their names, except where a per-rank table has it already
                # (the matched `collectives` table becomes `collectives_matched`)
                view = f"{path.stem}_matched" if path.stem in taken else path.stem
                con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{path}')")
        return con
