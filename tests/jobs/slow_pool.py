"""Runs scope's local process pool over jobs that write their worker's pid to FOLDER and sleep: the test
kills this process with SIGKILL and checks that the workers die with it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def work(folder: str) -> int:
    Path(folder, f"{os.getpid()}.pid").write_text(str(os.getpid()))
    time.sleep(120)
    return os.getpid()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from slow_pool import work as importable_work  # by module name, so forkserver workers can import it

    from scope.engine import map_unordered

    list(map_unordered(importable_work, [sys.argv[1]] * 2, workers=2))
