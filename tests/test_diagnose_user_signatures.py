"""User signature rows (analyzers/diagnose/knowledge/user_signatures.py): a site's own messages in scope.toml or
[tool.scope], tried before scope's rows, listed with their origin by `scope diagnose --signatures`, and a
bad row is an error naming the file and the row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge.signatures import SIGNATURES

from scope.errors import ScopeError
from scope.finding import FAILURE_KINDS

SITE_ROWS = r"""
[[signatures]]
id = "site_gpu_healthcheck"
patterns = ['HEALTHCHECK FAILED: gpu (?P<gpu>\d+) on (?P<node>\S+)']
kind = "hardware_fault"
cause = "hardware"
meaning = "The site's GPU health check failed on the node before the job's own error."
remedy = "Drain the node (scontrol update nodename=NODE state=drain reason=healthcheck) and open a ticket."
reference = "https://wiki.example.org/gpu-healthcheck"

[[signatures]]
id = "site_launcher_lost_worker"
patterns = ['jobrunner: worker \d+ lost heartbeat']
kind = "missing_rank"
cause = "stall"
meaning = "The in-house launcher lost a worker."
remedy = "Check the worker's node (jobrunner status)."
severity = "warning"
"""
LOG = (
    "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error\n"
    "prolog: HEALTHCHECK FAILED: gpu 3 on node17 (ECC pending)\n"
)


def _top(folder: Path):  # type: ignore[no-untyped-def]
    found = [f for f in diagnose(folder).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    return found[0] if found else None


def test_a_site_row_in_scope_toml_names_the_cause_before_scope_rows(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(LOG)
    assert _top(tmp_path).kind == "nccl_error"  # without the site's row: NCCL's unhandled CUDA error
    (tmp_path / "scope.toml").write_text(SITE_ROWS)
    top = _top(tmp_path)
    assert top.kind == "hardware_fault" and "Drain the node" in top.suggestion
    # the rows are the run's only: a folder without the file is back to scope's own
    other = tmp_path / "other"
    other.mkdir()
    (other / "job.log").write_text(LOG)
    assert _top(other).kind == "nccl_error"


def test_rows_in_tool_scope_of_pyproject_work_too(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text("jobrunner: worker 7 lost heartbeat after 120 s\n")
    body = SITE_ROWS.replace("[[signatures]]", "[[tool.scope.signatures]]")
    (tmp_path / "pyproject.toml").write_text(body)
    top = _top(tmp_path)
    assert top.kind == "missing_rank" and top.severity == "warning"


@pytest.mark.subprocess
def test_signatures_listing_names_the_origin(tmp_path: Path) -> None:
    (tmp_path / "scope.toml").write_text(SITE_ROWS)
    cmd = [sys.executable, "-m", "scope", "diagnose", "--signatures"]
    out = subprocess.run([*cmd, "--json", "-", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["signatures"]
    assert [r["id"] for r in rows[:2]] == ["site_gpu_healthcheck", "site_launcher_lost_worker"]
    assert rows[0]["origin"] == str(tmp_path / "scope.toml") and rows[2]["origin"] == "scope"
    assert len(rows) == len(SIGNATURES) + 2
    text = " ".join(subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True, timeout=120).stdout.split())
    assert f"from {tmp_path / 'scope.toml'}" in text and "and 2 of the user's" in text


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (('kind = "hardware_fault"', 'kind = "gpu_broke"'), "kind 'gpu_broke'"),
        (("patterns = ['HEALTHCHECK", "patterns = ['(HEALTHCHECK"), "not a valid regular expression"),
        (('remedy = "Drain', 'fix = "Drain'), "missing remedy"),
    ],
)
def test_a_bad_row_is_an_error_naming_the_file_and_row(tmp_path: Path, change: tuple[str, str], words: str) -> None:
    (tmp_path / "job.log").write_text(LOG)
    (tmp_path / "scope.toml").write_text(SITE_ROWS.replace(*change, 1))
    with pytest.raises(ScopeError) as err:
        diagnose(tmp_path)
    assert "scope.toml: signature #1 (site_gpu_healthcheck)" in str(err.value) and words in str(err.value)
