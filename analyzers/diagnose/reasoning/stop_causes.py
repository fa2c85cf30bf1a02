"""A stage's known causes fitted to what the log shows (knowledge/stop_causes.py holds the texts and why)."""

from __future__ import annotations

from collections.abc import Mapping

from scope.analyzers.diagnose.knowledge.env_settings import settings as echoed_settings
from scope.analyzers.diagnose.knowledge.line_shapes import shell_settings
from scope.analyzers.diagnose.knowledge.stages import STAGE_INFO
from scope.analyzers.diagnose.knowledge.stop_causes import (
    DEFAULT_VALUES,
    FORCED_NAMES,
    FORCED_PATH_FIRST,
    FORWARDED_SETTING,
    ONE_GPU_PER_HOST,
    P2P_CHANNELS,
    REAL_PORT,
    RENDEZVOUS_REAL_PORT,
)
from scope.analyzers.diagnose.model import Anomaly
from scope.analyzers.diagnose.readers.nccl_prefix import nccl_lines


def one_gpu_per_host(text: str) -> bool:
    """NCCL's lines name hosts, each with one CUDA device, and no P2P/SHM channel: no GPU peer-to-peer path."""
    if P2P_CHANNELS.search(text):
        return False
    devices: dict[str, set[int]] = {}
    for _, nccl in nccl_lines(text):
        if nccl.host and nccl.level:  # a blanked-out host cannot be told from another
            devices.setdefault(nccl.host, set()).add(nccl.device)
    return bool(devices) and all(len(d) == 1 for d in devices.values())


def stop_causes(stage: str, text: str) -> str:
    """The known causes of a stop in `stage`, ordered by what `text` (the log) shows."""
    if stage == "comm_init" and text and one_gpu_per_host(text):
        return ONE_GPU_PER_HOST  # no "NCCL_SOCKET_IFNAME=lo to test": across nodes lo is the fault, not a test
    if stage == "rendezvous" and text and REAL_PORT.search(text):
        return RENDEZVOUS_REAL_PORT
    return STAGE_INFO[stage].causes


def name_forced_paths(found: Anomaly, text: str, echoed: Mapping[str, tuple[str, int]] | None = None) -> None:
    """Put the transport settings the log shows set (NCCL's echo, a shell line, mpirun's -x) first in a stop's
    remedy; a value that is NCCL's default forces nothing. `echoed`: NCCL's echoes as the scan read them
    (FileScan.env); read from `text` only where no scan did."""
    if "NCCL_" not in text or found.kind != "hang":
        return
    echoes = echoed_settings(text) if echoed is None else echoed
    shown_set = [(name, value) for name, (value, _) in echoes.items()]
    shown_set += [(name, value) for name, value, _ in shell_settings(text)]
    shown_set += [(m.group(1), m.group(2)) for m in FORWARDED_SETTING.finditer(text)]
    settings: dict[str, str] = {}
    for name, value in shown_set:
        value = value.strip("'\"").rstrip(".")
        if name in FORCED_NAMES and value and DEFAULT_VALUES.get(name) != value:
            settings.setdefault(name, value)
    if not settings:
        return
    shown = ", ".join(f"{k}={v}" for k, v in settings.items())
    first = FORCED_PATH_FIRST.format(settings=shown, names=" / ".join(settings))
    remedy = str(found.details.get("remedy", ""))
    found.details["remedy"] = f"{first} {remedy}".strip()
