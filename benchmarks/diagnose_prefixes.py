"""Does `scope diagnose` read a log the same under the prefix a collector or a paste puts on every line?

    .venv/bin/python benchmarks/diagnose_prefixes.py [FOLDER ...]

FOLDER holds labelled cases as benchmarks/diagnose_accuracy.py reads them (default: the shared failure corpus).
Each case is diagnosed as posted, then with every line under each prefix below; prints top-1 per prefix beside
the unprefixed figure of the same run, and how many cases changed their finding's kind. A log read differently
under kubectl than under a terminal is knowledge fitted to one collector (readers/collector_prefix.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

if not __package__:  # run as a script: `from benchmarks import ...` needs the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.diagnose_accuracy import DATA
from benchmarks.failure_corpus import Case, corpus_cases, run_cases

# What collectors and pastes put before every line (the sources are in readers/collector_prefix.py).
PREFIXES: dict[str, Callable[[str], str]] = {
    "kubectl --timestamps": lambda ln: "2024-05-01T10:00:00.123456789Z " + ln,
    "ray worker tag": lambda ln: "(RayWorkerWrapper pid=4242) " + ln,
    "srun --label": lambda ln: "3: " + ln,
    "docker compose": lambda ln: "trainer-1  | " + ln,
    "journald": lambda ln: "Dec 06 10:00:00 gpu-node-3 python[4242]: " + ln,
    "time per line": lambda ln: "2024-05-01 10:00:00.123 " + ln,
    "bracketed time": lambda ln: "[2024-05-01 10:00:00,123] " + ln,
    "markdown quote": lambda ln: "> " + ln,
    "markdown code block": lambda ln: "    " + ln,
    "CRLF endings": lambda ln: ln + "\r",
}


def under(case: Case, prefix: Callable[[str], str]) -> Case:
    log = "\n".join(prefix(ln) if ln.strip() else ln for ln in case.log.split("\n"))
    return Case(case.name, log, case.expected, case.ranks, case.source, case.remedy)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="case folders (default: the shared corpus)")
    args = parser.parse_args()
    for folder in args.folders or [DATA / "failure_corpus"]:
        cases = corpus_cases(folder)
        base = run_cases(cases).outcomes
        kinds = {o.case.name: o.got for o in base}
        right = sum(o.correct for o in base)
        print(f"== {folder}: {len(cases)} cases; as posted: top-1 {right}/{len(cases)}")
        for name, prefix in PREFIXES.items():
            out = run_cases([under(c, prefix) for c in cases]).outcomes
            changed = sum(o.got != kinds[o.case.name] for o in out)
            got = sum(o.correct for o in out)
            ratio = got / max(1, right)
            print(f"  {name:<22} top-1 {got}/{len(out)} ({ratio:.0%} of as posted), kind changed {changed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
