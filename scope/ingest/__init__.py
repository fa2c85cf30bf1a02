"""Ingest: trace files -> store (scope.store). Parse per rank in parallel, reduce compact tables.

Re-running reuses every rank whose files are unchanged (same paths, sizes and mtimes) and were
classified by the same rules (the communication-kernel catalog's version and the user's rules).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scope import __version__
from scope.engine import check_engine, map_unordered
from scope.errors import EXIT_USAGE, NoTraces, ScopeError
from scope.ingest.classify import NO_RULES, Rules
from scope.ingest.comm_kernels import CATALOG_KEY
from scope.ingest.comm_rules import rules_key
from scope.ingest.discover import Discovery, discover
from scope.ingest.dispatch import STORE_WRITE_FAILED, ingest_rank, native_enabled
from scope.ingest.job import RankJob, RankOutcome, header_summary
from scope.inputs import Inventory, default_store_dir, inventory_of, write_protected
from scope.inputs import store_dir_for as store_dir_for  # where PATH's store is (the dashboard, compare)
from scope.store import (
    META_NAME,
    PARTITIONED,
    STORE_VERSION,
    UNWRITABLE_ERRNOS,
    Store,
    cache_store_dir,
    claim_store,
    no_leftover,
    partitioned_ranks,
    ranks_path,
    remove_derived,
    store_lock,
    write_json_atomic,
)
from scope.warnings import InputWarning, any_partial, as_warnings, texts, unread
from scope.warnings import note as input_note

Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class IngestReport:
    store: Store
    parsed: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    warnings: list[InputWarning] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # files that could not be read at all
    empty: list[str] = field(default_factory=list)  # ranks whose files held no complete event (also warnings)
    notes: list[str] = field(default_factory=list)  # about the store, not the inputs (why ranks were read again)

    @property
    def input_warnings(self) -> list[InputWarning]:
        """The warnings, then the errors (inputs not read: partial), as the analysis reports them."""
        return self.warnings + [unread(e) for e in self.errors]

    @property
    def partial(self) -> bool:
        """Some input was skipped or salvaged (a warning's producer said so): the CLI exits with EXIT_PARTIAL."""
        return bool(self.errors) or any_partial(self.warnings)


class StoreError(ScopeError):
    """The store cannot be written where it must go: the analysis stops (nothing of it could be saved)."""

    stops_analysis = True


def choose_store_dir(path: Path, given: Path | None) -> tuple[Path, str | None]:
    """The store folder to write, claimed (scope.store.claim_store), and a note when it is not where the
    user would look. --store is used as given or refused with the reason; the default location beside
    a read-only input falls back to the per-user cache, and the note says where the store went."""
    if given is not None:
        try:
            return claim_store(Path(given)), None
        except OSError as exc:
            raise StoreError(
                f"{given}: cannot write the store there ({exc.strerror}); give --store a writable folder", EXIT_USAGE
            ) from None
    default = default_store_dir(path)
    try:
        if write_protected(default.parent):
            raise PermissionError(errno.EACCES, "write-protected by its mode bits")
        return claim_store(default), None
    except OSError as exc:
        if exc.errno not in UNWRITABLE_ERRNOS:
            raise StoreError(
                f"{default}: cannot write the store ({exc.strerror}); give --store a writable folder"
            ) from None
        cached = cache_store_dir(path)
        try:
            claim_store(cached)
        except OSError as again:
            raise StoreError(
                f"{default.parent}: not writable ({exc.strerror}) and the cache {cached} neither "
                f"({again.strerror}); give --store a writable folder"
            ) from None
        note = f"{default.parent}: not writable ({exc.strerror}); the store is in {cached} (--store DIR to choose)"
        return cached, note


# Threads that digest the ranks' files before ingest starts (the reads and the digest release the GIL).
FINGERPRINT_THREADS = 4


def _fingerprints(files_by_rank: dict[int, list[Path]]) -> dict[int, list[list[Any]]]:
    """_fingerprint of each rank's files, in threads: one after the other, they kept one core busy while
    the other waited (1.3 ms a rank of ~1 MB, 21 s of the 16,384-rank synth's time before any parse)."""
    from concurrent.futures import ThreadPoolExecutor

    ranks = list(files_by_rank)
    with ThreadPoolExecutor(FINGERPRINT_THREADS, thread_name_prefix="scope-fingerprint") as pool:
        return dict(zip(ranks, pool.map(_fingerprint, (files_by_rank[r] for r in ranks)), strict=True))


def _fingerprint(files: list[Path]) -> list[list[Any]]:
    """Path, size, mtime and a digest of the content (_sample_digest): an edit that keeps the size and the
    mtime (a copy with -p, a restored backup, a coarse-clock file system) still re-parses the rank."""
    out: list[list[Any]] = []
    for p in files:
        try:
            st = p.stat()
            out.append([str(p.resolve()), st.st_size, st.st_mtime_ns, _sample_digest(p, st.st_size)])
        except OSError:
            # gone or unreadable since the walk: a fingerprint no store matches, so the rank is parsed
            # again and its own read names the file (one bad file costs only that file)
            out.append([str(p), -1, -1, ""])
    return out


SAMPLE_BYTES = 64 << 10
WHOLE_BYTES = 16 << 20  # files up to this size are digested whole (~10 ms each)
MIDDLE_SAMPLES = 64  # samples of 4 KiB spread over a larger file, between its head and tail
# _sample_digest's algorithm and cut, kept in the store's classification: a store whose fingerprints were
# made another way is read again whole, and DIGEST_NOTE says why (a 16k-rank store takes minutes).
DIGEST_NAME = "sha1-96"
DIGEST_NOTE = "the store was made by another fingerprint ({old}): re-reading {files} files"


def _sample_digest(path: Path, size: int) -> str:
    """Digest of the whole file up to WHOLE_BYTES; above, of its head and tail (64 KiB each) and of
    MIDDLE_SAMPLES spread between them. A same-size edit in the middle of a trace, its mtime put back,
    reused the stale rank when only the head and tail counted. SHA-1, cut to 24 hex digits: a change
    detector, not a seal against forgery, and twice blake2b's speed where the CPU has SHA instructions
    (0.38 against 0.79 ms for the scale synth's 0.75 MB rank here), and no slower without them (0.73
    against 0.80 ms with OpenSSL's SHA path masked). Its name is DIGEST_NAME."""
    import hashlib

    digest = hashlib.sha1(usedforsecurity=False)
    try:
        with open(path, "rb") as fh:
            if size <= WHOLE_BYTES:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
                return digest.hexdigest()[:24]
            digest.update(fh.read(SAMPLE_BYTES))
            span = size - 2 * SAMPLE_BYTES
            for k in range(MIDDLE_SAMPLES):
                fh.seek(SAMPLE_BYTES + span * k // MIDDLE_SAMPLES)
                digest.update(fh.read(4096))
            fh.seek(size - SAMPLE_BYTES)
            digest.update(fh.read(SAMPLE_BYTES))
    except OSError:
        return ""
    return digest.hexdigest()[:24]


def _old_meta(store_dir: Path) -> dict[str, Any]:
    try:
        store = Store.open(store_dir)
    except ScopeError:
        return {}
    return store.meta


def ingest(
    source: Path | str | Inventory,
    store_dir: Path | None = None,
    *,
    engine: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    worker: Callable[[RankJob], RankOutcome] = ingest_rank,
    rules: Rules = NO_RULES,
    hold: ExitStack | None = None,
) -> IngestReport:
    """Ingest PATH into its store; `worker` is the per-rank function (replaceable to inject faults in tests);
    `rules` are the user's communication-kernel rules (scope.ingest.comm_rules.load_rules); SOURCE is PATH
    or its inventory when the caller has listed it already (scope.inputs: PATH is listed once).

    The store is locked while it is written (scope.store.store_lock); with `hold`, the lock is entered on
    that stack and stays held until the caller closes it (analysis: ingest, analyze, save as one)."""
    from scope.ingest.optrace import find_job

    check_engine(engine)
    inputs = inventory_of(source, store_dir)
    path = inputs.path
    op_job = find_job(inputs)
    if op_job is not None:  # an operation-level timeline (coarse tracer), not Kineto traces
        where, note = choose_store_dir(Path(path), Path(store_dir) if store_dir else None)
        with ExitStack() as own:
            (hold or own).enter_context(store_lock(where, on_wait=_say))
            report = _ingest_optrace(op_job, where)
        report.warnings[:0] = [input_note(note)] if note else []
        return report
    found = discover(inputs)
    if not found.files_by_rank:
        if not found.unreadable:
            raise NoTraces(f"{path}: no readable trace (no .json or .json.gz trace files found)")
        raise ScopeError(f"{path}: no readable trace ({'; '.join(found.unreadable[:5])})")
    where, note = choose_store_dir(Path(path), Path(store_dir) if store_dir else None)
    with ExitStack() as own:
        (hold or own).enter_context(store_lock(where, on_wait=_say))
        report = _ingest_found(path, found, where, engine, workers, scheduler, force, progress, worker, rules)
    report.warnings[:0] = [input_note(note)] if note else []
    return report


def _say(message: str) -> None:
    print(f"scope: {message}", file=sys.stderr)


def _ingest_found(
    path: Path,
    found: Discovery,
    store_dir: Path,
    engine: str,
    workers: int | None,
    scheduler: str | None,
    force: bool,
    progress: Progress | None,
    worker: Callable[[RankJob], RankOutcome],
    rules: Rules,
) -> IngestReport:
    old = {} if force else _old_meta(store_dir)
    offsets = _clock_offsets(found)
    fingerprints = _fingerprints(found.files_by_rank)
    # the tables' columns too: a rank stored before a column was added is ingested again, not reused
    classification = {
        "catalog": CATALOG_KEY,
        "rules": rules_key(rules),
        "columns": _columns_key(),
        "digest": DIGEST_NAME,
    }
    reusable = _reusable_ranks(old, fingerprints, store_dir) if old.get("classification") == classification else set()
    # The native core releases the GIL: ranks parse in threads of this process. The Python path
    # needs processes, whose start costs more than parsing a few small files.
    threads = worker is ingest_rank and native_enabled()
    if engine == "local" and workers is None and not threads and _total_bytes(found) < _SMALL_INPUT_BYTES:
        workers = 1
    jobs = [
        RankJob(
            rank=r,
            files=[str(f) for f in found.files_by_rank[r]],
            store_dir=str(store_dir),
            clock_offset_ns=offsets.get(r, 0),
            rules=rules,
        )
        for r in found.ranks
        if r not in reusable
    ]
    _drop_stale_partitions(store_dir, set(found.ranks))
    outcomes = _run_jobs(worker, jobs, engine, workers, scheduler, progress, threads)
    report = _reduce(found, store_dir, outcomes, old, reusable, fingerprints, classification)
    report.notes = _digest_notes(old, classification, jobs)
    if not report.store.ranks:  # every file was found but none had a usable event: not a silent success
        disk = [e for e in report.errors if STORE_WRITE_FAILED in e]
        if disk:  # the traces are fine: the store's disk refused them
            raise StoreError(f"{store_dir}: the store could not be written ({disk[0]})")
        why = "; ".join(report.errors + report.empty)
        raise ScopeError(f"{path}: no readable trace ({why or 'no complete events in any file'})")
    return report


_SMALL_INPUT_BYTES = 16 << 20


def _ingest_optrace(job: Any, store_dir: Path) -> IngestReport:
    from scope.ingest.optrace_store import write_store

    store, warnings = write_store(job, store_dir)
    return IngestReport(store=store, parsed=store.ranks, warnings=as_warnings(warnings), errors=list(job.skipped))


def _total_bytes(found: Discovery) -> int:
    return sum(f.stat().st_size for files in found.files_by_rank.values() for f in files)


def _clock_offsets(found: Discovery) -> dict[int, int]:
    if not found.manifest:
        return {}
    return {r.rank: found.manifest.clock_offset_ns(r.host) for r in found.manifest.ranks}


def _columns_key() -> str:
    import hashlib

    from scope.ingest.tables_spec import COLLECTIVES_COLUMNS, EVENTS_COLUMNS, STEPS_COLUMNS

    names = [name for spec in (EVENTS_COLUMNS, STEPS_COLUMNS, COLLECTIVES_COLUMNS) for name, _ in spec]
    return hashlib.blake2b(",".join(names).encode(), digest_size=6).hexdigest()


def _digest_notes(old: dict[str, Any], classification: dict[str, Any], jobs: list[RankJob]) -> list[str]:
    """Why every rank of an existing store is read again when only the file fingerprint's kind changed."""
    before = old.get("classification")
    if not before or not jobs or before.get("digest") == classification["digest"]:
        return []
    if {k: v for k, v in before.items() if k != "digest"} != {k: v for k, v in classification.items() if k != "digest"}:
        return []  # the catalog, rules or columns changed too: the ranks are read again for that anyway
    files = sum(len(job.files) for job in jobs)
    return [DIGEST_NOTE.format(old=before.get("digest", "an older scope's blake2b"), files=files)]


def _reusable_ranks(old: dict[str, Any], fingerprints: dict[int, Any], store_dir: Path) -> set[int]:
    if old.get("scope_version") != __version__:
        return set()
    previous = old.get("ranks", {})
    stored = set.intersection(*(partitioned_ranks(store_dir, t) for t in PARTITIONED))
    keep = set()
    for rank, fp in fingerprints.items():
        entry = previous.get(str(rank))
        if rank in stored and entry and entry.get("inputs") == fp:
            keep.add(rank)
    return keep


def _drop_stale_partitions(store_dir: Path, ranks: set[int]) -> None:
    # partitions of ranks no longer in the input, and every table derived from the old inputs
    remove_derived(store_dir, keep_ranks=ranks)


def _run_jobs(
    worker: Callable[[RankJob], RankOutcome],
    jobs: list[RankJob],
    engine: str,
    workers: int | None,
    scheduler: str | None,
    progress: Progress | None,
    threads: bool = False,
) -> list[RankOutcome]:
    outcomes: list[RankOutcome] = []
    total = len(jobs)
    if progress:
        progress(0, total)
    seen: set[int] = set()
    for outcome in map_unordered(worker, jobs, engine=engine, workers=workers, scheduler=scheduler, threads=threads):
        if outcome.rank in seen:  # a retried task that also finished: keep one outcome per rank
            continue
        seen.add(outcome.rank)
        outcomes.append(outcome)
        if progress:
            progress(len(outcomes), total)
    return outcomes


def _reduce(
    found: Discovery,
    store_dir: Path,
    outcomes: list[RankOutcome],
    old: dict[str, Any],
    reusable: set[int],
    fingerprints: dict[int, Any],
    classification: dict[str, Any],
) -> IngestReport:
    ranks_meta: dict[str, Any] = {str(r): old["ranks"][str(r)] for r in reusable}
    errors = list(found.unreadable)
    warnings = as_warnings(found.warnings)
    empty: list[str] = []
    for o in sorted(outcomes, key=lambda o: o.rank):
        errors.extend(o.errors)
        warnings.extend(o.warnings)
        if not o.ok:
            if not o.errors:
                empty.append(f"rank {o.rank}: no complete events in {', '.join(o.files)}")
                warnings.append(input_note(empty[-1]))
            continue
        ranks_meta[str(o.rank)] = {
            "files": o.files,
            "inputs": fingerprints[o.rank],
            "n_events": o.n_events,
            "n_steps": o.n_steps,
            "n_collectives": o.n_collectives,
            "n_memory": o.n_memory,
            "salvaged": o.salvaged,
            "warnings": [w.to_dict() for w in o.warnings],  # typed: a reused rank's stay partial or not
            "comm_kernels": o.comm_kernels,
            **(o.summary or header_summary(o.header)),  # a worker given by a test may not summarize
        }
    for r in reusable:
        warnings.extend(InputWarning.from_json(w) for w in ranks_meta[str(r)].get("warnings", []))
    meta: dict[str, Any] = {
        "store_version": STORE_VERSION,
        "scope_version": __version__,
        "source": str(Path(found.root).resolve()),
        "layout": found.layout,
        "ranks": ranks_meta,
        "warnings": texts(warnings),
        "errors": errors,
        "run": _run_info(found, ranks_meta),
        "classification": classification,
    }
    # In `run`, so `scope analyze --json` reports it: kernel launches per communication rule.
    meta["run"]["comm_kernels"] = comm_kernel_counts(ranks_meta, classification)
    _write_ranks_table(store_dir, ranks_meta)
    write_json_atomic(store_dir / META_NAME, meta)
    store = Store(store_dir, meta)
    return IngestReport(
        store=store,
        parsed=sorted(o.rank for o in outcomes if o.ok),
        reused=sorted(reusable),
        warnings=warnings,
        errors=errors,
        empty=empty,
    )


def comm_kernel_counts(ranks_meta: dict[str, Any], classification: dict[str, Any]) -> dict[str, int]:
    """GPU communication kernel launches over all ranks per rule ('nccl', 'catalog:<family>',
    'user:<REGEX[=OP]>'); every user rule is listed, with 0 when it matched nothing."""
    totals: dict[str, int] = {f"user:{p}={op}" if op else f"user:{p}": 0 for p, op in classification["rules"]}
    for m in ranks_meta.values():
        for label, n in m.get("comm_kernels", {}).items():
            totals[label] = totals.get(label, 0) + n
    return totals


def _run_info(found: Discovery, ranks_meta: dict[str, Any]) -> dict[str, Any]:
    if found.manifest:
        info = found.manifest.to_dict()
    else:
        first: dict[str, Any] = next(iter(ranks_meta.values()), {})
        info = {
            "schema_version": None,
            "world_size": found.world_size,
            "backend": first.get("backend"),
            "hosts": sorted({m["host_name"] for m in ranks_meta.values() if m.get("host_name")}),
        }
    info["source"] = str(Path(found.root).resolve())
    info["layout"] = found.layout
    info["traced_ranks"] = sorted(int(r) for r in ranks_meta)
    return info


RANKS_COLUMNS = (
    ("rank", "int64"),
    ("files", "string"),
    ("n_events", "int64"),
    ("n_steps", "int64"),
    ("n_collectives", "int64"),
    ("salvaged", "bool"),
    ("backend", "string"),
    ("world_size", "int64"),
    ("host_name", "string"),
    ("device_name", "string"),
    ("pg_config", "string"),
)


def _ranks_row(rank: str, m: dict[str, Any]) -> dict[str, Any]:
    def text(value: Any) -> str | None:
        return None if value is None else str(value)

    world = m.get("world_size")
    return {
        "rank": int(rank),
        "files": "\n".join(m["files"]),
        "n_events": m["n_events"],
        "n_steps": m["n_steps"],
        "n_collectives": m["n_collectives"],
        "salvaged": bool(m["salvaged"]),
        "backend": text(m.get("backend")),
        "world_size": world if isinstance(world, int) and not isinstance(world, bool) else None,
        "host_name": text(m.get("host_name")),
        "device_name": text(m.get("device_name")),
        "pg_config": text(m.get("pg_config")),
    }


def _write_ranks_table(store_dir: Path, ranks_meta: dict[str, Any]) -> None:
    rows = [_ranks_row(r, m) for r, m in sorted(ranks_meta.items(), key=lambda kv: int(kv[0]))]
    store_dir.mkdir(parents=True, exist_ok=True)
    tmp = ranks_path(store_dir).with_suffix(".parquet.tmp")
    columns = [(name, typ, [row[name] for row in rows]) for name, typ in RANKS_COLUMNS]
    with no_leftover(tmp):
        if native_enabled():
            from scope.ingest import _native

            _native.write_parquet(str(tmp), columns)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            from scope.ingest.tables import arrow_schema

            schema = arrow_schema(RANKS_COLUMNS)
            pq.write_table(pa.table({name: values for name, _, values in columns}, schema=schema), tmp)
        tmp.replace(ranks_path(store_dir))
