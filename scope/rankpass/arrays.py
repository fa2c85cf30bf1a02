"""A rank's events as numpy arrays: straight from the Arrow table the store gives (EventColumns), or from a
frame (a test's, a library user's). The per-rank pass reads each rank's events once as Arrow and every table
takes its columns from here: a pandas frame of ~27k events cost 3.5 ms a rank to make, more than most tables,
and its column lookups a few microseconds each, hundreds of times a rank."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

if TYPE_CHECKING:
    import re

from scope.rankpass import intervals as iv


class EventColumns:
    """One rank's events table (Arrow), its columns handed out as numpy arrays, each made once."""

    def __init__(self, table: pa.Table) -> None:
        # a table read in several row groups may hold a dictionary per group: one for all, as pandas makes it
        self.table = table.unify_dictionaries() if any(c.num_chunks > 1 for c in table.columns) else table
        self._ints: dict[str, np.ndarray] = {}
        self._codes: dict[str, tuple[np.ndarray, list[str]]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.table.column_names

    @property
    def size(self) -> int:
        return int(self.table.num_rows)

    def _column(self, name: str) -> pa.Array:
        column = self.table.column(name)
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)

    def raw(self, name: str) -> np.ndarray:
        """A numeric column in its stored type (the store's numeric columns hold no missing values)."""
        return self._column(name).to_numpy(zero_copy_only=False)

    def ints(self, name: str) -> np.ndarray:
        """An integer column as int64."""
        if name not in self._ints:
            self._ints[name] = np.asarray(self.raw(name), dtype=np.int64)
        return self._ints[name]

    def codes(self, name: str) -> tuple[np.ndarray, list[str]]:
        """A text column as codes into its labels (-1: missing), as a pandas categorical holds it: the
        dictionary's own order, every entry of it kept."""
        if name not in self._codes:
            column = self._column(name)
            if not pa.types.is_dictionary(column.type):
                column = column.dictionary_encode()
            indices = column.indices.fill_null(-1) if column.null_count else column.indices
            labels = [str(v) for v in column.dictionary.to_pylist()]
            self._codes[name] = (np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64), labels)
        return self._codes[name]


Events: TypeAlias = pd.DataFrame | EventColumns


def _frame_codes(events: pd.DataFrame, col: str) -> tuple[np.ndarray, list[str]]:
    values = events[col]
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy(dtype=np.int64), [str(c) for c in values.cat.categories]
    c, u = pd.factorize(values.astype(str))
    return c.astype(np.int64), [str(x) for x in u]


def _frame_ints(events: pd.DataFrame, col: str, *, size: int) -> np.ndarray:
    return events[col].to_numpy(dtype=np.int64) if col in events else np.full(size, -1, dtype=np.int64)


@dataclass
class Ev:
    """A rank's events as numpy arrays (names, kinds and categories as codes into their dictionaries):
    selections on arrays cost microseconds where a DataFrame's cost a fraction of a millisecond, and
    the budget makes a few dozen of them per rank."""

    ts: np.ndarray
    end: np.ndarray
    thread: np.ndarray
    corr: np.ndarray
    stream: np.ndarray
    name: np.ndarray  # codes into names
    names: np.ndarray  # object array of the distinct names
    kind: np.ndarray
    kinds: list[str]
    cat: np.ndarray
    cats: list[str]

    @classmethod
    def of(cls, events: Events) -> Ev:
        """From the store's Arrow columns or from a frame (names and kinds as categoricals, or as text)."""
        if isinstance(events, EventColumns):
            ints: Callable[[str], np.ndarray] = events.ints
            codes: Callable[[str], tuple[np.ndarray, list[str]]] = events.codes
            size = events.size
        else:
            size = len(events)
            ints = partial(_frame_ints, events, size=size)
            codes = partial(_frame_codes, events)

        ts = ints("ts_ns")
        name, names = codes("name")
        kind, kinds = codes("kind")
        cat, cats = codes("cat")
        corr = ints("correlation") if "correlation" in events else np.full(size, -1, dtype=np.int64)
        stream = ints("stream") if "stream" in events else np.full(size, -1, dtype=np.int64)
        return cls(
            ts,
            ts + ints("dur_ns"),
            ints("thread"),
            corr,
            stream,
            name,
            np.array(names, dtype=object),
            kind,
            kinds,
            cat,
            cats,
        )

    def take(self, mask: np.ndarray) -> Ev:
        """The events a mask (or indexes) selects: the mask made indexes once for all nine arrays."""
        idx = np.flatnonzero(mask) if mask.dtype == bool else mask
        return Ev(
            self.ts[idx],
            self.end[idx],
            self.thread[idx],
            self.corr[idx],
            self.stream[idx],
            self.name[idx],
            self.names,
            self.kind[idx],
            self.kinds,
            self.cat[idx],
            self.cats,
        )

    def is_kind(self, *kinds: str) -> np.ndarray:
        return lookup(self.kind, [k in kinds for k in self.kinds])

    def in_cats(self, cats: frozenset[str] | tuple[str, ...]) -> np.ndarray:
        return lookup(self.cat, [c in cats for c in self.cats])

    def named(self, pattern: re.Pattern[str]) -> np.ndarray:
        """Which events' names the pattern occurs in, searching each distinct name present once."""
        used = iv.codes_present(self.name)
        hit = np.zeros(len(self.names) + 1, dtype=bool)
        for code in used:
            hit[code] = bool(pattern.search(str(self.names[code])))
        return hit[self.name]  # code -1 (missing) reads the extra False at the end

    def spans(self, mask: np.ndarray | None = None) -> iv.Spans:
        if mask is None:
            return iv.union(self.ts, self.end)
        return iv.union(self.ts[mask], self.end[mask])

    @property
    def size(self) -> int:
        return int(self.ts.size)


def lookup(codes: np.ndarray, hit: list[bool]) -> np.ndarray:
    """Per code, whether its entry is a hit: a table lookup (np.isin hashes every code, 10x slower);
    code -1 (missing) reads the extra False at the end."""
    return np.array([*hit, False], dtype=bool)[codes]


def training_thread(thread: np.ndarray, dur: np.ndarray, step: np.ndarray, op: np.ndarray) -> int | None:
    """The training thread: the thread most often recording ProfilerStep (`step`: which events are step
    marks), else the one with the most time (`dur`) in operators (`op`); the lowest id among equals. Events
    whose thread could not be read (-1) count for neither. One rule for the frame-based code
    (timeline.main_thread) and the arrays (budget.main_thread_of)."""
    known = thread >= 0
    marks = thread[step & known]
    if marks.size:
        return most_frequent(marks)
    mine = op & known
    if not mine.any():
        return None
    threads, where = np.unique(thread[mine], return_inverse=True)
    return int(threads[np.argmax(np.bincount(where, weights=dur[mine]))])


def most_frequent(values: np.ndarray) -> int:
    """The value that occurs most often (the lowest among equals); `values` is not empty."""
    counted, counts = _counted(values)
    return int(counted[np.argmax(counts)])


def _counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ordered = np.sort(values)
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    return ordered[first], np.diff(np.r_[first, ordered.size])
