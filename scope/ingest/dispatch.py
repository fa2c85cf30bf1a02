"""The per-rank entry point of ingest (the map stage): the native core when built, else the Python reader.

Its own module so job.py holds data types only and neither reader imports the other: rank.py and
native_rank.py import job.py, and this module imports them only when a job runs.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

from scope.errors import DISK_ERRNOS
from scope.ingest.job import RankJob, RankOutcome, header_summary

STORE_WRITE_FAILED = "cannot write its store partition"


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
    met on one rank's files costs only that rank: the other ranks' ingest goes on. The outcome carries
    the header's summary, not the header (RankOutcome.summary)."""
    outcome = _ingest_rank(job)
    outcome.summary, outcome.header = header_summary(outcome.header), {}
    return outcome


def _ingest_rank(job: RankJob) -> RankOutcome:
    try:
        if native_enabled():
            from scope.ingest.native_rank import ingest_rank_native

            return ingest_rank_native(job)
        from scope.ingest.rank import ingest_rank_python

        return ingest_rank_python(job)
    except OSError as exc:
        outcome = RankOutcome(rank=job.rank, files=list(job.files))
        if exc.errno in DISK_ERRNOS:  # the store's disk, not the trace and not scope
            outcome.errors.append(f"rank {job.rank}: {STORE_WRITE_FAILED} in {job.store_dir} ({exc.strerror})")
        else:
            outcome.errors.append(f"rank {job.rank}: reading {', '.join(job.files)}: {exc.strerror or exc}")
        return outcome
    except Exception as exc:  # a bug in scope, not in the input: name it and keep the other ranks
        outcome = RankOutcome(rank=job.rank, files=list(job.files))
        outcome.errors.append(
            f"rank {job.rank}: internal error while ingesting {', '.join(job.files)}: "
            f"{type(exc).__name__}: {exc} (a bug in scope; please report it with this file)"
        )
        return outcome
