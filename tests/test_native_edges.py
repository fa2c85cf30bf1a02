"""The native read at its edges: a read window ending at every byte, strings around the 16-byte search, number forms.

A window's end must never change what is read: every test here reads the same bytes with fills of one byte
upwards (_native.set_fill_bytes) and against one whole-file fill, or against the pure-Python path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from scope.ingest.dispatch import native_enabled

if not native_enabled():
    if os.environ.get("SCOPE_REQUIRE_NATIVE") == "1":
        pytest.fail("the native ingest core (scope.ingest._native) is not built", pytrace=False)
    pytest.skip("the native ingest core is not built (no C compiler?)", allow_module_level=True)

from scope.ingest import _native  # after the skip: the module may not be built
from tests.test_native_ingest import _assert_same_store, _write

# Events that repair NaN / Infinity / -Infinity (ts, dur and args), an empty value, escapes and multibyte
# UTF-8: stretches a window's end must be able to cut anywhere (the review's cut-position case).
REPAIRED = [
    '{"ph": "X", "name": "nan-ts", "cat": "c", "pid": 1, "tid": 1, "ts": NaN, "dur": Infinity}',
    '{"ph": "X", "name": "neg", "cat": "c", "pid": 1, "tid": 1, "ts": -Infinity, "dur": 1}',
    '{"ph": "X", "name": "k\\u00e9\\"x\\\\y \u00f1\u6f22\u5b57\U0001f600 a\\n", "cat": "c", "pid": 12, "tid": -34, '
    '"ts": 1234.5675, "dur": 17, "args": {"a": NaN, "b": Infinity, "c": -Infinity, "d": , "e": true, "f": null, '
    '"g": [1, 2, {"h": "x"}], "Input Dims": [[1]]}}',
]
FILLER = '{"ph": "X", "name": "f", "cat": "c", "pid": 1, "tid": 1, "ts": 1, "dur": -1}'


def _read(path: Path, fill: int = 0) -> tuple[dict, dict]:
    """A read's counters and its rows, with each fill adding `fill` bytes (0: the default)."""
    was = _native.set_fill_bytes(fill)
    try:
        table = _native.RankTable()
        found = table.read(str(path), 0)
    finally:
        _native.set_fill_bytes(was)
    pairs = len(table.pairs())
    table.finish(bytes(pairs), bytes(pairs))
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "events.parquet")
        table.write_events(out, 0, ["kernel"], bytes(pairs))
        rows = pq.read_table(out).to_pydict()
    return {k: v for k, v in found.items() if k not in ("head", "tail")}, rows


@pytest.mark.parametrize("name", ["rank0.json", "rank0.json.gz"])
def test_a_window_ending_at_every_byte_reads_like_one_fill(tmp_path: Path, name: str) -> None:
    body = '{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join([FILLER, *REPAIRED, FILLER]) + "\n]}\n"
    path = _write(tmp_path, body, name) / name
    whole, whole_rows = _read(path)
    assert (whole["events_skipped"], whole["events_repaired"]) == (0, 3)
    assert sorted(whole_rows["name"])[:3] == ["f", "f", 'k\u00e9"x\\y \u00f1\u6f22\u5b57\U0001f600 a\n']
    for fill in (1, 2, 3, 5, 8, 13, 64):  # fill 1: every event is cut at each of its bytes in turn
        found, rows = _read(path, fill)
        assert found == whole, f"fill {fill}"
        assert rows == whole_rows, f"fill {fill}"


# What ends or interrupts a plain run of string body, put at the 16-byte search's edges (the body's bytes
# 14-17 and 30-32): the search must stop on it in the block or in the byte loop after the last block.
STRING_SPECIALS = {
    "quote": '\\"',
    "backslash": "\\\\",
    "escape": "\\u00e9",
    "4-byte UTF-8": "\U0001f600",
    "2-byte UTF-8": "\u00f1",
    "control byte": "\x01",  # raw in a string: not JSON, the event is skipped by both paths
}


def _name_event(i: int, name_body: str) -> str:
    return f'{{"ph": "X", "cat": "cpu_op", "name": "{name_body}", "pid": 1, "tid": 2, "ts": {1000 + i}, "dur": 1}}'


def _events_trace(events: list[str]) -> str:
    step = '{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "pid": 1, "tid": 2, "ts": 999, "dur": 1000000}'
    return (
        '{"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 1}, "traceEvents": [\n'
        + ",\n".join([step, *events])
        + '\n], "baseTimeNanoseconds": 1700000000000000000}\n'
    )


def test_strings_with_specials_at_the_16_byte_edges_read_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = []
    for special in STRING_SPECIALS.values():
        for at in (0, 14, 15, 16, 17, 30, 31, 32, 33):
            events.append(_name_event(len(events), "a" * at + special + "b" * (40 - at)))
    events.append(_name_event(len(events), "c" * 47))  # no special: ends in the byte loop after two blocks
    src = _write(tmp_path / "src", _events_trace(events))
    _assert_same_store(src, tmp_path, monkeypatch)
    names = set(pq.read_table(tmp_path / "nat/events/rank-00000.parquet").column("name").to_pylist())
    assert "a" * 31 + "\u00e9" + "b" * 9 in names and "a" * 16 + '"' + "b" * 24 in names
    whole, whole_rows = _read(src / "rank0.json")
    assert whole["events_skipped"] == 9  # the raw control byte's events
    for fill in (1, 7, 16):
        assert _read(src / "rank0.json", fill) == (whole, whole_rows), f"fill {fill}"


# Number forms of ts, dur, pid and tid: the one-pass path (plain_number) takes the plain ones and must read
# each as the general path does (the only path before it); it hands every other form to the general path.
NUMBER_TABLE = """
0 -0 0.0 -0.0 1 -1 1. 1.5 -1.5 1234.567 1234.5675 1234.5674999 1234.56749999999999999999 -1234.5675
1e3 1E3 1e-3 1.5e2 -1.5e+2 1e308 0e0 0.0005 0.0004999 -0.0005 0.00049 1.9995 -1.9995 0.9995 99.99951
9007199254740993 9007199254740993.5 999999999999999 9999999999999999 999999999999999.9999 100000000000000
1727000000000000 1727000000000000.123 172700000000000.123 17270000000000.1234567890123 172700000000000.9999
999999999999999999 1000000000000000000 9223372036854775807 -9223372036854775808 9223372036854775808
123456789012345678 1234567890123456789 12345678901234567890 NaN Infinity -Infinity null true false
1661938466266209 -1661938466266209 1661938466266209.5 9007199254740992 -9007199254740992 9007199254740993
9200000000000001 9300000000000000 1000000000000000 999999999999999.5 1712195495521130.028 00000000000000001
"12" "1.5" "abc" "" [] {} 01 -01 00 +1 .5 -.5 0x10 1e400 -1e400 2e 2e+ 1ee2 - -Inf 1.5.3
"""
NUMBER_FORMS = NUMBER_TABLE.split()
NUMBER_FIELDS = ("ts", "dur", "pid", "tid")


def test_number_forms_read_in_one_pass_as_the_general_path_reads_them(tmp_path: Path) -> None:
    events = []
    for form in NUMBER_FORMS:
        for field in NUMBER_FIELDS:
            values = {"ts": str(1000 + len(events)), "dur": "1", "pid": "1", "tid": "2", field: form}
            body = ", ".join(f'"{k}": {v}' for k, v in values.items())
            events.append(f'{{"ph": "X", "cat": "cpu_op", "name": "n{len(events)}", {body}}}')
    path = _write(tmp_path, _events_trace(events)) / "rank0.json"
    one_pass = _read(path)
    was = _native.set_one_pass_numbers(False)
    try:
        general = _read(path)
    finally:
        _native.set_one_pass_numbers(was)
    assert one_pass == general
    found, rows = one_pass
    assert 0 < found["events_skipped"] < len(events) / 4  # the table holds forms read and forms refused
    assert found["events_repaired"] == 4 * 3  # NaN, Infinity, -Infinity in each field
    by_name = dict(zip(rows["name"], zip(rows["ts_ns"], rows["dur_ns"], strict=True), strict=True))
    at = 4 * NUMBER_FORMS.index("1234.5675")
    assert by_name[f"n{at + 1}"][1] == 1_234_568  # dur: the 4th fraction digit rounds away from zero
