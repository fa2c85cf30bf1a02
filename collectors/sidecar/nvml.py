"""GPU counters through NVML: the `NvmlSource` of the sidecar, and a probe of the real path.

The calls go through `scope.collectors.sidecar.nvml_api.NvmlApi` (real: nvidia-ml-py; tests and demos:
a recorded replay). What `NvmlSource` samples per GPU and tick (tables `gpu`, `nvlink`, `events`):
utilization, memory, SM and memory clocks, power, temperature, clock-event (throttle) reasons,
volatile ECC counts, remapped rows, PCIe byte counters (or PCIe throughput where the counters are
unsupported), and in one `nvmlDeviceGetFieldValues` batch per GPU the per-link NVLink data counters
(KiB, cumulative) and DL replay / recovery / CRC error counters; Xid events are drained from an
event set without blocking. A metric a GPU does not support is dropped after one notice.

Probe the real path on a GPU machine: `python -m scope.collectors.sidecar.nvml --probe [--record FILE]`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from scope.collectors.sidecar.base import EVENTS_SCHEMA, Row, Rows, SourceContext
from scope.collectors.sidecar.nvml_api import (
    DROP_CODES,
    LINK_FIELDS,
    NVML_CLOCK_MEM,
    NVML_CLOCK_SM,
    NVML_ERROR_FUNCTION_NOT_FOUND,
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_TIMEOUT,
    NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
    NVML_FI_DEV_NVLINK_LINK_COUNT,
    NVML_MEMORY_ERROR_TYPE_CORRECTED,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
    NVML_NVLINK_MAX_LINKS,
    NVML_PCIE_UTIL_RX_BYTES,
    NVML_PCIE_UTIL_TX_BYTES,
    NVML_SUCCESS,
    NVML_TEMPERATURE_GPU,
    NVML_VOLATILE_ECC,
    PCIE_FIELDS,
    NvmlApi,
    NvmlError,
    NvmlUnavailable,
    PynvmlApi,
    default_api,
)

__all__ = ["NvmlApi", "NvmlError", "NvmlSource", "NvmlUnavailable", "PynvmlApi", "default_api", "probe"]

# ----- the source ------------------------------------------------------------------------------

GPU_SCHEMA = pa.schema(
    [("ts_ns", pa.int64()), ("gpu", pa.int32()), ("uuid", pa.string()), ("pci", pa.string())]
    + [(c, pa.int64()) for c in ("util_gpu_pct", "util_mem_pct", "mem_total_bytes", "mem_used_bytes")]
    + [(c, pa.int64()) for c in ("sm_clock_mhz", "mem_clock_mhz", "power_mw", "temp_c", "clocks_event_reasons")]
    + [(c, pa.int64()) for c in ("pcie_tx_bytes", "pcie_rx_bytes", "pcie_tx_kbps", "pcie_rx_kbps")]
    + [(c, pa.int64()) for c in ("ecc_corrected_volatile", "ecc_uncorrected_volatile")]
    + [(c, pa.int64()) for c in ("remapped_rows_correctable", "remapped_rows_uncorrectable")]
    + [("remap_pending", pa.int64()), ("remap_failure", pa.int64())]
)
NVLINK_SCHEMA = pa.schema(
    [("ts_ns", pa.int64()), ("gpu", pa.int32()), ("link", pa.int32()), ("active", pa.bool_())]
    + [(column, pa.int64()) for column in LINK_FIELDS.values()]
    + [("nvml_ts_us", pa.int64())]  # NVML's own sample time of the link counters (rates use it)
)


@dataclass(frozen=True)
class Metric:
    columns: tuple[str, ...]
    function: str
    args: tuple[int, ...]
    extract: Callable[[Any], tuple[Any, ...]]
    fallback: str | None = None  # older drivers' name for the same call


def _one(answer: Any) -> tuple[Any, ...]:
    return (answer,)


GPU_METRICS = (
    Metric(
        ("util_gpu_pct", "util_mem_pct"),
        "nvmlDeviceGetUtilizationRates",
        (),
        lambda a: (a["gpu"], a["memory"]),
    ),
    Metric(
        ("mem_total_bytes", "mem_used_bytes"),
        "nvmlDeviceGetMemoryInfo",
        (),
        lambda a: (a["total"], a["used"]),
    ),
    Metric(("sm_clock_mhz",), "nvmlDeviceGetClockInfo", (NVML_CLOCK_SM,), _one),
    Metric(("mem_clock_mhz",), "nvmlDeviceGetClockInfo", (NVML_CLOCK_MEM,), _one),
    Metric(("power_mw",), "nvmlDeviceGetPowerUsage", (), _one),
    Metric(("temp_c",), "nvmlDeviceGetTemperature", (NVML_TEMPERATURE_GPU,), _one),
    Metric(
        ("clocks_event_reasons",),
        "nvmlDeviceGetCurrentClocksEventReasons",
        (),
        _one,
        fallback="nvmlDeviceGetCurrentClocksThrottleReasons",
    ),
    Metric(
        ("ecc_corrected_volatile",),
        "nvmlDeviceGetTotalEccErrors",
        (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC),
        _one,
    ),
    Metric(
        ("ecc_uncorrected_volatile",),
        "nvmlDeviceGetTotalEccErrors",
        (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
        _one,
    ),
    Metric(
        ("remapped_rows_correctable", "remapped_rows_uncorrectable", "remap_pending", "remap_failure"),
        "nvmlDeviceGetRemappedRows",
        (),
        tuple,
    ),
)
PCIE_THROUGHPUT_METRICS = (
    Metric(("pcie_tx_kbps",), "nvmlDeviceGetPcieThroughput", (NVML_PCIE_UTIL_TX_BYTES,), _one),
    Metric(("pcie_rx_kbps",), "nvmlDeviceGetPcieThroughput", (NVML_PCIE_UTIL_RX_BYTES,), _one),
)


@dataclass
class GpuState:
    index: int
    uuid: str | None
    pci: str | None
    links: dict[int, bool]  # link -> active at start
    metrics: list[Metric]
    fields: list[tuple[int, int]]
    fields_checked: bool = False
    lost: bool = False


@dataclass
class NvmlSource:
    """Per-GPU and per-NVLink counters plus Xid events; unavailable without NVML or a GPU."""

    api_factory: Callable[[], NvmlApi] = default_api
    max_events_per_tick: int = 64
    name: str = "nvml"
    tables: dict[str, pa.Schema] = field(
        default_factory=lambda: {"gpu": GPU_SCHEMA, "nvlink": NVLINK_SCHEMA, "events": EVENTS_SCHEMA}
    )
    api: NvmlApi | None = None
    gpus: list[GpuState] = field(default_factory=list)
    xid_gpus: list[int] = field(default_factory=list)
    notify: Callable[[str], None] = field(default=lambda message: None)

    def open(self, ctx: SourceContext) -> str | None:
        self.notify = ctx.notify
        try:
            self.api = self.api_factory()
        except NvmlUnavailable as exc:
            return str(exc)
        try:
            count = int(self.api.call("nvmlDeviceGetCount"))
        except NvmlError as exc:
            return f"nvmlDeviceGetCount failed: {exc}"
        if count == 0:
            return "NVML reports no GPU"
        self.gpus = [self._describe(gpu) for gpu in range(count)]
        self._register_xid_events()
        return None

    def _try(self, function: str, gpu: int | None, *args: Any) -> Any:
        try:
            return self.api.call(function, gpu, *args)  # type: ignore[union-attr]
        except NvmlError:
            return None

    def _describe(self, gpu: int) -> GpuState:
        uuid = self._try("nvmlDeviceGetUUID", gpu)
        pci_info = self._try("nvmlDeviceGetPciInfo", gpu)
        pci = pci_info.get("busId") if isinstance(pci_info, dict) else None
        count_answer = self._try("nvmlDeviceGetFieldValues", gpu, [[NVML_FI_DEV_NVLINK_LINK_COUNT, 0]])
        n_links = None
        if count_answer and count_answer[0]["nvmlReturn"] == NVML_SUCCESS:
            n_links = int(count_answer[0]["value"])
        links: dict[int, bool] = {}
        for link in range(NVML_NVLINK_MAX_LINKS if n_links is None else n_links):
            state = self._try("nvmlDeviceGetNvLinkState", gpu, link)
            if state is None and n_links is None:
                break  # probing: the first link NVML refuses ends the list
            links[link] = bool(state)
        fields = [(fid, link) for link in links for fid in LINK_FIELDS]
        fields += [(fid, 0) for fid in PCIE_FIELDS]
        return GpuState(gpu, uuid, pci, links, list(GPU_METRICS), fields)

    def _register_xid_events(self) -> None:
        try:
            self.api.call("nvmlEventSetCreate")  # type: ignore[union-attr]
        except NvmlError as exc:
            self.notify(f"Xid events not available through NVML ({exc}); kernel log still read")
            return
        for gpu in self.gpus:
            try:
                self.api.call("nvmlDeviceRegisterEvents", gpu.index, NVML_EVENT_TYPE_XID_CRITICAL_ERROR)  # type: ignore[union-attr]
                self.xid_gpus.append(gpu.index)
            except NvmlError as exc:
                self.notify(f"Xid events not available for GPU {gpu.index} ({exc})")

    def sample(self, ts_ns: int) -> Rows:
        out: Rows = {"gpu": [], "nvlink": [], "events": []}
        for gpu in self.gpus:
            if gpu.lost:
                continue
            row: Row = {"ts_ns": ts_ns, "gpu": gpu.index, "uuid": gpu.uuid, "pci": gpu.pci}
            for metric in list(gpu.metrics):
                self._read_metric(gpu, metric, row, out)
            out["nvlink"].extend(self._read_fields(gpu, row, ts_ns))
            out["gpu"].append(row)
        out["events"].extend(self._drain_events(ts_ns))
        return out

    def _read_metric(self, gpu: GpuState, metric: Metric, row: Row, out: Rows) -> None:
        try:
            answer = self.api.call(metric.function, gpu.index, *metric.args)  # type: ignore[union-attr]
        except NvmlError as exc:
            if exc.code == NVML_ERROR_FUNCTION_NOT_FOUND and metric.fallback:
                index = gpu.metrics.index(metric)
                gpu.metrics[index] = Metric(metric.columns, metric.fallback, metric.args, metric.extract)
            elif exc.code in DROP_CODES:
                gpu.metrics.remove(metric)
                self.notify(
                    f"{metric.function}{metric.args or ''} unsupported ({exc}); {', '.join(metric.columns)} left empty"
                )
            elif exc.code == NVML_ERROR_GPU_IS_LOST and not gpu.lost:
                gpu.lost = True
                out["events"].append(
                    self._event_row(row["ts_ns"], "gpu_lost", gpu.index, -1, f"GPU {gpu.index} is lost ({exc})")
                )
            return
        row.update(zip(metric.columns, metric.extract(answer), strict=False))

    def _read_fields(self, gpu: GpuState, row: Row, ts_ns: int) -> list[Row]:
        if not gpu.fields:
            return []
        try:
            answers = self.api.call("nvmlDeviceGetFieldValues", gpu.index, [list(f) for f in gpu.fields])  # type: ignore[union-attr]
        except NvmlError as exc:
            if exc.code in DROP_CODES:
                gpu.fields = []
                self.notify(f"nvmlDeviceGetFieldValues unsupported ({exc}); NVLink and PCIe counters left empty")
            return []
        links: dict[int, Row] = {}
        failed: set[tuple[int, int]] = set()
        for answer in answers:
            fid, scope = answer["fieldId"], answer["scopeId"]
            if answer["nvmlReturn"] != NVML_SUCCESS:
                failed.add((fid, scope))
                continue
            if fid in PCIE_FIELDS:
                row[PCIE_FIELDS[fid]] = answer["value"]
            elif fid in LINK_FIELDS:
                link = links.setdefault(scope, {"ts_ns": ts_ns, "gpu": gpu.index, "link": scope})
                link[LINK_FIELDS[fid]] = answer["value"]
                link["nvml_ts_us"] = answer["timestamp"]
                link["active"] = gpu.links.get(scope)
        if not gpu.fields_checked:
            self._drop_failed_fields(gpu, failed)
        return [links[k] for k in sorted(links)]

    def _drop_failed_fields(self, gpu: GpuState, failed: set[tuple[int, int]]) -> None:
        """After the first batch, stop asking for fields this GPU does not answer (bounded work)."""
        gpu.fields_checked = True
        if not failed:
            return
        gpu.fields = [f for f in gpu.fields if f not in failed]
        names = sorted({LINK_FIELDS.get(fid) or PCIE_FIELDS.get(fid, str(fid)) for fid, _ in failed})
        self.notify(f"NVML fields unsupported, left empty: {', '.join(names)}")
        if any(fid in PCIE_FIELDS for fid, _ in failed):
            gpu.metrics.extend(PCIE_THROUGHPUT_METRICS)

    def _drain_events(self, ts_ns: int) -> list[Row]:
        rows: list[Row] = []
        if not self.xid_gpus:
            return rows
        for _ in range(self.max_events_per_tick):
            try:
                event = self.api.call("nvmlEventSetWait_v2", None, 0)  # type: ignore[union-attr]
            except NvmlError as exc:
                if exc.code != NVML_ERROR_TIMEOUT:
                    self.notify(f"nvmlEventSetWait_v2 failed ({exc})")
                break
            gpu = int(event["device"])
            if event["eventType"] & NVML_EVENT_TYPE_XID_CRITICAL_ERROR:
                code = int(event["eventData"])
                rows.append(self._event_row(ts_ns, "xid", gpu, code, f"Xid {code} on GPU {gpu} (NVML event)"))
        return rows

    def _event_row(self, ts_ns: int, kind: str, gpu: int, code: int, message: str) -> Row:
        pci = next((g.pci for g in self.gpus if g.index == gpu), None)
        return {
            "ts_ns": ts_ns,
            "source": "nvml",
            "kind": kind,
            "gpu": gpu,
            "pci": pci,
            "code": code,
            "message": message,
        }

    def close(self) -> None:
        if self.api is not None:
            self.api.close()


# ----- probe -----------------------------------------------------------------------------------


def probe(seconds: float = 2.0, record: str | None = None, ticks: int = 3, replay: str | None = None) -> int:
    """Sample NVML `ticks` times, `seconds` apart, and print what it read (`replay`: from a file)."""
    import tempfile
    from pathlib import Path

    from scope.collectors.sidecar.nvml_replay import RecordingNvml, ReplayNvml

    recorder: RecordingNvml | None = None

    def factory() -> NvmlApi:
        nonlocal recorder
        api: NvmlApi = ReplayNvml(replay) if replay else PynvmlApi()
        if record:
            recorder = RecordingNvml(api)
            return recorder
        return api

    source = NvmlSource(api_factory=factory)
    with tempfile.TemporaryDirectory(prefix="scope-nvml-probe-") as tmp:
        reason = source.open(SourceContext(host_dir=Path(tmp), notify=lambda m: print(f"notice: {m}")))
    if reason:
        print(f"NVML unavailable: {reason}")
        return 3
    print(f"driver {source._try('nvmlSystemGetDriverVersion', None)}; Xid events registered on GPUs {source.xid_gpus}")
    for gpu in source.gpus:
        name = source._try("nvmlDeviceGetName", gpu.index)
        print(
            f"GPU {gpu.index}: {name} {gpu.uuid} pci {gpu.pci}; "
            f"{len(gpu.links)} NVLinks, active {sum(gpu.links.values())}"
        )
    samples = []
    for tick in range(ticks):
        samples.append(source.sample(time.time_ns()))
        if tick + 1 < ticks:
            time.sleep(seconds)
    _print_samples(samples)
    if recorder is not None and record:
        recorder.save(
            record, provenance=f"recorded by `python -m scope.collectors.sidecar.nvml --probe` ({ticks} ticks)"
        )
        print(f"recording written to {record}")
    source.close()
    return 0


def _print_samples(samples: list[Rows]) -> None:
    last = samples[-1]
    for row in last["gpu"]:
        print("gpu", {k: v for k, v in row.items() if k != "ts_ns"})
    if len(samples) >= 2:
        first = {(r["gpu"], r["link"]): r for r in samples[0]["nvlink"]}
        for row in last["nvlink"]:
            old = first.get((row["gpu"], row["link"]))
            if old and old.get("tx_kib") is not None and row.get("tx_kib") is not None:
                dt = (row["nvml_ts_us"] - old["nvml_ts_us"]) / 1e6 or 1e-9
                tx = (row["tx_kib"] - old["tx_kib"]) * 1024 / dt
                print(
                    f"nvlink gpu {row['gpu']} link {row['link']} active={row['active']} tx {tx / 1e9:.3f} GB/s",
                    row,
                )
    for sample in samples:
        for row in sample["events"]:
            print("event", row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Exercise the real NVML path and print what it read.")
    parser.add_argument("--probe", action="store_true", help="sample the GPUs a few times and print")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument("--record", help="also write a replay recording (JSON) of every NVML answer")
    parser.add_argument("--replay", help="answer from a recording instead of the GPUs (checks this script)")
    args = parser.parse_args(argv)
    if not args.probe:
        parser.print_help()
        return 2
    return probe(args.seconds, args.record, args.ticks, args.replay)


if __name__ == "__main__":
    sys.exit(main())
