"""The hook's per-collective timing (collectors/hook/collectives.py) on a real one-rank gloo group, and the
progress-line fields it adds as the live detector's tail reads them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from scope.collectors.hook import collectives
from scope.collectors.hook.collectives import MAX_KEYS, CollectiveTimer
from scope.collectors.hook.hooklog import HookLog

from scope.live.tail import to_sample


@pytest.fixture(scope="module")
def gloo() -> Iterator[Any]:
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


def timed_copy(dist: Any) -> tuple[ModuleType, CollectiveTimer]:
    """torch.distributed's collectives in a module of their own, wrapped (the real module stays as it is)."""
    module = ModuleType("dist_copy")
    for op in collectives.OPS:
        setattr(module, op, getattr(dist, op))
    timer = CollectiveTimer(HookLog())
    timer.wrap(module)
    return module, timer


def test_sync_and_async_collectives_are_timed_per_group_and_op(gloo: Any) -> None:
    import torch

    mod, timer = timed_copy(gloo)
    mod.all_reduce(torch.ones(1000))
    work = mod.all_reduce(torch.ones(250), async_op=True)
    work.wait()
    mod.broadcast(torch.ones(10, dtype=torch.float64), 0)
    deadline = time.monotonic() + 5
    while timer.totals.get(("0", "all_reduce"), [0])[0] < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the async one is counted by its future's callback
    per_group, rows = timer.since_last()
    by_op = {r[1]: r for r in rows}
    assert by_op["all_reduce"][:4] == ["0", "all_reduce", 2, 5000] and by_op["all_reduce"][4] > 0
    assert by_op["broadcast"][:4] == ["0", "broadcast", 1, 80]
    assert by_op["all_reduce"][5] == 3  # the group's sequence number: three collectives entered
    assert per_group["0"] == by_op["all_reduce"][4] + by_op["broadcast"][4]
    assert timer.last_entered() == {"group": "0", "seq": 3, "op": "broadcast", "t_ns": timer.last[3]}  # type: ignore[index]
    # Differences only: nothing new, nothing written.
    assert timer.since_last() == ({}, [])
    mod.all_reduce(torch.ones(1))
    assert [r[2:4] for r in timer.since_last()[1]] == [[1, 4]]


def test_the_jobs_own_error_comes_back_unchanged_and_a_timer_failure_never_reaches_it(
    gloo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    mod, timer = timed_copy(gloo)
    with pytest.raises(TypeError) as wrapped:
        mod.all_reduce("not a tensor")
    with pytest.raises(TypeError) as bare:
        gloo.all_reduce("not a tensor")
    assert str(wrapped.value) == str(bare.value)

    def broken(*_: Any) -> Any:
        raise RuntimeError("bookkeeping failed")

    monkeypatch.setattr(collectives, "_tensor_bytes", broken)
    t = torch.ones(3)
    mod.all_reduce(t)  # the collective ran; only its timing was lost
    assert t.tolist() == [1.0, 1.0, 1.0] and timer.dropped == 1


def test_the_timed_calls_are_the_diagnosis_tables_and_the_hook_imports_no_analyzer() -> None:
    """The hook reads torch.distributed's calls from the diagnosis's table (scope/collective_calls.py): the
    table's calls less those made of other timed calls, every one a real torch.distributed function; a
    fresh interpreter importing the hook's collectives module loads no scope.analyzers package (its registry
    costs 0.4 s in each rank)."""
    import subprocess
    import sys

    import torch.distributed as dist

    from scope.collective_calls import PY_CALLS

    assert set(collectives.OPS) == PY_CALLS - collectives.COMPOSITE_CALLS
    assert {"all_reduce", "barrier", "isend", "reduce_scatter_tensor"} <= set(collectives.OPS)
    assert all(callable(getattr(dist, op, None)) for op in collectives.OPS), collectives.OPS
    probe = "import sys, scope.collectors.hook.collectives; print(sorted(m for m in sys.modules if 'analyzers' in m))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_memory_is_bounded_by_the_keys_counted(gloo: Any) -> None:
    import torch

    mod, timer = timed_copy(gloo)
    for i in range(MAX_KEYS):
        timer.totals[(f"g{i}", "all_reduce")] = [1, 0, 0]
    mod.all_reduce(torch.ones(1))
    assert len(timer.totals) == MAX_KEYS and timer.dropped == 1


def test_the_tail_reads_time_in_collectives_per_step_and_names_the_costliest_op() -> None:
    prev = {"step": 10, "t_ns": 0, "attempt": 0}
    rec = {
        "step": 12,
        "t_ns": 1_000_000_000,
        "attempt": 0,
        "comm_ns": {"0": 600_000_000, "7": "bad"},
        "coll": [["0", "all_reduce", 4, 5_600_000, 500_000_000, 20], ["0", "broadcast", 2, 8, 100_000_000, 20], "x"],
    }
    s = to_sample(3, prev, rec)
    assert s is not None
    assert s.comm == {"0": pytest.approx(0.3)}  # seconds per step, over the line's two steps
    assert s.ops == {"0": "all_reduce 1.4 MB, up to #20"}


def test_a_compiled_function_keeps_its_collective_in_one_graph(gloo: Any) -> None:
    """Under torch.compile the wrapper steps aside: Dynamo sees the original collective, no graph break."""
    import torch
    import torch._dynamo as dynamo

    mod, timer = timed_copy(gloo)

    def step(x: Any) -> Any:
        y = x * 2
        mod.all_reduce(y)
        return y + 1

    explained = dynamo.explain(step)(torch.ones(4))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    assert step(torch.ones(4)).tolist() == [3.0] * 4 and timer.totals[("0", "all_reduce")][0] == 1  # eager: timed


@pytest.fixture
def timed_ddp(gloo: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """DDP's forward and torch.distributed's collectives and comm-hook registration, wrapped as the hook wraps
    them in a rank; put back after the test."""
    from scope.collectors.hook.ddp_reducer import DdpReducerTimer
    from torch.nn.parallel import distributed

    cls = distributed.DistributedDataParallel
    monkeypatch.setattr(cls, "forward", cls.forward)
    for name in (*collectives.OPS, "_register_comm_hook", "_register_builtin_comm_hook"):
        if hasattr(gloo, name):
            monkeypatch.setattr(gloo, name, getattr(gloo, name))
    timer = CollectiveTimer(HookLog())
    timer.wrap(gloo)
    reducer = DdpReducerTimer(HookLog())
    reducer.wrap(distributed)
    return timer, reducer


def test_ddps_builtin_reducer_gets_the_timed_hook_and_a_later_builtin_hook_still_applies(timed_ddp: Any) -> None:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    timer, reducer = timed_ddp
    torch.manual_seed(0)
    ddp = DistributedDataParallel(torch.nn.Linear(8, 4))
    x = torch.randn(16, 8) * 1e3  # gradients far from fp16's grid

    ddp(x).sum().backward()
    assert reducer.installed == 1
    calls, size, ns = timer.totals[("0", "all_reduce")]
    assert calls >= 1 and size == 36 * 4 and ns > 0  # the 36 gradients, through the timed all-reduce
    exact = [p.grad.clone() for p in ddp.parameters()]

    # The job registers fp16 compression after the first forward: the reducer takes one hook only, so ours
    # delegates to its Python twin; the job's call succeeds and the compression applies.
    import torch.distributed as dist

    ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
    for p in ddp.parameters():
        p.grad = None
    ddp(x).sum().backward()
    squeezed = [p.grad for p in ddp.parameters()]
    assert all(torch.equal(s, e.half().float()) for s, e in zip(squeezed, exact, strict=True))
    assert not all(torch.equal(s, e) for s, e in zip(squeezed, exact, strict=True))


def test_a_job_hook_registered_first_keeps_the_cpp_path_untouched(timed_ddp: Any) -> None:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    _, reducer = timed_ddp
    ddp = DistributedDataParallel(torch.nn.Linear(8, 4))
    import torch.distributed as dist

    ddp._register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE)
    ddp(torch.randn(2, 8)).sum().backward()
    assert reducer.installed == 0


def test_ddp_timing_is_opt_in_and_scope_time_ddp_reaches_the_ranks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from scope.collectors.hook.config import HookConfig, config_from_env

    monkeypatch.setenv("SCOPE_RUN_DIR", str(tmp_path))
    assert config_from_env().time_ddp is False  # type: ignore[union-attr]  # off unless asked for
    monkeypatch.setenv("SCOPE_TIME_DDP", "1")
    assert config_from_env().time_ddp is True  # type: ignore[union-attr]
    # the launcher's own config leaves the variable to the user when off, and sets it with --time-ddp
    assert "SCOPE_TIME_DDP" not in HookConfig(run_dir=tmp_path).env()
    assert HookConfig(run_dir=tmp_path, time_ddp=True).env()["SCOPE_TIME_DDP"] == "1"
