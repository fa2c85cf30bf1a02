"""The store: per-rank Parquet partitions plus compact derived tables, next to the run.

    store/
      meta.json                 store version, inputs and their fingerprints, run info, warnings
      ranks.parquet             one row per rank: files, counts, status, trace header facts
      events/rank-NNNNN.parquet one file per rank (dictionary-encoded names; ts/dur in int ns)
      steps/rank-NNNNN.parquet  per-rank ProfilerStep windows
      collectives/rank-NNNNN.parquet  per-rank collectives in per-group sequence order
      tables/<name>.parquet     tables written by analyzers (breakdown, matched collectives, ...)
      analysis.json             the last `scope analyze` result (what the dashboard reads)
      .scope-store              the marker: scope made this folder, and writes or deletes only inside
                                a folder that has it (claim_store)
      .scope-store.lock         held (flock) while one process ingests, analyzes and saves (store_lock)

Every path of this layout is spelled once, here (part_path, table_path, ranks_path, analysis_path).

Readable by any Parquet reader (DuckDB, Spark, pandas) as is; `Store.connect()` gives DuckDB views.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.errors import EXIT_USAGE, ScopeError
from scope.store_lock import LOCK_NAME
from scope.store_lock import store_lock as store_lock  # re-exported: the store's writers take it here

if TYPE_CHECKING:  # pyarrow and pandas load on first use: ingest never needs them
    import pandas as pd
    import pyarrow as pa

STORE_VERSION = 2  # 2: a large evenly spaced group written on comm events as range(start,stop,step) (ingest/comm.py)
META_NAME = "meta.json"
PARTITIONED = ("events", "steps", "collectives", "memory")
ANALYSIS_NAME = "analysis.json"
RANKS_NAME = "ranks.parquet"
MARKER_NAME = ".scope-store"

# What scope itself writes at a store's top level: a folder holding only these (and scope's own
# temporary files) with scope's meta.json is a store written before the marker existed.
LAYOUT_NAMES = frozenset({META_NAME, RANKS_NAME, ANALYSIS_NAME, MARKER_NAME, LOCK_NAME, "tables", *PARTITIONED})
# Per-rank partitions read at once before they are joined into one table (Store._concat).
CONCAT_BATCH = 128
# Threads reading a per-rank table's small files (Store._concat).
READ_THREADS = 4
# errno values that mean "this folder cannot take a store" (the input sits on a read-only share).
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def part_path(root: Path, table: str, rank: int) -> Path:
    """One rank's partition of a per-rank table (events, steps, collectives)."""
    return Path(root) / table / f"rank-{rank:05d}.parquet"


def partitioned_ranks(root: Path, table: str) -> set[int]:
    """The ranks that have a partition of a per-rank table, from one listing of its folder (a check of each
    rank's file is a stat a rank and table: 65,536 of them at 16,384 ranks)."""
    try:
        names = os.listdir(Path(root) / table)
    except OSError:
        return set()
    ranks = set()
    for name in names:
        stem, _, suffix = name.partition(".")
        number = stem.removeprefix("rank-")
        if suffix == "parquet" and number != stem and number.isdigit():
            ranks.add(int(number))
    return ranks


def table_path(root: Path, name: str) -> Path:
    """An analyzer table."""
    return Path(root) / "tables" / f"{name}.parquet"


def write_table(root: Path, name: str, df: pd.DataFrame) -> Path:
    """An analyzer table, replaced atomically (a reader never sees half a file)."""
    path = table_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with no_leftover(path.with_suffix(".tmp")) as tmp:
        df.to_parquet(tmp, index=False)
        tmp.replace(path)
    return path


@contextlib.contextmanager
def no_leftover(*temporaries: Path) -> Iterator[Path]:
    """Around the writing of temporary files (yields the first): when it fails (a disk that fills
    mid-write), they are removed, so no tables/*.tmp or half partition stays behind."""
    try:
        yield temporaries[0]
    except BaseException:
        for tmp in temporaries:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise


def ranks_path(root: Path) -> Path:
    return Path(root) / RANKS_NAME


def analysis_path(root: Path) -> Path:
    """The last analysis (scope.result.Analysis.save writes it)."""
    return Path(root) / ANALYSIS_NAME


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, default=str)
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no half-written temporary behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, chunks: Iterable[str]) -> None:
    """A text file written piece by piece (a large analysis.json is never one string), replaced atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.writelines(chunks)
        os.replace(tmp, path)
    except BaseException:  # a full disk leaves no half-written temporary behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _own_temp(name: str) -> bool:
    """Temporary names scope's writers use (mkstemp '.NAME.xxxx', 'NAME.tmp', 'NAME.parquet.tmp')."""
    return name.startswith(".") or name.endswith(".tmp")


def _rank_part(name: str) -> bool:
    return name.startswith("rank-") or _own_temp(name)


def _legacy_store(root: Path) -> bool:
    """A store written before the marker: scope's meta.json (its schema keys) and nothing at the top
    level or in the per-rank folders that scope does not write itself. Anything else (a user's results
    folder with its own tables/ and analysis.json) is not scope's to touch."""
    try:
        meta = json.loads((root / META_NAME).read_text())
        entries = list(root.iterdir())
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or not {"store_version", "scope_version", "ranks"} <= set(meta):
        return False
    for entry in entries:
        if entry.name not in LAYOUT_NAMES and not _own_temp(entry.name):
            return False
        foreign = entry.name in PARTITIONED and entry.is_dir() and not all(_rank_part(p.name) for p in entry.iterdir())
        if foreign:
            return False
    return True


def claim_store(root: Path) -> Path:
    """Make ROOT a folder scope may write into (created with its marker), or refuse with a clear message.

    A new or empty folder is claimed; a folder with scope's marker, or an older scope store, is scope's;
    anything else is the user's, and nothing in it is written or deleted. OSError (a read-only or full
    disk) propagates: the caller decides whether another location serves (choose_store_dir)."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise ScopeError(f"{root}: exists and is not a folder; give --store a new or empty folder", EXIT_USAGE)
    if (root / MARKER_NAME).is_file():
        return root
    if root.is_dir() and any(root.iterdir()) and not _legacy_store(root):
        held = sorted(p.name for p in root.iterdir())
        shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
        raise ScopeError(
            f"{root}: is not a scope store (it holds {shown}; no {MARKER_NAME} marker). scope writes and "
            "deletes only inside a folder it created: give --store a new or empty folder",
            EXIT_USAGE,
        )
    root.mkdir(parents=True, exist_ok=True)
    marker = root / MARKER_NAME
    marker.write_text("a scope store: scope writes and deletes files only inside a folder with this marker\n")
    return root


def remove_derived(root: Path, keep_ranks: set[int] | None = None) -> None:
    """Delete what scope derived from the previous inputs, file by file, and only names scope writes:
    per-rank partitions (all, or those of ranks not in keep_ranks), analyzer tables, analysis.json."""
    root = Path(root)
    if not (root / MARKER_NAME).is_file():  # claim_store first: never delete in a folder scope did not make
        raise ScopeError(f"{root}: not claimed as a scope store; nothing deleted", EXIT_USAGE)
    for table in PARTITIONED:
        for part in (root / table).glob("rank-*.parquet"):
            rank = part.stem.split("-")[1]
            if keep_ranks is None or not rank.isdigit() or int(rank) not in keep_ranks:
                part.unlink(missing_ok=True)
    for derived in (root / "tables").glob("*.parquet"):
        derived.unlink(missing_ok=True)
    analysis_path(root).unlink(missing_ok=True)


def cache_root() -> Path:
    """Per-user cache for stores of inputs that sit on read-only storage ($SCOPE_CACHE_DIR,
    $XDG_CACHE_HOME/scope, ~/.cache/scope)."""
    base = os.environ.get("SCOPE_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "scope"


def cache_store_dir(path: Path) -> Path:
    """The cache store of one input: its name plus a digest of its absolute path (two inputs of one
    name never share a store)."""
    resolved = Path(path).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    return cache_root() / "stores" / f"{resolved.name or 'root'}-{digest}"


def read_events_file(path: Path, columns: list[str] | None = None, filters: Any = None) -> pa.Table:
    """An events partition with its name-like columns dictionary-encoded, whichever writer wrote it."""
    import pyarrow.parquet as pq

    # imported here: scope.ingest imports this module, so a module-level import would be a cycle
    from scope.ingest.tables_spec import EVENTS_DICT_COLUMNS

    wanted = [c for c in EVENTS_DICT_COLUMNS if columns is None or c in columns]
    if filters is not None:
        return pq.read_table(path, columns=columns, filters=filters, read_dictionary=wanted)
    # ParquetFile, not read_table: the same table without the dataset machinery's set-up, which is most
    # of a small rank's read (2.7 -> 1.5 ms for 4.8k events), and each rank is read by several passes.
    return pq.ParquetFile(path, read_dictionary=wanted).read(columns=columns, use_threads=False)


# What an analysis reads of each rank's entry in the store's meta.json (Store.for_analysis).
# device_memory: the capacity of the devices the rank's trace lists (the memory analyzer's headroom), one int;
# n_memory: its "[memory]" rows (the memory analyzer reads only the ranks that have some).
ANALYSIS_RANK_KEYS = ("n_events", "device_memory", "n_memory")


class Store:
    def __init__(self, root: Path | str, meta: dict[str, Any]) -> None:
        self.root = Path(root)
        self.meta = meta
        self._steps: pd.DataFrame | None = None  # every rank's steps, read once (steps())

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

    def for_analysis(self) -> Store:
        """This store with only what the analyzers read of each rank's entry in meta.json (ANALYSIS_RANK_KEYS);
        the rest (files, fingerprints, the trace header's summary) stays on disk: 40 MB of dicts at 16,384
        ranks, held for the whole analysis by the process whose memory must stay flat in the rank count."""
        ranks = self.meta.get("ranks", {})
        slim = {r: {k: m[k] for k in ANALYSIS_RANK_KEYS if k in m} for r, m in ranks.items()}
        return Store(self.root, {**self.meta, "ranks": slim})

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

    def _concat(self, table: str, columns: list[str] | None = None, text: tuple[str, ...] = ()) -> pd.DataFrame:
        """Every rank's partition of a small per-rank table, in rank order. Read file by file and joined
        every CONCAT_BATCH files: a pyarrow dataset (or DuckDB) over thousands of small files keeps
        tens of KB per file at once (100 MB at 1,024 ranks), far more than the rows themselves."""
        from concurrent.futures import ThreadPoolExecutor

        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq

        paths = [p for p in (self.part_path(table, r) for r in self.ranks) if p.exists()]
        if not paths:
            return pd.DataFrame()

        def read(path: Path) -> pa.Table:
            # ParquetFile, not read_table: a small file's read is mostly Python set-up, and read_table's
            # dataset machinery doubles it (1.0 -> 0.57 ms a file, 9 s of 16 s at 16,384 ranks); the
            # reads release the GIL, so a few threads overlap them.
            # `text`: columns read as dictionaries (pandas categoricals): a name repeated on every row
            # of 16,384 ranks' rows is then stored once.
            return pq.ParquetFile(path, read_dictionary=list(text)).read(columns=columns, use_threads=False)

        joined = []
        with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="scope-store") as pool:
            for lo in range(0, len(paths), CONCAT_BATCH):
                parts = list(pool.map(read, paths[lo : lo + CONCAT_BATCH]))
                joined.append(pa.concat_tables(parts, promote_options="default").combine_chunks())
        return pa.concat_tables(joined, promote_options="default").to_pandas()

    def steps(self) -> pd.DataFrame:
        """Every rank's ProfilerStep windows, in rank order. Read from the ranks' files once per Store (two
        readers, the contention analyzer and the analysis' own steps table, read them twice: ~8 s each of the
        serial end of 16,384 ranks' analysis); each caller gets its own copy to change as it likes."""
        if self._steps is None:
            self._steps = self._concat("steps")
        return self._steps.copy()

    def collectives(self, columns: list[str] | None = None, text: tuple[str, ...] = ()) -> pd.DataFrame:
        """Every rank's collectives; `columns` to read only those, `text` (of them) as categoricals."""
        return self._concat("collectives", columns, text)

    def read_steps(self, rank: int, columns: list[str] | None = None) -> pd.DataFrame:
        """One rank's ProfilerStep windows (empty when the rank has none)."""
        return self._read_part("steps", rank, columns)

    def read_steps_arrow(self, rank: int, columns: list[str] | None = None) -> pa.Table | None:
        """One rank's ProfilerStep windows as Arrow (None without a steps partition): the per-rank pass
        reads three of their columns, and a frame of the fourteen cost it a millisecond a rank (reading
        the three alone: 0.46 -> 0.16 ms)."""
        import pyarrow.parquet as pq

        path = self.part_path("steps", rank)
        return pq.ParquetFile(path).read(columns=columns, use_threads=False) if path.is_file() else None

    def read_collectives(self, rank: int, columns: list[str] | None = None) -> pd.DataFrame:
        """One rank's collectives in per-group sequence order (empty when the rank has none)."""
        return self._read_part("collectives", rank, columns)

    def _read_part(self, table: str, rank: int, columns: list[str] | None) -> pd.DataFrame:
        import pandas as pd
        import pyarrow.parquet as pq

        path = self.part_path(table, rank)
        if not path.is_file():
            return pd.DataFrame(columns=columns)
        # The same frame as pd.read_parquet in 60% of its time (a read per rank in the per-rank pass).
        return pq.ParquetFile(path).read(columns=columns, use_threads=False).to_pandas()

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
