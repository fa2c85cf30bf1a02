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
from tests.test_native_ingest import _write

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
