"""`scope run --memory-snapshot-on-oom`: the hook arms the CUDA allocator's history at the first step and
writes a snapshot when an allocation fails, on an exception and on termination; off by default, and
without a CUDA device it says so and does nothing. The CUDA calls are a stand-in (this machine has no GPU):
they record what the hook asks and write a snapshot in torch's real format."""

from __future__ import annotations

import json
import pickle
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from scope.collectors.hook.config import HookConfig, config_from_env
from scope.collectors.hook.memsnap import MemorySnapshots

from scope.analysis import run
from tests.test_memory_snapshots import current_snapshot


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, text: str) -> None:
        self.lines.append(text)

    def error(self, what: str, exc: BaseException) -> None:
        self.lines.append(f"error {what}: {exc}")


def _fake_torch(cuda: bool) -> tuple[types.ModuleType, dict[str, Any]]:
    calls: dict[str, Any] = {}
    torch = types.ModuleType("torch")
    memory = types.SimpleNamespace(
        _record_memory_history=lambda max_entries: calls.setdefault("history", max_entries),
        _dump_snapshot=lambda path: Path(path).write_bytes(pickle.dumps(current_snapshot(), protocol=4)),
    )
    torch.cuda = types.SimpleNamespace(is_available=lambda: cuda, memory=memory)  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=lambda cb: calls.setdefault("observer", cb))  # type: ignore[attr-defined]
    return torch, calls


def test_off_by_default_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert HookConfig(run_dir=tmp_path).memory_snapshot_entries == 0
    monkeypatch.setenv("SCOPE_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("SCOPE_MEMORY_SNAPSHOT", "5000")
    monkeypatch.setenv("SCOPE_PROFILE_MEMORY", "1")
    cfg = config_from_env()
    assert cfg is not None and cfg.memory_snapshot_entries == 5000 and cfg.profile_memory
    assert cfg.env()["SCOPE_MEMORY_SNAPSHOT"] == "5000"


def test_without_cuda_it_says_so_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    torch, calls = _fake_torch(cuda=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    log = _Log()
    snaps = MemorySnapshots(tmp_path / "memory", log, 1000)
    snaps.arm()
    assert not snaps.armed and calls == {} and "no CUDA device" in log.lines[0]
    assert snaps.dump("exception") is None and not (tmp_path / "memory").exists()


def test_armed_it_snapshots_at_the_oom_and_at_termination(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    torch, calls = _fake_torch(cuda=True)
    monkeypatch.setitem(sys.modules, "torch", torch)
    out = tmp_path / "run" / "ranks" / "2" / "memory"
    snaps = MemorySnapshots(out, _Log(), 1000)
    snaps.arm()
    snaps.arm()  # once
    assert snaps.armed and calls["history"] == 1000
    calls["observer"](0, 2 * 2**30, 15 * 2**30, 200 * 2**20)  # the allocator's OOM observer fires
    assert snaps.dump("exception") is None  # the OOM's own snapshot stands for the exception it raises
    assert snaps.dump("sigterm") is not None
    assert sorted(p.name for p in out.iterdir()) == ["001-oom.pickle", "002-sigterm.pickle"]
    analysis = run(tmp_path / "run", {"store": tmp_path / "store"})
    table = analysis.tables["memory_snapshots"]
    assert set(table["rank"]) == {2} and len(table) == 2  # the rank from ranks/2/, each snapshot read


def test_attach_asks_every_rank_for_a_snapshot_now(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`scope attach RUN --memory-snapshot` drops a control request; a rank's hook answers it with a
    snapshot even when no history was armed (the segments alone)."""
    from scope.collectors.hook.control import Request, write_request
    from scope.collectors.hook.core import Hook

    torch, calls = _fake_torch(cuda=True)
    monkeypatch.setitem(sys.modules, "torch", torch)
    path = write_request(tmp_path, "memory_snapshot")
    request = Request.from_dict(json.loads(path.read_text()))
    hook = Hook(HookConfig(run_dir=tmp_path, rank=1))
    hook._handle(request)
    assert [p.name for p in (tmp_path / "ranks" / "1" / "memory").iterdir()] == ["001-attach.pickle"]
    assert "history" not in calls  # asking for a snapshot arms nothing behind the job's back


def test_attach_without_cuda_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    torch, _ = _fake_torch(cuda=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    log = _Log()
    assert MemorySnapshots(tmp_path / "memory", log, 0).on_request() is None
    assert "no CUDA device" in log.lines[-1] and not (tmp_path / "memory").exists()


def _memory_report(run_dir: Path, extra_env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    from tests.test_hook import checksum, run_job

    proc = run_job(run_dir, "--steps", "3", "--memory-report", extra_env=extra_env)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("memory "))
    return checksum(proc.stdout), json.loads(line.removeprefix("memory "))


@pytest.mark.subprocess
def test_off_costs_nothing_and_armed_reaches_the_rank(tmp_path: Path) -> None:
    """A real hooked job (tests/jobs/hook_loop.py, as `scope run` starts a rank), the allocator-history
    calls watched: off (the default), the recorder is never imported and nothing is called, so the job
    pays nothing for it; armed, the same job loads the recorder at its first step (and on this CPU-only
    machine says it has no CUDA device), which shows the off run would have seen it."""
    off_sum, off = _memory_report(tmp_path / "off", {})
    assert off == {"memsnap_imported": False, "hook_memory": None, "cuda_calls": []}
    on_sum, on = _memory_report(tmp_path / "on", {"SCOPE_MEMORY_SNAPSHOT": "1000"})
    assert on["memsnap_imported"] and on["hook_memory"] == "MemorySnapshots"
    assert on_sum == off_sum  # the job's result is its own either way
    log = (tmp_path / "on" / "ranks" / "0" / "hook.log").read_text()
    assert "memory snapshot on OOM: no CUDA device, not armed" in log
    assert "memory snapshot" not in (tmp_path / "off" / "ranks" / "0" / "hook.log").read_text()
