"""The unit tier keeps training jobs out (tests/tiers.py): an unmarked test that launches one fails."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.tiers import TIER_MARKS, UNIT_TIER, job_of


def test_jobs_are_told_from_other_commands() -> None:
    python = sys.executable
    assert job_of([python, "-m", "torch.distributed.run", "--nproc-per-node", "4", "train.py"]) == "torchrun"
    assert job_of(["/usr/bin/torchrun", "--standalone", "train.py"]) == "torchrun"
    assert job_of("torchrun --standalone train.py") == "torchrun"
    assert job_of([python, "-m", "scope", "run", "--out", "RUN", "--", "train.py"]) == "scope run"
    assert job_of(["/venv/bin/scope", "demo", "--no-serve"]) == "scope demo"
    assert job_of([python, "-m", "scope.collectors.workloads.ddp", "--steps", "8"]) == "scope.collectors.workloads.ddp"
    assert job_of([python, "-m", "scope", "diagnose", "RUN"]) is None
    assert job_of(["git", "clone", "x"]) is None
    assert job_of([python, "-c", "import scope"]) is None


def test_an_unmarked_test_launching_torchrun_is_stopped_before_it_starts() -> None:
    with pytest.raises(pytest.fail.Exception, match="mark it multirank"):
        subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "-m", "nothing"])


def test_the_makefile_and_pyproject_know_every_tier_mark() -> None:
    assert UNIT_TIER == "not multirank and not browser and not slow and not subprocess"
    makefile = (ROOT / "Makefile").read_text()
    assert f"TIER_MARKS = {' or '.join(TIER_MARKS)}\n" in makefile
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert all(f'"{mark}: ' in pyproject for mark in TIER_MARKS)
