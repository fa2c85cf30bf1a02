"""The two sides of a comparison: each a run directory, a trace folder or a store, analyzed as
`scope analyze` would, and cached: an analysis newer than every input file and than scope's own code
(an upgrade, or a new analyzer, makes it stale) is read back from the store instead of being redone.
A store given alone is read as it is (there are no inputs to analyze again)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope import __version__
from scope.errors import ScopeError
from scope.inputs import still_current
from scope.options import RUN_OPTIONS
from scope.result import Analysis
from scope.store import META_NAME, analysis_path

if TYPE_CHECKING:
    import pandas as pd


# Options that say how ingest and analysis run, not what they find (a --comm-kernel rule changes what is
# communication, so what the analysis finds).
HOW_TO_RUN = frozenset(o.name for o in RUN_OPTIONS) - {"comm_kernel"}


@dataclass
class Side:
    """One run of the comparison: its analysis and the store it came from."""

    label: str  # "A" or "B"
    path: Path
    store_dir: Path | None
    analysis: Analysis
    reused: bool  # the cached analysis was read back (nothing was re-analyzed)

    def op_stats(self) -> pd.DataFrame | None:
        """The analyzers.ops table; computed from the store for an analysis made before it existed."""
        table = self.analysis.table("op_stats")
        if table is not None or self.store_dir is None or not (self.store_dir / META_NAME).is_file():
            return table
        from scope.analyzers.ops import op_stats
        from scope.store import Store

        return op_stats(Store.open(self.store_dir))


def is_store(path: Path) -> bool:
    return path.is_dir() and (path / META_NAME).is_file() and (path / "events").is_dir()


def load_side(label: str, path: Path | str, options: Mapping[str, Any] | None = None, reanalyze: bool = False) -> Side:
    """Run A or B of a comparison; an error says which run it is about."""
    try:
        return _load_side(label, Path(path), options, reanalyze)
    except ScopeError as exc:
        if exc.message.startswith(f"run {label}"):
            raise
        raise ScopeError(f"run {label}: {exc.message}", exc.exit_code) from None


def _load_side(label: str, path: Path, options: Mapping[str, Any] | None, reanalyze: bool) -> Side:
    if not path.exists():
        raise ScopeError(f"run {label}: {path}: no such file or directory")
    if is_store(path):
        with _reading(path):
            analysis = Analysis.load(path)
        if analysis is None:
            raise ScopeError(f"{path}: this store has no analysis; run `scope analyze` on its run first")
        return Side(label, path, path, analysis, reused=True)
    opts = dict(options or {})
    store_dir = Path(opts["store"]) if opts.get("store") else _default_store(path)
    # An analyzer option (a threshold, a schedule) changes the analysis: the cached one will not do.
    tuned = set(opts) - HOW_TO_RUN
    if not reanalyze and not opts.get("force") and not tuned:
        cached = _cached(path, store_dir)
        if cached is not None:
            return Side(label, path, store_dir, cached, reused=True)
    from scope.analysis import run

    analysis = run(path, opts)
    if not opts.get("store"):
        store_dir = _default_store(path)  # the per-user cache when the input's folder is read-only
    return Side(label, path, store_dir if (store_dir / META_NAME).is_file() else None, analysis, reused=False)


def _default_store(path: Path) -> Path:
    from scope.inputs import store_dir_for

    return store_dir_for(path)


def _cached(path: Path, store_dir: Path) -> Analysis | None:
    """The store's analysis when it is newer than every input and made by this scope version."""
    saved = analysis_path(store_dir)
    if not saved.is_file():
        return None
    made = saved.stat().st_mtime_ns
    if newest_code_ns() > made:
        return None
    try:
        with _reading(store_dir):
            analysis = Analysis.load(store_dir)
    except ScopeError:  # a damaged table or analysis.json: analyzed again, as `scope analyze` does
        return None
    if analysis is None or analysis.scope_version != __version__:
        return None
    if not still_current(analysis.run.get("input_signature"), path, store_dir, made):
        return None
    return analysis


@contextlib.contextmanager
def _reading(store_dir: Path) -> Iterator[None]:
    """While the store is read: a `scope analyze` writing it is waited for (its tables are replaced one by
    one; read half-way they failed the comparison). A store that cannot take the lock file (read-only) is
    read as it is."""
    from scope.store import store_lock

    with contextlib.ExitStack() as stack:
        with contextlib.suppress(OSError):
            stack.enter_context(store_lock(store_dir, on_wait=lambda m: print(f"scope: {m}", file=sys.stderr)))
        yield


def newest_code_ns() -> int:
    """The newest modification time of scope's installed modules (analyzers included)."""
    import scope
    import scope.analyzers

    newest = 0
    for root in {Path(scope.__file__).parent, Path(scope.analyzers.__file__).parent}:
        for source in root.rglob("*.py"):  # sources only: bytecode caches are rewritten on import
            newest = max(newest, source.stat().st_mtime_ns)
    return newest
