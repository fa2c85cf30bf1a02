"""`scope diagnose` end to end: a run directory, the CLI and its JSON, the analyzer contract, bad input."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from scope.analyzers import ANALYZERS, analyzer
from scope.analyzers import diagnose as diagnose_module
from scope.analyzers.diagnose import FR_COLUMNS, HOST_COLUMNS, diagnose

from scope.cli import main
from scope.manifest import HostInfo, RankInfo, RunManifest, write_manifest
from scope.result import records
from tests.conftest import shared_data
from tests.helpers import context

T0 = "2025-03-21T02:07:08"


def make_run(root: Path) -> Path:
    """4 ranks on 2 hosts; host node-b loses a GPU (Xid 79) and the others time out 10 minutes later."""
    ranks = [
        RankInfo(
            rank=r,
            host="node-a" if r < 2 else "node-b",
            local_rank=r % 2,
            pid=100 + r,
            exit_code=-6 if r != 2 else -15,
            signal="SIGABRT" if r != 2 else "SIGTERM",
        )
        for r in range(4)
    ]
    write_manifest(
        root,
        RunManifest(
            run_id="t",
            backend="nccl",
            world_size=4,
            ranks=ranks,
            status="failed",
            hosts=[HostInfo("node-a", [0, 1]), HostInfo("node-b", [2, 3])],
        ),
    )
    (root / "hosts" / "node-b").mkdir(parents=True)
    (root / "hosts" / "node-b" / "kmsg.log").write_text(
        "kern  :info  : 2025-03-21T01:57:00,000000+00:00 nvidia-nvswitch0: open (major=510)\n"
        "kern  :err   : 2025-03-21T01:57:07,100000+00:00 NVRM: Xid (PCI:0000:44:00): 79, pid='<unknown>', "
        "name=<unknown>, GPU has fallen off the bus.\n"
    )
    for r in range(4):
        d = root / "ranks" / str(r)
        d.mkdir(parents=True)
        (d / "stdout.log").write_text("step 100 loss 2.31\n")
        if r == 2:
            (d / "stderr.log").write_text("[rank2]: RuntimeError: CUDA error: unspecified launch failure\n")
            continue
        (d / "stderr.log").write_text(
            f"[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
            "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n"
        )
    return root


def test_run_directory_root_cause_is_the_lost_gpu_with_host_and_ranks(tmp_path: Path) -> None:
    report = diagnose(make_run(tmp_path))
    top = report.findings[0]
    assert top.kind == "hardware_fault" and top.metrics["details"]["xid"] == 79
    assert top.metrics["hosts"] == ["node-b"] and top.ranks == [2, 3]
    assert top.evidence == ["hosts/node-b/kmsg.log:2"]
    assert "drain" in top.suggestion.lower() and top.metrics["first_seen"].startswith("2025-03-21T01:57:07")
    cascade = top.metrics["cascade"]
    assert cascade["by_code"]["c10d_watchdog_timeout"] == 3 and {0, 1, 3} <= set(cascade["ranks"])
    # rank 2's own CUDA error comes after the Xid on its host: part of the same root cause
    assert not any(f.kind == "crash" and f.severity == "critical" for f in report.findings)
    hosts = {h["host"]: h for h in records(report.tables["hosts"])}
    assert hosts["node-b"]["status"] == "root cause" and hosts["node-b"]["ranks"] == [2, 3]
    assert hosts["node-a"]["status"] != "root cause"


def test_cli_writes_json_with_findings_hosts_and_fr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "diag.json"
    assert main(["diagnose", str(shared_data("nvrx_fr", "lock_gil_1st")), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ROOT CAUSE [hang] Ranks 9, 14 never joined all_to_all #45265 on PG 72" in printed
    data = json.loads(out.read_text())
    assert {"scope_version", "findings", "hosts", "fr"} <= set(data)
    assert data["findings"][0]["ranks"] == [9, 14]
    rows = [r for r in data["fr"] if r["pg"] == "72"]
    assert {"pg", "rank", "last_enqueued", "last_completed"} <= set(rows[0])
    assert sorted(r["rank"] for r in rows if r["role"] == "culprit") == [9, 14]


def test_cli_json_to_stdout_is_pure_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(make_run(tmp_path)), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["findings"][0]["kind"] == "hardware_fault"
    assert {h["host"] for h in data["hosts"]} == {"node-a", "node-b"}


@pytest.mark.parametrize("case", ["made", "nvrx_fr"])
def test_diagnose_json_is_the_diagnosis_scope_analyze_gives(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One result model: `scope diagnose --json` is the Analysis JSON of the diagnose analyzer alone, equal to
    `scope analyze --json` of the same post-mortem folder in findings (ids and order included), tables, run
    and warnings; the diagnosis adds its own sections (path, verdict, nccl, inputs, elapsed_s)."""
    import shutil

    if case == "made":
        run = make_run(tmp_path / "run")
    else:
        run = tmp_path / "fr"
        shutil.copytree(shared_data("nvrx_fr", "lock_gil_1st"), run)
        run.chmod(0o755)  # the shared copy is read-only: the analysis would go to the cache, with a note
    code = main(["diagnose", str(run), "--json", "-"])
    diagnosed = json.loads(capsys.readouterr().out)
    assert main(["analyze", str(run), "--json", "-", "-q"]) == code
    analyzed = json.loads(capsys.readouterr().out)
    assert diagnosed["findings"] and diagnosed["findings"] == analyzed["findings"]
    assert all(f["id"] for f in diagnosed["findings"])
    # the analysis alone records its inputs' signature (its store's staleness check; diagnose keeps no store)
    analyzed["run"].pop("input_signature", None)
    for key in ("scope_version", "run", "warnings", "warning_records", "fr", "hosts"):
        assert diagnosed[key] == analyzed[key], key
    assert diagnosed["verdict"] == diagnosed["findings"][0]["summary"]
    assert {"path", "nccl", "inputs", "elapsed_s"} <= set(diagnosed) and not {"nccl", "inputs"} & set(analyzed)


def test_analyzer_contract_returns_fr_and_hosts_tables(tmp_path: Path) -> None:
    assert analyzer("diagnose") in ANALYZERS and analyzer("diagnose").load() is diagnose_module.analyze
    result = diagnose_module.analyze(context(shared_data("nvrx_fr", "gpu_error_1st")))
    assert [f.ranks for f in result.findings] == [[12], [14]]
    fr, hosts = result.tables["fr"], result.tables["hosts"]
    assert list(fr.columns) == FR_COLUMNS and list(hosts.columns) == HOST_COLUMNS
    culprit = fr[(fr["pg"] == "74") & (fr["role"] == "culprit")]
    assert culprit["rank"].tolist() == [12] and culprit["last_enqueued"].tolist() == [20536]
    healthy = diagnose_module.analyze(context(make_run(tmp_path / "run")))
    assert set(healthy.tables["hosts"]["host"]) == {"node-a", "node-b"}


def test_a_trace_file_gives_the_analyzer_nothing_to_do(tmp_path: Path) -> None:
    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    assert diagnose_module.analyze(context(trace)).findings == []


def test_bad_inputs_exit_with_a_message_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(tmp_path / "missing")]) == 3
    bad = tmp_path / "dumps" / "_dump_1"
    bad.parent.mkdir()
    bad.write_bytes(pickle.dumps({"entries": []})[:7])
    assert main(["diagnose", str(bad)]) == 3
    assert str(bad) in capsys.readouterr().err
    good = pickle.loads(shared_data("nvrx_fr", "lock_gil_1st", "_dump_8").read_bytes())
    (bad.parent / "_dump_0").write_bytes(pickle.dumps(good))
    assert main(["diagnose", str(bad.parent)]) == 4  # one dump unreadable: diagnosed with a warning
    assert "_dump_1" in capsys.readouterr().out


def test_empty_folder_is_no_failure(tmp_path: Path) -> None:
    report = diagnose(tmp_path)
    assert report.findings == [] and report.sections["verdict"] == "no failure found"


def test_scale_synthetic_run_names_the_two_faulted_ranks_among_many(tmp_path: Path) -> None:
    """benchmarks/diagnose.py at 128 ranks (the benchmark itself runs 1,024 by hand)."""
    shared_data("nvrx_fr", "lock_gil_1st")
    shared_data("nccl_logs", "aws_efa_16rank_2node_healthy.log")
    from benchmarks.diagnose import synthesize

    truth = synthesize(tmp_path / "run", ranks=128)
    report = diagnose(tmp_path / "run")
    top = report.findings[0]
    assert top.ranks == truth["culprits"] and top.metrics["details"]["pg"] == truth["pg"]
    hosts = sorted({f"node{r // 8:03d}" for r in truth["culprits"]})
    assert top.metrics["hosts"] == hosts and report.sections["inputs"]["ranks"] == 128
    assert {r for f in report.findings if f.severity == "critical" for r in f.ranks} == set(truth["culprits"])
    assert report.sections["elapsed_s"] < 10
