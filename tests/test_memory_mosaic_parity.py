"""Peak attribution against Meta's Mosaic (facebookresearch/mosaic, BSD), run live on every public
snapshot available: the overall peak, Mosaic's "static" memory and the bytes of its top 10 peak stacks
must equal scope's.

Mosaic splits the peak in two: its dynamic peak (the allocations it sees in the trace, grouped by stack:
file and line of every frame) plus its static memory (blocks still active at the end whose address no
trace entry touches, with no stacks). scope's replay holds both: the blocks allocated in the trace, and
those allocated before recording (`Replay.before_at_peak`). One definition differs: a block allocated
before recording and freed in the trace after the peak is live at the peak for scope (and PyTorch's
viewer) but is neither static nor dynamic for Mosaic, so scope's peak is Mosaic's plus those blocks
(none in the current-format snapshots; one block in each of FlexGen's 1.3b snapshots).

Mosaic cannot read the 2023 format (its blocks carry no `address`, its trace entries no `time_us`:
KeyError). It is given a copy read with scope's refusing unpickler, with each block's address laid out
from its segment's (as PyTorch's own viewer does) and time 0, and nothing else changed.

Mosaic is not on PyPI (the `mosaic` there is another project) and its setup.py at 67b27bb does not build
("package directory 'cmd' does not exist"), so it runs from a source checkout on PYTHONPATH:
    SCOPE_MOSAIC_SRC=<checkout> SCOPE_MOSAIC_PYTHON=<a python with pandas, click, omegaconf, altair,
    tabulate> SCOPE_PUBLIC_SNAPSHOTS=<folder laid out by scripts/public_snapshots.sh>
Each snapshot missing from the folder is skipped, naming where it comes from."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scope.analyzers.memory.snapshot import Replay, replay

from scope.memory_snapshot import Snapshot, _unpickle, load_snapshot

GIB = 2**30
FOLDER = Path(os.environ.get("SCOPE_PUBLIC_SNAPSHOTS", "/nonexistent"))
OVERALL = re.compile(r"Total Overall Peak Memory Usage \(Dynamic \+ Static\): ([0-9.e+-]+) GiB")
STATIC = re.compile(r"Total Static Memory Usage \(estimated by Pytorch visualizer\): ([0-9.e+-]+) GiB")
STACK = re.compile(r"Num of Calls: (\d+), Memory Usage: ([0-9.e+-]+) GiB")
NAMED = {
    "mosaic_output.pickle": "Mosaic's test/snapshots/output.pickle (facebookresearch/mosaic, BSD)",
    "oom_snapshot.pickle": "FlexGen's oom_snapshot.pickle (Yiyi-philosophy/LLM-inference, Apache-2.0)",
    "1.3b_snapshot.pickle": "FlexGen's 1.3b_snapshot.pickle (Yiyi-philosophy/LLM-inference, Apache-2.0)",
    "log1_1.3b_snapshot.pickle": "FlexGen's log1/1.3b_snapshot.pickle (Yiyi-philosophy/LLM-inference)",
}
CS336 = "cs336-a2-systems"  # kkaitlyn111/cs336-a2-systems' snapshots: no licence, read in place only


def public_snapshots() -> list[Any]:
    params = [pytest.param(name, id=name) for name in NAMED]
    found = sorted((FOLDER / CS336).glob("*.pickle")) if (FOLDER / CS336).is_dir() else []
    params += [pytest.param(f"{CS336}/{p.name}", id=p.stem) for p in found]
    return params + ([] if found else [pytest.param(f"{CS336}/", id=CS336)])  # skipped, saying where from


@dataclass
class Mosaic:
    overall_gib: float
    static_gib: float
    stacks_gib: list[float]  # its peak stacks, largest first


def run_mosaic(snapshot: Path) -> Mosaic:
    """Mosaic's overall peak, static memory and peak stacks (GiB, in its order), from its own CLI."""
    src, python = os.environ.get("SCOPE_MOSAIC_SRC"), os.environ.get("SCOPE_MOSAIC_PYTHON")
    if not src or not python or not Path(src, "mosaic").is_dir():
        pytest.skip("Mosaic is not available: set SCOPE_MOSAIC_SRC and SCOPE_MOSAIC_PYTHON (see the docstring)")
    cmd = [python, "-m", "mosaic.cmd.get_memory_usage_peak", "--snapshot", str(snapshot)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": src})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"Mosaic failed on {snapshot.name}: {text[-800:]}"
    overall, static = OVERALL.search(text), STATIC.search(text)
    assert overall and static, f"Mosaic's output has no peak lines: {text[:500]}"
    stacks = [float(m.group(2)) for m in STACK.finditer(text)]
    return Mosaic(float(overall.group(1)), float(static.group(1)), stacks)


def mosaic_input(path: Path, snap: Snapshot, tmp_path: Path) -> Path:
    """The file itself, or for the 2023 format a copy with the two fields Mosaic needs (see the docstring)."""
    if snap.format != "2023":
        return path
    raw = _unpickle(path, path.read_bytes())  # the refusing unpickler: no global, plain containers only
    for seg in raw["segments"]:
        address = seg["address"]
        for block in seg["blocks"]:
            block.setdefault("address", address)
            address += block["size"]
    for trace in raw["device_traces"]:
        for entry in trace:
            entry.setdefault("time_us", 0)
    out = tmp_path / f"for_mosaic_{path.name}"
    out.write_bytes(pickle.dumps(raw))
    return out


def split_peak(snap: Snapshot, rep: Replay) -> tuple[list[int], int, int]:
    """scope's peak as Mosaic splits it: the top 10 stacks (by files and lines) of the blocks allocated in
    the trace, the blocks from before recording no entry touches, those from before recording freed
    after the peak."""
    by_stack: dict[tuple[tuple[str, int], ...], int] = defaultdict(int)
    touched = set(snap.traces[rep.device].addr.tolist())
    static = freed_later = 0
    for addr, (size, stack) in rep.live_at_peak.items():
        if addr not in rep.before_at_peak:
            by_stack[tuple((f, line) for f, line, _ in snap.stack(stack))] += size
        elif addr in touched:
            freed_later += size
        else:
            static += size
    return sorted(by_stack.values(), reverse=True)[:10], static, freed_later


@pytest.mark.shared_data
@pytest.mark.parametrize("name", public_snapshots())
def test_peak_and_top_stacks_match_mosaic(name: str, tmp_path: Path) -> None:
    path = FOLDER / name
    if not path.is_file():
        where = NAMED.get(name, f"kkaitlyn111/{CS336}'s *.pickle (scripts/public_snapshots.sh)")
        pytest.skip(f"{name} not in SCOPE_PUBLIC_SNAPSHOTS ({FOLDER}): {where}")
    snap = load_snapshot(path)
    ref = run_mosaic(mosaic_input(path, snap, tmp_path))
    # Mosaic reads the first device with a trace
    rep = replay(snap, next(d for d, trace in enumerate(snap.traces) if len(trace)))
    stacks, static, freed_later = split_peak(snap, rep)
    assert [b / GIB for b in stacks] == pytest.approx(ref.stacks_gib[:10], rel=1e-12)
    assert static / GIB == pytest.approx(ref.static_gib, rel=1e-12)
    assert (rep.peak_bytes - freed_later) / GIB == pytest.approx(ref.overall_gib, rel=1e-12)
