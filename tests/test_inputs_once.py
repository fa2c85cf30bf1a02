"""Each input is looked at once per `scope analyze` (scope.inputs): every folder under PATH listed once, each
trace's header read at most once, run.json read once, whatever analyzers read the run. Counted on the
recorded 4-rank run directory in sample_traces/ and on a plain folder of its traces, as `scope analyze`
(scope.analysis.run) reads them."""

from __future__ import annotations

import builtins
import importlib
import io
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scope.analysis import run
from scope.inputs import KINDS, Inventory, classify, rank_in_name

SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces" / "healthy"


class Looks:
    """Counts, under ROOT (scope's store aside: that is output), each folder listing, each trace header
    read and each opening of run.json."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.listed: Counter[str] = Counter()
        self.headers: Counter[str] = Counter()
        self.opened: Counter[str] = Counter()  # files opened for reading

    @property
    def manifest_reads(self) -> int:
        return self.opened["run.json"]

    def rel(self, path: Any) -> str | None:
        if isinstance(path, int):
            return None
        p = Path(os.fsdecode(os.fspath(path))).resolve()
        if p != self.root and self.root not in p.parents:
            return None
        rel = p.relative_to(self.root)
        return None if rel.parts[:1] in (("store",), ("scope_store",)) else str(rel)

    def lists(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(path: Any = ".", *args: Any) -> Any:
            rel = self.rel(path)
            if rel is not None:
                self.listed[rel] += 1
            return original(path, *args)

        return counted

    def opens(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(file: Any, *args: Any, **kwargs: Any) -> Any:
            rel = self.rel(file)
            if rel is not None and not set(str(args[0] if args else kwargs.get("mode", "r"))) & set("wax+"):
                self.opened[rel] += 1
            return original(file, *args, **kwargs)

        return counted

    def header_reads(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
            self.headers[self.rel(path) or str(path)] += 1
            return original(path, *args, **kwargs)

        return counted


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path], Looks]]:
    def watch(root: Path) -> Looks:
        seen = Looks(root)
        # os.walk, Path.glob/rglob/iterdir and scandir loops all list a folder through these two.
        monkeypatch.setattr(os, "scandir", seen.lists(os.scandir))
        monkeypatch.setattr(os, "listdir", seen.lists(os.listdir))
        monkeypatch.setattr(builtins, "open", seen.opens(builtins.open))
        monkeypatch.setattr(io, "open", seen.opens(io.open))
        reader = importlib.import_module("scope.ingest.reader")
        monkeypatch.setattr(reader, "read_header", seen.header_reads(reader.read_header))
        return seen

    yield watch


def _trace_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob("ranks/*/traces/*.json*"))


def test_a_run_directory_is_listed_once(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    folders = {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_dir()} | {"."}
    seen = looks(run_dir)
    analysis = run(run_dir, {"workers": 1})
    assert sorted(analysis.run.get("traced_ranks", [])) == [0, 1, 2, 3]
    assert {k: n for k, n in seen.listed.items() if n > 1} == {}, "a folder listed more than once"
    assert set(seen.listed) == folders, "every folder of the run is listed (nothing was missed)"
    assert all(n <= 1 for n in seen.headers.values()), seen.headers  # the folder names the rank: no need
    assert seen.manifest_reads == 1


def test_a_trace_folder_is_listed_once_and_each_header_read_once(
    tmp_path: Path, looks: Callable[[Path], Looks]
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    traces = _trace_files(SAMPLE)
    for f in traces:
        shutil.copy(f, folder / f.name)
    seen = looks(folder)
    analysis = run(folder, {"workers": 1})
    assert sorted(analysis.run.get("traced_ranks", [])) == [0, 1, 2, 3]
    assert seen.listed == Counter({".": 1})
    assert seen.headers == Counter({f.name: 1 for f in traces}), "one header read per trace"
    assert seen.manifest_reads == 0


def test_a_second_analysis_reuses_the_store_and_still_lists_once(
    tmp_path: Path, looks: Callable[[Path], Looks]
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    run(run_dir, {"workers": 1})
    seen = looks(run_dir)
    run(run_dir, {"workers": 1})
    assert {k: n for k, n in seen.listed.items() if n > 1} == {}
    assert seen.manifest_reads == 1


def test_logs_alone_are_listed_once(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    """No trace, no store: the diagnosis of logs alone reads the folder once too (the no-store paths that
    used to look again: whether anything but traces is there, and the run info)."""
    folder = tmp_path / "logs"
    (folder / "node1").mkdir(parents=True)
    (folder / "rank0.log").write_text("step 1\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    (folder / "node1" / "rank1.log").write_text("step 1\n")
    seen = looks(folder)
    analysis = run(folder, {"workers": 1})
    assert analysis.findings, "the failure in rank0.log is diagnosed"
    assert seen.listed == Counter({".": 1, "node1": 1})


def test_the_inventory_sorts_a_run_directory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    (run_dir / "scope.toml").write_text('comm_kernels = ["my_kernel=all_reduce"]\n')
    counters = run_dir / "hosts" / "vm-0" / "counters" / "host"
    counters.mkdir(parents=True)
    (counters / "0001.parquet").write_bytes(b"")
    (run_dir / "store").mkdir(exist_ok=True)
    (run_dir / "store" / "meta.json").write_text("{}")
    inv = Inventory.scan(run_dir)
    assert inv.layout == "run" and inv.manifest is not None and inv.manifest_error is None
    assert sorted(str(p.relative_to(run_dir)) for p in inv.traces()) == [
        str(p.relative_to(SAMPLE)) for p in _trace_files(SAMPLE)
    ]
    assert {e.rank for e in inv.of_kind("trace")} == {0, 1, 2, 3}
    assert inv.config("scope.toml") == run_dir / "scope.toml"
    assert inv.counter_chunks("host") == {"vm-0": [counters / "0001.parquet"]}
    assert not any(e.rel.parts[0] == "store" for e in inv.entries), "scope's store is output, not input"
    kinds = {e.rel.name: e.kind for e in inv.entries if e.rel.parts[:2] == ("ranks", "0")}
    assert kinds["hook.log"] == "own_log" and kinds["stdout.log"] == "log" and kinds["heartbeat.json"] == "heartbeat"
    assert all(e.kind == "dump" for e in inv.entries if "fr" in e.dirs)
    assert inv.has_non_trace_inputs()


def test_kinds_are_a_table_with_reasons() -> None:
    assert all(k.why for k in KINDS) and KINDS[-1].name == "other"
    assert classify(Path("ranks/3/traces/rank3.step1-2.pt.trace.json.gz"), "run") == "trace"
    assert classify(Path("stray.json"), "run") != "trace", "in a run directory traces live under ranks/<r>/traces"
    assert classify(Path("deep/rank3.json"), "folder") == "trace"
    assert classify(Path("run.json"), "run") == "manifest"


@pytest.mark.parametrize(
    ("name", "rank"),
    [("rank3.pt.trace.json", 3), ("worker0.rank-12.json", 12), ("trace_rank_5.json.gz", 5), ("RANK7.log", 7)],
)
def test_one_rank_in_a_file_name_rule(name: str, rank: int) -> None:
    assert rank_in_name(name) == rank


def test_a_run_size_in_a_name_is_not_a_rank() -> None:
    assert rank_in_name("aws_efa_16rank_2node_healthy.log") is None
    assert rank_in_name("frank1.log") is None


def test_scope_diagnose_and_scope_ingest_list_once(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    """The commands that read PATH without the whole analysis take the same inventory."""
    from scope.cli import main

    folder = tmp_path / "logs"
    (folder / "node1").mkdir(parents=True)
    (folder / "rank0.log").write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    (folder / "node1" / "notes.bin").write_bytes(b"\x00\x01binary")
    seen = looks(folder)
    main(["diagnose", str(folder)])
    assert seen.listed == Counter({".": 1, "node1": 1})

    traces = tmp_path / "traces"
    traces.mkdir()
    for f in _trace_files(SAMPLE):
        shutil.copy(f, traces / f.name)
    seen = looks(traces)
    assert main(["ingest", "--quiet", "--workers", "1", str(traces)]) == 0
    assert seen.listed == Counter({".": 1})
    assert set(seen.headers.values()) == {1} and len(seen.headers) == 4


def test_a_config_file_is_read_once(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    """scope.toml holds both the communication-kernel rules (ingest) and the signature rows (diagnose)."""
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE, run_dir)
    (run_dir / "scope.toml").write_text(
        'comm_kernels = ["my_fused_kernel=all_reduce"]\n\n[[signatures]]\nid = "site_check"\n'
        'patterns = ["SITE CHECK FAILED"]\nkind = "hardware_fault"\ncause = "hardware"\n'
        'meaning = "The site check failed."\nremedy = "Drain the node."\n'
    )
    (run_dir / "ranks" / "1" / "stderr.log").write_text("SITE CHECK FAILED on this node\n")
    seen = looks(run_dir)
    analysis = run(run_dir, {"workers": 1})
    assert "user:my_fused_kernel=all_reduce" in analysis.run["comm_kernels"], "the rule was read"
    assert any("site_check" in str(f.metrics) + f.summary + " ".join(f.evidence) for f in analysis.findings), [
        f.summary for f in analysis.findings
    ]
    assert seen.opened["scope.toml"] == 1


def test_goodput_records_come_from_the_inventory(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    """A run directory's hook records (ranks/<r>/attempts.jsonl): the same goodput from the inventory as
    from a look of its own, and the analysis lists each folder once."""
    from scope.analyzers.goodput import goodput

    from tests.test_goodput_records import _synthetic_run

    _synthetic_run(tmp_path / "run", 4, 1000)
    run_dir = tmp_path / "run"
    alone, listed = goodput(run_dir), goodput(Inventory.scan(run_dir))
    assert listed.clock == alone.clock == "records"
    assert (listed.acc.steps_completed, listed.acc.steps_redone) == (alone.acc.steps_completed, 100) == (1000, 100)
    assert listed.ranks == alone.ranks and len(listed.ranks) == 4
    seen = looks(run_dir)
    run(run_dir, {"workers": 1})
    assert {k: n for k, n in seen.listed.items() if n > 1} == {}


def test_a_store_given_inside_the_input_is_not_read_as_input(tmp_path: Path) -> None:
    """--store DIR inside the trace folder: its meta.json and analysis.json are output, never traces, so a
    second analysis reads the same four ranks with no unreadable file."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for f in _trace_files(SAMPLE):
        shutil.copy(f, folder / f.name)
    opts = {"workers": 1, "store": folder / "my_store"}
    first = run(folder, opts)
    second = run(folder, opts)
    assert (folder / "my_store" / "meta.json").is_file()
    assert not any(e.rel.parts[0] == "my_store" for e in Inventory.scan(folder, folder / "my_store").entries)
    assert second.run["traced_ranks"] == first.run["traced_ranks"] == [0, 1, 2, 3]
    assert second.warnings == first.warnings and not second.partial


def test_scope_goodput_lists_its_path_once(tmp_path: Path, looks: Callable[[Path], Looks]) -> None:
    """`scope goodput` reads the logs and, a failed attempt among them, diagnoses it: one listing of PATH
    for both (it listed PATH twice: goodput's walk, then the diagnosis')."""
    from scope.cli import main

    folder = tmp_path / "logs"
    (folder / "sub").mkdir(parents=True)
    restart = Path(__file__).parent / "data" / "goodput" / "torchtitan_restart.log"
    shutil.copy(restart, folder / "sub" / restart.name)
    seen = looks(folder)
    assert main(["goodput", str(folder), "--json", str(tmp_path / "g.json")]) == 0
    assert seen.listed == {".": 1, "sub": 1}
    assert json.loads((tmp_path / "g.json").read_text())["restarts"] == 1
