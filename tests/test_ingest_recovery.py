"""Event-level recovery: a malformed event inside the array costs that event, not the rest of the trace.

Each case takes a real trace from ../shared/data, writes its events one per line (the text Kineto
writes, re-spaced), damages chosen events in one stated way, and checks what both ingest paths (the
native core and SCOPE_NATIVE=0) keep against an independent count: stdlib json on the events that
should survive (the repaired ones kept, the skipped ones left out).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scope.cli import main
from scope.errors import EXIT_OK, EXIT_PARTIAL, ScopeError
from scope.ingest import ingest
from scope.ingest.dispatch import native_enabled
from tests.conftest import shared_data

SAMPLED = ("hta", "trace_filter", "sampled_rank-0.json.gz")
NCCL = ("hta", "nccl_parser_config", "nccl_data.json.gz")
PATHS = [True, False] if native_enabled() else [False]


def _load(*parts: str) -> dict[str, Any]:
    return json.loads(gzip.decompress(shared_data(*parts).read_bytes()))


def _lines(trace: dict[str, Any]) -> tuple[list[str], str]:
    """The events as one JSON text per line, and the header that follows the array."""
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    return [json.dumps(e) for e in trace["traceEvents"]], json.dumps(header)[1:]


def _text(lines: list[str], header_tail: str) -> str:
    return '{"traceEvents": [\n' + ",\n".join(lines) + "\n], " + header_tail


def _x_count(lines: list[str]) -> int:
    return sum(1 for line in lines if json.loads(line).get("ph") == "X")


def _ingest_both(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    reports = []
    for native in PATHS:
        monkeypatch.setenv("SCOPE_NATIVE", "1" if native else "0")
        reports.append(ingest(folder, tmp_path / f"store-{int(native)}", force=True))
    return reports


def _events(report: Any) -> pa.Table:
    rank = report.store.ranks[0]
    table = pq.read_table(report.store.root / "events" / f"rank-{rank:05d}.parquet")
    cols = [c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.table(cols, names=table.schema.names)


def _write(tmp_path: Path, text: str, name: str = "rank0.json") -> Path:
    folder = tmp_path / "src"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def _damage_args(line: str, how: Callable[[str], str]) -> str:
    """Apply how() to the text of the event's args object (the event's last key in Kineto's order)."""
    at = line.index('"args": {') + len('"args": {')
    return line[:at] + how(line[at:])


# (what is injected, the damage, whether the event is kept (repaired; a duplicated key needs no repair: the
# last value wins, as in stdlib json) or skipped, resync points per event:
# a `}, {` inside a string of the bad event is tried as a boundary first, and counted when it fails)
DAMAGES: list[tuple[str, Callable[[str], str], bool, int]] = [
    ("empty value", lambda line: line.replace('"dur": ', '"dur": , "was_dur": ', 1), True, 0),
    ("NaN and Infinity", lambda line: _damage_args(line, lambda a: '"nan": NaN, "inf": -Infinity, ' + a), True, 0),
    ("duplicated key", lambda line: line.replace('"ph": "X"', '"ph": "X", "ph": "X"', 1), True, 0),
    ("bad token", lambda line: _damage_args(line, lambda a: "@@, " + a), False, 1),
    ("unterminated string", lambda line: re.sub(r'("name": "[^"]*)"', r"\1", line, count=1), False, 1),
    ("unclosed event, boundary in a string", lambda line: line.replace('"cat": "', '"cat": "}, {', 1)[:-1], False, 2),
    ("stray bytes between keys", lambda line: line.replace(', "pid"', ' xx "pid"', 1), False, 1),
]


@pytest.mark.shared_data
@pytest.mark.parametrize("what,damage,kept,per_event", DAMAGES, ids=[d[0] for d in DAMAGES])
def test_one_percent_malformed_events_cost_only_themselves(
    what: str,
    damage: Callable[[str], str],
    kept: bool,
    per_event: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines, tail = _lines(_load(*SAMPLED))
    rng = random.Random(21)
    targets = sorted(rng.sample([i for i, line in enumerate(lines) if '"ph": "X"' in line and '"args"' in line], 48))
    damaged = list(lines)
    for i in targets:
        damaged[i] = damage(lines[i])
        assert damaged[i] != lines[i], f"{what}: the damage did not apply to event {i}"
    survivors = lines if kept else [line for i, line in enumerate(lines) if i not in set(targets)]
    folder = _write(tmp_path, _text(damaged, tail))
    reports = _ingest_both(folder, tmp_path, monkeypatch)
    for report in reports:
        assert report.store.meta["ranks"]["0"]["n_events"] == _x_count(survivors), what
        text = "\n".join(map(str, report.warnings))
        if kept:
            assert (f"repaired {len(targets)} events" in text) == (what != "duplicated key"), text
            assert not report.partial
        else:
            said = rf"rank0\.json: skipped {per_event * len(targets)} malformed events .*\(bytes \d+-\d+, "
            assert re.search(said, text), text
            assert report.partial
    if len(reports) == 2:
        assert reports[0].warnings == reports[1].warnings
        assert _events(reports[0]).equals(_events(reports[1]))


@pytest.mark.shared_data
def test_process_group_description_bug_is_repaired_and_keeps_every_collective(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyTorch wrote `"Process Group Description": ,` in every NCCL kernel's args for a while."""
    raw = gzip.decompress(shared_data(*NCCL).read_bytes())
    bugged = raw.replace(b'"Process Group Description": "default_pg"', b'"Process Group Description": ')
    n_bugs = raw.count(b'"Process Group Description": "default_pg"')
    assert n_bugs > 20
    folder = _write(tmp_path, bugged.decode(), "nccl_data.json")
    clean = json.loads(raw)
    want_events = sum(1 for e in clean["traceEvents"] if e.get("ph") == "X")
    with_desc = {e["name"] for e in clean["traceEvents"] if "Process Group Description" in e.get("args", {})}
    x_names = [e["name"] for e in clean["traceEvents"] if e.get("ph") == "X" and e["name"] in with_desc]
    bugged_names = {n: x_names.count(n) for n in with_desc}
    for report in _ingest_both(folder, tmp_path, monkeypatch):
        meta = report.store.meta["ranks"]["0"]
        assert meta["n_events"] == want_events
        assert meta["n_collectives"] == 21  # was 1 of 21 before recovery: the rest of the trace was dropped
        assert any(f"nccl_data.json: repaired {n_bugs} events" in w for w in map(str, report.warnings)), report.warnings
        names = _events(report).column("name").to_pylist()
        assert {n: names.count(n) for n in bugged_names} == bugged_names  # the bugged events keep their rows


@pytest.mark.shared_data
def test_bad_first_and_last_events_and_a_cut_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _load(*SAMPLED)
    lines, tail = _lines(trace)
    damaged = list(lines)
    damaged[0] = damaged[0].replace('"name"', "name", 1)
    damaged[-1] = damaged[-1][:-1] + " oops}"
    survivors = lines[1:-1]
    for report in _ingest_both(_write(tmp_path, _text(damaged, tail)), tmp_path, monkeypatch):
        assert report.store.meta["ranks"]["0"]["n_events"] == _x_count(survivors)
        assert any("skipped 2 malformed events" in w for w in map(str, report.warnings)), report.warnings
        assert report.store.meta["ranks"]["0"]["world_size"] == trace["distributedInfo"]["world_size"]
    # the same damage in the middle, then the file cut inside its last event: both are reported
    damaged = list(lines)
    damaged[100] = damaged[100].replace('"ts"', "ts", 1)
    cut = _text(damaged, tail)
    cut = cut[: cut.rindex('"ph"')]
    for report in _ingest_both(_write(tmp_path / "cut", cut), tmp_path / "cut", monkeypatch):
        assert report.store.meta["ranks"]["0"]["n_events"] == _x_count(lines[:100] + lines[101:-1])
        text = "\n".join(map(str, report.warnings))
        assert "skipped 1 malformed event " in text and "truncated" in text, text


@pytest.mark.shared_data
def test_cli_exit_codes_for_repaired_and_skipped(tmp_path: Path) -> None:
    lines, tail = _lines(_load(*SAMPLED))
    repaired = _write(tmp_path / "a", _text([lines[0].replace('"dur": ', '"dur": , "x": '), *lines[1:]], tail))
    assert main(["ingest", str(repaired), "-q"]) == EXIT_OK
    skipped = _write(tmp_path / "b", _text([lines[0].replace('"dur": ', '"dur": @'), *lines[1:]], tail))
    assert main(["ingest", str(skipped), "-q"]) == EXIT_PARTIAL


@pytest.mark.skipif(len(PATHS) < 2, reason="needs the native core to compare against")
def test_randomly_damaged_traces_give_the_same_store_in_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native fuzzer's mutations (byte flips, cuts, splices, empty values, NaN, stray boundaries, a
    second session), seeded: both paths keep the same events and say the same about each file."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import fuzz_native

    rng = random.Random(2121)
    seeds = [fuzz_native.hand_made_seed(rng) for _ in range(4)]
    for k in range(30):
        data = fuzz_native.mutate(rng.choice(seeds), rng)
        folder = tmp_path / f"case{k}"
        folder.mkdir()
        (folder / "rank0.json").write_bytes(data)
        try:
            reports = _ingest_both(folder, tmp_path / f"stores{k}", monkeypatch)
        except ScopeError as exc:  # unreadable in both (the reference must raise alike: checked below)
            monkeypatch.setenv("SCOPE_NATIVE", "0")
            with pytest.raises(ScopeError) as py_exc:
                ingest(folder, tmp_path / f"py{k}", force=True)
            assert py_exc.value.message == exc.message
            continue
        said = [[w.split(": ", 1)[-1] for w in map(str, r.warnings)] for r in reports]
        assert said[0] == said[1], f"case {k}"
        assert reports[0].store.meta["ranks"] == reports[1].store.meta["ranks"] or _same_counts(reports), f"case {k}"
        assert _events(reports[0]).equals(_events(reports[1])), f"case {k}"


def _same_counts(reports: list[Any]) -> bool:
    keys = ("n_events", "n_steps", "n_collectives", "salvaged")
    a, b = (r.store.meta["ranks"]["0"] for r in reports)
    return all(a[k] == b[k] for k in keys)


def test_a_file_gone_before_its_fingerprint_costs_only_that_file(tmp_path: Path) -> None:
    """A trace removed between the folder walk and the fingerprint threads: its rank gets a fingerprint no
    store matches (so the rank's own read names the file) and the other ranks' fingerprints are unchanged."""
    from scope.ingest import _fingerprints

    kept = tmp_path / "rank0.json"
    kept.write_text("{}")
    gone = tmp_path / "rank1.json"
    fingerprints = _fingerprints({0: [kept], 1: [gone]})
    assert fingerprints[1] == [[str(gone), -1, -1, ""]]
    assert fingerprints[0][0][0] == str(kept.resolve()) and fingerprints[0][0][1] == 2
