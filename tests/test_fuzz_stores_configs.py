"""Fuzz of what scope reads back besides the job's files (issue 41): a saved analysis and its tables (a store
written by another version, edited by hand, cut by a crash), config files and the user's signature rows
and patterns. Values are hostile: wrong types, NaN, integers past Python's 4,300-digit limit, deep
nesting, damaged bytes. The property: a result or a ScopeError naming the file, never another exception
and never a hang (derandomized and small: a few seconds; tests/test_fuzz_readers.py fuzzes the rest)."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scope.errors import ScopeError
from scope.result import Analysis
from tests.conftest import ROOT
from tests.helpers import fuzz_settings, inventory

FAST = fuzz_settings(30)
HUGE = "9" * 5000  # written as JSON text: Python will not turn it back into a str past 4,300 digits
HOSTILE_JSON = st.sampled_from(
    ["null", "true", "-1", "1e999", "NaN", "-Infinity", HUGE, '"x"', '""', "[]", "{}", "[[[[[]]]]]", '{"a": {}}']
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from scope.cli import main

    run = tmp_path_factory.mktemp("fuzz_store") / "straggler"
    shutil.copytree(ROOT / "sample_traces" / "straggler", run, ignore=shutil.ignore_patterns("store"))
    assert main(["analyze", str(run), "-q"]) == 0
    return run / "store"


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (dict keys and list indices), the first rows of each list only."""
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2]):
            out += _paths(v, (*here, i))
    return out


def _replace(value: Any, where: tuple[Any, ...], marker: str) -> Any:
    if not where:
        return marker
    value[where[0]] = _replace(value[where[0]], where[1:], marker)
    return value


def _read_back(store: Path) -> None:
    """Everything a reader of a saved analysis does with it: load, render, compare."""
    from scope.compare import compare_paths
    from scope.render import render

    try:
        analysis = Analysis.load(store)
    except ScopeError as exc:
        assert str(store) in exc.message
        return
    assert analysis is not None
    for fmt in ("text", "markdown", "json"):
        render(analysis, fmt)
    try:
        compare_paths(store, store).to_dict()
    except ScopeError as exc:
        assert "run A" in exc.message or "run B" in exc.message


@pytest.mark.slow  # seconds of analysis on real data (the unit tier stays under 120 s)
@settings(FAST)
@given(st.data(), HOSTILE_JSON)
def test_a_saved_analysis_with_hostile_values_is_read_or_named(store: Path, data: st.DataObject, value: str) -> None:
    saved = store / "analysis.json"
    original = saved.read_bytes()
    doc = json.loads(original)
    where = data.draw(st.sampled_from(_paths(doc)[1:]))
    marker = "\0HOSTILE\0"
    text = json.dumps(_replace(doc, where, marker)).replace(json.dumps(marker), value)
    try:
        saved.write_text(text)
        _read_back(store)
    finally:
        saved.write_bytes(original)


@settings(FAST, max_examples=15)
@given(st.data())
def test_a_damaged_table_is_named(store: Path, data: st.DataObject) -> None:
    tables = sorted((store / "tables").glob("*.parquet"))
    table = data.draw(st.sampled_from(tables))
    original = table.read_bytes()
    cut = data.draw(st.integers(0, len(original) - 1))
    try:
        table.write_bytes(original[:cut] + data.draw(st.binary(max_size=64)))
        _read_back(store)
    finally:
        table.write_bytes(original)


ROW_FIELDS = ("id", "patterns", "kind", "cause", "meaning", "remedy", "needles", "ranks_re", "severity")
LONG_TEXT = '"' + "a" * 5000 + '"'
TOML_VALUES = st.sampled_from(
    ["1", HUGE, "nan", "inf", "true", '""', '"x"', "[]", "[1, 2]", '["(a+)+$"]', '["["]', "{}", "{a = 1}", LONG_TEXT]
)
GOOD_ROW = {
    "id": '"site_x"',
    "patterns": '["SITE CHECK FAILED (\\\\d+)"]',
    "kind": '"hardware_fault"',
    "cause": '"hardware"',
    "meaning": '"m"',
    "remedy": '"r"',
}


@settings(FAST, max_examples=40)
@given(
    st.dictionaries(st.sampled_from(ROW_FIELDS), TOML_VALUES, max_size=3),
    st.sampled_from(["", "tool.scope."]),
    st.sampled_from(["", 'comm_kernels = ["(a|aa)+"]', "comm_kernels = 7", 'comm_kernels = ["x=nope"]']),
)
@example({"patterns": '["SITECHECK (a+)+$"]'}, "", "")
def test_config_rows_with_hostile_values_are_read_or_named(
    tmp_path: Path, changes: dict[str, str], table: str, kernels: str
) -> None:
    from scope.analyzers.diagnose.knowledge.user_signatures import find_user_signatures

    from scope.ingest.comm_rules import load_rules

    row = {**GOOD_ROW, **changes}
    name = "pyproject.toml" if table else "scope.toml"
    header = "[tool.scope]\n" if table else ""
    body = f"{header}{kernels}\n[[{table}signatures]]\n" + "".join(f"{k} = {v}\n" for k, v in row.items())
    for old in ("scope.toml", "pyproject.toml"):  # the examples share tmp_path
        (tmp_path / old).unlink(missing_ok=True)
    config = tmp_path / name
    config.write_text(body)
    for read in (find_user_signatures, load_rules):
        try:
            read(inventory(tmp_path))
        except ScopeError as exc:
            assert str(config) in exc.message, exc.message


PATTERN_CHARS = "a()+*?|{}[].^$,1\\:"


@pytest.mark.filterwarnings("ignore::FutureWarning")  # re's notes on '[[' and '--' in generated classes
@settings(FAST, max_examples=300)
@given(st.text(alphabet=PATTERN_CHARS, min_size=1, max_size=12))
@example("(a+)+$")
@example("(a|aa)+$")
@example("(a*)*$")
@example("(a|a?)+$")
@example("((a+)b?)+$")
def test_an_accepted_user_pattern_never_backtracks_for_long(pattern: str) -> None:
    """What check_pattern lets through runs in bounded time on the adversary's lines (a run of one
    character, then one that cannot match): 24 characters, where an exponential pattern takes seconds."""
    from scope.regex_safety import check_pattern

    if check_pattern(pattern):
        return  # refused with a reason: the row is an error naming the file
    compiled = re.compile(pattern)
    for line in ("a" * 24 + "!", "a:" * 12 + "!", "aab" * 8 + "!"):
        t0 = time.process_time()
        compiled.search(line)
        assert time.process_time() - t0 < 0.5, (pattern, line)
