"""scope's own lines are never the job's failure, wherever they appear: the hook's `[scope hook] ...` in a
rank's stderr, a sidecar.log diagnosed outside its run directory (this and older formats)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scope.cli import main


def diagnose(folder: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    main(["diagnose", str(folder), "--json", "-"])
    return json.loads(capsys.readouterr().out)


def failures(report: dict) -> list[dict]:
    return [f for f in report.get("findings", []) if f.get("severity") != "info"]


HOOK_LINE = "[scope hook] not active: ModuleNotFoundError: No module named 'scope'"
ENOSPC = "writing counters failed (OSError: [Errno 28] No space left on device)"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("rank0.stderr.log", f"step 1 loss 0.5\n{HOOK_LINE}\nstep 2 loss 0.4\n"),
        ("rank1.stderr.log", f"[default1]:{HOOK_LINE}\n[default1]:step 2\n"),
        (
            "sidecar.log",
            f"2026-12-05T08:00:00 [scope sidecar] {ENOSPC}\n",
        ),
        (
            "sidecar.log",
            f"2026-12-05T08:00:00 sidecar started: pid 12, 1 Hz, host h\n2026-12-05T08:00:05 {ENOSPC}\n",
        ),
    ],
)
def test_scopes_own_lines_are_not_a_root_cause(tmp_path: Path, capsys, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    assert failures(diagnose(tmp_path, capsys)) == []


def test_the_jobs_error_beside_a_hook_line_is_still_found(tmp_path: Path, capsys) -> None:
    (tmp_path / "rank0.stderr.log").write_text(
        f'{HOOK_LINE}\nTraceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    found = failures(diagnose(tmp_path, capsys))
    assert found and found[0]["kind"] == "oom" and "scope hook" not in json.dumps(found)
