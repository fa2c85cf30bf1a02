"""Logs past the per-log read limit are read head and tail, never silently in part: the first error at the
start of a 1 GiB log is found, line numbers stay true, the unread middle is said (exit 4). UTF-16 logs are
read as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scope.analyzers.diagnose.readers.logtext import read_log_text

from scope.cli import main

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.15 GiB total capacity)"


def diagnose(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = main(["diagnose", str(folder), "--json", "-"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.slow  # reads a 1 GiB log (the unit tier stays under 120 s)
def test_an_oom_at_the_start_of_a_1_gib_log_is_found_with_its_line(tmp_path: Path, capsys) -> None:
    log = tmp_path / "rank0.stderr.log"
    with open(log, "wb") as fh:
        fh.write(b"loading model\nallocating\n" + OOM.encode() + b"\n")
        middle = b"step 1 loss 0.5\n" * 4096  # real lines at the start of the middle, counted not kept
        fh.write(middle)
        fh.seek(1 << 30)  # the rest of the middle: a sparse gigabyte (no disk used)
        fh.write(b"\nstill training\n")
    code, report = diagnose(tmp_path, capsys)
    assert code == 4  # partial: the middle was not read, and said so
    found = [f for f in report["findings"] if f["severity"] != "info"]
    assert found and found[0]["kind"] == "oom", found
    assert any("rank0.stderr.log:3" in e for e in found[0]["evidence"]), found[0]["evidence"]
    said = " ".join(report.get("warnings", []) + report.get("inputs", {}).get("unreadable", []))
    assert "rank0.stderr.log" in said and "were not" in said


def test_head_and_tail_keep_true_line_numbers(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    lines = [f"line {i}" for i in range(1, 20001)]
    log.write_text("\n".join(lines) + "\n")
    text, unread = read_log_text(log, "x.log", max_bytes=40_000, head_bytes=10_000)
    kept = text.split("\n")
    assert unread and "not" in str(unread[0]) and unread[0].partial and unread[0].file == "x.log"
    lo, hi = unread[0].byte_range or (0, 0)  # the bytes not read: the middle, between head and tail
    assert 0 < lo <= 10_000 and log.stat().st_size - 30_000 <= hi < log.stat().st_size
    assert kept[0] == "line 1" and kept[-2] == "line 20000"
    for number, content in enumerate(kept, 1):  # every line kept sits at its own number
        assert content in ("", f"line {number}")
    assert sum(1 for c in kept if c) * 7 < 40_000  # bounded: about max_bytes of lines kept


@pytest.mark.parametrize("bom", [True, False])
def test_utf16_logs_are_read(tmp_path: Path, capsys, bom: bool) -> None:
    text = f'starting\r\nTraceback (most recent call last):\r\n  File "t.py", line 1, in <module>\r\n{OOM}\r\n'
    data = text.encode("utf-16") if bom else text.encode("utf-16-le")
    (tmp_path / "job_output.txt").write_bytes(data)
    (tmp_path / "console.out2").write_bytes(data)  # not named like a log: known by its bytes
    _, report = diagnose(tmp_path, capsys)
    found = [f for f in report["findings"] if f["severity"] != "info"]
    assert found and found[0]["kind"] == "oom", report
