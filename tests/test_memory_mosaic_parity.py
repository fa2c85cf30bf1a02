"""Peak attribution against Meta's Mosaic (facebookresearch/mosaic, BSD), run live on the same snapshot:
the overall peak and the bytes of the top 10 peak stacks must be equal.

Mosaic is not on PyPI (the `mosaic` there is another project) and its setup.py at 67b27bb does not build
("package directory 'cmd' does not exist"), so it runs from a source checkout on PYTHONPATH:
    SCOPE_MOSAIC_SRC=<checkout> SCOPE_MOSAIC_PYTHON=<a python with pandas, click, omegaconf, altair,
    tabulate> SCOPE_PUBLIC_SNAPSHOTS=<folder with Mosaic's test/snapshots/output.pickle as mosaic_output.pickle>
Skipped cleanly when any of them is missing."""

from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from scope.analyzers.memory.snapshot import replay

from scope.memory_snapshot import load_snapshot

GIB = 2**30
PEAK = re.compile(r"Total Overall Peak Memory Usage \(Dynamic \+ Static\): ([0-9.e+-]+) GiB")
STACK = re.compile(r"Num of Calls: (\d+), Memory Usage: ([0-9.e+-]+) GiB")


def mosaic_peak(snapshot: Path) -> tuple[float, list[float]]:
    """Mosaic's overall peak (GiB) and its peak stacks' bytes (GiB, in its order), from its own CLI."""
    src, python = os.environ.get("SCOPE_MOSAIC_SRC"), os.environ.get("SCOPE_MOSAIC_PYTHON")
    if not src or not python or not Path(src, "mosaic").is_dir():
        pytest.skip("Mosaic is not available: set SCOPE_MOSAIC_SRC and SCOPE_MOSAIC_PYTHON (see the docstring)")
    cmd = [python, "-m", "mosaic.cmd.get_memory_usage_peak", "--snapshot", str(snapshot)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": src})
    if proc.returncode != 0:
        pytest.skip(f"Mosaic did not run here: {proc.stderr.strip().splitlines()[-1:]}")
    text = proc.stdout + proc.stderr
    found = PEAK.search(text)
    assert found, f"Mosaic's output has no overall peak line: {text[:500]}"
    return float(found.group(1)), [float(m.group(2)) for m in STACK.finditer(text)]


@pytest.mark.shared_data
def test_peak_and_top_stacks_match_mosaic() -> None:
    snapshot = Path(os.environ.get("SCOPE_PUBLIC_SNAPSHOTS", "/nonexistent")) / "mosaic_output.pickle"
    if not snapshot.is_file():
        pytest.skip(f"{snapshot.name} not available: Mosaic's test/snapshots/output.pickle (BSD)")
    ref_peak, ref_stacks = mosaic_peak(snapshot)
    snap = load_snapshot(snapshot)
    rep = replay(snap, 0)
    # Mosaic's overall peak is its dynamic peak plus the blocks from before recording: scope's replay peak
    assert rep.peak_bytes / GIB == pytest.approx(ref_peak, rel=1e-12)
    by_stack: dict[tuple[object, ...], int] = defaultdict(int)
    for size, stack in rep.live_at_peak.values():
        by_stack[snap.stack(stack)] += size
    ours = sorted(by_stack.values(), reverse=True)[:10]
    assert [b / GIB for b in ours] == pytest.approx(ref_stacks[:10], rel=1e-12)
