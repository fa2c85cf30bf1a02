"""Find what to read in a run directory or any folder of logs and dumps, and read it in parallel.

Run directory (scope.rundir): ranks/<r>/{stdout,stderr,nccl,hook}.log, error.json, fr/*, stacks/*;
hosts/<h>/kmsg.log (and any other host log); run.json. Elsewhere files are recognised by name and
content: Flight Recorder dumps (`_dump_<rank>`, pickle or JSON with `entries`), text logs of any
name (dmesg captures, launcher output, nohup.out), stack dumps. Trace JSON, Parquet, archives and
other binaries are skipped. The rank of a file comes from ranks/<r>/, a `rank<N>` in its name, or the
prefixes of its lines; its host from hosts/<h>/ or the manifest.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scope.analyzers.diagnose.knowledge.own_words import SIDECAR_HEAD
from scope.analyzers.diagnose.model import APPLICATION, FileScan
from scope.analyzers.diagnose.readers.logtext import read_log_text, utf16_encoding
from scope.analyzers.diagnose.readers.ras import looks_like_ras, parse_ras
from scope.analyzers.diagnose.readers.ras_evidence import ras_anomalies
from scope.analyzers.diagnose.readers.scan import scan_text

from scope.engine import map_unordered
from scope.errors import ScopeError
from scope.flight_recorder import FRDump, load_dump, looks_like_dump
from scope.inputs import Inventory, place_of
from scope.manifest import MANIFEST_NAME, RunManifest
from scope.rundir import skipped_message
from scope.warnings import InputWarning, unread_file

# One log's text -> its FileScan: (text, display name, rank, host, year)
ReadText = Callable[[str, str, int | None, str | None, int], FileScan]

if TYPE_CHECKING:
    from scope.analyzers.diagnose.knowledge.signatures import Signature

SKIP_SUFFIXES = (
    ".md",
    ".csv",
    ".rst",
    ".yaml",
    ".yml",
    ".toml",
    ".ipynb",
    ".cfg",
    ".ini",
    ".sh",
    ".cpp",
    ".h",
    ".parquet",
    ".gz",
    ".zip",
    ".tar",
    ".png",
    ".jpg",
    ".html",
    ".pt",
    ".so",
    ".whl",
    ".py",
    ".pyc",
    ".npy",
    ".npz",
    ".safetensors",
    ".bin.gz",
)
HEAD_BYTES = 4096
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
PARALLEL_MIN_FILES = 48
POOL_MIN_CPUS = 4
# scope's own collector logs (the hook's, the counter sidecar's): their errors are scope's problems, never
# evidence of the job's failure, so they are read for a note only.
SCOPE_OWN_LOGS = ("hook.log", "sidecar.log")
_HOOK_LINE = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?:rank=\d+ )?pid=\d+ ")


@dataclass
class Job:
    path: str
    display: str
    kind: str  # log | dump | error_file | ras | own_log
    rank: int | None = None
    host: str | None = None


@dataclass
class Inputs:
    root: Path
    manifest: RunManifest | None = None
    jobs: list[Job] = field(default_factory=list)
    skipped: list[InputWarning] = field(default_factory=list)  # inputs not read (each makes the result partial)
    year: int = 1970
    rank_host: dict[int, str] = field(default_factory=dict)


def discover(inv: Inventory) -> Inputs:
    """The logs, dumps and error files to read, from PATH's inventory (scope.inputs: listed and its
    run.json read once for every reader; its kinds say which files are evidence)."""
    inputs = Inputs(root=inv.root)
    if inv.manifest_error is not None:  # a bad run.json costs only the manifest: the logs and dumps still speak
        what = inv.manifest_error.message.split(": ", 1)[-1]
        inputs.skipped.append(InputWarning(MANIFEST_NAME, what, partial=True))
    elif inv.manifest is not None:
        inputs.manifest = inv.manifest
        inputs.rank_host = {r.rank: r.host for r in inv.manifest.ranks if r.host}
    for file, what in inv.irregular:  # a FIFO, device or socket (or a link to one): named, never opened
        rel = file.relative_to(inv.root)
        # wherever it is (a counter chunk, a file among the traces): what scope did not read makes the
        # result partial, as the README promises; only a running job's control requests are not inputs
        if rel.parts[:1] != ("control",):
            inputs.skipped.append(unread_file(str(rel), skipped_message(rel, what)))
    files = [e.path for e in inv.evidence()]
    for f in files:
        job = _classify(f, inv.root, inputs)
        if job:
            inputs.jobs.append(job)
    start = (inputs.manifest.start_ns if inputs.manifest else None) or _first_mtime(files)
    inputs.year = time.gmtime((start or 0) / 1e9).tm_year
    return inputs


def _hook_log_lines(f: Path) -> bool:
    """A hook.log or sidecar.log outside its run directory: known by their line prefixes
    (collectors/hook/hooklog.py, analyzers/diagnose/knowledge/own_words.py)."""
    try:
        with open(f, "rb") as fh:
            head = fh.read(200)
    except OSError:
        return False
    return _HOOK_LINE.match(head) is not None or SIDECAR_HEAD.match(head) is not None


def _first_mtime(files: list[Path]) -> int | None:
    for f in files[:1]:
        try:
            return int(f.stat().st_mtime * 1e9)
        except OSError:
            return None
    return None


def _classify(f: Path, root: Path, inputs: Inputs) -> Job | None:
    rel = f.relative_to(root) if f != root and root in f.parents else Path(f.name)
    display = str(rel)
    if f.name == MANIFEST_NAME or f.name.endswith(SKIP_SUFFIXES) or ".trace.json" in f.name:
        return None
    rank, host = place_of(rel)
    if f.name in SCOPE_OWN_LOGS and (
        (len(rel.parts) >= 3 and rel.parts[-3] in ("ranks", "hosts")) or _hook_log_lines(f)
    ):
        return Job(str(f), display, "own_log", rank, host)
    if f.suffix in LOG_SUFFIXES or "fr" in rel.parts[:-1]:
        head = b""  # known by name or place: no need to open it twice
    else:
        try:
            with open(f, "rb") as fh:
                head = fh.read(HEAD_BYTES)
        except OSError as exc:
            inputs.skipped.append(InputWarning(display, f"cannot read ({exc.strerror})", partial=True))
            return None
    if "fr" in rel.parts[:-1] or looks_like_dump(f, head):
        from scope.flight_recorder import rank_from_name

        return Job(str(f), display, "dump", rank if rank is not None else rank_from_name(f), host)
    if f.name == "error.json":
        return Job(str(f), display, "error_file", rank, host)
    if f.suffix == ".json" and looks_like_ras(head):
        return Job(str(f), display, "ras", rank, host)
    if utf16_encoding(head) and f.suffix != ".json":  # a log written by a Windows tool or PowerShell
        return Job(str(f), display, "log", rank, host if host is not None else inputs.rank_host.get(rank or -1))
    if b"\x00" in head or f.suffix == ".json":  # JSON that is neither a dump nor an error file: traces
        return None
    if host is None and rank is not None:
        host = inputs.rank_host.get(rank)
    return Job(str(f), display, "log", rank, host)


# ---- reading, in a pool when there is a lot --------------------------------------------------------


def run_jobs(
    inputs: Inputs,
    workers: int | None = None,
    user_rows: tuple[Signature, ...] = (),
    engine: str = "local",
    scheduler: str | None = None,
    read: ReadText = scan_text,
) -> tuple[list[FileScan], list[FRDump], list[InputWarning]]:
    """Read every input; on scope.engine (as ingest's ranks) when there are many files and cores to spare.
    A worker starts clean: the user's signature rows (scope.toml) travel with each batch. `read` reads one
    log's text (the diagnosis hands in reasoning/file_reading.read_text: the lines and the readings across
    them; this room's scan_text reads the lines alone)."""
    jobs = inputs.jobs
    cpus = os.cpu_count() or 1
    # Shipping dumps back from workers costs about what parsing them does: on a small box one
    # process is fastest; from 4 cores on the pool wins.
    n = workers if workers is not None else (cpus if cpus >= POOL_MIN_CPUS else 1)
    batches = _batches(jobs, n * 4)
    if n > 1 and len(jobs) >= PARALLEL_MIN_FILES and len(batches) > 1:
        work = [Batch(i, b, inputs.year, user_rows, read) for i, b in enumerate(batches)]
        done = dict(map_unordered(read_batch, work, engine=engine, workers=n, scheduler=scheduler))
        results = [done[i] for i in range(len(work))]  # in the inputs' order, whichever finished first
    else:
        results = [_run_batch(b, inputs.year, read) for b in batches]
    scans = [s for r in results for s in r[0]]
    dumps = [d for r in results for d in r[1]]
    errors = [e for r in results for e in r[2]]
    return scans, dumps, errors


@dataclass(frozen=True)
class Batch:
    """Files one worker reads: small and picklable, like ingest's RankJob."""

    index: int
    jobs: list[Job]
    year: int
    user_rows: tuple[Signature, ...] = ()
    read: ReadText = scan_text  # a module-level function: it travels to the worker by name


def read_batch(batch: Batch) -> tuple[int, tuple[list[FileScan], list[FRDump], list[InputWarning]]]:
    """A batch in a worker of scope.engine, with the user's signature rows in force."""
    from scope.analyzers.diagnose.readers import signature_scan

    with signature_scan.user_rows(batch.user_rows):
        return batch.index, _run_batch(batch.jobs, batch.year, batch.read, in_worker=True)


def _batches(jobs: list[Job], n: int) -> list[list[Job]]:
    # Interleave so big and small files spread over the workers.
    n = max(1, min(n, len(jobs)))
    return [jobs[i::n] for i in range(n)] if jobs else []


def _run_batch(
    batch: list[Job], year: int, read: ReadText, in_worker: bool = False
) -> tuple[list[FileScan], list[FRDump], list[InputWarning]]:
    scans: list[FileScan] = []
    dumps: list[FRDump] = []
    errors: list[InputWarning] = []  # each file not read, typed with its name (partial: the diagnosis lacks it)
    for job in batch:
        try:
            if job.kind == "dump":
                dump = load_dump(Path(job.path), job.rank)
                if in_worker:  # stack frames of every entry are the bulk of a dump and unused here
                    for e in dump.entries:
                        e.pop("frames", None)
                dumps.append(dump)
            elif job.kind == "error_file":
                scans.append(_scan_error_file(job, year, read))
            elif job.kind == "own_log":
                scans.append(_scan_own_log(job, year, read))
            else:
                scans.append(_scan_log(job, year, read))
        except ScopeError as exc:
            errors.append(
                unread_file(job.display, exc.message.replace(job.path, job.display, 1))
            )  # as the report names files
        except OSError as exc:
            errors.append(InputWarning(job.display, f"cannot read ({exc.strerror or exc})", partial=True))
        except (RecursionError, MemoryError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            # A bad file costs only that file: name it and why, and read the others.
            what = f"unreadable {job.kind} ({type(exc).__name__}: {str(exc)[:120]})"
            errors.append(InputWarning(job.display, what, partial=True))
    return scans, dumps, errors


def _scan_log(job: Job, year: int, read: ReadText) -> FileScan:
    text, unread = read_log_text(job.path, job.display)
    if job.kind == "ras":
        return _scan_ras(job, text)
    scan = read(text, job.display, job.rank, job.host, year)
    scan.unread.extend(unread)
    if looks_like_ras(text):  # an ncclras capture, alone or pasted into a log
        with contextlib.suppress(ScopeError):
            ras = _scan_ras(job, text)
            scan.anomalies.extend(ras.anomalies)
            scan.notes.extend(ras.notes)
    return scan


# The hook's line when the run directory's disk refused a rank's output (collectors/hook/streams.py).
_REFUSED = re.compile(r"the disk refused ([\d.]+) MB of this rank's output \(([^)]*)\)")


def _own_log_tail(job: Job) -> str:
    """The last 64 KiB of a scope log, read guarded (a regular file only, never blocking)."""
    from scope.recordio import open_regular

    try:
        fd = open_regular(job.path)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - (64 << 10)))
        return fh.read(64 << 10).decode("utf-8", errors="replace")


# The hook's record of the job's own uncaught exception (collectors/hook/core.py `_record_uncaught`): the
# job's error told again by scope (its traceback is in the rank's own log), never scope's own error.
_JOBS_UNCAUGHT = re.compile(r"^\S+ rank=\S+ pid=\d+ uncaught \w[^\n]*$", re.M)


def _scan_own_log(job: Job, year: int, read: ReadText) -> FileScan:
    """scope's hook.log / sidecar.log: no evidence, only a note when the collector logged errors."""

    def without_the_jobs_exception(text: str, display: str, rank: int | None, host: str | None, yr: int) -> FileScan:
        return read(_JOBS_UNCAUGHT.sub("", text), display, rank, host, yr)  # lines keep their numbers

    scan = _scan_log(job, year, without_the_jobs_exception)
    errors = [a for a in scan.anomalies if a.severity != "info"]
    note = FileScan(path=job.display)
    refused = _REFUSED.search(_own_log_tail(job))
    if refused:  # the job's own lines (its traceback, even) may be among what the disk did not take
        who = f"rank {job.rank}'s" if job.rank is not None else "the rank's"
        note.notes.append(
            f"{job.display}: the disk refused {refused.group(1)} MB of {who} output ({refused.group(2)}); "
            "lines the job wrote may be missing from its logs: free space in the run directory"
        )
    if errors:
        first = min(errors, key=lambda a: a.line)
        note.notes.append(
            f"scope's collector logged errors in {job.display} ({len(errors)} line(s), first at line {first.line}: "
            f"{first.message[:120]}); scope's problem, not the job's"
        )
    return note


def _scan_ras(job: Job, text: str) -> FileScan:
    scan = FileScan(path=job.display)
    status = parse_ras(text, job.display)
    scan.anomalies = ras_anomalies(status, job.display, job.host)
    if not scan.anomalies:  # RAS can say OK while PyTorch times out: say what it said, decide nothing
        scan.notes.append(f"NCCL RAS status in {job.display}: every communicator OK (RAS is evidence, not a verdict)")
    return scan


def _scan_error_file(job: Job, year: int, read: ReadText) -> FileScan:
    """torchrun's error file: {"message": {"message": "...", "extraInfo": {"py_callstack", "timestamp"}}}."""
    try:
        data: Any = json.loads(Path(job.path).read_text(errors="replace"))
    except (json.JSONDecodeError, OSError, RecursionError) as exc:
        raise ScopeError(f"{job.display}: not a readable torchrun error file ({type(exc).__name__})") from None
    msg = data.get("message", data) if isinstance(data, dict) else data
    text = msg.get("message", "") if isinstance(msg, dict) else str(msg)
    extra = msg.get("extraInfo", {}) if isinstance(msg, dict) else {}
    callstack = extra.get("py_callstack", "") if isinstance(extra, dict) else ""
    scan = read(f"{callstack}\n{text}" if callstack else text, job.display, job.rank, job.host, year)
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    for a in scan.anomalies:
        a.line = 0  # lines of the re-assembled text mean nothing in the JSON file: cite the file
        if stamp and str(stamp).isdigit() and a.time_ns is None and a.level <= APPLICATION:
            a.time_ns = int(stamp) * 1_000_000_000
    return scan
