"""The one error type the CLI turns into a message and an exit code."""

from __future__ import annotations

import errno

# Exit codes, documented in the README ("Exit codes").
EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug in scope: the traceback is printed
EXIT_USAGE = 2  # bad command line
EXIT_INPUT = 3  # the input cannot be used at all (missing path, no readable trace)
EXIT_PARTIAL = 4  # finished, but some inputs were skipped or salvaged (warnings name them)
EXIT_JOB_FAILED = 5  # `scope run` / `scope demo`: the training job itself failed

# A write the disk refused (full, over quota, read-only): the disk's problem, never "a bug in scope".
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
EXIT_SLOWER = 6  # `scope compare --fail-if-slower`: run B is slower than run A beyond the threshold


class ScopeError(Exception):
    """An error a user can act on: the message names the file and what is wrong."""

    def __init__(self, message: str, exit_code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class MixedJobsError(ScopeError):
    """A folder holding the traces or timelines of several jobs: analyzed as one run they would mix, so
    the analysis stops and names each job's files (one rule for Kineto traces and operation timelines)."""

    stops_analysis = True  # not "no traces here": the other analyzers must not run on it either


class NoTraces(ScopeError):
    """PATH holds no trace file at all. Not an input error when it holds logs or Flight Recorder dumps: a
    post-mortem folder is analyzed by its diagnosis alone (scope.analysis.run)."""


class TraceError(ScopeError):
    """A trace file that cannot be read; `path` names it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}", EXIT_INPUT)
        self.path = path
        self.problem = problem
