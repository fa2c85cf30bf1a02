"""Time the gradient all-reduces of DDP's built-in reducer (gloo) by giving the reducer a comm hook.

Why: without a comm hook, DDP's C++ reducer calls the process group's allreduce from C++; nothing passes
through the `torch.distributed` functions collectives.py wraps, so a slow link under plain DDP went unseen.
How: at a DDP module's first forward, when nothing registered a comm hook, one is registered that does what
the built-in path does (the bucket times 1 / world size, then one all-reduce of the sum; the same product
the reducer forms while copying into the bucket, so those gradients are the same bit for bit) through
`torch.distributed.all_reduce(async_op=True)`: collectives.py times it from issue to its future's completion.
The reducer takes one comm hook only: one the job registers later (PowerSGD, fp16 compression, a fused
optimizer) becomes the delegate of ours (`torch.distributed._register_comm_hook` is wrapped), so the job's
call succeeds and its hook runs.

Left to the C++ path: NCCL and CUDA parameters (the future completes at enqueue: nothing to time there),
DDP under torch.compile (its Python reducer), delay_all_reduce_named_params, a first forward inside Join
(the built-in divides by the ranks not yet joined, a comm hook by the world size), and any job run without
`scope run --time-ddp` (SCOPE_TIME_DDP=1): the timing is opt-in.
Limits: the built-in path divides a bucket that is a view of the gradients (gradient_as_bucket_view with
gradients kept between steps, zero_grad(set_to_none=False)) by the world size, where this hook multiplies by
its inverse: those gradients may differ in the last bit. A job that enters Join after the first forward keeps
the world-size divisor (the built-in divides by the ranks not yet joined).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from scope.collectors.hook.collectives import compiling_check

BUILTIN_FP16 = "FP16_COMPRESS"


class TimedAllreduce:
    """The comm hook: the built-in all-reduce, or the job's own hook once it registered one."""

    def __init__(self, group: Any, size: int) -> None:
        self.group = group
        self.scale = 1.0 / size
        self.delegate: tuple[Callable[..., Any], Any] | None = None

    def __call__(self, state: Any, bucket: Any) -> Any:
        if self.delegate is not None:
            hook, hook_state = self.delegate
            return hook(hook_state, bucket)
        import torch.distributed as dist

        buffer = bucket.buffer()
        buffer.mul_(self.scale)
        return dist.all_reduce(buffer, group=self.group, async_op=True).get_future().then(_first_tensor)


def _first_tensor(fut: Any) -> Any:
    return fut.value()[0]


class DdpReducerTimer:
    """Wraps DistributedDataParallel.forward and torch.distributed's comm-hook registration, once."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self._looked: weakref.WeakSet[Any] = weakref.WeakSet()
        self._ours: dict[int, tuple[weakref.ref[Any], TimedAllreduce]] = {}  # id(reducer): ours on it
        # reducers the job gave a hook itself (builtin ones leave no trace); weak, so a new reducer that reuses a
        # freed one's id is not taken for it
        self._hooked: weakref.WeakSet[Any] = weakref.WeakSet()
        self.installed = 0
        self._original_register: Callable[..., Any] | None = None

    def wrap(self, module: ModuleType) -> None:
        """`torch.nn.parallel.distributed`, just imported."""
        try:
            import torch.distributed as dist

            cls = module.DistributedDataParallel
            if getattr(cls.forward, "_scope_timed", False):
                return
            self._wrap_registration(dist)
            cls.forward = self._forward(cls.forward)
            self.log.info("DDP reducer all-reduces timed (gloo)")
        except Exception as exc:
            self.log.error("wrapping DistributedDataParallel", exc)

    def _forward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        looked = self._looked
        compiling = compiling_check()

        @functools.wraps(original)
        def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
            # Under torch.compile's tracing: straight to the original (a WeakSet would break the graph).
            if not compiling() and ddp not in looked:
                looked.add(ddp)
                self._maybe_install(ddp)
            return original(ddp, *args, **kwargs)

        forward._scope_timed = True  # type: ignore[attr-defined]
        return forward

    def _maybe_install(self, ddp: Any) -> None:
        try:
            reason = _left_alone(ddp, self._hooked)
            if reason:
                self.log.info(f"DDP reducer left untimed: {reason}")
                return
            register = self._original_register
            if register is None:
                return
            ours = TimedAllreduce(ddp.process_group, ddp.process_group.size())
            key = id(ddp.reducer)
            # Recorded before registering: were it recorded after, a failure in between would leave our hook on
            # the reducer unrecorded, and the job's own later registration would fail ("register once").
            self._prune()
            self._ours[key] = (weakref.ref(ddp.reducer), ours)
            try:
                register(ddp.reducer, None, ours)
            except Exception:
                self._ours.pop(key, None)
                raise
            self.installed += 1
        except Exception as exc:
            self.log.error("timing the DDP reducer", exc)

    def _prune(self) -> None:
        """Forget the reducers that are gone (their process groups with them)."""
        for key in [k for k, (ref, _) in self._ours.items() if ref() is None]:
            del self._ours[key]

    def _wrap_registration(self, dist: Any) -> None:
        register, builtin = dist._register_comm_hook, dist._register_builtin_comm_hook
        self._original_register = register

        def _register_comm_hook(reducer: Any, state: Any, hook: Any) -> Any:
            ours = self._ours_on(reducer)
            if ours is None:
                _remember(self._hooked, reducer)
                return register(reducer, state, hook)
            ours.delegate = (hook, state)
            return None

        def _register_builtin_comm_hook(reducer: Any, kind: Any) -> Any:
            ours = self._ours_on(reducer)
            if ours is None:
                _remember(self._hooked, reducer)
                return builtin(reducer, kind)
            ours.delegate = _builtin_equivalent(kind, ours.group)
            return None

        dist._register_comm_hook = _register_comm_hook
        dist._register_builtin_comm_hook = _register_builtin_comm_hook

    def _ours_on(self, reducer: Any) -> TimedAllreduce | None:
        found = self._ours.get(id(reducer))
        return found[1] if found is not None and found[0]() is reducer else None


def _remember(hooked: weakref.WeakSet[Any], reducer: Any) -> None:
    with contextlib.suppress(TypeError):  # not weakly referable: it is then simply not remembered
        hooked.add(reducer)


def _left_alone(ddp: Any, hooked: weakref.WeakSet[Any]) -> str:
    """Why this DDP module keeps the C++ path ('' when it gets the timed hook)."""
    import torch.distributed as dist

    if getattr(ddp, "_comm_hooks", None) or getattr(ddp, "reducer", None) in hooked:
        return "the job registered a comm hook (its collectives are timed as issued)"
    if getattr(ddp, "_use_python_reducer", False) or getattr(ddp, "_delay_all_reduce_all_params", False):
        return "compiled DDP or delayed all-reduce (Python collectives, timed as issued)"
    if getattr(getattr(ddp, "_join_config", None), "enable", False):
        return "first forward under Join"
    if getattr(ddp, "device_type", "cpu") != "cpu" or "gloo" not in str(dist.get_backend(ddp.process_group)):
        return "not gloo on CPU"
    return ""


def _builtin_equivalent(kind: Any, group: Any) -> tuple[Callable[..., Any], Any] | None:
    """A built-in comm hook registered after ours: its Python twin (ALLREDUCE is ours already)."""
    if BUILTIN_FP16 in str(kind):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        return (default_hooks.fp16_compress_hook, group)
    return None
