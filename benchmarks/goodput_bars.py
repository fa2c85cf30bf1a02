"""Goodput's cost on a log of progress-bar frames: time and peak memory against the log's size.

    .venv/bin/python benchmarks/goodput_bars.py [--mb 5 20] [--glued] [--rate 12] [--keep DIR]

A tqdm bar redraws at most every `mininterval` (0.1 s): a fast loop (`--rate` steps a second) leaves about ten
frames per second of its clock, each `  3%|▎   | 150/4854 [00:12<06:30, 12.01it/s]`, written with `\\r` between
frames (`--glued`: the `\\r` lost, a newline every 40 frames, as a log saved through a pipe keeps them). Each
size is run as `scope goodput` in a fresh process under /usr/bin/time -v: wall and CPU seconds (user + system:
steadier than wall on a busy machine), peak RSS, and CPU and RSS per MB of log (linear time keeps the first
ratio level as the log grows; memory a small multiple of the log keeps the second low).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not __package__:
    sys.path.insert(0, str(ROOT))

_BLOCKS = " ▏▎▍▌▋▊▉█"


def _clock(seconds: float) -> str:
    s = int(seconds)
    h, m = divmod(s, 3600)
    m, s = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _bar(n: int, total: int, width: int = 10) -> str:
    fill = n * width / total
    full = int(fill)
    part = _BLOCKS[int((fill - full) * 8)] if full < width else ""
    return ("█" * full + part).ljust(width)


def frame(n: int, total: int, elapsed: float, rate: float) -> str:
    """One tqdm frame as format_meter draws it (the HF Trainer's bar: no description)."""
    left = (total - n) / rate if rate > 0 else 0.0
    speed = f"{rate:.2f}it/s" if rate >= 1 else f"{1 / rate:.2f}s/it"
    return f"{int(100 * n / total):3d}%|{_bar(n, total)}| {n}/{total} [{_clock(elapsed)}<{_clock(left)}, {speed}]"


def write_bar_log(path: Path, size_mb: float, rate: float = 12.0, glued: bool = False, seed: int = 0) -> int:
    """A log of `size_mb` MB: a stamped start, one bar's frames every 0.1 s of its clock at `rate` steps a
    second (the total set so that the bar ends as the size is reached), a stamped end. Returns the total."""
    target = int(size_mb * 1e6)
    frame_bytes = len(frame(5000, 99999, 500.0, rate).encode()) + 1
    frames = max(10, target // frame_bytes)
    total = max(1, int(frames * 0.1 * rate))
    start = "2026-03-02 10:00:00,000 - INFO - __main__ - ***** Running training *****\n"
    with path.open("w", encoding="utf-8") as out:
        out.write(start)
        out.write(f"2026-03-02 10:00:00,100 - INFO - __main__ -   Total optimization steps = {total}\n")
        t = 0.0
        written = 0
        i = 0
        jitter = seed
        while True:
            jitter = (jitter * 1103515245 + 12345) & 0x7FFFFFFF
            t += 0.1 + (jitter % 7) / 1000.0
            n = min(total, int(t * rate))
            sep = "\r" if not glued else ("\n" if i % 40 == 39 else "")
            text = frame(n, total, t, rate) + sep
            out.write(text)
            written += len(text)
            i += 1
            if n >= total:
                break
        end = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(1772445600 + t + 5))
        out.write(f"\n{end},000 - INFO - __main__ - Training completed. train_runtime = {t:.1f}\n")
    return total


_RSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
_CPU = re.compile(r"(?:User|System) time \(seconds\): ([\d.]+)")
_WALL = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)")


def measure(path: Path) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, the report's first lines) of `scope goodput PATH` in a fresh process."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "scope", "goodput", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rss = _RSS.search(proc.stderr)
    wall = _WALL.search(proc.stderr)
    if not rss or not wall:
        raise SystemExit(f"no figures from /usr/bin/time: {proc.stderr[-2000:]}")
    secs = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    cpu = sum(float(x) for x in _CPU.findall(proc.stderr))
    return secs, cpu, int(rss.group(1)) / 1024, "\n".join(proc.stdout.splitlines()[:4])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mb", type=float, nargs="+", default=[5.0, 20.0])
    p.add_argument("--rate", type=float, default=12.0, help="the bar's steps a second")
    p.add_argument("--glued", action="store_true", help="frames with no \\r between them, a newline every 40")
    p.add_argument("--keep", type=Path, help="write the logs here (kept) instead of a temporary folder")
    p.add_argument("--show", action="store_true", help="print the report's first lines")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for mb in args.mb:
            path = folder / f"bars_{mb:g}mb{'_glued' if args.glued else ''}.log"
            write_bar_log(path, mb, args.rate, args.glued)
            size = path.stat().st_size / 1e6
            wall, cpu, rss, head = measure(path)
            print(
                f"{path.name}: {size:.1f} MB, wall {wall:.1f} s, CPU {cpu:.1f} s ({cpu / size:.2f} s/MB), "
                f"peak RSS {rss:.0f} MB ({rss / size:.1f}x the log)"
            )
            if args.show:
                print("  " + head.replace("\n", "\n  "))


if __name__ == "__main__":
    main()
