"""Words a user speaks (issue 41, item 17): what scope prints for people (text, Markdown, the dashboard)
names things in words, and counts agree with their nouns; the JSON keeps its stable keys.

The scan reads the text and Markdown reports of every recorded sample run (sample_traces/) and the
diagnosis of the hung one, looking where a name is a header or a label: table header rows, a `name:`
label, a count followed by a name ("4 child_exit"); and for counts whose noun disagrees ("(1 logs)").
Finding kinds (`comm_bound`) are names a user filters on (--json, the dashboard's links) and stay."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dash import html
from scope.analyzers import finding_kinds
from scope.app.data import RunData
from scope.app.pages import timeline
from scope.app.pages.common import frame_table, metric_items
from scope.app.pages.compare import _sources_words

from scope.analysis import run as analyze
from scope.render import render
from scope.render.diagnosis import render_diagnosis
from scope.result import Analysis
from tests.conftest import ROOT

SAMPLES = ("straggler", "healthy", "pipeline", "hang")
SNAKE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
# 'last_enqueued: 5', not a path, a code span or a qualified op name ('autograd::engine::evaluate_function: ...')
LABEL = re.compile(rf"(?<![\w/.`:-])({SNAKE}):(?!\S)")
COUNTED = re.compile(rf"(?<![\w.])\d+ ({SNAKE})\b")  # '4 child_exit'
# A count of one with a plural noun: '(1 logs)', '1 hosts', '1 more evidence lines'.
ONE_PLURAL = re.compile(
    r"(?<![\d.,])\b1 (?:more )?(?:FR |evidence )?"
    r"(logs|hosts|ranks|dumps|steps|lines|rows|findings|attempts|restarts|collectives|problems|effects|notes)\b"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("samples")
    out = {}
    for name in SAMPLES:
        out[name] = root / name
        shutil.copytree(ROOT / "sample_traces" / name, out[name], ignore=shutil.ignore_patterns("store"))
    return out


@pytest.fixture(scope="module")
def analyses(runs: dict[str, Path]) -> dict[str, Analysis]:
    return {name: analyze(path) for name, path in runs.items()}


@pytest.fixture(scope="module")
def renders(runs: dict[str, Path], analyses: dict[str, Analysis]) -> dict[str, str]:
    from scope.analyzers.diagnose import diagnose

    out = {}
    for name, analysis in analyses.items():
        out[f"{name}.txt"] = render(analysis, "text", width=100)
        out[f"{name}.md"] = render(analysis, "markdown")
    out["hang.diagnose.txt"] = render_diagnosis(diagnose(runs["hang"]), width=100)
    return out


def header_rows(text: str) -> list[str]:
    """The header row of each text grid (the line above a row of dashes) and Markdown table (above |---|)."""
    lines = text.splitlines()
    return [
        lines[i - 1]
        for i, line in enumerate(lines)
        if i and (re.fullmatch(r"-+(  -+)*", line) or re.fullmatch(r"\|(---\|)+", line))
    ]


def words_problems(text: str) -> list[str]:
    kinds = finding_kinds()
    found = [f"header: {h}" for h in header_rows(text) if re.search(rf"\b{SNAKE}\b", h)]
    found += [f"label: {m}" for m in LABEL.findall(text) if m not in kinds]
    found += [f"counted name: {m}" for m in COUNTED.findall(text) if m not in kinds]
    found += [f"one, plural: 1 {m}" for m in ONE_PLURAL.findall(text)]
    return found


def test_the_scan_sees_what_it_looks_for() -> None:
    """The scan itself: each kind of slip it must catch, caught; words and finding kinds let through."""
    bad = "pg  last_enqueued\n--  -------------\nbudget_from: x\ncascade: 4 child_exit\n(1 logs, 1 hosts)\n"
    assert len(words_problems(bad)) == 5, words_problems(bad)
    good = "pg  last enqueued\n--  -------------\n1. WARNING comm_bound ranks 2: 2 comm_bound, 1 log, 1 host\n"
    assert words_problems(good) == []


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
def test_human_reports_of_the_samples_speak_words(renders: dict[str, str]) -> None:
    problems = {name: words_problems(text) for name, text in renders.items()}
    assert {name: p for name, p in problems.items() if p} == {}
    assert "4 FR dumps, 4 ranks, 1 host," in renders["hang.diagnose.txt"]  # the diagnose header read


@pytest.mark.slow  # builds every dashboard page of five analyses: seconds (the unit tier stays under 120 s)
def test_dashboard_tables_name_their_columns_in_words(analyses: dict[str, Analysis]) -> None:
    """The failure page's Flight Recorder table had `last_enqueued`, `n_ranks` and the like as headers."""
    from scope.analyzers.diagnose import diagnose

    fr = diagnose(ROOT / "sample_traces" / "hang").table("fr")
    assert fr is not None and "last_enqueued" in fr.columns  # the JSON keeps its keys
    hosts = pd.DataFrame({"host": ["vm"], "n_ranks": [4], "first_anomaly": ["x"]})
    for table in (fr, hosts):
        heads = column_heads(frame_table(table))
        assert heads and not [h for h in heads if "_" in h], heads
    assert "number of ranks" in column_heads(frame_table(hosts))


def column_heads(component: Any) -> list[str]:
    """The texts of a table's header cells (html.Th), wherever they sit in the component."""
    if isinstance(component, html.Th):
        return [str(component.children)]
    children = getattr(component, "children", None)
    children = children if isinstance(children, list | tuple) else [] if children is None else [children]
    return [h for child in children for h in column_heads(child)]


def test_a_share_and_its_norm_read_alike_and_budget_sources_are_words() -> None:
    assert metric_items({"share": 0.238, "norm": 0.05}) == ["share: 23.8%", "norm: 5.00%"]
    assert _sources_words(["budget", "budget"]) == "the step budget (every bucket of the step), both runs"
    assert _sources_words(["budget", "steps"]).startswith("A: the step budget") and "B: step times only" in (
        _sources_words(["budget", "steps"])
    )


def test_the_pipeline_note_shows_only_where_stages_could_be(
    runs: dict[str, Path], analyses: dict[str, Analysis]
) -> None:
    """On a data-parallel run there are no stages to miss; on a run whose ranks send point to point and no
    stages were found, the note says why the pipeline view is off."""
    ddp = RunData(runs["straggler"], analyze=False).snapshot
    assert timeline.pipeline_note(ddp, pipeline=False) == []
    pipe = RunData(runs["pipeline"], analyze=False).snapshot
    assert timeline.pipeline_note(pipe, pipeline=True) == []
    (note,) = timeline.pipeline_note(pipe, pipeline=False)  # its sends seen, its stages not found
    assert "No pipeline stages" in str(note.children)


def test_counter_names_are_words_on_the_counters_page(tmp_path: Path) -> None:
    """The counters page offered `cpu_busy_pct`-style names; it offers words (and the unit), keyed by the name."""
    from scope.app.server import create_app

    from benchmarks.dashboard import DashClient
    from benchmarks.dashboard_synth import synthesize

    store = synthesize(tmp_path, ranks=4, steps=3)
    client = DashClient(create_app(store, refresh_s=0, analyze=False))
    outputs = ["counters-table.options", "counters-table.value", "counters-column.options", "counters-column.value"]
    answer, _ = client.call(
        [*outputs, "counters-graph.figure"],
        {"counters-host.value": "node000", "counters-table.value": None, "counters-column.value": None},
    )
    options = answer["response"]["counters-column"]["options"]
    labels = {o["value"]: o["label"] for o in options}
    assert labels["util_gpu_pct"] == "util gpu (%)" and not [v for v in labels.values() if "_" in v], labels
