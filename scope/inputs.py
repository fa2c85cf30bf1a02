"""One look at the input: what PATH holds, found by one walk and classified once.

`Inventory.scan(PATH)` lists PATH once (scope's stores, hidden folders and caches aside), reads its
manifest once and sorts every file into a kind by its name and place (KINDS, below: cheap checks, no
file opened). `scope.analysis.run` builds it first and hands it on in the Context: ingest takes its
traces (and reads each trace's header once, here), the post-mortem its logs and dumps, contention its
counter chunks, the communication-kernel rules its config file, and the store goes where `store_dir`
says (the one rule for where a store lives). What a file holds, when its name does not say, is left to
the reader that opens it (the post-mortem sniffs the first bytes of files of kind `other`).

Layouts: "run" (a run directory: run.json, ranks/<r>/traces/...; scope.rundir), "folder" (any folder
of trace files, logs or dumps), "file" (one file), "store" (a store itself, served by the dashboard).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from scope.errors import ScopeError
from scope.manifest import MANIFEST_NAME, RunManifest, read_manifest
from scope.rundir import not_regular

T = TypeVar("T")
TRACE_SUFFIXES = (".json", ".json.gz")
# scope's own stores (by name; the store in use is skipped wherever it is), version control, caches.
STORE_NAMES = frozenset({"store", "scope_store"})
SKIP_DIRS = STORE_NAMES | {"__pycache__", "node_modules", ".git", ".scope"}
# The one rule for a rank in a file name: `rank3`, `rank_3`, `worker0.rank-3`; the word must start the
# name or follow a separator, so `16rank_2node.log` (a 16-rank run) is not rank 2.
RANK_IN_NAME = re.compile(r"(?:^|[_\-.])rank[_\-]?(\d+)", re.IGNORECASE)
CONFIG_NAMES = ("scope.toml", "pyproject.toml")
# A job's timeline-<T>.json(.gz) is a trace by its name (JSON): with its meta-<T>.yaml beside it the
# operation-level reader takes it (scope.ingest.optrace.find_job), alone the Kineto reader does.
OPTRACE_NAME = re.compile(r"^(trace-.+\.parquet|meta-.+\.ya?ml)$")


def rank_in_name(name: str) -> int | None:
    match = RANK_IN_NAME.search(name)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class Entry:
    """One regular file of the input: where, its kind (KINDS), and the rank and host its place says."""

    path: Path
    rel: Path  # relative to the inventory's root
    kind: str
    rank: int | None = None
    host: str | None = None

    @property
    def dirs(self) -> tuple[str, ...]:
        return self.rel.parts[:-1]


@dataclass(frozen=True)
class Kind:
    """A kind of input file: the check on its place and name (parts of the path below the root, the
    layout) and why a file that passes is taken for that kind."""

    name: str
    check: Callable[[tuple[str, ...], str], bool]
    why: str


def _rank_folder(parts: tuple[str, ...]) -> bool:
    return len(parts) >= 3 and parts[0] == "ranks" and parts[1].isdigit()


def _trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES) and name != MANIFEST_NAME


# First match wins. Checks look at names and places only: nothing is opened to classify a file.
KINDS: tuple[Kind, ...] = (
    Kind("manifest", lambda p, lay: p == (MANIFEST_NAME,), "run.json at the top: the run's manifest (scope.manifest)"),
    Kind(
        "trace",
        lambda p, lay: _trace_name(p[-1]) and (lay != "run" or (_rank_folder(p) and p[2] == "traces" and len(p) > 3)),
        "JSON under ranks/<r>/traces/ of a run directory; any .json/.json.gz elsewhere (its header decides)",
    ),
    Kind(
        "optrace",
        lambda p, lay: len(p) == 1 and lay != "run" and OPTRACE_NAME.match(p[0]) is not None,
        "trace-<T>.parquet / meta-<T>.yaml at the top: an operation-level timeline's ops and meta",
    ),
    Kind("trace_side", lambda p, lay: "traces" in p[:-1], "under traces/ and not a trace: a profiler's side files"),
    Kind("counters", lambda p, lay: "counters" in p[:-1], "under counters/: the sidecar's counter chunks"),
    Kind("control", lambda p, lay: "control" in p[:-1], "control/: requests to a running job"),
    Kind(
        "live_events",
        lambda p, lay: lay == "run" and p[0] == "live" and len(p) > 1,
        "live/: the live detector's findings (scope's own words: never read as the job's)",
    ),
    Kind("node_record", lambda p, lay: p[0] == "nodes" and len(p) == 2, "nodes/: each node's launcher record"),
    Kind("config", lambda p, lay: len(p) == 1 and p[0] in CONFIG_NAMES, "scope.toml / pyproject.toml at the top"),
    Kind("own_log", lambda p, lay: p[-1] in ("hook.log", "sidecar.log"), "scope's own collector logs"),
    Kind("kmsg", lambda p, lay: p[-1] == "kmsg.log", "kernel-log lines captured per host"),
    Kind("error_file", lambda p, lay: p[-1] == "error.json", "torchrun's per-rank error file"),
    Kind("sidecar_status", lambda p, lay: p[-1] == "sidecar.json", "the counter sidecar's status and cost"),
    Kind("ground_truth", lambda p, lay: p == ("ground_truth.json",), "faults a sample workload injected"),
    Kind("heartbeat", lambda p, lay: p[-1] == "heartbeat.json", "the hook's latest heartbeat"),
    Kind("dump", lambda p, lay: "fr" in p[:-1], "under fr/: Flight Recorder dumps"),
    Kind("stack", lambda p, lay: "stacks" in p[:-1], "under stacks/: stack dumps"),
    Kind("log", lambda p, lay: p[-1].endswith((".log", ".txt", ".out", ".err")), "a text log by its suffix"),
    Kind("other", lambda p, lay: True, "anything else: its reader decides by its content"),
)


# What each reader takes, by these kinds (goodput and the post-mortem read the same classifier):
# the post-mortem reads every file but the profiler's, the sidecar's and a running job's requests (a JSON
# outside traces/ may be a Flight Recorder dump or a RAS record: its reader sniffs it); goodput reads the
# text logs, and the files of no known kind named like a log (`nohup`, `train.log.1`).
NOT_EVIDENCE = frozenset({"trace_side", "counters", "control"})
ROTATED_LOGS = (".log.1", ".out.1")


def classify(rel: Path, layout: str) -> str:
    parts = rel.parts
    return next(k.name for k in KINDS if k.check(parts, layout))


def place_of(rel: Path) -> tuple[int | None, str | None]:
    """(rank, host) a file's place says: ranks/<r>/ and hosts/<h>/ folders, else a rank in its name."""
    parts = rel.parts
    rank = host = None
    for i, part in enumerate(parts[:-1]):
        if part == "ranks" and i + 1 < len(parts) - 1 and parts[i + 1].isdigit():
            rank = int(parts[i + 1])
        if part == "hosts" and i + 1 < len(parts) - 1:
            host = parts[i + 1]
    if rank is None:
        rank = rank_in_name(rel.name)
    return rank, host


# ---- where the store goes: the one rule -------------------------------------------------------------


def default_store_dir(path: Path) -> Path:
    """Where PATH's store goes by default: beside the input (RUN/store, FOLDER/scope_store, NAME.scope_store)."""
    path = Path(path)
    if path.is_file():
        return path.parent / f"{path.name.split('.')[0]}.scope_store"
    return path / "store" if (path / MANIFEST_NAME).is_file() else path / "scope_store"


def store_dir_for(path: Path) -> Path:
    """Where PATH's store is: the default location, or the per-user cache when the input's folder could
    not take one and `scope analyze` put it there (scope.ingest.choose_store_dir)."""
    from scope.store import cache_store_dir

    default = default_store_dir(path)
    cached = cache_store_dir(path)
    if holds_a_store(cached) and (write_protected(default.parent) or not holds_a_store(default)):
        return cached
    return default


def holds_a_store(folder: Path) -> bool:
    """Events (meta.json), or the saved diagnosis of a folder of logs and dumps alone (analysis.json)."""
    from scope.store import META_NAME, analysis_path

    return (folder / META_NAME).is_file() or analysis_path(folder).is_file()


def write_protected(folder: Path) -> bool:
    """A folder nobody may write by its mode bits (a shared data set made read-only): even root, which
    the kernel would let write, leaves it alone and keeps its store in the cache."""
    try:
        return not os.stat(folder).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    except OSError:
        return False


def is_store(path: Path) -> bool:
    """PATH is a store itself (events and its meta.json), not an input."""
    from scope.store import META_NAME

    return path.is_dir() and (path / META_NAME).is_file() and (path / "events").is_dir()


# ---- the inventory ----------------------------------------------------------------------------------


@dataclass
class Inventory:
    path: Path  # as given
    root: Path  # the folder the entries are relative to
    layout: str  # run | folder | file | store
    entries: list[Entry] = field(default_factory=list)
    # Non-regular files (a FIFO, a device, a broken link): (path, what it is); never opened.
    irregular: list[tuple[Path, str]] = field(default_factory=list)
    manifest: RunManifest | None = None
    manifest_error: ScopeError | None = None
    # input_signature of what this walk saw (recorded with the analysis: its readers know when it is stale)
    signature: list[Any] = field(default_factory=list)
    _read: dict[tuple[str, Path], Any] = field(default_factory=dict, repr=False)  # read_once's results

    @classmethod
    def scan(cls, path: Path | str, store: Path | str | None = None) -> Inventory:
        """List PATH once. STORE (the --store folder) is skipped when it lies inside PATH, as are scope's
        stores by name."""
        path = Path(path)
        if not path.exists():
            raise ScopeError(f"{path}: no such file or directory")
        if not path.is_dir():
            inv = cls(path=path, root=path.parent, layout="file")
            rel = Path(path.name)
            what = None if path.is_file() else not_regular(path) or "not a regular file"
            if what is None:
                inv.entries.append(Entry(path, rel, classify(rel, "file"), *place_of(rel)))
                sig = _Signature()
                sig.add(rel, path.stat())
                inv.signature = list(sig.value())
            else:
                inv.irregular.append((path, what))
            return inv
        layout = "store" if is_store(path) else "run" if (path / MANIFEST_NAME).is_file() else "folder"
        inv = cls(path=path, root=path, layout=layout)
        if layout == "store":
            return inv
        skip = {Path(store).resolve()} if store is not None else set()
        sig = _Signature()
        for file, st in walk(path, skip):
            if st is None:
                inv.irregular.append((file, not_regular(file) or "not a regular file"))
                continue
            rel = file.relative_to(path)
            inv.entries.append(Entry(file, rel, classify(rel, layout), *place_of(rel)))
            if _counts(rel):
                sig.add(rel, st)
        inv.signature = list(sig.value())
        if layout == "run":  # after the walk: PATH's way leaves this module once (scope/analysis.py:run)
            try:
                inv.manifest = read_manifest(path)
            except ScopeError as exc:  # kept: ingest stops on it, the post-mortem reads the logs anyway
                inv.manifest_error = exc
        return inv  # in the order os.walk gives, top-down with sorted names: files first, then folders

    def of_kind(self, *kinds: str) -> list[Entry]:
        return [e for e in self.entries if e.kind in kinds]

    def files(self, *kinds: str) -> list[Path]:
        return [e.path for e in self.of_kind(*kinds)]

    def traces(self) -> list[Path]:
        return self.files("trace")

    def evidence(self) -> list[Entry]:
        """The files the post-mortem reads (NOT_EVIDENCE aside): a trace among them only outside traces/."""
        return [
            e for e in self.entries if e.kind not in NOT_EVIDENCE and not (e.kind == "trace" and "traces" in e.dirs)
        ]

    def logs(self) -> list[Entry]:
        """The text logs (goodput's input): kind `log`, and files of no kind named like one."""
        return [
            e
            for e in self.entries
            if e.kind == "log" or (e.kind == "other" and (e.rel.suffix == "" or e.rel.name.endswith(ROTATED_LOGS)))
        ]

    def top_files(self) -> list[Path]:
        """Regular files directly in the root (an operation-level job's files, config files)."""
        return [e.path for e in self.entries if len(e.rel.parts) == 1]

    def config(self, name: str) -> Path | None:
        """The root's config file of that name (scope.toml, pyproject.toml), if there is one."""
        return next((e.path for e in self.of_kind("config") if e.rel.name == name), None)

    def counter_chunks(self, table: str) -> dict[str, list[Path]]:
        """Host -> the Parquet chunks of a counter table (hosts/<h>/counters/<table>/*.parquet)."""
        out: dict[str, list[Path]] = {}
        for e in self.of_kind("counters"):
            p = e.rel.parts
            if len(p) == 5 and p[0] == "hosts" and p[2] == "counters" and p[3] == table and p[4].endswith(".parquet"):
                out.setdefault(p[1], []).append(e.path)
        return out

    def has_non_trace_inputs(self) -> bool:
        """Whether PATH holds something besides trace files (logs, dumps, a manifest) that can still be
        diagnosed when no trace is readable. Scope's own stores do not count (they are not listed); nor
        do the traces themselves, so a folder of only unreadable traces is an input error, not "nothing
        abnormal"."""
        if self.layout == "file":
            return False
        return any(e.kind != "trace" and not _trace_name(e.rel.name) for e in self.entries)

    def read_once(self, path: Path, read: Callable[[Path], T]) -> T:
        """READ(PATH), done once per inventory whoever asks (a trace's header, a config file's table); an
        error is kept and raised again to each asker, with no second read."""
        key = (getattr(read, "__qualname__", repr(read)), path)
        if key not in self._read:
            try:
                self._read[key] = read(path)
            except Exception as exc:
                self._read[key] = exc
        value = self._read[key]
        if isinstance(value, BaseException):
            raise value
        result: T = value
        return result

    def header(self, path: Path) -> dict[str, Any]:
        """A trace's header (the part before its events), read once."""
        from scope.ingest.reader import read_header

        return self.read_once(path, read_header)


def inventory_of(source: Path | str | Inventory, store: Path | str | None = None) -> Inventory:
    """The inventory an entry point reads: the one it was given, else PATH listed now (scope.analysis.run,
    the CLI and the dashboard list PATH once and pass it on; a library caller may pass a path)."""
    return source if isinstance(source, Inventory) else Inventory.scan(source, store)


def walk(root: Path, skip: set[Path] | frozenset[Path] = frozenset()) -> Iterator[tuple[Path, os.stat_result | None]]:
    """(file, its stat) for each regular file under ROOT, (file, None) for anything else that is not a
    folder (a FIFO, a device, a socket, a broken link: never to be opened; a FIFO blocks its reader
    forever, /dev/zero never ends); in os.walk's order, top-down with sorted names. Each folder is listed
    once; hidden ones, scope's stores by name, caches and the folders in SKIP (resolved) are left out;
    links to folders are not followed, links to files are (their target's stat)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        below: list[Path] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            file = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP_DIRS and (not skip or file.resolve() not in skip) and not is_a_store(file):
                    below.append(file)
                continue
            if entry.is_symlink() and entry.is_dir():
                continue  # a link to a folder: not followed
            try:
                st: os.stat_result | None = entry.stat()
            except OSError:
                st = None  # a broken link, or gone since the listing
            yield file, st if st is not None and stat.S_ISREG(st.st_mode) else None
        stack.extend(reversed(below))


class _Signature:
    """input_signature's sums, file by file (the inventory's walk makes one too, with no second look)."""

    def __init__(self) -> None:
        import hashlib

        self.count = self.size = self.newest = 0
        self.digest = hashlib.blake2b(digest_size=12)

    def add(self, rel: Path, st: os.stat_result) -> None:
        self.count, self.size, self.newest = self.count + 1, self.size + st.st_size, max(self.newest, st.st_mtime_ns)
        self.digest.update(f"{rel}\0{st.st_size}:{st.st_mtime_ns}\n".encode(errors="replace"))

    def value(self) -> tuple[int, int, int, str]:
        return self.count, self.size, self.newest, self.digest.hexdigest()


def _counts(rel: Path) -> bool:
    """Whether a listed file is an input for the signature: temporary files and a run's control folder
    (requests to the running job) are not."""
    return not rel.name.endswith(".tmp") and rel.parts[:1] != ("control",)


def is_a_store(folder: Path) -> bool:
    """A scope store by its marker or its layout (whatever its name): output, never input. A second store
    inside the input (`--store RUN/results`, an old store copied in) had its analysis.json and meta.json
    read as traces."""
    from scope.store import MARKER_NAME, META_NAME

    return (folder / MARKER_NAME).is_file() or ((folder / META_NAME).is_file() and (folder / "events").is_dir())


def input_signature(root: Path, skip: set[Path]) -> tuple[int, int, int, str]:
    """(files, bytes, newest mtime, digest of the listing) of the inputs under ROOT, as the inventory walks
    them (temporary files and the folders in SKIP, a store or a control folder, aside): whether the inputs
    changed since an analysis was saved, cheap enough for the dashboard to take every few seconds. A
    symlinked trace counts with its target's size and time. The digest is of every file's name, size and
    mtime: a file replaced by an older one, or by one of the same size, changes it (the newest time alone
    missed a run B replaced under the dashboard)."""
    sig = _Signature()
    if root.is_file():
        sig.add(Path(root.name), root.stat())
        return sig.value()
    for file, st in walk(root, {p.resolve() for p in skip}):
        rel = file.relative_to(root)
        if st is not None and _counts(rel):
            sig.add(rel, st)
    return sig.value()


def inputs_state(path: Path, store_dir: Path | None) -> list[Any]:
    """PATH's input_signature as an analysis records it (analysis.json's run.input_signature, from the
    inventory's walk) and as its readers check it (scope compare's cache, the dashboard's refresh): its
    store and a run directory's control folder aside."""
    from scope.rundir import control_dir

    path = Path(path)
    skip = {control_dir(path)} if path.is_dir() else set()
    if store_dir is not None:
        skip.add(Path(store_dir))
    return list(input_signature(path, skip))


def still_current(saved: Any, path: Path, store_dir: Path | None, made_ns: int) -> bool:
    """Whether an analysis of PATH saved at MADE_NS still holds: its recorded inputs_state (SAVED) is
    PATH's now; an analysis saved before it recorded one holds while no input is newer than it."""
    if isinstance(saved, list):
        return saved == inputs_state(path, store_dir)
    return inputs_state(path, store_dir)[2] <= made_ns
