"""One typed result from analyzer to screen: one causal tree (scope.causality.finding_tree) that the text,
Markdown and dashboard views all show alike, and typed warnings that decide "partial" by what their
producer said, never by their words."""

from __future__ import annotations

import re
from pathlib import Path

from scope.analyzers import link_rules
from scope.app.links import verdict
from scope.app.pages.overview import finding_cards

from scope.causality import describe_counts, finding_tree, link_findings
from scope.errors import EXIT_OK, EXIT_PARTIAL
from scope.finding import Finding
from scope.ingest import IngestReport
from scope.render import render
from scope.result import Analysis
from scope.store import Store
from scope.warnings import InputWarning, as_warnings, note, unread
from tests.helpers import inventory


def linked_findings() -> list[Finding]:
    """Two problems, one with three consequences, and a note: sorted as an analysis sorts them."""
    hc = Finding("host_contention", "info", "host vm is CPU-contended", ranks=[0, 1, 2, 3])
    bubble = Finding(
        "pipeline_bubble", "warning", "bubble 80%", ranks=[0, 1, 2, 3], metrics={"excess_pct": 37, "imbalance_pts": 2}
    )
    st = Finding("straggler", "warning", "rank 1 looks slow", ranks=[1], metrics={"step_ratio": 1.4})
    cb = Finding("comm_bound", "warning", "waiting for rank 1", ranks=[1], metrics={"cause": "waiting"})
    oom = Finding("oom", "critical", "rank 5 ran out of memory", ranks=[5], metrics={"time_lost_us": 10.0})
    note_ = Finding("slow_op_type", "info", "matmul is 3% slower than its peers", ranks=[2])
    linked = link_findings([bubble, st, cb, hc, oom, note_], link_rules())
    return Analysis.build(inventory(), None, linked, {}, []).findings


def card_tree(cards: list[object]) -> list[tuple[int, list[int]]]:
    """(root index, [effect indices]) as the overview lays its cards out."""
    out: list[tuple[int, list[int]]] = []
    for card in cards:
        if type(card).__name__ == "Details":  # the effects folded under the card before it
            effects = [c for c in card.children[1:]]  # type: ignore[attr-defined]
            out[-1][1].extend(int(str(c.id).split("-")[1]) for c in effects)
        else:
            out.append((int(str(card.id).split("-")[1]), []))  # type: ignore[attr-defined]
    return out


def test_text_markdown_and_dashboard_show_the_same_tree() -> None:
    findings = linked_findings()
    tree = finding_tree(findings)
    expected = [(n.finding.summary, [d.summary for d in n.descendants()]) for n in tree]
    assert expected[0][0] == "rank 5 ran out of memory"  # the analysis' order: most severe first
    contended = next(e for root, e in expected if root == "host vm is CPU-contended")
    assert sorted(contended) == ["bubble 80%", "rank 1 looks slow", "waiting for rank 1"]

    # the dashboard: one card per root, its effects folded under it, in the same order
    shown = [
        (findings[i].summary, [findings[j].summary for j in effects])
        for i, effects in card_tree(finding_cards(findings))
    ]
    assert shown == expected

    # the terminal: numbered roots, each effect indented under its root
    lines = render(Analysis(findings=findings), "text", width=200, summary=False).splitlines()
    text_tree: list[tuple[str, list[str]]] = []
    for line in lines:
        root = re.match(r"^\d+\. \w+ \w+(?: ranks [\d, ]+)?: (.*)$", line)
        effect = re.match(r"^\s+-> \w+ \w+(?: ranks [\d, ]+)?: (.*)$", line)
        if root:
            text_tree.append((root[1], []))
        elif effect:
            text_tree[-1][1].append(effect[1])
    assert text_tree == expected
    assert lines[0] == f"Findings: {describe_counts(findings)}" == "Findings: 2 problems, 3 effects, 1 note"

    # Markdown: roots as list items, effects nested under them
    md = render(Analysis(findings=findings), "markdown", summary=False)
    assert "\n## Findings (2 problems, 3 effects, 1 note)\n" in md
    md_roots = re.findall(r"^- \*\*\w+\*\* `\w+`(?: \(ranks [\d, ]+\))?: (.*)$", md, re.M)
    md_effects = re.findall(r"^  - \*\*\w+\*\* `\w+`(?: \(ranks [\d, ]+\))?: (.*)$", md, re.M)
    assert md_roots == [root for root, _ in expected]
    assert md_effects == [e for _, effects in expected for e in effects]

    # the verdict reads the same roots
    level, sentence = verdict(findings, analyzed=True)
    assert level == "critical" and sentence == "Failed: rank 5 ran out of memory"


def test_the_tree_is_the_same_after_the_analysis_is_saved_and_loaded(tmp_path: Path) -> None:
    analysis = Analysis(findings=linked_findings())
    analysis.save_to(tmp_path)
    loaded = Analysis.load(tmp_path)
    assert loaded is not None and all(isinstance(f, Finding) for f in loaded.findings)
    assert render(loaded, "text", width=200) == render(analysis, "text", width=200)
    assert card_tree(finding_cards(loaded.findings)) == card_tree(finding_cards(analysis.findings))


def test_partial_is_said_by_the_producer_not_read_from_the_words() -> None:
    alarming = InputWarning("partial_run/rank0.json", "3 events named 'truncated', 'corrupt' and 'malformed'")
    quiet = InputWarning("rank1.json", "trace ends at byte 4096", (2048, 4096), "kept 12 events", partial=True)
    assert str(alarming) == "partial_run/rank0.json: 3 events named 'truncated', 'corrupt' and 'malformed'"
    assert str(quiet) == "rank1.json: trace ends at byte 4096; kept 12 events"

    assert Analysis(warnings=[alarming]).exit_code == EXIT_OK
    assert Analysis(warnings=[quiet]).exit_code == EXIT_PARTIAL
    assert Analysis(warnings=[note("several ranks in one file: partial, truncated")]).exit_code == EXIT_OK
    assert Analysis(warnings=[unread("x.log: no")]).exit_code == EXIT_PARTIAL

    store = Store(Path("."), {})
    assert not IngestReport(store=store, warnings=[alarming]).partial
    assert IngestReport(store=store, warnings=[alarming, quiet]).partial
    assert IngestReport(store=store, errors=["rank2.json: cannot read (Permission denied)"]).partial
    # a producer that gives sentences: notes, unless it says all of them are unread inputs
    assert [w.partial for w in as_warnings(["a: truncated", quiet])] == [False, True]
    assert as_warnings(["a: fine"], partial=True)[0].partial


def test_typed_warnings_keep_the_json_contract_and_survive_a_store_round_trip(tmp_path: Path) -> None:
    quiet = InputWarning("rank1.json", "trace ends at byte 4096", (2048, 4096), "kept 12 events", partial=True)
    data = Analysis(warnings=[quiet]).to_dict()
    assert data["warnings"] == ["rank1.json: trace ends at byte 4096; kept 12 events"]  # strings, as before
    assert InputWarning.from_json(quiet.to_dict()) == quiet
    assert InputWarning.from_json("an older store's sentence") == note("an older store's sentence")


def overview_json(analysis: Analysis) -> str:
    """The dashboard overview's layout of an analysis, as JSON text."""
    import json
    from types import SimpleNamespace

    import pandas as pd
    from plotly.utils import PlotlyJSONEncoder
    from scope.app.data import Snapshot
    from scope.app.pages import overview

    snap = Snapshot(version=1, analysis=analysis, steps=pd.DataFrame(), ranks=[], run={})
    data = SimpleNamespace(snapshot=snap, message="")
    return json.dumps(overview.layout(data, {}), cls=PlotlyJSONEncoder, sort_keys=True)  # type: ignore[arg-type]


def test_a_partial_analysis_saved_and_loaded_back_keeps_its_typed_warnings(tmp_path: Path) -> None:
    """analysis.json keeps the sentences under "warnings" (the contract) and the records under
    "warning_records": read back (the dashboard, a reused analysis), the run is still partial, exit 4."""
    import json

    from scope.store import analysis_path

    cut = InputWarning("rank1.json", "trace ends at byte 4096", (2048, 4096), "kept 12 events", partial=True)
    aside = InputWarning("host0/kmsg.log", "another job's process segfaulted", consequence="ignored")
    analysis = Analysis(warnings=[cut, aside])
    analysis.save_to(tmp_path)
    loaded = Analysis.load(tmp_path)
    assert loaded is not None and loaded.warnings == [cut, aside]  # file, what, byte_range, consequence, partial
    assert loaded.partial and loaded.exit_code == EXIT_PARTIAL and "warning_records" not in loaded.tables
    saved = json.loads(analysis_path(tmp_path).read_text())
    assert saved["warnings"] == [str(cut), str(aside)]
    assert saved["warning_records"][0] == {
        "file": "rank1.json",
        "what": "trace ends at byte 4096",
        "byte_range": [2048, 4096],
        "consequence": "kept 12 events",
        "partial": True,
    }
    assert json.loads("".join(analysis.iter_json())) == analysis.to_dict()  # --json streams the same
    shown = [overview_json(a) for a in (analysis, loaded)]  # the dashboard lists them alike
    assert shown[0] == shown[1] and "Input warnings (2)" in shown[0] and str(cut) in shown[0]

    # a file written before the records were kept: its sentences load, as notes
    del saved["warning_records"]
    analysis_path(tmp_path).write_text(json.dumps(saved))
    old = Analysis.load(tmp_path)
    assert old is not None and [str(w) for w in old.warnings] == [str(cut), str(aside)]
    assert not old.partial and old.exit_code == EXIT_OK


def test_a_truncated_trace_makes_the_run_partial_and_a_renamed_healthy_one_does_not(tmp_path: Path) -> None:
    """End to end through ingest: the reader that stopped at the cut says partial; a folder and a file named
    with the old trigger words say nothing."""
    import json

    from scope.analysis import run

    events = [
        {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1, "cat": "user_annotation"},
        {"ph": "X", "name": "aten::mm", "ts": 10, "dur": 500, "pid": 1, "tid": 1, "cat": "cpu_op"},
    ]
    body = json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events})
    healthy = tmp_path / "corrupt_truncated_malformed"
    healthy.mkdir()
    (healthy / "rank0.json").write_text(body)
    assert run(healthy).exit_code == EXIT_OK

    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "rank0.json").write_text(body[: body.index('{"ph": "X", "name": "aten::mm"') + 20])
    analysis = run(cut)
    assert analysis.exit_code == EXIT_PARTIAL
    warning = next(w for w in analysis.warnings if w.partial)
    assert warning.file.endswith("rank0.json") and warning.byte_range is not None
    from scope.inputs import store_dir_for

    saved = Analysis.load(store_dir_for(cut))  # as the dashboard reads it back
    assert saved is not None and saved.exit_code == EXIT_PARTIAL and saved.warnings == analysis.warnings


def test_every_page_shows_the_analysis_run_returned_as_it_shows_the_one_saved(tmp_path: Path) -> None:
    """The dashboard keeps the Analysis its own analysis returned (no reload from disk): each page lays out
    the same from it as from the same analysis read back from the store (Analysis.load)."""
    import json
    import shutil

    from plotly.utils import PlotlyJSONEncoder
    from scope.app.data import RunData
    from scope.app.pages import PAGES

    from tests.conftest import ROOT

    run = tmp_path / "run"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    live = RunData(run)
    assert live.start_analysis()
    live.wait(300)
    assert live.snapshot.analyzed and live.snapshot.findings, live.message
    saved = RunData(run, analyze=False)
    assert saved.snapshot.analysis is not live.snapshot.analysis
    for page in PAGES:
        if page.PATH == "/compare":
            continue  # a second run's page: nothing of this analysis
        shown = [json.dumps(page.layout(d, {}), cls=PlotlyJSONEncoder, sort_keys=True) for d in (live, saved)]
        assert "This view failed" not in shown[0]
        assert shown[0] == shown[1], page.PATH
        if page.PATH == "/":
            assert '"finding-0"' in shown[0] and "straggler" in shown[0]
