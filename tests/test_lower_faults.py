"""The lower breaks of the adversarial round: a full disk is not "a bug in scope" nor the trace's fault;
a trace named rank0.json is not a broken Flight Recorder dump; a 5,000-digit integer in a dump costs
nothing; a same-size, same-mtime edit is re-read; a profile request cannot grow a rank without bound."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path

import pytest

from scope.cli import main
from scope.errors import EXIT_INPUT, EXIT_USAGE
from scope.ingest import ingest
from tests.fsfaults import small_fs

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_traces" / "straggler"
TRACE = next((SAMPLE / "ranks" / "0" / "traces").glob("*.json.gz"))
DUMP = ROOT.parent / "shared" / "data" / "nvrx_fr" / "gpu_error_1st" / "_dump_0"


@pytest.mark.subprocess
def test_a_full_store_disk_is_said_as_such(tmp_path: Path, capsys) -> None:
    with small_fs(tmp_path / "disk", "64k") as disk:
        code = main(["analyze", str(SAMPLE), "--store", str(disk / "store"), "-q", "--no-tables"])
        err = capsys.readouterr().err
    assert code == EXIT_INPUT, err
    assert "No space left on device" in err
    assert "bug in scope" not in err and "Traceback" not in err and "no readable trace" not in err


@pytest.mark.subprocess
def test_a_disk_that_fills_mid_write_leaves_no_temporary_file(tmp_path: Path, capsys) -> None:
    """Store disks of sizes that run out at different places (rank partitions, tables, analysis.json):
    whatever write is refused, no tables/*.tmp or other temporary is left in the store."""
    from scope.errors import EXIT_OK

    scope_files = {".scope-store", ".scope-store.lock"}
    refused = 0
    for size in ("160k", "240k", "300k"):
        with small_fs(tmp_path / f"disk{size}", size) as disk:
            code = main(["analyze", str(SAMPLE), "--store", str(disk / "store"), "-q", "--no-tables"])
            err = capsys.readouterr().err
            assert code in (EXIT_OK, EXIT_INPUT) and "Traceback" not in err, err
            refused += code == EXIT_INPUT
            left = [
                str(p.relative_to(disk))
                for p in (disk / "store").rglob("*")
                if p.name.endswith(".tmp") or (p.name.startswith(".") and p.name not in scope_files)
            ]
            assert left == [], (size, left)
    assert refused >= 2  # the sizes do reach the writes


def test_a_trace_named_like_a_dump_is_not_a_broken_dump(tmp_path: Path, capsys) -> None:
    import gzip

    (tmp_path / "rank0.json").write_bytes(gzip.decompress(TRACE.read_bytes()))
    (tmp_path / "rank0.stderr.log").write_text("step 1\nstep 2\n")
    main(["diagnose", str(tmp_path)])
    out = capsys.readouterr()
    assert "not a Flight Recorder dump" not in out.out + out.err


def test_a_huge_integer_in_a_dump_costs_nothing(tmp_path: Path, capsys) -> None:
    if not DUMP.is_file():
        pytest.skip("shared data not here")
    dump = pickle.loads(DUMP.read_bytes())
    dump["entries"][0]["collective_seq_id"] = 10**5000
    (tmp_path / "_dump_0").write_bytes(pickle.dumps(dump))
    code = main(["diagnose", str(tmp_path), "--json", str(tmp_path / "out.json")])
    assert code in (0, 4), capsys.readouterr().err
    json.loads((tmp_path / "out.json").read_text())


def test_a_same_size_same_mtime_edit_is_re_read(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    trace = folder / "rank0.json"
    text = '{"distributedInfo": {"rank": 0}, "traceEvents": [%s]}'
    event = '{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": 1, "dur": 5}'
    trace.write_text(text % (event % "aten::aaaa"))
    first = ingest(folder, tmp_path / "store")
    stat = trace.stat()
    trace.write_text(text % (event % "aten::bbbb"))  # same size
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    second = ingest(folder, tmp_path / "store")
    assert first.parsed == [0] and second.parsed == [0] and second.reused == []
    names = second.store.read_events(0, columns=["name"]).column("name").to_pylist()
    assert "aten::bbbb" in names


def test_profile_requests_are_capped(tmp_path: Path, capsys) -> None:
    from scope.collectors.hook.hooklog import HookLog
    from scope.collectors.hook.windows import MAX_WINDOW_STEPS, ProfilerWindows

    assert main(["attach", str(tmp_path), "--profile-steps", "1000000"]) == EXIT_USAGE
    assert "valid range" in capsys.readouterr().err
    windows = ProfilerWindows(tmp_path, 0, HookLog(), start=-1, every=0, active=3, flops=False)
    windows.request(1_000_000, None, "test", current_step=5)
    assert windows._requests[-1].steps == MAX_WINDOW_STEPS


def test_markdown_output_carries_no_raw_html_from_logs(tmp_path: Path, capsys) -> None:
    hostile = "<img src=x onerror=alert(1)>`</code><script>alert(2)</script>"
    (tmp_path / "rank0.stderr.log").write_text(
        f'Traceback (most recent call last):\n  File "{hostile}.py", line 1, in <module>\n'
        f"torch.OutOfMemoryError: CUDA out of memory. {hostile}\n"
    )
    main(["analyze", str(tmp_path), "--format", "markdown", "-q"])
    out = capsys.readouterr().out
    assert "OutOfMemoryError" in out or "oom" in out, out
    assert "&lt;img src=x" in out  # the log's text is there, as text
    outside_code = re.sub(r"(`+)[^`].*?\1", "", out)  # code spans show HTML as text in any renderer
    assert "<img" not in outside_code and "<script" not in outside_code


HOSTILE_LINK = "[details](javascript:alert(document.cookie)) ![x](javascript:alert(2))"


def _links_outside_code(markdown: str) -> list[str]:
    outside_code = re.sub(r"(`+)[^`].*?\1", "", markdown)  # code spans show links as text in any renderer
    return re.findall(r"(?<!\\)\]\(javascript:", outside_code)


def test_markdown_output_carries_no_link_from_logs(tmp_path: Path, capsys) -> None:
    """A log line's Markdown link (`[details](javascript:...)`) is text in the post-mortem, not a live link
    in the ticket it is pasted into."""
    (tmp_path / "rank0.stderr.log").write_text(f"torch.OutOfMemoryError: CUDA out of memory. {HOSTILE_LINK}\n")
    main(["analyze", str(tmp_path), "--format", "markdown", "-q"])
    out = capsys.readouterr().out
    assert "javascript:alert" in out and "OutOfMemoryError" in out, out  # the log's words are there, as text
    assert _links_outside_code(out) == [], out


def test_compare_markdown_carries_no_link_from_the_runs(tmp_path: Path) -> None:
    """Names and notes from the runs in `scope compare --format markdown` are text too."""
    import shutil

    from scope.compare import compare_paths
    from scope.compare.result import ComparisonResult
    from scope.render.compare import render_compare

    run = tmp_path / "healthy"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_traces" / "healthy", run)
    data = compare_paths(run, run).to_dict()
    data["notes"] = [f"op names differ: {HOSTILE_LINK}"]
    data["a"]["path"] = f"runs/{HOSTILE_LINK}`"
    out = render_compare(ComparisonResult.from_dict(data), "markdown")
    assert "javascript:alert" in out and _links_outside_code(out) == [], out
