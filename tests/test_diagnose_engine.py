"""The post-mortem reads its files on scope.engine, as ingest reads ranks: the same diagnosis from a pool of
workers as from one process, the user's signature rows (scope.toml) in force in the workers too, whose
processes start clean (forkserver) and inherit nothing."""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.readers.inputs import PARALLEL_MIN_FILES

SITE_ROW = """
[[signatures]]
id = "site_fabric_check"
patterns = ["FABRIC HEALTH CHECK FAILED on (?P<port>mlx5_\\\\d+)"]
kind = "network_fault"
cause = "network"
meaning = "The site's fabric health check failed on this port."
remedy = "Drain the node and reseat the cable."
"""


def _many_logs(folder: Path) -> None:
    folder.mkdir()
    (folder / "scope.toml").write_text(SITE_ROW)
    for r in range(PARALLEL_MIN_FILES + 8):
        lines = [f"[rank{r}] step {s} loss 1.{s}" for s in range(20)]
        if r == 37:
            lines.append("FABRIC HEALTH CHECK FAILED on mlx5_3")
        (folder / f"rank{r}.log").write_text("\n".join(lines) + "\n")


def test_a_pool_of_workers_gives_the_same_diagnosis_with_the_users_rows(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    _many_logs(folder)
    alone = diagnose(folder, workers=1)
    pooled = diagnose(folder, workers=2)
    said = [(f.kind, f.summary, f.ranks, f.evidence) for f in alone.findings]
    assert said == [(f.kind, f.summary, f.ranks, f.evidence) for f in pooled.findings]
    assert any(
        "site_fabric_check" in str(f.metrics) or "fabric health check" in f.summary.lower() for f in pooled.findings
    ), [f.summary for f in pooled.findings]
    assert any(37 in f.ranks for f in pooled.findings)
    assert alone.sections["inputs"]["logs"] == pooled.sections["inputs"]["logs"] == PARALLEL_MIN_FILES + 8
