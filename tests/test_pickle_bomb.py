"""An 863-byte class of Flight Recorder "dump" (nested shared lists in pg_config) expands to 2^60 values
when walked: it is refused with a message, in bounded memory, and the real dumps beside it still speak."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scope.errors import ScopeError
from scope.flight_recorder import load_dump

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "data" / "nvrx_fr" / "gpu_error_1st"


def bomb(depth: int = 60, cyclic: bool = False) -> bytes:
    nested: list = []
    for _ in range(depth):
        nested = [nested, nested]
    if cyclic:
        nested.append(nested)
    dump = {"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": nested}}, "entries": []}
    return pickle.dumps(dump, protocol=2)


@pytest.mark.parametrize("cyclic", [False, True])
def test_a_pickle_bomb_is_refused_by_name(tmp_path: Path, cyclic: bool) -> None:
    path = tmp_path / "_dump_1"
    path.write_bytes(bomb(cyclic=cyclic))
    with pytest.raises(ScopeError, match="pickle bomb"):
        load_dump(path)


def test_real_dumps_are_not_refused() -> None:
    if not REAL.is_dir():
        pytest.skip("shared data not here")
    for path in sorted(REAL.glob("_dump_*")):
        assert load_dump(path).entries


@pytest.mark.subprocess
def test_the_real_dumps_beside_a_bomb_are_still_diagnosed(tmp_path: Path) -> None:
    if not REAL.is_dir():
        pytest.skip("shared data not here")
    folder = tmp_path / "fr"
    shutil.copytree(REAL, folder)
    (folder / "_dump_99").write_bytes(bomb())
    code = (
        "import resource,sys; resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30)); "
        "from scope.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "diagnose", str(folder)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    out = done.stdout + done.stderr
    assert done.returncode == 4, out  # partial: one input refused
    assert "_dump_99" in out and "pickle bomb" in out and "MemoryError" not in out
    assert "ROOT CAUSE" in out  # the real dumps still give the diagnosis
