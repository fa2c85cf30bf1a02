"""Accuracy of `scope diagnose` on real failure logs with confirmed root causes.

    .venv/bin/python benchmarks/diagnose_accuracy.py [FOLDER ...] [--no-samples] [--json FILE] [-v]

Default: ../shared/data/failure_corpus (one case per file, `# KEY: value` header stripped, each log
diagnosed alone as the `job.log` of a folder) and every `# source:` block of the 15 groups of
../shared/data/failure_log_samples.txt. Prints top-1 accuracy overall and per expected kind, the
confusion table, culprit-rank accuracy (cases with EXPECTED RANKS), failing logs with no failure
finding, false alarms on healthy controls, the remedy fit of every failing case (the words its row of
benchmarks/remedy_expectations.py requires in the top finding; -v prints it per case, --json as
remedy_fit_per_case), and the time per case. --remedy-report judges every failing case's printed remedy against
its REMEDY header's key tokens (benchmarks/remedy_fit.py): fit / partly / miss with both texts, and totals.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

if not __package__:  # run as a script: `from benchmarks import ...` needs the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.failure_corpus import Case, Outcome, Scores, corpus_cases, remedy_verdict, run_cases, sample_cases
from benchmarks.shared_data import shared_data

DATA = shared_data()  # SCOPE_SHARED_DATA, else shared/data above the checkout


def print_scores(title: str, scores: Scores, verbose: bool) -> None:
    d = scores.to_dict()
    right = sum(o.correct for o in scores.outcomes)
    print(f"== {title}: {d['cases']} cases")
    print(f"top-1: {right}/{d['cases']} = {d['top1']:.1%}")
    print("per expected kind (first listed):")
    for kind, (r, n) in scores.per_kind().items():
        print(f"  {kind:<20} {r}/{n}")
    print("confusion (first expected kind -> got: count; 'wrong' = got is none of the case's expected kinds):")
    wrong = Counter((o.case.expected[0], o.got) for o in scores.outcomes if not o.correct)
    for (exp, got), n in sorted(scores.confusion().items()):
        mark = f"  ({wrong[(exp, got)]} wrong)" if wrong[(exp, got)] else ""
        print(f"  {exp:<20} -> {got:<20} {n}{mark}")
    rc = scores.rank_cases
    print(f"culprit ranks exact: {sum(bool(o.ranks_exact) for o in rc)}/{len(rc)} = {d['rank_accuracy']:.1%}")
    print(f"failing logs with no failure finding: {len(scores.silent_failures)}")
    print(f"false alarms on healthy controls: {len(scores.false_alarms)}")
    rem = scores.remedy_cases
    named = sum(bool(o.remedy_match) for o in rem)
    print(
        f"remedy named by the top finding: {named}/{len(rem)} = {d['remedy_match']:.1%}"
        " (cases whose REMEDY names an env var, flag, call or component)"
    )
    fit = scores.fit_cases
    fit_right = [o for o in fit if o.correct]
    print(
        f"remedy fit (benchmarks/remedy_expectations.py, every failing case): "
        f"{sum(bool(o.remedy_fit) for o in fit)}/{len(fit)} = {d['remedy_fit']:.1%}; "
        f"of those classified right: {sum(bool(o.remedy_fit) for o in fit_right)}/{len(fit_right)}"
    )
    print(f"time per case: mean {d['seconds_per_case'] * 1000:.1f} ms, max {d['max_seconds'] * 1000:.1f} ms")
    for o in scores.outcomes:
        bad_ranks = o.ranks_exact is False
        if verbose or not o.correct or bad_ranks:
            flag = "ok " if o.correct else "BAD"
            extra = f" ranks {o.ranks} (expected {list(o.case.ranks or ())})" if bad_ranks else ""
            fits = "" if o.remedy_fit is None else (" remedy fits" if o.remedy_fit else " remedy does not fit")
            print(f"  {flag} {o.case.name}: expected {','.join(o.case.expected)} got {o.got}{fits}{extra}")
            if o.summary and (verbose or not o.correct):
                print(f"      {o.summary[:160]}")
    for o in fit:
        if not o.remedy_fit:
            print(f"  remedy unfit {o.case.name}: needs {o.case_groups()}")
            print(f"      suggested: {(o.suggestion or o.summary)[:150]!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="corpus folders (default: the shared corpus)")
    parser.add_argument("--no-samples", action="store_true", help="skip failure_log_samples.txt")
    parser.add_argument("--json", type=Path, default=None, help="write the scores as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every case")
    parser.add_argument(
        "--remedy-report", action="store_true", help="judge each printed remedy against the case's REMEDY header"
    )
    args = parser.parse_args()
    folders = args.folders or [DATA / "failure_corpus"]
    sets: dict[str, list[Case]] = {str(f): corpus_cases(f) for f in folders}
    samples = DATA / "failure_log_samples.txt"
    if not args.no_samples and samples.exists():
        sets["failure_log_samples.txt"] = sample_cases(samples)
    out = {}
    everything = Scores()
    for title, cases in sets.items():
        scores = run_cases(cases)
        print_scores(title, scores, args.verbose)
        print()
        out[title] = scores.to_dict()
        if args.remedy_report:
            out[title]["remedy_report"] = print_remedy_report(title, scores.outcomes)
        everything.outcomes.extend(scores.outcomes)
    if len(sets) > 1:
        print(f"== all: top-1 {everything.top1:.1%} of {len(everything.outcomes)} cases")
        out["all"] = everything.to_dict()
    out["emitters"] = print_emitter_coverage()
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def print_remedy_report(title: str, outcomes: list[Outcome]) -> dict[str, object]:
    """fit / partly / miss per failing case with both texts, and the totals (all, and those classified right)."""
    print(f"== remedy report: {title}")
    verdicts: dict[str, str] = {}
    right: Counter[str] = Counter()
    for o in outcomes:
        if o.case.healthy:
            continue
        fit = remedy_verdict(o)
        verdicts[o.case.name] = fit.verdict
        if o.correct:
            right[fit.verdict] += 1
        if fit.verdict == "unscored":
            continue
        mark = "" if o.correct else f"  (classified {o.got}, expected {','.join(o.case.expected)})"
        print(f"  {fit.verdict:<7} {o.case.name}{mark}: named {fit.named or '-'}, missing {fit.missing or '-'}")
        print(f"      REMEDY:  {o.case.remedy[:300]}")
        print(f"      printed: {(o.printed or '(no failure finding)')[:300]}")
    total = Counter(verdicts.values())
    scored = sum(n for v, n in total.items() if v != "unscored")
    scored_right = sum(n for v, n in right.items() if v != "unscored")
    print(
        f"remedy report: fit {total['fit']}, partly {total['partly']}, miss {total['miss']} of {scored} scored "
        f"({total['unscored']} unscored); of those classified right: fit {right['fit']}/{scored_right}, "
        f"partly {right['partly']}, miss {right['miss']}\n"
    )
    return {"per_case": verdicts, "totals": dict(total), "classified_right": dict(right)}


def print_emitter_coverage() -> dict[str, dict[str, list[int]]]:
    """Message classes per emitting source file: how many the tables classify, and how many of those a line of
    the class gets from scope as the table says (NCCL WARN formats of 2.18-2.28; c10d / torchrun / gloo)."""
    from scope.analyzers.diagnose.knowledge import emitters

    from benchmarks import emitter_agreement

    out: dict[str, dict[str, list[int]]] = {"nccl": {}, "c10d": {}}
    print("\n== emitter coverage: message classes per source file (classified by the table / scope agrees)")
    table = emitters.coverage()
    agree = emitter_agreement.agreement()
    total = [0, 0, 0]
    for source, (specific, n) in table.items():
        ok = agree[source][0]
        out["nccl"][source] = [n, n, ok]
        total = [total[0] + n, total[1] + n, total[2] + ok]
        print(
            f"  nccl {source:<34} {n:>3} classes, {n:>3} classified ({specific} beyond 'NCCL internal'), {ok:>3} agree"
        )
    print(f"  nccl total: {total[0]} WARN classes, {total[1]} classified, {total[2]} agree ({total[2] / total[0]:.1%})")
    c_total = [0, 0]
    for source, (ok, n) in emitter_agreement.c10d_agreement().items():
        out["c10d"][source] = [n, n, ok]
        c_total = [c_total[0] + n, c_total[1] + ok]
        print(f"  c10d {source:<62} {n:>2} classes, {ok:>2} agree")
    print(f"  c10d/torchrun/gloo total: {c_total[0]} classes, {c_total[1]} agree")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
