"""Analysis as a library: `run(path, options) -> Analysis`, and the analyzer protocol it drives.

    from scope.analysis import run
    analysis = run("RUN", {"straggler_threshold": 0.7})
    analysis.findings                 # list[Finding], most severe first

An analyzer is a record (scope.analyzer_spec.AnalyzerSpec) in the registry (scope.analyzers) naming an
`analyze(ctx: Context) -> Result` that is pure (no plotting, no printing, no argparse). Its options are
data (`Option`, declared in its record); the CLI turns them into flags, the library and the dashboard
take them as a mapping. Nothing here imports pandas at module level, so the CLI can build its parser fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from scope.analyzer_spec import AnalyzerSpec
from scope.causality import link_findings
from scope.engine import give_back_memory
from scope.errors import EXIT_INPUT, EXIT_USAGE, NoTraces, ScopeError
from scope.finding import Finding
from scope.options import RUN_OPTIONS, Option
from scope.result import Analysis
from scope.warnings import InputWarning, as_warnings, unread
from scope.warnings import note as input_note

if TYPE_CHECKING:
    import pandas as pd

    from scope.inputs import Inventory
    from scope.rankpass.access import RankTables
    from scope.rankpass.match import Matched
    from scope.rankpass.registry import Registry
    from scope.store import Store

T = TypeVar("T")
Progress = Callable[[int, int], None]  # (done, total)

__all__ = ["RUN_OPTIONS", "Analysis", "AnalyzerSpec", "Context", "Option", "Progress", "Result", "options_of", "run"]


def analyzers() -> tuple[AnalyzerSpec, ...]:
    from scope.analyzers import ANALYZERS

    return ANALYZERS


def options_of() -> list[Option]:
    """Every option `run` takes: the run's own, then each analyzer's."""
    from scope.analyzers import all_options

    return [*RUN_OPTIONS, *all_options()]


def parse_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validated, typed options; an unknown name is a usage error (a typo must not pass silently)."""
    known = {o.name: o for o in options_of()}
    out: dict[str, Any] = {}
    for name, value in (options or {}).items():
        if name not in known:
            raise ScopeError(f"unknown analysis option {name!r} (known: {', '.join(sorted(known))})", EXIT_USAGE)
        parsed = known[name].parse(value)
        if parsed is not None:
            out[name] = parsed
    return out


@dataclass
class Context:
    """What an analyzer may read: the inventory of the input (scope.inputs: PATH and its files, listed
    once by `run`; the one way to the input), the store (None when there are no traces), options and the
    intermediate results several analyzers share, each computed on first use."""

    inputs: Inventory
    store: Store | None
    options: dict[str, Any] = field(default_factory=dict)
    # The per-rank tables this analysis reads (the analyzers' AnalyzerSpec.reads; None: every one), made in
    # one pass on first use; and the tables that can be made (None: scope's own, scope.rankpass.registry).
    reads: Sequence[str] | None = None
    registry: Registry | None = None
    _matched: Matched | None = field(default=None, init=False, repr=False)
    _tables: RankTables | None = field(default=None, init=False, repr=False)
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value

    @property
    def matched(self) -> Matched:
        """The collectives matched across ranks."""
        if self._matched is None:
            from scope.rankpass.match import matched_of

            self._matched = matched_of(self.store)
        return self._matched

    @matched.setter
    def matched(self, value: Matched) -> None:
        self._matched = value

    def table(self, name: str) -> pd.DataFrame:
        """A per-rank table (scope.rankpass: its columns and what it is made of are declared there)."""
        return self.rank_tables.get(name)

    @property
    def rank_tables(self) -> RankTables:
        if self._tables is None:
            from scope.rankpass.access import RankTables
            from scope.rankpass.registry import default_registry

            registry = self.registry or default_registry()
            self._tables = RankTables(self.store, self.options, lambda: self.matched, registry, self.reads)
        return self._tables

    @property
    def breakdown(self) -> pd.DataFrame:
        """Per rank and step: compute, exposed comm (wait / transfer), overlapped comm, memcpy, idle."""
        return self.table("breakdown")

    @breakdown.setter
    def breakdown(self, value: pd.DataFrame) -> None:
        self.rank_tables.give("breakdown", value)

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """An analyzer's own intermediate result, computed once per analysis (e.g. the pipeline parts)."""
        if key not in self._memo:
            self._memo[key] = build()
        value: T = self._memo[key]
        return value


@dataclass
class Result:
    findings: list[Finding] = field(default_factory=list)
    # Each table is stored as store/tables/<name>.parquet and emitted in the JSON under <name>.
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    # Problems with the inputs (scope.warnings): the report lists them; one marked partial (an input it
    # could not read) makes the CLI exit 4. A plain sentence is a note (the run is complete).
    warnings: Sequence[InputWarning | str] = field(default_factory=list)
    # Typed results kept whole in the analysis (its `sections`: goodput's GoodputResult, as
    # scope.goodput_result.SECTION), emitted in the JSON under their name.
    sections: dict[str, Any] = field(default_factory=dict)


def run(path: Path | str, options: Mapping[str, Any] | None = None, progress: Progress | None = None) -> Analysis:
    """Ingest PATH (cached per rank), run every analyzer, save the result next to the store, return it.

    Raises ScopeError when PATH holds nothing to analyze. Logs or dumps without traces are still diagnosed.
    """
    from scope.inputs import Inventory

    opts = parse_options(options)
    inputs = Inventory.scan(path, opts.get("store"))  # PATH is listed once, here, for every reader
    with ExitStack() as hold:  # the store stays locked from ingest to save: never published half-written
        store, warnings = _ingest(inputs, opts, progress, hold)
        if inputs.manifest is not None:  # fields of run.json left out for their type: part of it unread
            warnings = [InputWarning("run.json", p, partial=True) for p in inputs.manifest.problems] + warnings
        return _analyze(inputs, store, opts, warnings)


def _analyze(inputs: Inventory, store: Store | None, opts: dict[str, Any], warnings: list[InputWarning]) -> Analysis:
    running = [spec for spec in analyzers() if _reads_store(spec, store)]
    # the per-rank tables the analyzers that run read, made in one pass when the first is asked for
    reads = list(dict.fromkeys(name for spec in running for name in spec.reads))
    ctx = Context(inputs=inputs, store=store, options=opts, reads=reads)
    findings: list[Finding] = []
    tables: dict[str, pd.DataFrame] = {}
    sections: dict[str, Any] = {}
    for spec in running:
        result = _run_isolated(spec, ctx)
        findings.extend(result.findings)
        tables.update(result.tables)
        sections.update(result.sections)
        warnings = warnings + as_warnings(result.warnings)
        give_back_memory()  # what the analyzer freed (scope.engine)
    # Every analyzer's rules, whether it ran or not: a rule may link two other analyzers' findings.
    findings = link_findings(findings, [rule for spec in analyzers() for rule in spec.link_rules])
    analysis = Analysis.build(inputs, store, findings, tables, warnings)
    give_back_memory()  # what reading every rank's steps file freed
    analysis.sections.update(sections)
    if inputs.signature:
        # what the inputs were when listed (before ingest: a change during it counts): a later reader of
        # the saved analysis (compare's cache, the dashboard) knows it is stale when they are no longer so
        analysis.run = {**analysis.run, "input_signature": inputs.signature}
    if store is not None:
        analysis.save(store)
    else:
        _save_without_store(inputs.path, opts, analysis)
    give_back_memory()  # the tables' Arrow copies and the JSON rows the save made and freed
    return analysis


def _run_isolated(spec: AnalyzerSpec, ctx: Context) -> Result:
    """One analyzer's result; when it raises on a value it did not expect (a string where a number was
    written, a 4,000-digit integer), its own result is lost, named in a partial warning (exit 4), and every
    other analyzer's findings are kept. A ScopeError (a config it was told to read is wrong, a folder that
    mixes jobs) still stops the analysis: it is said to the user as it is."""
    try:
        return spec.load()(ctx)
    except ScopeError:
        raise
    except Exception as exc:
        return Result(warnings=[analyzer_failed(spec.name, exc)])


def analyzer_failed(name: str, exc: BaseException) -> InputWarning:
    """The warning for an analyzer that raised: which one, what it raised and where (for a bug report)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    detail = str(exc).splitlines()[0][:160] if str(exc) else ""
    return InputWarning(
        file="",
        what=f"the {name} analysis stopped on a value it could not use ({type(exc).__name__}{where}: {detail})",
        consequence="its findings are left out; the other analyses are complete",
        partial=True,
    )


def _save_without_store(path: Path, opts: dict[str, Any], analysis: Analysis) -> None:
    """Logs and dumps alone: the diagnosis is saved where the store would be (or the per-user cache when
    that folder is read-only, said in a warning), so the dashboard shows it as `scope analyze` printed it."""
    from scope.ingest import choose_store_dir
    from scope.store import store_lock

    where, note = choose_store_dir(path, opts.get("store"))
    if note:
        analysis.warnings.insert(0, input_note(note))
    with store_lock(where):
        analysis.save_to(where)


def _reads_store(spec: AnalyzerSpec, store: Store | None) -> bool:
    """Analyzers of kernel-level traces skip an operation-level timeline (they would misread its ops)."""
    return store is None or store.meta.get("layout") != "optrace" or spec.reads_optrace


def _ingest(
    inputs: Inventory, opts: dict[str, Any], progress: Progress | None, hold: ExitStack
) -> tuple[Store | None, list[InputWarning]]:
    from scope.ingest import ingest
    from scope.ingest.comm_rules import load_rules

    try:
        report = ingest(
            inputs,
            opts.get("store"),
            engine=opts.get("engine", "local"),
            workers=opts.get("workers"),
            scheduler=opts.get("scheduler"),
            force=bool(opts.get("force", False)),
            progress=progress,
            rules=load_rules(inputs, opts.get("comm_kernel")),
            hold=hold,
        )
    except NoTraces:
        if not inputs.has_non_trace_inputs():
            raise
        return None, []  # a post-mortem folder (logs, dumps): its diagnosis is the analysis
    except ScopeError as exc:
        # A usage error (a missing optional dependency) always stops; unreadable traces beside logs
        # still leave the logs to diagnose, and the run is partial (exit 4) with the reason given.
        stops = getattr(exc, "stops_analysis", False)  # e.g. a folder holding two jobs' timelines
        if stops or exc.exit_code != EXIT_INPUT or not inputs.has_non_trace_inputs():
            raise
        return None, [unread(exc.message)]
    return report.store.for_analysis(), report.input_warnings
