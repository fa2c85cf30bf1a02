"""What a new user meets in the first hour at the terminal: a closed pipe, a narrow terminal, a misspelled
option, a value out of range, and the diagnosis text of a folder of Flight Recorder dumps."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scope.cli import EXIT_BROKEN_PIPE, main
from scope.finding import Finding
from scope.render.diagnosis import _finding_lines
from tests.conftest import ROOT, shared_data

SCOPE = [sys.executable, "-m", "scope"]
F_SETPIPE_SZ = 1031  # Linux: fcntl.F_SETPIPE_SZ from Python 3.10 on some builds only


def scope_env(columns: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOPE_")}
    if columns:
        env["COLUMNS"] = str(columns)
    return env


@pytest.mark.subprocess
def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """`scope diagnose --signatures | head -15`: the reader goes away after a few lines. The pipe is made
    small (4 KiB), so the command is still writing when it closes, every time (not only when the output
    outgrows a 64 KiB pipe, as it did once in three tries)."""
    for _ in range(3):
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        proc = subprocess.Popen(
            [*SCOPE, "diagnose", "--signatures"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            env=scope_env(),
        )
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            assert reader.read(200)  # the first lines, then `head` exits
        err = proc.communicate(timeout=60)[1].decode()
        assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err, err
        assert proc.returncode == EXIT_BROKEN_PIPE, (proc.returncode, err)


def lines_too_long(text: str, width: int) -> list[str]:
    """Lines over `width` that could have been broken (one that holds a word too long for any line - a URL,
    a path - is kept whole, on a line of its own after its label)."""
    return [
        line
        for line in text.splitlines()
        if len(line) > width and max(map(len, line.split())) < width - 20 and " " in line.strip()
    ]


@pytest.mark.shared_data
@pytest.mark.parametrize("columns", [60, 100])
@pytest.mark.subprocess
def test_diagnose_wraps_to_the_terminal_width(columns: int, tmp_path: Path) -> None:
    folder = shared_data("nvrx_fr", "gpu_error_1st")
    out = subprocess.run(
        [*SCOPE, "diagnose", str(folder)], capture_output=True, text=True, env=scope_env(columns), cwd=tmp_path
    )
    assert out.returncode in (0, 4), out.stderr
    assert "ROOT CAUSE" in out.stdout
    assert lines_too_long(out.stdout, columns) == []
    signatures = subprocess.run(
        [*SCOPE, "diagnose", "--signatures"], capture_output=True, text=True, env=scope_env(columns), cwd=tmp_path
    )
    assert lines_too_long(signatures.stdout, columns) == []


@pytest.mark.shared_data
@pytest.mark.subprocess
def test_diagnose_text_names_dump_entries_and_prints_no_placeholders(tmp_path: Path) -> None:
    folder = shared_data("nvrx_fr", "gpu_error_1st")
    out = subprocess.run([*SCOPE, "diagnose", str(folder)], capture_output=True, text=True, env=scope_env(100))
    assert "hosts: ?" not in out.stdout and "ranks: -" not in out.stdout
    # a dump is a pickle: no 'file:line' into it, but the entry and its call
    assert not re.search(r"_dump_\d+:\d+", out.stdout), out.stdout
    assert re.search(r"evidence: _dump_13, entry \d+: all_to_all #20537 on PG 74", out.stdout), out.stdout


def test_a_finding_without_known_ranks_or_hosts_says_nothing_about_them() -> None:
    finding = Finding(
        kind="nccl_error",
        severity="critical",
        summary="NCCL error",
        metrics={"cascade": {"count": 3, "ranks": [], "by_code": {"c10d_timeout": 3}}, "hosts": []},
    )
    text = "\n".join(_finding_lines(finding, root=True, width=100))
    assert "ranks:" not in text and "hosts:" not in text and "where:" not in text
    assert "cascade: 3 later lines: 3 c10d timeout" in text and "0 rank" not in text
    finding.ranks, finding.metrics["hosts"] = [1, 3], ["node-a"]
    finding.metrics["cascade"]["ranks"] = [1]
    text = "\n".join(_finding_lines(finding, root=True, width=100))
    assert "where: ranks 1, 3 on host node-a" in text and "on 1 rank:" in text


def test_a_misspelled_option_gets_the_commands_usage_and_the_closest_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", str(ROOT / "sample_traces" / "straggler"), "--stragler-threshold", "0.7"])
    err = capsys.readouterr().err
    assert code == 2
    assert "usage: scope analyze" in err and "did you mean --straggler-threshold?" in err, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--straggler-threshold", "7"], "7 is outside the valid range: [0, 1]"),
        (["--comm-bound-threshold", "-0.1"], "-0.1 is outside the valid range: [0, 1]"),
        (["--workers", "0"], "0 is outside the valid range: >= 1"),
        (["--pp-microbatches", "0"], "0 is outside the valid range: >= 1"),
        (["--straggler-min-loss", "abc"], "'abc' is not a float"),
    ],
)
def test_option_values_are_validated_with_the_range_in_the_message(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(ROOT / "sample_traces" / "straggler"), *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err, err


def test_the_library_validates_the_same_ranges() -> None:
    from scope.analysis import run
    from scope.errors import ScopeError

    with pytest.raises(ScopeError, match=r"straggler_threshold: 7 is outside the valid range: \[0, 1\]"):
        run(ROOT / "sample_traces" / "straggler", {"straggler_threshold": 7})


@pytest.mark.shared_data
def test_a_folder_of_two_kineto_jobs_is_refused_like_two_operation_timelines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An MI300X DDP rank 0 and a B200 vLLM rank 0: once merged with a warning into one run (and a finding
    against process group ''); now refused, naming each job's file, as a folder of two what-if jobs is."""
    source = shared_data("tracelens")
    folder = tmp_path / "tracelens"
    folder.mkdir()
    for file in source.iterdir():
        (folder / file.name).symlink_to(file.resolve())
    assert main(["analyze", str(folder), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "holds the traces of 2 different jobs" in err, err
    assert "AMD Instinct MI300X: mi300_resnet_ddp_rank0.json.gz" in err and "NVIDIA B200: b200_vllm" in err
    assert not (folder / "scope_store").exists()


@pytest.mark.shared_data
@pytest.mark.subprocess
def test_compare_and_goodput_wrap_to_the_terminal_width(tmp_path: Path) -> None:
    import shutil

    runs = []
    for name in ("healthy", "straggler"):
        runs.append(tmp_path / name)
        shutil.copytree(ROOT / "sample_traces" / name, runs[-1], ignore=shutil.ignore_patterns("store"))
    logs = tmp_path / "training_logs"
    logs.mkdir()
    for file in shared_data("training_logs").iterdir():
        (logs / file.name).symlink_to(file.resolve())
    for argv in (["compare", *map(str, runs), "--quiet"], ["goodput", str(logs)]):
        out = subprocess.run([*SCOPE, *argv], capture_output=True, text=True, env=scope_env(60), cwd=tmp_path)
        assert out.stdout.strip(), (argv, out.stderr[-2000:])
        assert lines_too_long(out.stdout, 60) == [], argv
