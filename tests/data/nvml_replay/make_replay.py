"""Build `h100_2gpu.json`: a constructed NVML replay (not recorded from hardware; see README.md).

    python tests/data/nvml_replay/make_replay.py    # rewrites h100_2gpu.json beside this file

Every answer is in the form and units NVML's documentation gives for the call (and that
`scope.collectors.sidecar.nvml.PynvmlApi` produces from real answers); the numbers are chosen so a test
can compute the expected rates by hand. The story, over 5 ticks one second apart:

- 2 GPUs (H100 SXM-like), 18 NVLinks each, all active.
- NVLink data counters (KiB, cumulative): link L of GPU G moves (L + 1) * 1000 * (G + 1) MiB/s out
  and half that in, i.e. tx_kib grows by (L + 1) * 1_024_000 * (G + 1) KiB per second.
- GPU 1, link 5: the CRC counter rises 0, 0, 0, 12, 12 and replay 0, 0, 0, 3, 3; an Xid 74
  (NVLink error) on GPU 1 arrives in tick 2.
- GPU 0 clock-event reasons: idle (0x1) in tick 0, 0 in tick 1, SW thermal slowdown (0x20) in ticks 2
  and 3, 0 in tick 4; GPU 1 always 0.
- GPU 1 does not support the PCIe byte-counter fields (NVML_ERROR_NOT_SUPPORTED), so the sampler
  falls back to nvmlDeviceGetPcieThroughput (KB/s); GPU 0 answers the counters.
- GPU 1 volatile corrected ECC: 0, 0, 0, 0, 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scope.collectors.sidecar import nvml_api as N
from scope.collectors.sidecar.nvml_replay import FORMAT, call_key, field_key

# scope as installed (the checkout on sys.path would leak into the test process that imports this file).
HERE = Path(__file__).resolve().parent

TICKS = 5
N_GPUS = 2
N_LINKS = 18
T0_US = 1_760_000_000_000_000  # field timestamps: us since the epoch, one second per tick
ULL, UINT = 3, 1  # NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_VALUE_TYPE_UNSIGNED_INT
TIMEOUT = {"nvmlError": N.NVML_ERROR_TIMEOUT}
NOT_SUPPORTED = {"nvmlError": N.NVML_ERROR_NOT_SUPPORTED}
PROVENANCE = (
    "Constructed by tests/data/nvml_replay/make_replay.py from the NVML API reference (nvml.h field ids, "
    "struct layouts and units) and nvidia-ml-py's conversions; NOT recorded from hardware. Regenerate "
    "with that script; record a real one with `python -m scope.collectors.sidecar.nvml --probe --record FILE`."
)


def field(fid: int, scope: int, tick: int, value: int, value_type: int = ULL) -> dict[str, Any]:
    return {
        "fieldId": fid,
        "scopeId": scope,
        "timestamp": T0_US + tick * 1_000_000 + 37,  # NVML stamps each value when it read it
        "latencyUsec": 0,
        "valueType": value_type,
        "nvmlReturn": N.NVML_SUCCESS,
        "value": value,
    }


def link_counters(gpu: int, link: int, tick: int) -> dict[int, int]:
    tx_per_s = (link + 1) * 1_024_000 * (gpu + 1)
    faulty = gpu == 1 and link == 5 and tick >= 3
    return {
        N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: 5_000_000_000 + tick * tx_per_s,
        N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: 4_000_000_000 + tick * tx_per_s // 2,
        N.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: 3 if faulty else 0,
        N.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY: 0,
        N.NVML_FI_DEV_NVLINK_ERROR_DL_CRC: 12 if faulty else 0,
    }


def describe(answers: dict[str, list[Any]], gpu: int) -> None:
    bus = ("18", "2A")[gpu]
    answers[call_key("nvmlDeviceGetName", gpu)] = ["NVIDIA H100 80GB HBM3"]
    answers[call_key("nvmlDeviceGetUUID", gpu)] = [f"GPU-5c0d2f7a-0000-4000-8000-00000000000{gpu}"]
    answers[call_key("nvmlDeviceGetPciInfo", gpu)] = [
        {
            "busIdLegacy": f"0000:{bus}:00.0",
            "domain": 0,
            "bus": int(bus, 16),
            "device": 0,
            "pciDeviceId": 0x233010DE,
            "pciSubSystemId": 0x16C110DE,
            "busId": f"00000000:{bus}:00.0",
        }
    ]
    answers[field_key(gpu, N.NVML_FI_DEV_NVLINK_LINK_COUNT, 0)] = [
        field(N.NVML_FI_DEV_NVLINK_LINK_COUNT, 0, 0, N_LINKS, UINT)
    ]
    for link in range(N_LINKS):
        answers[call_key("nvmlDeviceGetNvLinkState", gpu, link)] = [1]  # NVML_FEATURE_ENABLED: active
    answers[call_key("nvmlDeviceRegisterEvents", gpu, N.NVML_EVENT_TYPE_XID_CRITICAL_ERROR)] = [None]


def per_tick(answers: dict[str, list[Any]], gpu: int, tick: int) -> None:
    def add(key: str, answer: Any) -> None:
        answers.setdefault(key, []).append(answer)

    total = 85_520_809_984  # 81,559 MiB: what an H100 80GB HBM3 reports
    add(call_key("nvmlDeviceGetUtilizationRates", gpu), {"gpu": 95 - tick, "memory": 40 + gpu})
    add(
        call_key("nvmlDeviceGetMemoryInfo", gpu),
        {"total": total, "free": total - 70_000_000_000, "used": 70_000_000_000},
    )
    add(
        call_key("nvmlDeviceGetClockInfo", gpu, N.NVML_CLOCK_SM),
        1980 if not (gpu == 0 and tick in (2, 3)) else 1410,
    )
    add(call_key("nvmlDeviceGetClockInfo", gpu, N.NVML_CLOCK_MEM), 2619)
    add(call_key("nvmlDeviceGetPowerUsage", gpu), 650_000 + 1_000 * tick)  # milliwatts
    add(
        call_key("nvmlDeviceGetTemperature", gpu, N.NVML_TEMPERATURE_GPU),
        61 + tick + (20 if gpu == 0 and tick in (2, 3) else 0),
    )
    reasons = [0x1, 0x0, 0x20, 0x20, 0x0][tick] if gpu == 0 else 0
    add(call_key("nvmlDeviceGetCurrentClocksEventReasons", gpu), reasons)
    corrected = 2 if gpu == 1 and tick == 4 else 0
    add(
        call_key("nvmlDeviceGetTotalEccErrors", gpu, N.NVML_MEMORY_ERROR_TYPE_CORRECTED, N.NVML_VOLATILE_ECC),
        corrected,
    )
    add(
        call_key("nvmlDeviceGetTotalEccErrors", gpu, N.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, N.NVML_VOLATILE_ECC),
        0,
    )
    add(call_key("nvmlDeviceGetRemappedRows", gpu), [0, 0, 0, 0])
    for link in range(N_LINKS):
        for fid, value in link_counters(gpu, link, tick).items():
            add(field_key(gpu, fid, link), field(fid, link, tick, value))
    for fid, base in (
        (N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 7_000_000_000),
        (N.NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 9_000_000_000),
    ):
        if gpu == 0:
            add(field_key(gpu, fid, 0), field(fid, 0, tick, base + tick * 2_500_000_000))
        else:
            add(
                field_key(gpu, fid, 0),
                {**field(fid, 0, tick, 0), "nvmlReturn": N.NVML_ERROR_NOT_SUPPORTED, "value": None},
            )
    if gpu == 1 and tick >= 1:  # the fallback starts after the first tick showed the counters missing
        add(call_key("nvmlDeviceGetPcieThroughput", gpu, N.NVML_PCIE_UTIL_TX_BYTES), 2_400_000 + tick)  # KB/s
        add(call_key("nvmlDeviceGetPcieThroughput", gpu, N.NVML_PCIE_UTIL_RX_BYTES), 3_100_000 + tick)


def build() -> dict[str, Any]:
    answers: dict[str, list[Any]] = {
        call_key("nvmlSystemGetDriverVersion"): ["570.124.06"],
        call_key("nvmlDeviceGetCount"): [N_GPUS],
        call_key("nvmlEventSetCreate"): [None],
    }
    for gpu in range(N_GPUS):
        describe(answers, gpu)
    for tick in range(TICKS):
        for gpu in range(N_GPUS):
            per_tick(answers, gpu, tick)
    xid = {
        "device": 1,
        "eventType": N.NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
        "eventData": 74,
        "gpuInstanceId": 0xFFFFFFFF,
        "computeInstanceId": 0xFFFFFFFF,
    }
    # One nvmlEventSetWait_v2(0) per tick until it times out: ticks 0 and 1 time out, tick 2 gets Xid 74.
    answers[call_key("nvmlEventSetWait_v2", None, 0)] = [TIMEOUT, TIMEOUT, xid, TIMEOUT]
    return {"format": FORMAT, "provenance": PROVENANCE, "answers": answers}


def dump(doc: dict[str, Any]) -> str:
    """One answer key per line: small diffs, readable."""
    lines = [
        f'{{"format": {json.dumps(doc["format"])},',
        f' "provenance": {json.dumps(doc["provenance"])},',
        ' "answers": {',
    ]
    items = list(doc["answers"].items())
    for i, (key, value) in enumerate(items):
        comma = "," if i + 1 < len(items) else ""
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}{comma}")
    lines.append("}}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    out = HERE / "h100_2gpu.json"
    out.write_text(dump(build()))
    print(f"wrote {out}")
