"""The remedy fit grouped by the finding that printed it, with a third of the cases held out by name.

    .venv/bin/python benchmarks/remedy_classes.py FOLDER [FOLDER ...] [--held-only] [--json FILE]

Every failing case with a `# REMEDY:` header in the folders (a name met twice counts once, first folder wins)
is diagnosed and its printed remedy judged (benchmarks/remedy_fit.py). A case is held out when
md5(file name) % 3 == 0: the split is fixed by the name alone, before anyone reads the case, so tuning on
the other two thirds leaves a fit that was not tuned for. Prints the fit per folder and of the held and tuned
thirds (all failing cases, and those classified right), then the tuned third's misses and partlies grouped by
the finding's kind and the origin of its remedy text (its signature row, else its reading's code), each with
the REMEDY line and the printed remedy: the groups to fix by class, never by case. --held-only lists only
totals for the held third's cases, so they stay unread.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

if not __package__:  # run as a script: `from benchmarks import ...` needs the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.failure_corpus import Case, corpus_cases, remedy_verdict, run_case


@dataclass
class Row:
    name: str
    folder: str
    held: bool
    got: str
    correct: bool
    verdict: str
    origin: str  # the signature row, else the reading's code ('' where no failure finding)
    remedy: str
    printed: str


def held_out(file_name: str) -> bool:
    """The fixed third: md5 of the case's file name, mod 3 == 0."""
    return int(hashlib.md5(file_name.encode()).hexdigest(), 16) % 3 == 0


def gather(folders: list[Path]) -> list[tuple[str, Case]]:
    """Every failing case with a REMEDY header, once per name, with the folder it came from."""
    seen: set[str] = set()
    out = []
    for folder in folders:
        for case in corpus_cases(folder):
            if case.name in seen or not case.remedy or case.healthy:
                continue
            seen.add(case.name)
            out.append((folder.name, case))
    return out


def score(folder: str, case: Case, workdir: Path) -> Row:
    """The case diagnosed and its remedy judged as diagnose_accuracy.py does (failure_corpus.run_case writes
    the header-stripped log alone as job.log; remedy_verdict judges the printed remedy)."""
    o = run_case(case, workdir)
    return Row(
        case.name,
        folder,
        held_out(f"{case.name}.txt"),
        o.got,
        o.correct,
        remedy_verdict(o).verdict,
        o.origin,
        case.remedy,
        o.printed,
    )


def totals(rows: list[Row]) -> str:
    every = Counter(r.verdict for r in rows)
    right = Counter(r.verdict for r in rows if r.correct)
    scored = sum(n for v, n in right.items() if v != "unscored")
    return (
        f"fit {every['fit']}, partly {every['partly']}, miss {every['miss']} ({every['unscored']} unscored); "
        f"classified right: fit {right['fit']}/{scored}, partly {right['partly']}, miss {right['miss']}"
    )


def print_report(rows: list[Row], held_only: bool) -> None:
    folders: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        folders[r.folder].append(r)
    print("== remedy fit per folder")
    for folder, rs in folders.items():
        print(f"  {folder:<20} {totals(rs)}")
    held = [r for r in rows if r.held]
    tuned = [r for r in rows if not r.held]
    print(f"== held third ({len(held)} cases): {totals(held)}")
    print(f"== tuned two thirds ({len(tuned)} cases): {totals(tuned)}")
    if held_only:
        return
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in tuned:
        if r.verdict in ("miss", "partly"):
            groups[(r.got, r.origin)].append(r)
    print("== tuned third's misses and partlies by finding kind and remedy origin")
    for (kind, origin), rs in sorted(groups.items(), key=lambda g: -len(g[1])):
        print(f"  {kind} / {origin or '-'}: {len(rs)}")
        for r in rs:
            print(f"    {r.verdict:<7} {r.folder}/{r.name}")
            print(f"        REMEDY:  {r.remedy[:220]}")
            print(f"        printed: {(r.printed or '(no failure finding)')[:220]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="case folders (one case per .txt, REMEDY header)")
    parser.add_argument("--held-only", action="store_true", help="totals only: leave the held third unread")
    parser.add_argument("--json", type=Path, default=None, help="write every case's row as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scope-remedy-") as tmp:
        rows = [score(folder, case, Path(tmp)) for folder, case in gather(args.folders)]
    print_report(rows, args.held_only)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
