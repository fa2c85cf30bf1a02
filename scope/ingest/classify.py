"""What each trace event is: its kind, and for communication its collective op.

Kinds: compute | comm | memcpy | memset | cpu_op | annotation | step | runtime | python | other.
Names follow what Kineto writes on NVIDIA (ncclKernel_*, ncclDevKernel_*, ncclSymkDevKernel_*), AMD
(hip*, RCCL's ncclDevKernel_Generic, resolved later through record_param_comms) and gloo on CPU (gloo:*
on the process group's worker threads). GPU kernels that communicate without NCCL (torch symmetric
memory, custom all-reduce, DeepEP, userbuffers, NVSHMEM, MSCCL++) come from the catalog in
scope.ingest.comm_kernels, then the user's rules (scope.ingest.comm_rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scope.ingest.comm_kernels import catalog_match, is_launch_op
from scope.op_names import canonical_op

GPU_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "Kernel", "Memcpy", "Memset"})
CPU_OP_CATS = frozenset({"cpu_op", "operator", "Operator"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "hip_runtime", "cuda_sync"})

_COMM_KERNEL = re.compile(r"^(nccl|rccl|hccl|msccl)", re.IGNORECASE)
_NCCL_KERNEL_OP = re.compile(r"^nccl(?:Symk)?(?:Dev)?Kernel_([A-Za-z]+)")
_MEMCPY = re.compile(r"^(hip)?Memcpy|^dma", re.IGNORECASE)
_MEMSET = re.compile(r"^(hip)?Memset", re.IGNORECASE)


def is_nccl_family(name: str) -> bool:
    """NCCL/RCCL/MSCCL kernels: the ones whose metadata a record_param_comms op around their launch carries."""
    return bool(_COMM_KERNEL.match(name))


@dataclass(frozen=True)
class UserRule:
    """One `--comm-kernel REGEX[=OP]` rule: kernels whose name contains a match are communication."""

    pattern: str
    op: str = ""
    origin: str = "--comm-kernel"

    @property
    def label(self) -> str:
        return f"{self.pattern}={self.op}" if self.op else self.pattern


@dataclass(frozen=True)
class Rules:
    """The user's rules, applied to GPU kernels that neither the NCCL rule nor the catalog names."""

    user: tuple[UserRule, ...] = ()
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(re.compile(r.pattern) for r in self.user))

    def match(self, name: str) -> int:
        """Index of the first user rule matching the kernel name, or -1."""
        for i, pattern in enumerate(self._compiled):
            if pattern.search(name):
                return i
        return -1


NO_RULES = Rules()


class Classifier:
    """classify() with the user's rules, cached per distinct (cat, name); `source` says which rule
    made a kernel communication ('nccl', 'catalog:<family>', 'user:<rule>')."""

    def __init__(self, rules: Rules = NO_RULES) -> None:
        self.rules = rules
        self._cache: dict[tuple[str, str], tuple[str, str]] = {}
        self.source: dict[str, str] = {}

    def __call__(self, cat: str, name: str) -> tuple[str, str]:
        key = (cat, name)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = self._classify(cat, name)
        return found

    def _classify(self, cat: str, name: str) -> tuple[str, str]:
        kind, op = _classify_base(cat, name)
        if kind != "compute":
            if kind == "comm" and cat in GPU_CATS:
                self.source[name] = "nccl"
            return kind, op
        row = catalog_match(name)
        if row is not None:
            self.source[name] = f"catalog:{row.family}"
            return "comm", row.op
        i = self.rules.match(name)
        if i >= 0:
            rule = self.rules.user[i]
            self.source[name] = f"user:{rule.label}"
            return "comm", rule.op or guess_op(name)
        return kind, op


_CLASSIFIERS: dict[Rules, Classifier] = {}


def classifier_for(rules: Rules = NO_RULES) -> Classifier:
    """One shared classifier (and cache) per rule set: ranks parsed in threads of one process share it."""
    found = _CLASSIFIERS.get(rules)
    if found is None:
        found = _CLASSIFIERS[rules] = Classifier(rules)
    return found


_OP_WORDS = (
    ("all_reduce", re.compile(r"all_?reduce", re.IGNORECASE)),
    ("reduce_scatter", re.compile(r"reduce_?scatter", re.IGNORECASE)),
    ("all_gather", re.compile(r"all_?gather", re.IGNORECASE)),
    ("all_to_all", re.compile(r"all_?to_?all", re.IGNORECASE)),
    ("dispatch", re.compile(r"dispatch", re.IGNORECASE)),
    ("combine", re.compile(r"combine", re.IGNORECASE)),
    ("broadcast", re.compile(r"broadcast|bcast", re.IGNORECASE)),
    ("barrier", re.compile(r"barrier", re.IGNORECASE)),
)


def guess_op(name: str) -> str:
    """The op a user-ruled kernel's name says (its OP was not given), or '' (reported as 'unknown')."""
    for op, pattern in _OP_WORDS:
        if pattern.search(name):
            return op
    return ""


def classify(cat: str, name: str, rules: Rules = NO_RULES) -> tuple[str, str]:
    """(kind, collective op or '') for one event: NCCL/RCCL names, the catalog, then the user's rules."""
    return classifier_for(rules)(cat, name)


def _classify_base(cat: str, name: str) -> tuple[str, str]:
    """(kind, op) by the NCCL/RCCL/gloo name rules alone: what scope knew before the catalog."""
    if cat in GPU_CATS:
        return _classify_gpu(cat, name)
    if name.startswith("ProfilerStep#"):
        return "step", ""
    if name.startswith("gloo:"):
        return "comm", canonical_op(name[5:])
    if cat in CPU_OP_CATS:
        return "cpu_op", _cpu_comm_op(name)
    if cat == "user_annotation":
        return "annotation", _cpu_comm_op(name)
    if cat in RUNTIME_CATS:
        return "runtime", ""
    if cat == "python_function":
        return "python", ""
    return "other", ""


def _classify_gpu(cat: str, name: str) -> tuple[str, str]:
    if cat == "gpu_user_annotation":
        return "annotation", ""
    if cat in ("gpu_memcpy", "Memcpy") or _MEMCPY.match(name):
        return "memcpy", ""
    if cat in ("gpu_memset", "Memset") or _MEMSET.match(name):
        return "memset", ""
    if _COMM_KERNEL.match(name):
        match = _NCCL_KERNEL_OP.match(name)
        op = canonical_op(match.group(1)) if match else ""
        return "comm", "" if op == "generic" else op
    return "compute", ""


def _cpu_comm_op(name: str) -> str:
    """Collective op of a CPU-side comm op (enqueue), or '' for an ordinary op."""
    if name.startswith("c10d::"):
        return canonical_op(name[6:])
    if name.startswith("nccl:"):
        return canonical_op(name[5:])
    if is_launch_op(name):  # symm_mem::multimem_all_reduce_, _C_custom_ar::all_reduce: launch catalog kernels
        return guess_op(name)
    return ""


DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "c10::bfloat16": 2,
    "c10::half": 2,
    "double": 8,
    "float64": 8,
    "int": 4,
    "int32": 4,
    "long": 8,
    "int64": 8,
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "byte": 1,
    "bool": 1,
    "short": 2,
    "int16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "complexfloat": 8,
    "complexdouble": 16,
    "unsigned char": 1,
    "signed char": 1,
}


def dtype_bytes(dtype: str) -> int:
    return DTYPE_BYTES.get(dtype.lower().replace("torch.", "").replace("scalartype.", ""), 0)
