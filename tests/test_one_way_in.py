"""One way in: every reader takes the inventory the entry point listed (no `Inventory | None` with a walk of
its own for None), and one classifier, the inventory's kinds, says what each file is for every reader."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

from scope.analysis import Context
from scope.inputs import Inventory
from tests import source
from tests.conftest import ROOT, SHARED_DATA, shared_data
from tests.helpers import inventory

PRODUCT = ("scope", "analyzers", "app", "collectors")


def _optional_inventory(annotation: ast.expr | None) -> bool:
    text = ast.unparse(annotation) if annotation is not None else ""
    return "Inventory" in text and ("None" in text or "Optional" in text)


def _public_functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for room in PRODUCT:
        for file in sorted((ROOT / room).rglob("*.py")):
            for node in source.nodes(file):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                    out.append((f"{file.relative_to(ROOT)}:{node.lineno} {node.name}", node))
    return out


def test_no_public_function_takes_an_optional_inventory() -> None:
    """A reader given None would list PATH itself: a second way in, and a second walk of PATH."""
    functions = _public_functions()
    assert len(functions) > 500  # the product's modules were read
    offenders = [
        where
        for where, fn in functions
        for arg in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        if _optional_inventory(arg.annotation)
    ]
    assert offenders == []


def test_the_context_carries_the_inventory_and_no_path() -> None:
    fields = Context.__dataclass_fields__
    assert "inputs" in fields and "path" not in fields
    assert fields["inputs"].type in ("Inventory", Inventory)


# What the shared data's README says each folder holds, as the kinds of its files (first pattern that
# matches a file's path below the folder wins; every file must match one).
README_KINDS: dict[str, list[tuple[str, str]]] = {
    "hta": [("*.json.gz", "trace"), ("*.json", "trace"), ("*.md", "other"), ("*.txt", "log")],
    "hta_reference": [("*.json", "trace"), ("*.csv", "other"), ("*.md", "other"), ("*.txt", "log")],
    "tracelens": [("*.json.gz", "trace")],
    "kineto_dataloader": [("*.pt.trace.json.gz", "trace")],
    "nvrx_fr": [("*/_dump_*", "other"), ("*.log", "log")],  # pickles: the post-mortem sniffs them
    "gpud": [("*.log", "log"), ("*nvidia-smi.nvlink.status.*", "other")],
    "nccl_logs": [("*.log", "log")],
    "failure_corpus": [("*.txt", "log"), ("*.md", "other")],
    "training_logs": [("*.txt", "log"), ("*.md", "other")],
    "straggler_analysis": [
        ("trace-*.parquet", "optrace"),
        ("timeline-*.json.gz", "trace"),  # JSON by its name: its meta beside it makes it the job's timeline
        ("meta-*.yaml", "optrace"),
        ("*.json", "trace"),  # the paper's expected outputs: JSON, which only a header would tell apart
        ("*.md", "other"),
        ("*.txt", "log"),
    ],
    "failure_log_samples.txt": [("*", "log")],
}


def test_every_shared_data_folder_is_described() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"external data not available: {SHARED_DATA}")
    listed = {p.name for p in SHARED_DATA.iterdir() if p.name != "README.md"}
    assert listed == set(README_KINDS)


@pytest.mark.parametrize("folder", sorted(README_KINDS))
def test_one_classifier_gives_each_shared_file_its_kind(folder: str) -> None:
    inv = inventory(shared_data(folder))
    assert inv.entries and not inv.irregular
    wrong = []
    for e in inv.entries:
        rel = e.rel.as_posix()
        expected = next((kind for pattern, kind in README_KINDS[folder] if fnmatch.fnmatch(rel, pattern)), None)
        if e.kind != expected:
            wrong.append((rel, e.kind, expected))
    assert wrong == []


def test_goodput_and_the_post_mortem_read_the_same_kinds() -> None:
    """Goodput's logs and the post-mortem's evidence are the inventory's kinds: the training logs are
    goodput's input (their README aside), the Flight Recorder dumps the post-mortem's, the operation-level
    timeline neither's logs."""
    from scope.analyzers.diagnose.readers.inputs import discover
    from scope.analyzers.goodput.sources import find_logs

    logs = inventory(shared_data("training_logs"))
    assert sorted(p.name for p in find_logs(logs)) == sorted(p.name for p in logs.files("log"))
    assert len(find_logs(logs)) == 3
    fr = inventory(shared_data("nvrx_fr", "gpu_error_1st"))
    jobs = discover(fr).jobs
    assert sorted(j.kind for j in jobs).count("dump") == 16
    assert {j.display for j in jobs if j.kind == "log"} == {"fault_injection.log"}
    timeline = inventory(shared_data("straggler_analysis"))
    assert not any(e.kind == "optrace" for e in timeline.logs())


def test_files_beside_the_job_are_neither_evidence_nor_logs(tmp_path: Path) -> None:
    """Under traces/, counters/ and control/: the profiler's, the sidecar's and a running job's requests;
    neither reader takes them, whatever their suffix (three lists of folders to skip once disagreed)."""
    for rel in ("traces/rank0.json", "traces/notes.txt", "hosts/h/counters/host/0.parquet", "control/stop.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    (tmp_path / "train.log").write_text("step 1\n")
    (tmp_path / "fr").mkdir()
    (tmp_path / "fr" / "rank0.log").write_text("x\n")
    inv = inventory(tmp_path)
    assert {e.rel.as_posix(): e.kind for e in inv.entries} == {
        "train.log": "log",
        "control/stop.log": "control",
        "fr/rank0.log": "dump",
        "hosts/h/counters/host/0.parquet": "counters",
        "traces/notes.txt": "trace_side",
        "traces/rank0.json": "trace",
    }
    assert sorted(e.rel.as_posix() for e in inv.evidence()) == ["fr/rank0.log", "train.log"]
    assert [e.rel.as_posix() for e in inv.logs()] == ["train.log"]
