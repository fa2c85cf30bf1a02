"""Real file-system faults for tests: a small tmpfs (a disk that fills), remounted read-only on demand.

Mounting needs root (CAP_SYS_ADMIN); where it is not allowed, the tests that need it are skipped with
the reason rather than faked.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextmanager
def small_fs(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of SIZE mounted at WHERE (created), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) here: a small file system cannot be made")
    done = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def make_read_only(where: Path) -> None:
    """Remount a small_fs read-only (EROFS for every write, root included)."""
    done = _mount("-o", "remount,ro", str(where))
    assert done.returncode == 0, done.stderr


def fill(where: Path) -> None:
    """Fill the file system holding WHERE to the last byte (ENOSPC on the next write)."""
    with open(where / ".filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
        except OSError:
            pass
    try:
        with open(where / ".filler2", "wb") as fh:  # the bytes a partial block left
            while True:
                fh.write(b"\0")
                fh.flush()
    except OSError:  # full already: not even a new file fits
        pass
