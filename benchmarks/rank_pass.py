"""The per-rank pass against ingest, in CPU time per rank; and every per-rank table checked against a saved copy.

Run by hand:  .venv/bin/python benchmarks/rank_pass.py [--ranks 64 256] [--source DIR] [--profile N]
              .venv/bin/python benchmarks/rank_pass.py --save DIR  PATH...   (tables of each PATH, kept)
              .venv/bin/python benchmarks/rank_pass.py --check DIR           (the same PATHs, compared)

Timing: for each rank count, benchmarks/synth.py builds a run from --source (default: the scale synth's,
../shared/data/hta/nccl_parser_config, ~27k events a rank), then ingest and the pass run in this process
(one worker) and their CPU time (process_time: the machine is shared, wall time is not the work) is given
per rank, with the ratio pass / ingest (the target: at most 1). --profile N prints the N costliest functions
of the pass (cProfile, by own time).

Identity: --save writes every table the registry declares (scope/rankpass/registry.py) for each PATH, as
pickles under DIR; --check makes them again with the code as it is now and says which differ. Save before a
change to the pass, check after it: the tables must be identical.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from scope.analysis import Context
from scope.ingest import ingest
from scope.inputs import Inventory

ROOT = Path(__file__).resolve().parent.parent
if not __package__:
    sys.path.insert(0, str(ROOT))

from benchmarks.shared_data import shared_data  # noqa: E402

DEFAULT_SOURCE = shared_data() / "hta" / "nccl_parser_config"


def _context(source: Path, store_dir: Path) -> Context:
    store = ingest(source, store_dir, workers=1, force=True).store.for_analysis()
    return Context(inputs=Inventory.scan(source), store=store, options={"workers": 1})


def time_case(ranks: int, source: Path, work: Path, profile: int) -> dict[str, float]:
    run = work / f"run{ranks}"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "synth.py"), "--ranks", str(ranks), "--from", str(source)]
    subprocess.run([*cmd, "--out", str(run)], check=True, capture_output=True)
    from scope.rankpass import match  # noqa: F401 (imported before the timing starts)
    from scope.rankpass.registry import default_registry

    default_registry()
    c0 = time.process_time()
    store = ingest(run, work / f"store{ranks}", workers=1, force=True).store.for_analysis()
    ingest_cpu = time.process_time() - c0
    ctx = Context(inputs=Inventory.scan(run), store=store, options={"workers": 1})
    c0 = time.process_time()
    ctx.matched  # noqa: B018 (the cross-rank matching, timed apart: it is no per-rank work)
    match_cpu = time.process_time() - c0
    prof = cProfile.Profile() if profile else None
    c0 = time.process_time()
    if prof:
        prof.enable()
    for name in ctx.rank_tables.wanted:
        ctx.table(name)
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(profile)
    pass_cpu = time.process_time() - c0
    return {"ingest": 1e3 * ingest_cpu / ranks, "matching": 1e3 * match_cpu / ranks, "pass": 1e3 * pass_cpu / ranks}


def save(out: Path, paths: list[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="scope-rankpass-") as tmp:
        for i, path in enumerate(paths):
            ctx = _context(path, Path(tmp) / str(i))
            where = out / str(i)
            where.mkdir(parents=True, exist_ok=True)
            (where / "source.txt").write_text(str(path.resolve()))
            for name in ctx.rank_tables.wanted:
                ctx.table(name).to_pickle(where / f"{name}.pkl")
            print(f"saved {path}")


def check(saved: Path) -> int:
    differ = 0
    with tempfile.TemporaryDirectory(prefix="scope-rankpass-") as tmp:
        for where in sorted((p for p in saved.iterdir() if p.is_dir()), key=lambda p: int(p.name)):
            path = Path((where / "source.txt").read_text())
            ctx = _context(path, Path(tmp) / where.name)
            for kept in sorted(where.glob("*.pkl")):
                try:
                    pd.testing.assert_frame_equal(ctx.table(kept.stem), pd.read_pickle(kept), check_exact=True)
                except AssertionError as exc:
                    differ += 1
                    print(f"DIFFERS {path} {kept.stem}: {str(exc).splitlines()[0]}")
    print(f"{differ} table(s) differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    parser.add_argument("--save", type=Path, default=None, metavar="DIR")
    parser.add_argument("--check", type=Path, default=None, metavar="DIR")
    parser.add_argument("paths", type=Path, nargs="*")
    args = parser.parse_args()
    if args.save:
        save(args.save, args.paths)
        return 0
    if args.check:
        return check(args.check)
    print(f"{'ranks':>6}{'ingest ms/rank':>16}{'matching ms/rank':>18}{'pass ms/rank':>14}{'pass/ingest':>13}  (CPU)")
    for ranks in args.ranks:
        with tempfile.TemporaryDirectory(prefix="scope-rankpass-") as tmp:
            r = time_case(ranks, args.source, Path(tmp), args.profile)
        print(f"{ranks:>6}{r['ingest']:>16.1f}{r['matching']:>18.1f}{r['pass']:>14.1f}{r['pass'] / r['ingest']:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
