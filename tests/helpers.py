"""The one way tests build what the library's entry points build: an input's inventory and an analyzer's
Context over it (scope.analysis.run lists PATH once and hands the inventory on; so do these); a log written
from lines, and the checks every goodput report must pass."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scope.analysis import Context
from scope.inputs import Inventory
from scope.store import Store

if TYPE_CHECKING:
    from scope.analyzers.goodput.report import GoodputReport


def inventory(path: Path | str | None = None) -> Inventory:
    """PATH's inventory as `scope analyze` lists it; with no PATH, an empty folder's (a test of numbers that
    reads no input file)."""
    if path is None:
        return Inventory(path=Path("."), root=Path("."), layout="folder")
    return Inventory.scan(path)


def context(path: Path | str | None = None, store: Store | None = None, **options: Any) -> Context:
    """An analyzer's Context over PATH's inventory, the store and OPTIONS."""
    return Context(inputs=inventory(path), store=store, options=dict(options))


def write_log(folder: Path, lines: list[str], name: str = "train.log") -> Path:
    """LINES written as FOLDER/NAME (the folder made when missing), one per line; the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_sane_goodput(r: GoodputReport) -> None:
    """Every share in 0-100%, the parts add up to the wall time, no figure beyond the log's span."""
    b, wall = r.acc.buckets, r.wall_s
    assert wall > 0
    assert all(v >= 0 for v in b.values()), b
    assert sum(b.values()) == pytest.approx(wall, rel=1e-9), (sum(b.values()), wall)
    assert 0 <= (r.goodput_pct or 0) <= 100
    assert b.get("redone", 0.0) <= wall


# ---- scope diagnose on one log (the diagnosis tests' shared way to run it) -------------------------------


def diagnose_failures(tmp_path: Path, log: str) -> list[Any]:
    """The failure findings (a failure kind, above info) of LOG diagnosed alone as tmp_path/job.log."""
    from scope.analyzers.diagnose import diagnose  # heavy: only the diagnosis tests pay for it

    from scope.finding import FAILURE_KINDS

    (tmp_path / "job.log").write_text(log)
    return [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


def top_failure(tmp_path: Path, log: str) -> Any:
    """The first failure finding of LOG; the test fails when there is none."""
    found = diagnose_failures(tmp_path, log)
    assert found, "no failure finding"
    return found[0]


def corpus_log(name: str) -> str:
    """A failure-corpus case's log with its `# KEY: value` header stripped (read from ../shared/data, never
    copied into the repository)."""
    from benchmarks.failure_corpus import strip_header
    from tests.conftest import shared_data

    return strip_header(shared_data("failure_corpus", f"{name}.txt").read_text())[1]


def fuzz_settings(max_examples: int) -> Any:
    """Hypothesis settings of the fuzz tests: the same examples every run (derandomized, no example database),
    no deadline on a busy 2-core machine, and function-scoped fixtures shared by a test's examples."""
    from hypothesis import HealthCheck, settings

    return settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
