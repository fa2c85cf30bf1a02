"""`scope goodput` on real training-log fragments, beside the TRUTH each was labelled with by hand.

    .venv/bin/python benchmarks/goodput_accuracy.py DIR [DIR ...] [--text]

Each DIR holds `*.txt` logs whose `# SOURCE:` / `# CONTEXT:` / `# TRUTH:` header lines were written from the
log alone before scope saw it (the held-out and dev sets, ../shared/data/training_logs). The header is
stripped into a temporary `job.log` (as a user would run scope on the log itself), then for each log:

- what goodput found: wall time and its clock, steps (first..last, completed), attempts and how each ended,
  the non-empty buckets, findings, or that it refused the log;
- the TRUTH line, for judging by hand (right / partly / wrong);
- an automatic check of what the TRUTH states in a form this script can read: the attempt count
  ("N attempts"), the first and last step ("Steps A..B" / "steps A..B" / "iter A..B") and the step count
  ("N steps", only from the TRUTH's "A correct accounting:" sentence), each `ok` or `DIFF`.
  A TRUTH that states none of them gets only the hand judgement.

`--text` prints scope's own text report under each log as well.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if not __package__:
    sys.path.insert(0, str(ROOT))

from scope.analyzers.goodput import found_anything, goodput  # noqa: E402
from scope.analyzers.goodput.report import GoodputReport  # noqa: E402

HEADER = re.compile(r"^# (SOURCE|CONTEXT|TRUTH|NOTE)\b")
_NUM = r"(\d[\d,]*)"
TRUTH_ATTEMPTS = re.compile(rf"\b{_NUM} attempts?\b", re.IGNORECASE)
TRUTH_RANGE = re.compile(rf"\b(?:steps?|iter(?:ations?)?)\s+{_NUM}\s*(?:\.\.|-|to)\s*{_NUM}", re.IGNORECASE)
# "N steps" (not "every N steps", not "N of M steps"), read from the TRUTH's "A correct accounting:" sentence
# where it has one: a count of step lines is no count of steps in a log printed every N steps; "N steps known"
# is what the log shows of a count it says is unknown ("0 steps known, productive time unknown"), no count
TRUTH_COUNT = re.compile(rf"(?<!every )(?<!of )\b{_NUM} (?:completed )?steps\b(?! known)", re.IGNORECASE)
ACCOUNTING = "correct accounting"


@dataclass
class Stated:
    """What a TRUTH line states in a form that can be checked automatically (None: not stated)."""

    attempts: int | None
    first: int | None
    last: int | None
    count: int | None


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def stated(truth: str) -> Stated:
    att = TRUTH_ATTEMPTS.search(truth)
    rng = TRUTH_RANGE.search(truth)
    # (elsewhere in a TRUTH "N steps" is as often a span or an interval as the count)
    cnt = TRUTH_COUNT.search(truth[truth.find(ACCOUNTING) :]) if ACCOUNTING in truth else None
    return Stated(
        attempts=_int(att.group(1)) if att else None,
        first=_int(rng.group(1)) if rng else None,
        last=_int(rng.group(2)) if rng else None,
        count=_int(cnt.group(1)) if cnt else None,
    )


def split_header(text: str) -> tuple[str, str]:
    """(the TRUTH text, the log without its header lines). Every `# ` line is the header's (as the tests strip
    it): a TRUTH may go on over `#   ...` lines (../shared/data/training_logs), which belong to it."""
    truth, body, in_truth = "", [], False
    for line in text.splitlines(keepends=True):
        if HEADER.match(line) or line.startswith("# ") or line.strip() == "#":
            in_truth = line.startswith("# TRUTH") or (in_truth and not HEADER.match(line))
            if in_truth:
                part = line[len("# TRUTH") :].lstrip(" :(") if line.startswith("# TRUTH") else line[2:]
                truth = f"{truth} {part.strip()}".strip()
            continue
        body.append(line)
    return truth, "".join(body)


def steps_seen(report: GoodputReport) -> tuple[int | None, int | None]:
    firsts = [a.first_step for a in report.acc.attempts if a.first_step is not None]
    lasts = [a.last_step for a in report.acc.attempts if a.last_step is not None]
    return (min(firsts) if firsts else None, max(lasts) if lasts else None)


def describe(report: GoodputReport) -> list[str]:
    acc = report.acc
    first, last = steps_seen(report)
    wall = f"{acc.wall_s:.1f} s ({report.clock} clock)" if report.timed else "no times"
    bound = " (a bound)" if acc.completed_is_bound else ""
    pct = "unknown" if report.goodput_pct is None else f"{report.goodput_pct:.1f}%"
    if report.goodput_pct is None and report.goodput_pct_at_most is not None and report.productive_at_most_s:
        pct += f" (at most {report.goodput_pct_at_most:.1f}%: {report.productive_at_most_s:.1f} s inside training)"
    elif report.goodput_pct is None and report.goodput_pct_at_most is not None:
        pct += f" (at most {report.goodput_pct_at_most:.1f}%: the wall is at least the training clock)"
        wall = f"at least {wall}"
    lines = [
        f"  scope: wall {wall}; goodput {pct}; steps {first}..{last}, "
        f"{acc.steps_completed} completed{bound}, {acc.steps_redone} redone"
        f"{' (a bound)' if acc.redone_is_bound else ''}",
        "  attempts: " + "; ".join(f"#{a.index} {a.first_step}..{a.last_step} {a.ended}" for a in acc.attempts),
    ]
    buckets = ", ".join(f"{b} {v:.1f} s" for b, v in acc.buckets.items() if v > 0.05)
    if buckets:
        lines.append(f"  buckets: {buckets}")
    lines += [f"  finding: {f.severity} {f.kind}: {f.summary[:150]}" for f in report.findings]
    return lines


def checks(report: GoodputReport, want: Stated) -> list[str]:
    first, last = steps_seen(report)
    got = {
        "attempts": len(report.acc.attempts),
        "first": first,
        "last": last,
        "count": report.acc.steps_completed,
    }
    out = []
    for key, value in got.items():
        expected = getattr(want, key)
        if expected is not None:
            out.append(f"{key} {'ok' if value == expected else 'DIFF'} ({value} vs {expected})")
    return out


def score(path: Path, show_text: bool) -> tuple[int, int]:
    """Print one log's result; return (automatic checks passed, checks made)."""
    truth, body = split_header(path.read_text(errors="replace"))
    print(f"=== {path.name}")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "job.log"
        log.write_text(body)
        report = goodput(Path(tmp))
        if not found_anything(report):
            print("  scope: REFUSED (no training progress found)")
            print(f"  TRUTH: {truth}")
            want = stated(truth)
            made = sum(v is not None for v in vars(want).values())
            return 0, made
        for line in describe(report):
            print(line)
        if show_text:
            from scope.render import render

            print(render(report.result(), "text"))
    print(f"  TRUTH: {truth}")
    result = checks(report, stated(truth))
    if result:
        print("  check: " + "; ".join(result))
    return sum(" ok " in r for r in result), len(result)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dirs", type=Path, nargs="+", help="folders of *.txt logs with # TRUTH: headers")
    p.add_argument("--text", action="store_true", help="print scope's text report under each log too")
    args = p.parse_args()
    passed = made = logs = 0
    for folder in args.dirs:
        for path in sorted(folder.glob("*.txt")):
            ok, n = score(path, args.text)
            passed, made, logs = passed + ok, made + n, logs + 1
    print(f"\n{logs} logs; automatic checks {passed}/{made} (attempts, first/last step, step count where stated)")


if __name__ == "__main__":
    main()
