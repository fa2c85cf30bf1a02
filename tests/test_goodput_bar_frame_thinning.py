"""Goodput's cost on logs of progress-bar frames: a fast loop's tqdm bar draws ten frames a second, and one mark
per frame (with its evidence text) made `scope goodput` need twenty times the log's size in memory. A bar's
frames in one second of its clock are thinned to the last (parse._FrameRun), the log's lines are read a chunk at
a time (parse._lines), and a line of glued frames is read once for its epoch, not once per frame."""

from __future__ import annotations

import random
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput
from scope.analyzers.goodput import parse as parse_mod
from scope.analyzers.goodput.parse import parse_text

from benchmarks.goodput_bars import frame, write_bar_log

ROOT = Path(__file__).resolve().parent.parent
START = "2025-11-18 08:30:00,000 - INFO - train - ***** Running training *****"


def _frames(total: int, rate: float, seconds: float, t0: float = 0.0, every: float = 0.1) -> list[str]:
    """A bar's frames every `every` s of its clock from `t0`, at `rate` steps a second."""
    out = []
    t = t0
    while t < t0 + seconds:
        t += every
        out.append(frame(min(total, int(t * rate)), total, t, rate))
    return out


def _steps(text: str) -> list[tuple[int | None, float | None]]:
    return [(m.step, m.rel) for m in parse_text(text, "bars.log", carriage_returns=True).marks if m.kind == "step"]


def test_a_fast_bars_frames_in_one_second_of_its_clock_keep_the_last() -> None:
    frames = _frames(3000, 25.0, 40.0)  # 25 it/s, ten frames a second, 40 s
    steps = _steps(START + "\n" + "\r".join(frames) + "\n")
    last: dict[str, int] = {}  # each second of the bar's clock: its last frame's count
    for f in frames:
        found = re.search(r"\| (\d+)/\d+ \[([\d:]+)<", f)
        assert found
        last[found.group(2)] = int(found.group(1))
    assert len(frames) > 390
    # the bar's first two frames, then one a second: that second's last count
    assert [s for s, _ in steps[2:]] == list(last.values())[-(len(steps) - 2) :]
    assert len(steps) == len(last) + 2 or len(steps) == len(last) + 1
    assert steps[-1][0] == 1000


def _every_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_mod._FrameRun, "add", lambda self, marks, mark: marks.append(mark))


def test_thinned_frames_read_the_same_goodput_as_every_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [START, "\r".join(_frames(4000, 6.0, 300.0)), "2025-11-18 08:35:10,000 - INFO - train - Training done"]
    path = tmp_path / "bar.log"
    path.write_text("\n".join(lines) + "\n")
    thin = goodput(path)
    _every_frame(monkeypatch)
    every = goodput(path)
    assert thin.acc.steps_completed == every.acc.steps_completed == 1800
    assert thin.wall_s == every.wall_s
    # a steady 6 it/s bar: its 300 s productive (the 10 s before its first frame: the first step's). Every
    # frame read, the whole-second clock made the first frames that cross a second look slow (1 s for a step or
    # two), booked as more warm-up
    assert thin.acc.buckets["productive"] == pytest.approx(300.0, abs=0.5)
    assert every.acc.buckets["productive"] <= thin.acc.buckets["productive"]
    assert thin.acc.buckets["warmup"] <= every.acc.buckets["warmup"]


def _read_both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    thin = _steps(text)
    with monkeypatch.context() as m:
        m.setattr(parse_mod._FrameRun, "add", lambda self, marks, mark: marks.append(mark))
        every = _steps(text)
    return thin, every


def test_frames_that_change_what_the_timeline_reads_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # a reset bar in the same second (the count goes back): its 0 and what follows kept
    reset = [frame(n, 500, 7.0, 9.0) for n in (60, 62, 64, 66)] + [frame(n, 500, 0.0, 9.0) for n in (0, 1)]
    assert [s for s, _ in _steps("\r".join(reset))] == [60, 62, 66, 0, 1]
    # another writer's frames interleaved (each rank's tqdm, a step behind), a frame stamped by a collector, a
    # record between two frames: read as every frame reads them
    two = [frame(n, 500, 7.0, 9.0) for n in (60, 58, 61, 59, 62, 60, 63, 61, 64)]
    thin, every = _read_both("\r".join(two), monkeypatch)
    assert thin == every and [s for s, _ in thin][-1] == 64
    stamped = [f"2025-11-18 08:31:0{i},{i}00 - INFO - {frame(40 + i, 500, 7.0, 9.0)}" for i in range(6)]
    thin, every = _read_both(START + "\n" + "\n".join(stamped), monkeypatch)
    assert thin == every
    between = [frame(n, 500, 7.0, 9.0) for n in (60, 61, 62, 63)]
    between.insert(3, "2025-11-18 08:31:07,500 - INFO - trainer - Saving model checkpoint to out/checkpoint-62")
    thin, every = _read_both("\n".join(between), monkeypatch)
    assert thin == every == [(60, 7.0), (61, 7.0), (62, 7.0), (63, 7.0)]
    # the bar's first two frames in a second: its opening pace (open_at_bar_zero), kept
    assert [s for s, _ in _steps("\r".join(frame(n, 500, 0.0, 9.0) for n in (1, 2, 3, 4)))] == [1, 2, 4]


def test_glued_frames_are_thinned_too() -> None:
    frames = _frames(3000, 30.0, 20.0)
    glued = ["".join(frames[i : i + 25]) for i in range(0, len(frames), 25)]
    steps = _steps(START + "\n" + "\n".join(glued) + "\n")
    assert len(steps) <= 20 + 3 + len(glued)  # (a line's first frame after a newline: a run goes on across it)
    assert steps[-1][0] == 600


def test_lines_read_a_chunk_at_a_time_are_the_texts_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_mod, "_CHUNK", 5)
    rng = random.Random(16)
    pieces = ["ab", "c", "\n", "\r", "\r\n", "\x0c", "\u2028", " ", "%|"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        assert list(parse_mod._lines(text, False)) == text.splitlines()
        assert list(parse_mod._lines(text, True)) == text.replace("\r", "\n").splitlines()


def test_a_log_file_is_read_a_chunk_at_a_time_as_its_whole_text_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scope.analyzers.diagnose.readers import logtext

    monkeypatch.setattr(parse_mod, "_CHUNK", 3)
    rng = random.Random(1116)
    pieces = ["ab", "\n", "\r", "\r\n", "█", "🤗", " 7%|▋ ", "\ufeff"]
    for i in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 2500 if i % 10 == 0 else 40)))
        data = text.encode(rng.choice(["utf-8", "utf-8-sig", "utf-16", "utf-16-le"]))
        if i % 3 == 0:
            data = data.replace(b"\x96", b"\xff")  # (bytes no UTF-8 decodes: replaced alike)
        path = tmp_path / "log.txt"
        path.write_bytes(data)
        whole = logtext.read_log_text(path, "log.txt")[0].replace("\r", "\n").splitlines()
        assert list(parse_mod._file_lines(path)) == whole


def test_a_line_of_hundreds_of_glued_frames_is_read_in_linear_time() -> None:
    # each line of glued frames up to the 64 KiB read per line: once read per frame for its epoch, its cost
    # was the square of the frames on it (seconds a line)
    line = "".join(frame(n, 90000, n / 20.0, 20.0) for n in range(1, 900))[: parse_mod.MAX_LINE]
    text = START + "\n" + "\n".join([line] * 12) + "\n"
    began = time.perf_counter()
    parsed = parse_text(text, "glued.log")
    assert time.perf_counter() - began < 8.0  # (about 0.3 s; 25 s before)
    assert parsed.lines == 13


def _peak_rss_mb(path: Path) -> float:
    """Peak RSS (MB) of a fresh process reading `path`'s goodput."""
    code = (
        "import resource, sys; from pathlib import Path; from scope.analyzers.goodput import goodput; "
        "goodput(Path(sys.argv[1])); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, cwd=ROOT)
    return int(out.stdout.split()[-1]) / 1024


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("glued", [False, True])
def test_goodputs_memory_on_a_bar_log_is_a_small_multiple_of_the_log(tmp_path: Path, glued: bool) -> None:
    assert resource.RUSAGE_SELF is not None
    tiny = tmp_path / "tiny.log"
    tiny.write_text(START + "\n" + frame(1, 10, 1.0, 1.0) + "\n")
    bars = tmp_path / "bars.log"
    write_bar_log(bars, 8.0, rate=15.0, glued=glued, seed=16)
    size_mb = bars.stat().st_size / 1e6
    grown = _peak_rss_mb(bars) - _peak_rss_mb(tiny)
    # about 2.5x the log (its text, UCS-2 for the bar's blocks, and the marks kept); 18x before
    assert grown < 6 * size_mb, f"{grown:.0f} MB for a {size_mb:.1f} MB log"
