"""The NVML interface the sidecar uses, and the real implementation through nvidia-ml-py.

`NvmlApi.call(function, gpu, *args)` calls the NVML function of that name (pynvml spelling) on the
GPU with that index and returns NVML's answer as plain data in NVML's own units: structs become
dicts of their fields (`{"gpu": 97, "memory": 41}`), `nvmlFieldValue_t` becomes
`{"fieldId", "scopeId", "timestamp" (us since the epoch), "latencyUsec", "valueType", "nvmlReturn",
"value"}`, event data names its GPU by index. A failed call raises `NvmlError(code)`. Three calls
use the one event set the API keeps: `nvmlEventSetCreate()`, `nvmlDeviceRegisterEvents(gpu, mask)`
and `nvmlEventSetWait_v2(None, timeout_ms)`.

`PynvmlApi` makes the real calls; `nvml_replay.ReplayNvml` answers from a recording and
`nvml_replay.RecordingNvml` wraps the real one to make such a recording.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

# Values from nvml.h (tests check them against pynvml), so a replay needs no pynvml.
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_NVLINK_MAX_LINKS = 18  # probed when the link-count field is unsupported
NVML_FI_DEV_NVLINK_LINK_COUNT = 91
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138  # KiB, cumulative; scopeId = link
NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139
NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY = 161  # scopeId = link
NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY = 162
NVML_FI_DEV_NVLINK_ERROR_DL_CRC = 163
NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197
NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198
NVML_EVENT_TYPE_XID_CRITICAL_ERROR = 0x8
# An unsupported or forbidden metric is dropped for that GPU; other errors are retried next tick.
DROP_CODES = frozenset({NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION, NVML_ERROR_FUNCTION_NOT_FOUND})
LINK_FIELDS = {
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: "tx_kib",
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: "rx_kib",
    NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: "replay_errors",
    NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY: "recovery_errors",
    NVML_FI_DEV_NVLINK_ERROR_DL_CRC: "crc_errors",
}
PCIE_FIELDS = {
    NVML_FI_DEV_PCIE_COUNT_TX_BYTES: "pcie_tx_bytes",
    NVML_FI_DEV_PCIE_COUNT_RX_BYTES: "pcie_rx_bytes",
}


class NvmlError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"NVML error {code}")
        self.code = code


class NvmlUnavailable(Exception):
    """NVML cannot be used on this machine (no library, no driver, no GPU); the message says which."""


class NvmlApi(Protocol):
    def call(self, function: str, gpu: int | None = None, *args: Any) -> Any: ...

    def close(self) -> None: ...


# ----- the real calls --------------------------------------------------------------------------


class PynvmlApi:
    """The real NVML through nvidia-ml-py; answers converted to plain data (see module docstring)."""

    def __init__(self) -> None:
        try:
            import pynvml
        except ImportError:
            raise NvmlUnavailable("nvidia-ml-py is not installed (pip install nvidia-ml-py)") from None
        self.nv = pynvml
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            hints = {
                pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "NVML library not found (no NVIDIA driver here)",
                pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
            }
            raise NvmlUnavailable(hints.get(exc.value, f"NVML init failed: {exc}")) from None
        self._handles: dict[int, Any] = {}
        self._event_set: Any = None

    def _handle(self, gpu: int) -> Any:
        if gpu not in self._handles:
            self._handles[gpu] = self.nv.nvmlDeviceGetHandleByIndex(gpu)
        return self._handles[gpu]

    def call(self, function: str, gpu: int | None = None, *args: Any) -> Any:
        nv = self.nv
        try:
            if function == "nvmlEventSetCreate":
                self._event_set = nv.nvmlEventSetCreate()
                return None
            if function == "nvmlDeviceRegisterEvents":
                assert gpu is not None  # a per-device function: callers always name the GPU
                return nv.nvmlDeviceRegisterEvents(self._handle(gpu), args[0], self._event_set)
            if function == "nvmlEventSetWait_v2":
                data = nv.nvmlEventSetWait_v2(self._event_set, args[0])
                return self._event(data)
            fn = getattr(nv, function, None)
            if fn is None:
                raise NvmlError(NVML_ERROR_FUNCTION_NOT_FOUND, f"{function} not in this nvidia-ml-py")
            if function == "nvmlDeviceGetFieldValues":
                assert gpu is not None
                return [_field_value(v) for v in fn(self._handle(gpu), [tuple(f) for f in args[0]])]
            answer = fn(*args) if gpu is None else fn(self._handle(gpu), *args)
            return _plain(answer)
        except nv.NVMLError as exc:
            raise NvmlError(int(exc.value), str(exc)) from None

    def _event(self, data: Any) -> dict[str, Any]:
        return {
            "device": int(self.nv.nvmlDeviceGetIndex(data.device)),
            "eventType": int(data.eventType),
            "eventData": int(data.eventData),
            "gpuInstanceId": int(data.gpuInstanceId),
            "computeInstanceId": int(data.computeInstanceId),
        }

    def close(self) -> None:
        try:
            if self._event_set is not None:
                self.nv.nvmlEventSetFree(self._event_set)
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass


VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")


def _field_value(v: Any) -> dict[str, Any]:
    """nvmlFieldValue_t as a dict; the value union read through its valueType."""
    kind = int(v.valueType)
    value = getattr(v.value, VALUE_MEMBERS[kind]) if 0 <= kind < len(VALUE_MEMBERS) else None
    return {
        "fieldId": int(v.fieldId),
        "scopeId": int(v.scopeId),
        "timestamp": int(v.timestamp),
        "latencyUsec": int(v.latencyUsec),
        "valueType": kind,
        "nvmlReturn": int(v.nvmlReturn),
        "value": value if int(v.nvmlReturn) == NVML_SUCCESS else None,
    }


def _plain(value: Any) -> Any:
    """ctypes structs to dicts, tuples to lists, bytes to str: the JSON form of an NVML answer."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    fields_ = getattr(value, "_fields_", None)
    if fields_ is not None:
        return {name: _plain(getattr(value, name)) for name, *_ in fields_}
    return value


def default_api() -> NvmlApi:
    """The real NVML, or the recording named by $SCOPE_NVML_REPLAY (demos and CPU-only tests)."""
    replay = os.environ.get("SCOPE_NVML_REPLAY")
    if replay:
        from scope.collectors.sidecar.nvml_replay import ReplayNvml

        return ReplayNvml(replay)
    return PynvmlApi()
