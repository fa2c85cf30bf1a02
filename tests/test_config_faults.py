"""scope's config files under attack (issue 41, item 11; scope/config.py, scope/regex_safety.py): another
tool's broken pyproject.toml in the current folder, a user signature that backtracks exponentially, and a
config of 40,000 rows."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL

LOG = "[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
ROW = """
[[{table}signatures]]
id = "{id}"
patterns = ['{pattern}']
kind = "hardware_fault"
cause = "hardware"
meaning = "The site's check failed."
remedy = "Drain the node."
"""
# black's own section with a key twice: black reads the file its own way; TOML says it is invalid
BLACK = "[tool.black]\nline-length = 100\nline-length = 120\n"


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    run = tmp_path / "logs"
    run.mkdir()
    (run / "rank0.log").write_text(LOG + "SITECHECK disk 7 failed\n")
    return run


def _diagnose(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    out = path.parent / "diagnosis.json"
    code = main(["diagnose", str(path), "--json", str(out)])
    err = capsys.readouterr().err
    return code, (json.loads(out.read_text()) if out.is_file() else {}), err


def test_another_tools_broken_pyproject_in_the_current_folder_is_a_note(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = tmp_path / "project"
    here.mkdir()
    (here / "pyproject.toml").write_text(BLACK)
    monkeypatch.chdir(here)
    code, data, err = _diagnose(logs, capsys)
    assert code == EXIT_OK, err  # was exit 3: "cannot read the config file"
    assert data["findings"][0]["kind"] == "oom"
    assert any("pyproject.toml: not valid TOML" in w and "no [tool.scope]" in w for w in data["warnings"])
    # with scope's own table in the broken file: the table is read, the rest left alone
    (here / "pyproject.toml").write_text(
        BLACK + ROW.format(table="tool.scope.", id="site_disk", pattern=r"SITECHECK disk \d+ failed")
    )
    code, data, err = _diagnose(logs, capsys)
    assert code == EXIT_OK, err
    assert "site_disk" in json.dumps(data["findings"]), [f["kind"] for f in data["findings"]]
    assert any("only its [tool.scope] table was read" in w for w in data["warnings"])


def test_a_broken_tool_scope_table_is_an_error_naming_the_file(
    logs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = tmp_path / "project"
    here.mkdir()
    (here / "pyproject.toml").write_text(BLACK + "[tool.scope]\ncomm_kernels = [\n")
    monkeypatch.chdir(here)
    code, _, err = _diagnose(logs, capsys)
    assert code == EXIT_INPUT and f"{here / 'pyproject.toml'}: its [tool.scope] table is not valid TOML" in err


@pytest.mark.subprocess
def test_a_backtracking_user_signature_is_refused_in_seconds(logs: Path) -> None:
    """`SITECHECK (a+)+$` against one 45-character line ran for minutes (doubling with each character):
    refused when the row is read, with the reason and the fix, naming the file and the row."""
    (logs / "rank0.log").write_text(LOG + "SITECHECK " + "a" * 45 + "!\n")
    (logs / "scope.toml").write_text(ROW.format(table="", id="site_check", pattern="SITECHECK (a+)+$"))
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "scope", "diagnose", str(logs)], capture_output=True, text=True, timeout=120
    )
    assert time.monotonic() - t0 < 60
    assert proc.returncode == EXIT_INPUT, proc.stderr
    assert f"{logs / 'scope.toml'}: signature #1 (site_check)" in proc.stderr
    assert "exponential time" in proc.stderr and "(?>" in proc.stderr


@pytest.mark.parametrize(
    "pattern, risky",
    [
        ("SITECHECK (a+)+$", True),
        (r"(\w+\s?)*x", True),
        ("(a|aa)+", True),
        ("(x+x+)+y", True),
        ("(.*a){12}", True),  # bounded, but n^12 splits
        (r"(\d+\.){3}\d+", False),
        ("(?>a+)+$", False),  # atomic: the fix the message suggests
        (r"[a-z]+(\.[a-z]+)*", False),  # a separator every pass must match
        (r"(\d+,)*\d+", False),
        ("(foo|bar)+", False),
        (r"HEALTHCHECK FAILED: gpu (?P<gpu>\d+)", False),
    ],
)
def test_backtracking_shapes(pattern: str, risky: bool) -> None:
    from scope.regex_safety import backtracking_risk

    assert bool(backtracking_risk(pattern)) is risky


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_twenty_thousand_user_rows_are_read_in_seconds(logs: Path) -> None:
    """A 40,000-row scope.toml took 100 s: each row's needle was tested against every other (quadratic).
    20,000 rows, read and made into needles, in CPU time (a busy host's wall clock says nothing)."""
    from scope.analyzers.diagnose.knowledge.user_signatures import find_user_signatures
    from scope.analyzers.diagnose.readers import scan, signature_scan

    rows = "".join(
        ROW.format(table="", id=f"site_{i}", pattern=rf"SITECHECK{i} FAILED: gpu (\d+)") for i in range(20_000)
    )
    (logs / "scope.toml").write_text(rows)
    t0 = time.process_time()
    user = find_user_signatures(logs)
    with signature_scan.user_rows(user):
        needles = scan._extra_needles()
    spent = time.process_time() - t0
    assert len(user) == 20_000 and len(needles) >= 20_000
    assert spent < 10, f"{spent:.1f} s of CPU for 20,000 rows (3 s here; 22 s when pairwise)"


def test_analyze_with_a_broken_pyproject_beside_the_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from tests.conftest import ROOT

    run = tmp_path / "run"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(BLACK)
    out = tmp_path / "analysis.json"
    code = main(["analyze", str(run), "-q", "--json", str(out)])
    assert code in (EXIT_OK, EXIT_PARTIAL), capsys.readouterr().err
    data = json.loads(out.read_text())
    assert any(f["kind"] == "straggler" for f in data["findings"])
    assert any("pyproject.toml: not valid TOML" in w for w in data["warnings"])
