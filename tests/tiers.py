"""The test tiers, and the check that keeps training jobs out of the unit tier.

The unit tier (`make test-unit`) is every test carrying none of TIER_MARKS; `make test` runs all tiers.
A test that launches a training job (torchrun, `scope run`, `scope demo`, a sample workload) must carry
`multirank`: jobs take tens of seconds on two cores and their verdicts depend on the host's load, which
is what the unit tier must not. The check is a wrapper around `subprocess.Popen` (through which
`subprocess.run`, the launcher and every CLI child pass): when the test being run carries no tier mark
and the command is a job, the test fails naming it, also when the launch happens in a session fixture
the test asked for. tests/conftest.py installs the check and imports the hooks below.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# Tests outside the unit tier: each mark is declared in pyproject.toml ([tool.pytest.ini_options] markers).
TIER_MARKS = ("multirank", "browser", "slow", "subprocess")
UNIT_TIER = " and ".join(f"not {mark}" for mark in TIER_MARKS)
# scope subcommands that start a training job
JOB_COMMANDS = frozenset({"run", "demo"})
WORKLOADS = "scope.collectors.workloads."

_running: list[pytest.Item] = []  # the test whose setup, call or teardown is under way
_launched: dict[str, list[str]] = {}  # test id -> the jobs it launched without a tier mark


def job_of(args: str | bytes | os.PathLike[str] | Sequence[Any]) -> str | None:
    """The training job a Popen command starts ('torchrun', 'scope run', a workload module), else None."""
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = os.fsdecode(args).split()  # a shell line or a bare program
    else:
        argv = [os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else str(a) for a in args]
    names = [Path(a).name for a in argv]
    if "torchrun" in names or "torch.distributed.run" in argv:
        return "torchrun"
    for name, after in itertools.pairwise(names):
        if name in ("scope", "scope.cli") and after in JOB_COMMANDS:
            return f"scope {after}"
    return next((a for a in argv if a.startswith(WORKLOADS)), None)


def in_unit_tier(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(mark) for mark in TIER_MARKS)


def install_job_check() -> None:
    """Wrap subprocess.Popen once per test session (idempotent)."""
    if getattr(subprocess.Popen.__init__, "_scope_job_check", False):
        return
    original = subprocess.Popen.__init__

    trace = os.environ.get("SCOPE_TEST_TRACE_LAUNCHES")  # a file: each launch's test and command, to mark tiers

    def checked_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        job = job_of(args)
        if trace and _running:
            with open(trace, "a") as out:
                out.write(f"{_running[-1].nodeid}\t{str(args)[:200]}\n")
        if job is not None and _running and in_unit_tier(_running[-1]):
            if threading.current_thread() is not threading.main_thread():  # the thread ends; the test would not
                _launched.setdefault(_running[-1].nodeid, []).append(job)
            pytest.fail(f"{job} launched by a test without a tier mark: mark it multirank", pytrace=False)
        original(self, args, *rest, **kwargs)

    checked_init._scope_job_check = True  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = checked_init  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A launch from another thread of the test (which the failure ends, not the test) fails the test at its
    teardown, once the fixtures are torn down."""
    result = yield
    jobs = _launched.pop(item.nodeid, None)
    if jobs:
        pytest.fail(f"launched {', '.join(sorted(set(jobs)))} without a tier mark: mark it multirank", pytrace=False)
    return result
