"""The map stage on a Dask cluster: `--engine dask`, with `--scheduler ADDRESS` for a cluster started
by Dask's own CLI (`dask scheduler`, `dask worker ADDRESS`), or a local cluster without it.

What crosses the network is small both ways: a task is a batch of jobs (a store path, a rank, a few
arrays of that rank's waits), and its result is the batch's small per-rank outcomes (rows per step or
per stream, never per event). Workers open the traces and the store by path, so PATH and the store
must be on a filesystem every worker mounts at the same path (docs/dask.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from scope.errors import EXIT_INPUT, EXIT_USAGE, ScopeError


class ClusterError(ScopeError):
    """The cluster cannot do the work: its scheduler unreachable or gone, or a rank's worker dying on
    every try. It stops the whole analysis (where an unreadable trace beside logs would not): the
    findings of a run with ranks missing would read as the run's own."""

    stops_analysis = True


J = TypeVar("J")
R = TypeVar("R")

# How long to wait for the scheduler to answer, and for its first worker to join.
CONNECT_TIMEOUT_S = 10
WORKERS_TIMEOUT_S = 60
# A task lost with its worker (killed, out of memory) is submitted again this many times.
RETRIES = 2
# Tasks submitted ahead per worker thread: enough that none waits for work, few enough that the
# coordinator holds a bounded number of futures and results (131,072 futures at once held ~300 MB).
AHEAD_PER_THREAD = 4
# Jobs per task: a task costs the scheduler about a millisecond whatever it does, so ranks of a few
# milliseconds each travel in batches; a worker lost mid-batch costs at most this many ranks' rerun.
MAX_BATCH = 32
BATCHES_PER_THREAD = 8


def map_dask(
    func: Callable[[J], R],
    jobs: Iterator[J],
    count: int,
    scheduler: str | None,
    workers: int | None,
    combine: Callable[[list[R]], list[R]] | None = None,
) -> Iterator[R]:
    """func over jobs on the cluster at `scheduler` (or a local one of `workers` processes); results as
    they finish. A job lost more than RETRIES times, or a cluster that goes away, is an error that
    names it: never a silent gap in the ranks."""
    client, cluster = _connect(scheduler, workers)
    where = scheduler or "a local Dask cluster"
    try:
        threads = max(1, sum(client.nthreads().values()))
        size = batch_size(count, threads)
        yield from _windowed(client, func, combine, _batches(jobs, size), threads * AHEAD_PER_THREAD, where)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def batch_size(count: int, threads: int) -> int:
    """Jobs per task: BATCHES_PER_THREAD tasks per worker thread at least, so the load still evens out
    at the end, and never more than MAX_BATCH."""
    return max(1, min(MAX_BATCH, count // (threads * BATCHES_PER_THREAD)))


def run_batch(func: Callable[[J], R], batch: list[J], combine: Callable[[list[R]], list[R]] | None = None) -> list[R]:
    """One task on a worker: its jobs, one after the other, and what `combine` makes of their results."""
    results = [func(job) for job in batch]
    return combine(results) if combine is not None and len(results) > 1 else results


def _batches(jobs: Iterator[J], size: int) -> Iterator[list[J]]:
    while batch := list(itertools.islice(jobs, size)):
        yield batch


def _connect(scheduler: str | None, workers: int | None) -> tuple[Any, Any]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ScopeError(
            "the dask engine needs dask[distributed]: pip install 'scope-profiler[dask]'", EXIT_USAGE
        ) from None
    if not scheduler:
        cluster = LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True, dashboard_address=None)
        return Client(cluster), cluster
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {scheduler} ({exc}); start one with `dask scheduler` and "
            f"workers with `dask worker {scheduler}`",
            EXIT_INPUT,
        ) from None
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise ClusterError(
            f"the Dask scheduler at {scheduler} has no worker after {WORKERS_TIMEOUT_S} s ({exc}); start "
            f"some with `dask worker {scheduler}`",
            EXIT_INPUT,
        ) from None
    return client, None


def _windowed(
    client: Any,
    func: Callable[[J], R],
    combine: Callable[[list[R]], list[R]] | None,
    batches: Iterator[list[J]],
    ahead: int,
    where: str,
) -> Iterator[R]:
    """Results as their batches finish, with at most `ahead` batches submitted and not yet collected. A
    batch whose worker died under it (the scheduler's KilledWorker) is submitted again, RETRIES times:
    Dask's own `retries` re-run a task that raised, not one that lost its worker."""
    from dask.distributed import as_completed
    from distributed import KilledWorker

    tries: dict[str, tuple[list[J], int]] = {}  # each pending task's batch, and how often it was lost

    def submit(batch: list[J], lost: int = 0) -> Any:
        fut = client.submit(run_batch, func, batch, combine, pure=False)
        tries[fut.key] = (batch, lost)
        return fut

    pending = as_completed([submit(b) for b in itertools.islice(batches, ahead)])
    for fut in pending:
        batch, lost = tries.pop(fut.key)
        try:
            results = fut.result()
        except KilledWorker as exc:
            if lost < RETRIES:
                pending.add(submit(batch, lost + 1))
                continue
            raise _lost(exc, describe(batch), where) from exc
        except Exception as exc:
            raise _lost(exc, describe(batch), where) from exc
        finally:
            fut.release()
        for more in itertools.islice(batches, 1):
            pending.add(submit(more))
        yield from results


def describe(batch: list[Any]) -> str:
    """The ranks of a batch of jobs, for a message ('ranks 64-95'); any other jobs by their count."""
    ranks = [job.rank for job in batch if isinstance(getattr(job, "rank", None), int)]
    if len(ranks) != len(batch):
        ranks = [job[1] for job in batch if isinstance(job, tuple) and len(job) > 1 and isinstance(job[1], int)]
    if len(ranks) != len(batch) or not ranks:
        return f"a task of {len(batch)} jobs"
    if ranks == list(range(ranks[0], ranks[0] + len(ranks))) and len(ranks) > 1:
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "rank " + ", ".join(map(str, ranks)) if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def _lost(exc: Exception, what: str, where: str) -> Exception:
    """A task's failure as the user should read it: a worker that died under it every time is a
    ScopeError naming the ranks lost; the job's own exception is raised as it is."""
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        return ClusterError(
            f"{what} lost on {where}: the Dask worker running them died on each of {RETRIES + 1} tries (out of "
            "memory, or killed); the analysis stops rather than leave them out",
            EXIT_INPUT,
        )
    if _is_comm_error(exc):
        return ClusterError(f"lost the connection to {where} while running {what} ({exc})", EXIT_INPUT)
    return exc


def _is_comm_error(exc: Exception) -> bool:
    from distributed.comm.core import CommClosedError

    return isinstance(exc, (CommClosedError, ConnectionError))
