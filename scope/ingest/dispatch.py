"""The per-rank entry point of ingest (the map stage): the native core when built, else the Python reader.

Its own module so job.py holds data types only and neither reader imports the other: rank.py and
native_rank.py import job.py, and this module imports them only when a job runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

from scope.ingest.job import RankJob, RankOutcome


def native_enabled() -> bool:
    """The native core is used when it was built and SCOPE_NATIVE is not 0."""
    if os.environ.get("SCOPE_NATIVE", "1") == "0":
        return False
    # Not built (no compiler at install time; setup says so): the pure-Python reader. Built but not
    # loadable (a wrong ABI, a missing libz): a broken installation, and the import error says why.
    if importlib.util.find_spec("scope.ingest._native") is None:
        return False
    importlib.import_module("scope.ingest._native")  # a compiled extension: mypy cannot see it
    return True


def ingest_rank(job: RankJob) -> RankOutcome:
    """Parse every file of one rank and write its partitions. Never raises for bad input, and a bug
    met on one rank's files costs only that rank: the other ranks' ingest goes on."""
    try:
        if native_enabled():
            from scope.ingest.native_rank import ingest_rank_native

            return ingest_rank_native(job)
        from scope.ingest.rank import ingest_rank_python

        return ingest_rank_python(job)
    except Exception as exc:  # a bug in scope, not in the input: name it and keep the other ranks
        outcome = RankOutcome(rank=job.rank, files=list(job.files))
        outcome.errors.append(
            f"rank {job.rank}: internal error while ingesting {', '.join(job.files)}: "
            f"{type(exc).__name__}: {exc} (a bug in scope; please report it with this file)"
        )
        return outcome
