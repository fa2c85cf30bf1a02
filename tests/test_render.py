"""The renderers: findings first (roots, then their consequences), one compact per-rank summary, full
tables on request; text snapshots at 80 and 120 columns of a recorded analysis of sample_traces/straggler."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scope.causality import finding_tree
from scope.cli import main
from scope.finding import Finding
from scope.render import render
from scope.render.json import jsonable
from scope.render.summary import cell, number
from scope.result import Analysis

DATA = Path(__file__).resolve().parent / "data"
# A recorded `scope analyze sample_traces/straggler` (store/analysis.json): the renderer's input, fixed,
# so these snapshots change only when the rendering does. SCOPE_UPDATE_SNAPSHOTS=1 rewrites them.
RECORDED = DATA / "analysis_straggler.json"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces" / "straggler"


def recorded() -> Analysis:
    return Analysis.from_dict(json.loads(RECORDED.read_text()))


@pytest.mark.parametrize("width", [80, 120])
def test_text_report_snapshot(width: int) -> None:
    text = render(recorded(), "text", width=width)
    snapshot = DATA / "snapshots" / f"analysis_straggler_{width}.txt"
    if os.environ.get("SCOPE_UPDATE_SNAPSHOTS"):
        snapshot.write_text(text)
    assert text == snapshot.read_text()


@pytest.mark.parametrize("width", [80, 100])
def test_text_report_fits_the_terminal_and_reads_first_findings_then_ranks(width: int) -> None:
    text = render(recorded(), "text", width=width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= max(width, 100)
    assert lines[0] == "Findings: 2 problems" and lines[1].startswith("1. WARNING straggler ranks 2:")
    summary = lines.index("Per rank (profiled steps; shares of step time)")
    assert all(not line.startswith("Per rank") for line in lines[:summary])
    header = lines[summary + 1].split()
    assert header[:3] == ["rank", "host", "steps"] and "ms" in header and "%" in header and "GB/s" in header
    rows = [line.split() for line in lines[summary + 3 :] if line[:4].strip().isdigit()]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]  # integers as integers
    # the shares add to 100% and the report says what "(wait)" is part of (issue 28, item 9)
    shares = [i for i, h in enumerate(header) if h == "%"]
    names = [header[i - 1] for i in shares]
    for row in rows:
        cells = row[4 : 4 + len(shares)]
        added = sum(float(v) for n, v in zip(names, cells, strict=True) if n != "(wait)")
        assert added == pytest.approx(100, abs=0.5), row
    assert "(wait): the part of it spent waiting" in text.replace("\n", " ")
    assert rows[2][-2:] == ["straggler,", "comm_bound"]
    assert "…" not in text and "more columns" not in text  # no table is cut


def test_full_tables_only_when_asked() -> None:
    analysis = recorded()
    assert "breakdown (12 rows)" not in render(analysis, "text", width=100)
    one = render(analysis, "text", width=100, tables=["straggler_scores"])
    assert "straggler_scores (" in one and "breakdown (" not in one
    every = render(analysis, "text", width=100, tables=True)
    assert all(f"{name} (" in every for name, df in analysis.tables.items() if not df.empty)
    lines = every.splitlines()
    steps = lines[lines.index("breakdown (12 rows)") + 1].split()
    assert steps[:2] == ["rank", "step"] and "exposed_comm_wait_us" in steps  # full headers
    assert lines[lines.index("breakdown (12 rows)") + 3].split()[:2] == ["0", "2"]


def test_consequences_are_indented_under_their_root() -> None:
    root = Finding("straggler", "warning", "rank 2 is slow", ranks=[2], id="f1", explains=["f2"])
    effect = Finding("comm_bound", "warning", "the others wait", ranks=[0, 1], id="f2", caused_by="f1")
    other = Finding("oom", "critical", "rank 3 ran out of memory", ranks=[3], id="f3")
    orphan = Finding("slow_collective", "info", "cause not in this analysis", id="f4", caused_by="f9")
    tree = finding_tree([other, root, effect, orphan])
    assert [n.finding.id for n in tree] == ["f3", "f1", "f4"] and [c.finding.id for c in tree[1].children] == ["f2"]
    text = render(Analysis(findings=[other, root, effect, orphan]), "text", width=100)
    lines = text.splitlines()
    assert lines[2] == "2. WARNING straggler ranks 2: rank 2 is slow"
    assert lines[3] == "     -> WARNING comm_bound ranks 0, 1: the others wait"
    assert lines[4].startswith("3. INFO slow_collective")
    md = render(Analysis(findings=[root, effect]), "markdown")
    assert "- **WARNING** `straggler` (ranks 2): rank 2 is slow\n  - **WARNING** `comm_bound`" in md


def test_a_cycle_of_causes_hides_no_finding() -> None:
    a = Finding("hang", "critical", "a", id="a", caused_by="b")
    b = Finding("crash", "critical", "b", id="b", caused_by="a")
    tree = finding_tree([a, b])
    shown = [n.finding.id for n in tree] + [c.finding.id for n in tree for c in n.children]
    assert sorted(shown) == ["a", "b"]


def test_markdown_and_json() -> None:
    analysis = recorded()
    md = render(analysis, "markdown", tables=["fr"])
    assert md.startswith("# scope analysis: `")
    assert "## Per rank" in md and "| rank | host | steps | step ms |" in md and "## fr" in md
    text = render(analysis, "json")
    assert json.loads(text) == analysis.to_dict()
    assert text == "".join(analysis.iter_json(default=jsonable)) + "\n"  # as --json FILE writes it


def test_figures_read_as_figures() -> None:
    assert [number(v) for v in (1234.5, 56.78, 8.912, 0.1234, 3.0, None, float("nan"))] == [
        "1,234", "56.8", "8.91", "0.12", "3", "-", "-",
    ]  # fmt: skip
    assert [cell(v) for v in (551.0, 0.25, [1, 2], None, True)] == ["551", "0.25", "1,2", "-", "true"]


def test_cli_format_and_table_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    args = ["analyze", str(SAMPLE), "--store", str(store), "-q"]
    assert main([*args, "--format", "markdown", "--table", "straggler_scores"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# scope analysis") and "## straggler_scores" in out
    assert main([*args, "--format", "json"]) == 0
    assert "straggler" in {f["kind"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert main([*args, "--table", "no_such_table"]) == 2
    assert "no table no_such_table" in capsys.readouterr().err
