"""Shared test helpers: where the external data lives, and session-scoped real runs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data beside the project; SCOPE_SHARED_DATA points elsewhere (a git worktree one level deeper)
SHARED_DATA = Path(os.environ.get("SCOPE_SHARED_DATA") or ROOT.parent / "shared" / "data")


def _run_against_the_installed_package() -> None:
    """The suite tests scope as installed, never the checkout's folders by their own names: with the
    repository root on sys.path (`python -m pytest` puts the working directory there) `import app` or
    `import collectors` would work in the tests and fail for every user, which once hid a dashboard the
    demo could not find. Tests are imported by pytest's importlib mode (pyproject), which needs no
    sys.path entry; the benchmarks some tests reuse are exposed by their own package name only."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    if "benchmarks" not in sys.modules:
        spec = importlib.util.spec_from_loader("benchmarks", loader=None, is_package=True)
        assert spec is not None and spec.submodule_search_locations is not None
        spec.submodule_search_locations.append(str(ROOT / "benchmarks"))
        sys.modules["benchmarks"] = importlib.util.module_from_spec(spec)


_run_against_the_installed_package()


def pytest_report_header() -> list[str]:
    """Which checkout the installed package runs from. An editable install maps scope.analyzers, scope.app and
    scope.collectors to the checkout it was installed from: a second checkout (a git worktree) that shares its
    venv runs its own tests against the first one's analyzers, with nothing failing to say so."""
    import scope.analyzers

    where = Path(scope.analyzers.__path__[0]).resolve()
    line = f"scope under test: {where.parent}"
    if not where.is_relative_to(ROOT):
        line += f"  (NOT this checkout, {ROOT}: its venv was installed from another one)"
    return [line]


# The tiers: a test without a tier mark that launches a training job fails (tests/tiers.py).
from tests.tiers import install_job_check, pytest_runtest_protocol, pytest_runtest_teardown  # noqa: E402

install_job_check()
__all__ = ["pytest_runtest_protocol", "pytest_runtest_teardown"]  # hooks pytest finds here


def shared_data(*parts: str) -> Path:
    """Path under ../shared/data; skips the test with a clear reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        # allow_module_level: a module that names its data in a parametrize list is skipped whole, not an error
        pytest.skip(
            f"external data not available: {path} (tests read ../shared/data beside the project)",
            allow_module_level=True,
        )
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests leave things worth looking at (screenshots, reports): test-artifacts/."""
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for every browser test: Playwright's sync API allows one at a time."""
    from tests.browser_util import browser_session, chromium_path

    if chromium_path() is None:
        pytest.skip("chromium is not installed (apt-get install chromium chromium-driver)")
    with browser_session() as b:
        yield b


# Real 4-rank gloo DDP runs of the sample workload (scope.collectors.workloads.ddp), by scenario: faults are
# strong (factor 4, 100 ms delays) so that verdicts survive a noisy host; `healthy_again` is a second
# healthy run for comparisons (run-to-run noise).
DDP_SCENARIOS: dict[str, list[str]] = {
    "healthy": ["--fault", "none"],
    "healthy_again": ["--fault", "none"],
    "straggler": ["--fault", "straggler", "--fault-rank", "3", "--factor", "4"],
    "slow_link": ["--fault", "slow-link", "--fault-rank", "2", "--delay-ms", "100"],
    # for comparisons beside two healthy runs (three jobs, 12 ranks on 2 cores): a healthy step there spreads
    # by +/-110 ms, so the link is slowed by 300 ms a bucket, beyond any noise of the busy host
    "slow_link_strong": ["--fault", "slow-link", "--fault-rank", "2", "--delay-ms", "300"],
    "comm_bound": ["--fault", "comm-bound"],
    # rank 2 keeps 4 MiB more each step; every rank records its allocations (profile_memory=True)
    "memory_leak": ["--fault", "memory-leak", "--fault-rank", "2", "--factor", "4", "--profile-memory"],
}


def _ddp_command(out: Path, args: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "4",
        "-m",
        "scope.collectors.workloads.ddp",
        "--steps",
        "8",
        "--profile-dir",
        str(out),
        "--profile-steps",  # five profiled steps: a verdict needs three, and one noisy step cannot tip it
        "5",
        *args,
    ]


def run_ddp_workload(out: Path, args: list[str]) -> None:
    from tests.torch_jobs import run_profiled_job

    proc = run_profiled_job(_ddp_command(out, args), timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(out.glob("rank*.pt.trace.json"))) == 4, proc.stdout[-2000:]


def run_ddp_workloads_together(jobs: dict[Path, list[str]]) -> None:
    """Several jobs at once: on a shared host whose load changes from minute to minute, runs made one
    after another differ by tens of percent (two healthy runs measured 110 and 180 ms per step); runs
    made side by side share the same load, so what differs between them is what the jobs do. When torch
    itself aborts in one of them (tests/torch_jobs.py), all of them run again together, as run_ddp_workload
    reruns its one job: twelve ranks of plain DDP on gloo at once make that abort likelier than one job does."""
    from tests.torch_jobs import rerun_once_if_torch_aborted, torch_aborted

    def launch_all() -> list[tuple[Path, int, str, str]]:
        procs = [
            (
                out,
                subprocess.Popen(
                    _ddp_command(out, args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
                ),
            )
            for out, args in jobs.items()
        ]
        ended = []
        for out, proc in procs:
            stdout, stderr = proc.communicate(timeout=600)
            ended.append((out, proc.returncode, stdout, stderr))
        return ended

    ended = rerun_once_if_torch_aborted(launch_all, lambda ended: any(torch_aborted(c, e) for _, c, _, e in ended))
    for out, returncode, stdout, stderr in ended:
        assert returncode == 0, stderr[-3000:]
        assert len(list(out.glob("rank*.pt.trace.json"))) == 4, stdout[-2000:]


@pytest.fixture(scope="session")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """scenario -> the trace folder of a real run of it, launched once per session on first use."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            traces = tmp_path_factory.mktemp(f"ddp_{name}") / "traces"
            run_ddp_workload(traces, DDP_SCENARIOS[name])
            made[name] = traces
        return made[name]

    return get


@pytest.fixture(scope="session")
def ddp_runs_together(tmp_path_factory: pytest.TempPathFactory) -> Callable[[tuple[str, ...]], dict[str, Path]]:
    """(scenario, ...) -> {scenario: trace folder} of real runs launched side by side (same host load),
    once per session for each tuple; for comparisons between runs."""
    made: dict[tuple[str, ...], dict[str, Path]] = {}

    def get(names: tuple[str, ...]) -> dict[str, Path]:
        if names not in made:
            root = tmp_path_factory.mktemp("ddp_together")
            outs = {name: root / name / "traces" for name in names}
            run_ddp_workloads_together({outs[n]: DDP_SCENARIOS[n] for n in names})
            made[names] = outs
        return made[names]

    return get
