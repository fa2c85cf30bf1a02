"""Where per-rank work runs: a local process pool (default) or a Dask cluster.

Only the map stage runs remotely; each task gets a small picklable job and returns a small outcome,
so the data never passes through the driver.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from scope.errors import EXIT_USAGE, ScopeError

J = TypeVar("J")
R = TypeVar("R")

ENGINES = ("local", "dask")


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def check_engine(engine: str) -> None:
    """Before any work: an unknown engine, or one whose packages are missing, is a usage error (exit 2)."""
    if engine not in ENGINES:
        raise ScopeError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", EXIT_USAGE)
    if engine == "dask":
        from scope.deps import require

        require(("dask", "distributed"), "--engine dask")


def map_unordered(
    func: Callable[[J], R],
    jobs: Iterable[J],
    *,
    engine: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    threads: bool = False,
    count: int | None = None,
    combine: Callable[[list[R]], list[R]] | None = None,
) -> Iterator[R]:
    """Run func over jobs; yield results as they finish. threads=True runs local jobs in threads of
    this process: for work that releases the GIL (the native ingest core), it saves starting and
    importing a worker process per core. count: how many jobs an iterator of them will give; the local
    engine then makes each job only when it is submitted (a job per rank of 16,384 ranks, all made
    first, held 80 MB). combine: on the dask engine, where jobs travel in batches, what a worker makes
    of a batch's results before they cross to the coordinator (a fold that the coordinator's own fold
    reproduces exactly); the local engine has no batches and never calls it."""
    if count is None:
        jobs = list(jobs)
        count = len(jobs)
    if not count:
        return iter(())
    if engine == "local" and threads:
        return _map_threads(func, iter(jobs), count, workers or default_workers())
    if engine == "local":
        return _map_local(func, iter(jobs), count, workers or default_workers())
    if engine == "dask":
        return _map_dask(func, iter(jobs), count, scheduler, workers, combine)
    raise ScopeError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", EXIT_USAGE)


def give_back_memory() -> None:
    """Return the heap's freed pages to the system. The coordinating process reads thousands of small
    per-rank files and results, and glibc keeps what they freed: 35 MB at 1,024 ranks after the
    per-rank pass, RSS that only grows with the rank count although nothing holds it. Called between
    stages and every batch of ranks; a no-op where there is no glibc malloc_trim."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)
    pyarrow = sys.modules.get("pyarrow")  # never imported for this: the native ingest runs without it
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()


_trim: Any = None

# pyarrow's wheels allocate from mimalloc, which kept about 35 MB more than glibc's heap in the analysis of
# 16,384 ranks (benchmarks/scale.py), and which give_back_memory's malloc_trim cannot reach.
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


_SET_HERE: set[str] = set()  # the variables use_system_allocator set (not the user)


def use_system_allocator() -> None:
    """Arrow's buffers from glibc's heap in this process and in the workers it starts: the `scope`
    command calls it before pyarrow is imported (an explicit ARROW_DEFAULT_MEMORY_POOL is kept). A
    library caller's process is left as it is; a job scope launches, by leave_jobs_their_allocator."""
    if ARROW_POOL_VARIABLE not in os.environ:
        os.environ[ARROW_POOL_VARIABLE] = "system"
        _SET_HERE.add(ARROW_POOL_VARIABLE)


def leave_jobs_their_allocator() -> None:
    """Before `scope run` starts the user's job: its processes inherit this environment, and their
    Arrow must allocate as it would without scope."""
    for name in _SET_HERE:
        os.environ.pop(name, None)
    _SET_HERE.clear()


def die_with(parent_pid: int) -> None:
    """Pool worker initializer: end this worker when the process that started the work dies, even by
    SIGKILL (a killed `scope analyze` left its workers running for good, one at 1 GB). Linux: the kernel's
    parent-death signal; everywhere: a daemon thread that checks the driver once a second."""
    import signal
    import threading
    import time

    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG (fires when our parent exits)

    def watch() -> None:
        while True:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except OSError:
                pass
            time.sleep(1.0)

    if not _alive(parent_pid):
        os._exit(1)
    threading.Thread(target=watch, name="scope-worker-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _map_local(func: Callable[[J], R], jobs: Iterator[J], count: int, workers: int) -> Iterator[R]:
    if workers <= 1 or count == 1:
        yield from (func(job) for job in jobs)
        return
    import multiprocessing  # only here: ingest with the native core runs in threads and never needs it

    # forkserver: workers start clean (no inherited threads or locks from the driver's progress bar).
    ctx = multiprocessing.get_context("forkserver")
    pool_size = min(workers, count)
    with cf.ProcessPoolExecutor(pool_size, mp_context=ctx, initializer=die_with, initargs=(os.getpid(),)) as pool:
        yield from _windowed(pool, func, jobs, pool_size)


def _map_threads(func: Callable[[J], R], jobs: Iterator[J], count: int, workers: int) -> Iterator[R]:
    if workers <= 1 or count == 1:
        yield from (func(job) for job in jobs)
        return
    pool_size = min(workers, count)
    with cf.ThreadPoolExecutor(max_workers=pool_size, thread_name_prefix="scope-ingest") as pool:
        yield from _windowed(pool, func, jobs, pool_size)


# Jobs submitted ahead per worker: enough that no worker waits for the next, few enough that the
# driver holds a bounded number of futures (each ~1 KB with its lock and condition; submitting all
# 16,384 ranks' jobs at once kept 16,384 of them, and every job, alive until its end).
AHEAD_PER_WORKER = 4


def _windowed(pool: cf.Executor, func: Callable[[J], R], jobs: Iterator[J], workers: int) -> Iterator[R]:
    """Results as they finish, with at most AHEAD_PER_WORKER jobs per worker submitted and not yet
    collected; each job is taken from `jobs` when it is submitted, and let go with its result."""

    def submit(n: int) -> set[cf.Future[R]]:
        return {pool.submit(func, job) for job in itertools.islice(jobs, n)}

    pending = submit(workers * AHEAD_PER_WORKER)
    try:
        while pending:
            done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            pending |= submit(len(done))
            for fut in done:
                yield fut.result()
    finally:  # a job that raised, or a caller that stopped early: the jobs not started are dropped
        for fut in pending:
            fut.cancel()


def _map_dask(
    func: Callable[[J], R],
    jobs: Iterator[J],
    count: int,
    scheduler: str | None,
    workers: int | None,
    combine: Callable[[list[R]], list[R]] | None,
) -> Iterator[R]:
    from scope.dask_engine import map_dask  # only here: the local engine never imports dask

    # retries: a worker lost mid-task (killed, OOM) has its batch of ranks re-run; outputs are written
    # atomically per rank, so a retry neither loses nor duplicates a rank.
    # a LocalCluster's size is decided here (dask_engine never imports this module: no cycle)
    return map_dask(func, jobs, count, scheduler, workers if scheduler else workers or default_workers(), combine)
