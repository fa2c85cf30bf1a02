"""scope.engine: per-rank work runs with a bounded number of jobs in flight, whatever the rank count."""

from __future__ import annotations

import concurrent.futures as cf
import operator
import os
from typing import Any

import pytest

from scope import engine


class CountingPool(cf.ThreadPoolExecutor):
    """Counts the futures submitted and not yet handed to the caller."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def test_jobs_are_submitted_a_few_per_worker_ahead_not_all_at_once() -> None:
    workers, jobs = 2, list(range(500))
    with CountingPool(workers) as pool:
        collected, most_in_flight = [], 0
        for result in engine._windowed(pool, operator.neg, iter(jobs), workers):
            most_in_flight = max(most_in_flight, pool.submitted - len(collected))
            collected.append(result)
    assert sorted(collected) == sorted(-j for j in range(500))
    # before: every job submitted at once (500 in flight); now a window per worker, refilled as jobs
    # finish, before their results reach the caller (so at most twice the window)
    assert most_in_flight <= 2 * workers * engine.AHEAD_PER_WORKER, most_in_flight


def test_worker_processes_return_every_result_and_raise_a_jobs_error() -> None:
    assert sorted(engine.map_unordered(abs, range(-40, 0), workers=2)) == list(range(1, 41))
    with pytest.raises(TypeError):
        list(engine.map_unordered(abs, [-1, "not a number", -3], workers=2))


def test_jobs_given_as_a_count_and_an_iterator_are_made_as_they_are_submitted() -> None:
    made: list[int] = []

    def jobs() -> Any:
        for j in range(100):
            made.append(j)
            yield j

    results = engine.map_unordered(operator.neg, jobs(), workers=2, threads=True, count=100)
    first = next(results)
    assert len(made) <= 2 * 2 * engine.AHEAD_PER_WORKER  # not all 100 made before the first result
    assert sorted([first, *results]) == sorted(-j for j in range(100))


def test_threads_return_every_result() -> None:
    assert sorted(engine.map_unordered(str, range(300), workers=2, threads=True)) == sorted(map(str, range(300)))


def test_giving_back_memory_is_safe_to_call_any_time() -> None:
    engine.give_back_memory()
    engine.give_back_memory()


def test_the_allocator_scope_picks_is_not_passed_to_the_users_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """`scope` sets Arrow's pool for itself and its workers; the job `scope run` launches inherits the
    environment, and must get the pool it would have had without scope (or the one the user set)."""
    from scope.engine import ARROW_POOL_VARIABLE, leave_jobs_their_allocator, use_system_allocator

    monkeypatch.delenv(ARROW_POOL_VARIABLE, raising=False)
    use_system_allocator()
    assert os.environ[ARROW_POOL_VARIABLE] == "system"
    leave_jobs_their_allocator()
    assert ARROW_POOL_VARIABLE not in os.environ
    monkeypatch.setenv(ARROW_POOL_VARIABLE, "jemalloc")  # the user's choice stays, for scope and the job
    use_system_allocator()
    leave_jobs_their_allocator()
    assert os.environ[ARROW_POOL_VARIABLE] == "jemalloc"
