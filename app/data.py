"""The dashboard's data: one run's store, read as immutable snapshots, re-analyzed as data lands.

A `Snapshot` holds the compact results (analysis.json, store/tables/*.parquet, the steps table) in
memory, so callbacks never read them from disk while `scope analyze` rewrites them. Events are
read from disk on demand, one rank and one time window at a time, for the timeline only.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from scope import rundir
from scope.errors import ScopeError
from scope.finding import Finding
from scope.result import Analysis
from scope.store import META_NAME, Store, analysis_path, read_events_file
from scope.warnings import InputWarning

COLLECTIVE_COLUMNS = ["rank", "pg", "seq", "op", "ts_ns", "end_ns", "bytes", "step"]
EVENT_COLUMNS = ["kind", "name", "ts_ns", "dur_ns", "device", "thread", "step"]
# Never re-analyze more often than this, whatever the refresh period: analysis costs CPU.
MIN_ANALYSIS_GAP_S = 5.0
# ...nor spend more than about a third of the time analyzing (a live run's files change constantly).
ANALYSIS_GAP_FACTOR = 3.0
CACHE_ENTRIES = 512
# Bytes read to tell a binary file (a dump) from a text one (a log).
BINARY_PROBE = 8192


@dataclass(frozen=True)
class Snapshot:
    """What the pages render from; replaced whole after each analysis. `analysis` is the typed result
    (scope.result.Analysis) the analysis returned, or the one saved in the store; None before any."""

    version: int
    analysis: Analysis | None
    steps: pd.DataFrame
    ranks: list[int]
    run: dict[str, Any]
    loaded_at: float = field(default_factory=time.time)

    @property
    def analyzed(self) -> bool:
        return self.analysis is not None

    @property
    def findings(self) -> list[Finding]:
        return list(self.analysis.findings) if self.analysis is not None else []

    @property
    def warnings(self) -> list[InputWarning]:
        return list(self.analysis.warnings) if self.analysis is not None else []

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return self.analysis.tables if self.analysis is not None else {}

    def table(self, name: str) -> pd.DataFrame | None:
        return self.analysis.table(name) if self.analysis is not None else None


EMPTY = Snapshot(version=0, analysis=None, steps=pd.DataFrame(), ranks=[], run={})


def resolve_store_dir(path: Path) -> tuple[Path, Path | None]:
    """(store dir, input root or None when PATH is a store itself and there is nothing to re-ingest)."""
    path = Path(path).resolve()
    if not path.exists():
        raise ScopeError(f"{path}: no such file or directory")
    from scope.inputs import is_store, store_dir_for  # the one rule for where a store is

    if is_store(path):
        return path, None
    return store_dir_for(path), path


def run_root_of(store_dir: Path, input_root: Path | None) -> Path:
    """The folder whose logs, counters and evidence files the pages may read (never anything outside it)."""
    if input_root is not None:
        return input_root if input_root.is_dir() else input_root.parent
    # A store served alone: its run is the folder it sits in (RUN/store or TRACES/scope_store).
    return store_dir.parent if store_dir.name in ("store", "scope_store") else store_dir


def load_snapshot(store_dir: Path, version: int, analysis: Analysis | None = None) -> Snapshot:
    """A snapshot of `analysis` (the one `run` just returned), or of the one saved in the store
    (scope.result.Analysis.load), with the store's steps and ranks (whatever exists)."""
    if analysis is None:
        analysis = Analysis.load(store_dir)
    ranks: list[int] = []
    run: dict[str, Any] = dict(analysis.run) if analysis is not None else {}
    steps = pd.DataFrame()
    if (store_dir / META_NAME).is_file():
        store = Store.open(store_dir)
        ranks, run = store.ranks, run or store.run
        steps = store.steps()
    if steps.empty and analysis is not None and analysis.steps is not None:
        steps = analysis.steps
    if not ranks and not steps.empty:
        ranks = sorted(int(r) for r in steps["rank"].unique())
    return Snapshot(version=version, analysis=analysis, steps=steps, ranks=ranks, run=run)


class RunData:
    """One run, served read-only: the current snapshot plus background re-analysis when inputs change."""

    def __init__(self, path: Path, analyze: bool = True, compare: Path | str | None = None) -> None:
        self.path = Path(path).resolve()
        # The Compare page's run B (`scope dashboard A --compare B`), and B's state when that page last
        # showed it (a B replaced on disk is said there): this app's, never shared with another app.
        self.compare_with = Path(compare) if compare is not None else None
        self.compare_shown: tuple[Any, ...] | None = None
        self.store_dir, self.input_root = resolve_store_dir(self.path)
        self.run_root = run_root_of(self.store_dir, self.input_root)
        self.can_analyze = analyze and self.input_root is not None
        self.message = ""
        self.analyzing = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._signature: tuple[int, int, int, str] | None = None
        self._last_analysis = 0.0
        self._analysis_cost = 0.0
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._unusable = False  # the saved analysis could not be read
        self._snapshot = self._safe_load(0)

    # --- snapshot -----------------------------------------------------------------------------
    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def _safe_load(self, version: int, analysis: Analysis | None = None) -> Snapshot:
        try:
            snap = load_snapshot(self.store_dir, version, analysis)
        except ScopeError as exc:  # a damaged table or analysis.json: made again, as `scope analyze` would
            self.message = exc.message
            self._unusable = True
            return replace(EMPTY, version=version)
        self._unusable = False
        return snap

    def _bump(self, analysis: Analysis | None = None) -> None:
        snap = self._safe_load(self._snapshot.version + 1, analysis)
        with self._lock:
            self._snapshot = snap
            self._cache.clear()

    # --- live refresh -------------------------------------------------------------------------
    def is_stale(self) -> bool:
        """Inputs newer than the last analysis (or no analysis at all)."""
        if not self.can_analyze:
            return False
        analysis = analysis_path(self.store_dir)
        if not analysis.is_file() or self._unusable:
            return True
        from scope.inputs import still_current

        saved = self._snapshot.analysis.run.get("input_signature") if self._snapshot.analysis else None
        assert self.input_root is not None
        return not still_current(saved, self.input_root, self.store_dir, analysis.stat().st_mtime_ns)

    def _current_signature(self) -> tuple[int, int, int, str]:
        assert self.input_root is not None
        from scope.inputs import input_signature  # the inventory's own walk: the analysis agrees on the inputs

        return input_signature(self.input_root, {self.store_dir, rundir.control_dir(self.run_root)})

    def poll(self) -> int:
        """Called by the refresh timer: start a re-analysis when inputs changed; returns the snapshot version."""
        if self.can_analyze and not self.analyzing:
            signature = self._current_signature()
            changed = signature != self._signature
            due = time.time() - self._last_analysis >= max(
                MIN_ANALYSIS_GAP_S, ANALYSIS_GAP_FACTOR * self._analysis_cost
            )
            if self._signature is None:
                changed = self.is_stale()
                self._signature = signature
            if changed and due:
                self._signature = signature
                self.start_analysis()
        return self._snapshot.version

    def start_analysis(self) -> bool:
        with self._lock:
            if self.analyzing or not self.can_analyze:
                return False
            self.analyzing = True
        self.message = "analyzing the run…"
        self._thread = threading.Thread(target=self._analyze, name="scope-dashboard-analyze", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> None:
        if self._thread:
            self._thread.join(timeout)

    def _analyze(self) -> None:
        started = time.time()
        analysis = None
        try:
            analysis = run_analysis(self.input_root)  # type: ignore[arg-type]
            self.message = ""
        except ScopeError as exc:
            self.message = f"analysis not possible yet: {exc.message}"
        except Exception as exc:  # a bug in an analyzer must not take the dashboard down
            self.message = f"analysis failed: {type(exc).__name__}: {exc}"
        finally:
            self._analysis_cost = time.time() - started
            self._last_analysis = time.time()
            self._bump(analysis)  # the analysis just made, as `run` returned it (no reload from disk)
            self.analyzing = False

    # --- events, one rank and one window at a time -------------------------------------------------
    def events_window(self, rank: int, lo: int, hi: int) -> pd.DataFrame:
        """Events of `rank` overlapping [lo, hi] (ns), only the columns the timeline needs."""
        path = Store(self.store_dir, {}).part_path("events", rank)
        if not path.is_file():
            return pd.DataFrame(columns=EVENT_COLUMNS)
        # Events start inside their step, so a look-back of one window catches all that overlap it.
        filters = [("ts_ns", "<", hi), ("ts_ns", ">=", lo - (hi - lo))]
        df = read_events_file(path, columns=EVENT_COLUMNS, filters=filters).to_pandas()
        return df[(df["ts_ns"] + df["dur_ns"]) > lo]

    def rank_collectives(self, rank: int) -> pd.DataFrame:
        """One rank's collectives in sequence order (small; kept in memory until the next analysis)."""

        def read() -> pd.DataFrame:
            df = Store(self.store_dir, {}).read_collectives(rank, columns=COLLECTIVE_COLUMNS)
            if df.empty:
                return pd.DataFrame()
            df["pg"] = df["pg"].astype(str)
            return df

        return self.memo(("collectives", rank), read)

    def memo(self, key: tuple[Any, ...], compute: Any) -> Any:
        """A small per-snapshot LRU: values computed from one snapshot are dropped with it."""
        key = (self._snapshot.version, *key)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        value = compute()
        with self._lock:
            self._cache[key] = value
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return value

    # --- files the failure page quotes ------------------------------------------------------------
    def quote(self, file: str, line: int, context: int = 2) -> list[tuple[int, str]]:
        """Lines around `file:line`, only for files inside the run (evidence never reads elsewhere).
        A Flight Recorder dump is quoted decoded (entry `line` and its neighbours, the entry's frames);
        any other binary file is named, never shown as bytes."""
        root = self.run_root.resolve()
        candidate = Path(file)
        # Inside the run by its name ('..' taken out), links followed only to read: a folder of links to
        # the dumps and logs (a read-only share gathered in one place) is quoted like the files themselves.
        path = Path(os.path.normpath(candidate if candidate.is_absolute() else root / candidate))
        if root not in path.parents or not path.is_file():
            return []
        with open(path, "rb") as fh:
            head = fh.read(BINARY_PROBE)
        from scope.flight_recorder import looks_like_dump

        if looks_like_dump(path, head):
            return quote_dump(path, line, context)
        if b"\0" in head:
            return [(line, f"(binary file, {path.stat().st_size:,} bytes: not shown)")]
        out = []
        with open(path, errors="backslashreplace") as fh:  # an odd byte shows as \xNN, never as U+FFFD
            for i, text in enumerate(fh, 1):
                if i > line + context:
                    break
                if i >= line - context:
                    out.append((i, text.rstrip("\n")[:400]))
        return out


def quote_dump(path: Path, entry: int, context: int = 2) -> list[tuple[int, str]]:
    """Entries entry-context..entry+context of a Flight Recorder dump (numbered from 1, as the
    diagnosis cites them), decoded; the cited entry's frames follow it."""
    from scope.flight_recorder import describe_entry, entry_frames, load_dump

    try:
        dump = load_dump(path)
    except ScopeError as exc:
        return [(entry, f"(unreadable Flight Recorder dump: {exc.message})")]
    out: list[tuple[int, str]] = []
    for i in range(max(1, entry - context), min(len(dump.entries), entry + context) + 1):
        e = dump.entries[i - 1]
        out.append((i, f"entry {i}: {describe_entry(e)}"))
        if i == entry:
            out += [(i, f"    at {frame}") for frame in entry_frames(e)]
    return out


def run_analysis(path: Path, options: dict[str, Any] | None = None) -> Analysis:
    """The library's analysis of PATH (ingest is cached per rank, so an unchanged run costs little)."""
    from scope.analysis import run

    return run(path, options or {})
