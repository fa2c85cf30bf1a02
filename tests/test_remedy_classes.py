"""benchmarks/remedy_classes.py: the held-out third fixed by the file name, and each case's remedy origin."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.remedy_classes import Row, gather, held_out, score, totals

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


def test_the_held_third_is_fixed_by_the_file_name_alone() -> None:
    names = [f"case_{i}.txt" for i in range(300)]
    held = [n for n in names if held_out(n)]
    assert held == [n for n in names if int(hashlib.md5(n.encode()).hexdigest(), 16) % 3 == 0]
    assert 70 < len(held) < 130  # about a third


def test_a_case_is_scored_with_the_origin_of_its_remedy(tmp_path: Path) -> None:
    # NVIDIA/nccl#1726 (tests/data/diagnose_threads/README.md): its thread's fix as the REMEDY header
    cases = tmp_path / "cases"
    cases.mkdir()
    log = (THREADS / "nccl_1726_init_internal_error.log").read_text()
    header = "# EXPECTED KINDS: nccl_error\n# REMEDY: unset NCCL_TOPO_FILE\n"
    (cases / "nccl_1726.txt").write_text(header + log)
    (cases / "healthy.txt").write_text("# EXPECTED KINDS: healthy\n# REMEDY: none\nall good\n")
    found = gather([cases, cases])
    assert [c.name for _, c in found] == ["nccl_1726"]  # healthy left out, a repeated name counted once
    row = score("cases", found[0][1], tmp_path / "work")
    # the job's log is the case's log alone: the `# KEY: value` header is never read as a line of the job
    assert (tmp_path / "work" / "nccl_1726" / "job.log").read_text() == log
    assert (row.got, row.correct, row.verdict, row.origin) == ("nccl_error", True, "fit", "nccl_system_error")
    miss = Row("x", "cases", False, "crash", False, "miss", "", "r", "")
    assert totals([row, miss]) == ("fit 1, partly 0, miss 1 (0 unscored); classified right: fit 1/1, partly 0, miss 0")
