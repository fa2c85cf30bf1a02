"""The README's "What scope promises under faults" names the test holding each promise: each must exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_the_fault_promises_name_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### What scope promises under faults", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(test_\w+)`", section))
    assert len(named) >= 10
    defined = {
        m.group(1)
        for path in (ROOT / "tests").glob("test_*.py")
        for m in re.finditer(r"^def (test_\w+)", path.read_text(), re.MULTILINE)
    }
    assert named <= defined, sorted(named - defined)
