"""The result of an analysis, typed: what `scope.analysis.run` returns, the renderers take and the
dashboard reads back from the store.

On disk it is the store's analysis.json (the JSON contract of `scope analyze --json`):
{"scope_version", "run", "ranks", "steps", "findings", "warnings", "warning_records", ...one key per analyzer
table}: "warnings" the sentences, "warning_records" the same warnings typed (scope.warnings), which `load` reads.
with each analyzer table also written as store/tables/<name>.parquet. Later issues add keys; none is
ever removed or renamed. `load` is tolerant: unknown keys that hold rows are tables, missing keys
take defaults, so a file from an older or newer scope still loads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope import __version__
from scope.errors import EXIT_OK, EXIT_PARTIAL, ScopeError
from scope.finding import Finding
from scope.jsonsafe import clean
from scope.store import analysis_path
from scope.warnings import InputWarning, any_partial, saved_warnings, texts, to_records

if TYPE_CHECKING:
    import pandas as pd

    from scope.goodput_result import GoodputResult
    from scope.inputs import Inventory
    from scope.store import Store

# What a run's analysis read, when it holds no profiler steps: the breakdown of a trace (one without step
# marks is one window), the diagnosis' tables of hosts and FR dumps, a training log's goodput.
READ_TABLES = ("breakdown", "hosts", "fr", "goodput_summary")
NOTHING_READ = "Nothing analyzed: no trace, log or Flight Recorder dump here could be read (the warnings say why)."


def read_nothing(findings: list[Any], steps: Any, tables: dict[str, Any]) -> bool:
    """No finding, no step, no host or dump the diagnosis read: "no findings" would claim a healthy run."""
    if findings or (steps is not None and len(steps)):
        return False
    return not any(tables.get(name) is not None and len(tables[name]) for name in READ_TABLES)


# Keys of analysis.json that are not analyzer tables.
REPORT_KEYS = ("scope_version", "run", "ranks", "steps", "findings", "warnings", "warning_records")


def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """The rows as JSON-safe dicts: clean(df.to_dict("records")), made a column at a time (numbers need
    no cell-by-cell cleaning: a third of the time of writing a large analysis went there)."""
    if df is None or df.empty:
        return []
    if not df.columns.is_unique:
        rows: list[dict[str, Any]] = clean(df.to_dict("records"))
        return rows
    keys = [str(k) for k in df.columns]
    columns = [_clean_column(df.iloc[:, i]) for i in range(df.shape[1])]
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns, strict=True)]


def _clean_column(column: pd.Series) -> list[Any]:
    import numpy as np

    kind = column.dtype.kind if isinstance(column.dtype, np.dtype) else ""
    if kind and kind in "iub":
        ints: list[Any] = column.tolist()  # Python ints and bools already
        return ints
    if kind == "f":
        values = column.to_numpy()
        cells: list[Any] = values.tolist()
        if not np.isfinite(values).all():
            for i in np.flatnonzero(~np.isfinite(values)).tolist():
                cells[i] = None
        return cells
    return [clean(v) for v in column.tolist()]


# Rows of a table turned into dicts at a time when the JSON is written (iter_json): at 16,384 ranks a
# table has ~500k rows, and every row as a dict at once weighs ~1 GB.
JSON_CHUNK_ROWS = 2000


def _frame(rows: Any) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows if isinstance(rows, list) else [])


@dataclass
class Analysis:
    """One analysis of one run: findings most severe first, the per-rank and per-step tables, warnings."""

    run: dict[str, Any] = field(default_factory=dict)
    ranks: pd.DataFrame | None = None  # one row per rank (ingest's ranks table)
    steps: pd.DataFrame | None = None  # one row per rank and profiled step
    findings: list[Finding] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    warnings: list[InputWarning] = field(default_factory=list)
    scope_version: str = __version__
    # JSON sections that are neither report keys nor tables (a diagnosis alone adds its NCCL set-up and
    # input counts: `scope diagnose --json`); emitted after the tables, kept by `load`.
    sections: dict[str, Any] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """Some input was skipped or salvaged: a warning says so (scope.warnings), in its type, not its words."""
        return any_partial(self.warnings)

    @property
    def exit_code(self) -> int:
        return EXIT_PARTIAL if self.partial else EXIT_OK

    def table(self, name: str) -> pd.DataFrame | None:
        df = self.tables.get(name)
        return df if df is not None and not df.empty else None

    @classmethod
    def build(
        cls,
        inputs: Inventory,
        store: Store | None,
        findings: list[Finding],
        tables: dict[str, pd.DataFrame],
        warnings: list[InputWarning],
    ) -> Analysis:
        """From the analyzers' results: run info, ranks and steps come from the store when there is one,
        else the run info from the manifest of PATH's inventory (scope.inputs)."""
        if store is not None:
            run, ranks, steps = store.run, store.ranks_table(), store.steps()
            ranks = ranks.drop(columns=["pg_config"], errors="ignore")
        else:
            run, ranks, steps = _run_without_store(inputs), None, None
        ordered = sorted(findings, key=lambda f: f.sort_key())
        return cls(run, ranks, steps, ordered, dict(tables), list(warnings))

    @property
    def goodput(self) -> GoodputResult | None:
        """The job's goodput (scope.goodput_result), when its logs or records gave one."""
        from scope.goodput_result import SECTION, GoodputResult

        value = self.sections.get(SECTION)
        if isinstance(value, dict):
            value = self.sections[SECTION] = GoodputResult.from_dict(value)
        return value if isinstance(value, GoodputResult) else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract (see the module docstring)."""
        report: dict[str, Any] = {
            "scope_version": self.scope_version,
            "run": clean(self.run),
            "ranks": records(self.ranks),
            "steps": records(self.steps),
            "findings": [clean(f.to_dict()) for f in self.findings],
            "warnings": texts(self.warnings),
            "warning_records": to_records(self.warnings),
        }
        for name, df in self.tables.items():
            if name not in report:
                report[name] = records(df)
        for name, value in self.sections.items():
            report.setdefault(name, _section_json(value))
        return report

    @classmethod
    def from_dict(cls, data: dict[str, Any], tables: dict[str, pd.DataFrame] | None = None) -> Analysis:
        """Tolerant: unknown keys holding rows become tables (unless given typed in `tables`); unknown
        keys holding anything but a list are sections."""
        tables = dict(tables or {})
        sections: dict[str, Any] = {}
        for name, rows in data.items():
            is_table = isinstance(rows, list) and bool(rows) and isinstance(rows[0], dict)
            if is_table and name not in REPORT_KEYS and name not in tables:
                tables[name] = _frame(rows)
            elif not isinstance(rows, list) and name not in REPORT_KEYS:
                sections[name] = rows
        findings = [Finding.from_dict(f) for f in data.get("findings") or [] if isinstance(f, dict)]
        return cls(
            run=dict(data.get("run") or {}),
            ranks=_frame(data.get("ranks")),
            steps=_frame(data.get("steps")),
            findings=findings,
            tables=tables,
            warnings=saved_warnings(data.get("warning_records"), data.get("warnings")),
            scope_version=str(data.get("scope_version", "")),
            sections=sections,
        )

    def save(self, store: Store) -> Path:
        """Each table to store/tables/<name>.parquet, then analysis.json (what the dashboard reads)."""
        return self.save_to(store.root)

    def iter_json(self, indent: int = 2, default: Callable[[Any], Any] = str, allow_nan: bool = False) -> Iterator[str]:
        """The JSON text of self.to_dict(), piece by piece: indented like json.dumps(indent=indent), except
        that each table row is on one line. Each table's rows become dicts a chunk at a time, so writing
        the analysis of thousands of ranks never holds every row as a dict, nor the whole text, at once;
        a row is encoded by json's C encoder (the indenting one is pure Python: 10x slower, 30 s of the
        analysis of 16,384 ranks)."""
        import json

        def dumps(value: Any) -> str:
            return json.dumps(value, indent=indent, default=default, allow_nan=allow_nan)

        row = json.JSONEncoder(default=default, allow_nan=allow_nan).encode
        pad = " " * indent
        yield "{"
        for i, (key, value, is_table) in enumerate(self._json_items()):
            yield ("," if i else "") + "\n" + pad + dumps(key) + ": "
            if is_table:
                yield from _rows_json(value, row, pad)
            else:
                yield dumps(value).replace("\n", "\n" + pad)
        yield "\n}"

    def _json_items(self) -> Iterator[tuple[str, Any, bool]]:
        """to_dict's keys in its order, and whether the value is a table (a frame, turned into rows by
        iter_json a chunk at a time)."""
        yield "scope_version", self.scope_version, False
        yield "run", clean(self.run), False
        yield "ranks", self.ranks, True
        yield "steps", self.steps, True
        yield "findings", [clean(f.to_dict()) for f in self.findings], False
        yield "warnings", texts(self.warnings), False
        yield "warning_records", to_records(self.warnings), False
        for name, df in self.tables.items():
            if name not in REPORT_KEYS:
                yield name, df, True
        for name, value in self.sections.items():
            if name not in REPORT_KEYS and name not in self.tables:
                yield name, _section_json(value), False

    def save_to(self, store_dir: Path) -> Path:
        """As `save`, into a store folder that may hold no events (a diagnosis of logs and dumps alone)."""
        from scope.store import write_table, write_text_atomic

        for name, df in self.tables.items():
            write_table(store_dir, name, df)
        path = analysis_path(store_dir)
        write_text_atomic(path, self.iter_json(indent=1, default=str, allow_nan=True))
        path.chmod(0o644)  # readable like the tables beside it (mkstemp makes it owner-only)
        return path

    @classmethod
    def load(cls, store_dir: Path | str) -> Analysis | None:
        """The last analysis saved in a store; None when there is none. The parquet tables are preferred
        to the JSON rows (they keep their column types)."""
        import msgspec

        store_dir = Path(store_dir)
        path = analysis_path(store_dir)
        if not path.is_file():
            return None
        try:
            data = msgspec.json.decode(path.read_bytes())
        except msgspec.DecodeError as exc:
            raise ScopeError(f"{path}: unreadable analysis ({exc}); re-run `scope analyze`") from None
        if not isinstance(data, dict):
            raise ScopeError(f"{path}: not an analysis (a JSON object was expected); re-run `scope analyze`")
        tables = {p.stem: _read_table(p) for p in sorted((store_dir / "tables").glob("*.parquet"))}
        return cls.from_dict(data, tables)


def _section_json(value: Any) -> Any:
    """A section as JSON: a typed result by its own contract (its to_dict), anything else cleaned."""
    to_dict = getattr(value, "to_dict", None)
    return clean(to_dict() if callable(to_dict) else value)


def _read_table(path: Path) -> pd.DataFrame:
    """One saved table; a damaged one (cut by a crash, overwritten) is a ScopeError naming it, so that every
    reader of a cached analysis treats it as `scope analyze` does: stale, to be made again."""
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow's errors for a bad file have no common base but Exception
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ScopeError(f"{path}: damaged analysis table ({first}); re-run `scope analyze`") from None


def _rows_json(df: pd.DataFrame | None, encode_row: Callable[[Any], str], pad: str) -> Iterator[str]:
    """A table as the JSON list of its records (as records() makes them), a row a line, one chunk of rows
    at a time."""
    if df is None or df.empty:
        yield "[]"
        return
    inner = "\n" + pad + pad
    yield "["
    for lo in range(0, len(df), JSON_CHUNK_ROWS):
        rows = records(df.iloc[lo : lo + JSON_CHUNK_ROWS])
        yield ("," if lo else "") + ",".join(inner + encode_row(row) for row in rows)
    yield "\n" + pad + "]"


def _run_without_store(inputs: Inventory) -> dict[str, Any]:
    """The manifest's run info, as the inventory read it (no walk, no second read)."""
    manifest = inputs.manifest
    return manifest.to_dict() if manifest else {"source": str(inputs.path.resolve())}
