"""The counter sidecar: one sampler per host, beside the job, writing columnar counter chunks.

Started by `scope run` (`start_sidecar`), alone by `scope sample`, or by `scope attach`
(`scope.collectors.sidecar.attach.attach_pids`). Default 1 Hz, at most 10 Hz. It must never slow or
break the job: it runs niced to 19 (a subprocess by default, or threads), work per tick is bounded,
a source that hangs stalls only its own thread, and every error is caught and logged.

On-disk format, `RUN/hosts/<host>/`:

    counters/<table>/<first_ts_ns>-<pid>-<seq>.parquet   one Parquet file per chunk (zstd)
    sidecar.log                                           start/stop, one line per notice, errors
    sidecar.json                                          status: sources (ok / unavailable and
                                                          why), notices, samples, CPU seconds
    kmsg.log                                              kept kernel lines (dmesg --decode iso form)

Chunks are written every `chunk_seconds` (30 s) to a temporary name and renamed into place, so a
killed sampler loses at most one chunk and never leaves a torn file; `events` rows are flushed at
once. Tables are wide per source, one row per sample and entity, `ts_ns` int64 from
`time.time_ns()` (the clock of the traces). Counters are stored raw and cumulative as the hardware
reports them (rates and increments: `scope.counter_signals`), gauges as read:

    host    ts_ns, n_cpus, cpu_{user,nice,system,idle,iowait,irq,softirq,steal}_s (cumulative s),
            procs_running, load1, load5, mem_{total,available,free,cached}_bytes, swap_{total,free}_bytes
    net     ts_ns, iface, {rx,tx}_{bytes,packets,errs,drop}                       (/proc/net/dev)
    disk    ts_ns, disk, reads, writes, read_bytes, write_bytes, io_ms        (/proc/diskstats)
    ib      ts_ns, device, port, link_layer, rate, state, phys_state, xmit_bytes, rcv_bytes
            (port_xmit_data / port_rcv_data x 4), then the sysfs counters and mlx5 hw_counters
            under their own names (see scope.collectors.sidecar.infiniband)
    gpu     ts_ns, gpu, uuid, pci, util_{gpu,mem}_pct, mem_{total,used}_bytes, {sm,mem}_clock_mhz,
            power_mw, temp_c, clocks_event_reasons (NVML bitmask), pcie_{tx,rx}_bytes (cumulative)
            or pcie_{tx,rx}_kbps, ecc_{corrected,uncorrected}_volatile, remapped_rows_*, remap_*
    nvlink  ts_ns, gpu, link, active, tx_kib, rx_kib (cumulative KiB), replay_errors,
            recovery_errors, crc_errors, nvml_ts_us (NVML's sample time, in us)
    events  ts_ns, source (nvml | kmsg), kind (xid, nvrm, aer, mlx5, segfault, oom, peermem,
            nvswitch, gpu_lost), gpu (-1 unknown), pci, code (Xid number or -1), message

A source this machine lacks (no GPU, no InfiniBand, kernel log unreadable) is reported once as
unavailable (a line in sidecar.log, an entry in `notices` and in sidecar.json), never as an error.
Environment: `SCOPE_NVML_REPLAY=FILE` replays recorded NVML answers instead of the real NVML;
`SCOPE_IB_ROOT=DIR` reads InfiniBand counters from another sysfs root.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from scope.collectors.sidecar.base import Source
from scope.collectors.sidecar.sampler import MAX_HZ, Sampler

from scope import rundir

__all__ = ["MAX_HZ", "Sampler", "SidecarHandle", "default_sources", "start_sidecar"]


def default_sources(
    proc_root: str = "/proc",
    ib_root: str | None = None,
    kmsg_path: str = "/dev/kmsg",
    nvml_replay: str | None = None,
    kmsg_backlog_s: float | None = 3600.0,
) -> list[Source]:
    """Host, InfiniBand, NVML and kernel-log sources, each reporting itself unavailable if absent."""
    from scope.collectors.sidecar.host import HostSource
    from scope.collectors.sidecar.infiniband import IB_ROOT, InfinibandSource
    from scope.collectors.sidecar.kmsg import KmsgSource
    from scope.collectors.sidecar.nvml import NvmlSource, default_api

    api_factory = default_api
    if nvml_replay:
        from scope.collectors.sidecar.nvml_replay import ReplayNvml

        def api_factory() -> Any:
            return ReplayNvml(nvml_replay)

    ib = ib_root or os.environ.get("SCOPE_IB_ROOT") or str(IB_ROOT)
    return [
        HostSource(proc_root),
        InfinibandSource(ib),
        NvmlSource(api_factory=api_factory),
        KmsgSource(kmsg_path, backlog_s=kmsg_backlog_s),
    ]


def default_host() -> str:
    return socket.gethostname() or "localhost"


class SidecarHandle:
    """A running sidecar (thread or subprocess). `stop()` never raises."""

    def __init__(
        self,
        run_dir: Path,
        host: str,
        sampler: Sampler | None = None,
        proc: subprocess.Popen[bytes] | None = None,
        error: str | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.host = host
        self.sampler = sampler
        self.proc = proc
        self.error = error

    @property
    def status_path(self) -> Path:
        return rundir.host_dir(self.run_dir, self.host) / "sidecar.json"

    def status(self) -> dict[str, Any]:
        if self.sampler is not None:
            return self.sampler.status()
        try:
            return json.loads(self.status_path.read_text())
        except (OSError, ValueError):
            return {}

    @property
    def notices(self) -> list[str]:
        notices = list(self.status().get("notices", []))
        return ([f"sidecar failed to start: {self.error}"] if self.error else []) + notices

    @property
    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.sampler is not None and not self.sampler.stopped

    def stop(self, timeout: float = 10.0) -> None:
        try:
            if self.sampler is not None:
                self.sampler.stop(timeout=timeout)
            elif self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()  # the sampler flushes its last chunk on SIGTERM
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
        except Exception as exc:  # stopping a sidecar must never fail the run
            self.error = self.error or f"stop failed: {exc}"


def start_sidecar(
    run_dir: Path | str,
    hz: float = 1.0,
    host: str | None = None,
    *,
    in_thread: bool = False,
    chunk_seconds: float = 30.0,
    sources: list[Source] | None = None,
    kmsg_backlog_s: float = 3600.0,
) -> SidecarHandle:
    """Start sampling this host into RUN/hosts/<host>/ and return at once.

    By default a niced subprocess (`python -m scope.collectors.sidecar`) that exits with its parent;
    `in_thread=True` samples in threads of this process instead. Never raises: a sidecar that
    cannot start yields a handle whose `error` and `notices` say why. `kmsg_backlog_s`: how far back
    the kernel log is read at start (a launcher starting with its job wants ~0: older lines, such as
    another process's segfault, are not this job's).
    """
    run_dir = Path(run_dir)
    host = host or default_host()
    hz = min(max(float(hz), 0.01), MAX_HZ)
    try:
        if in_thread or sources is not None:
            sources = sources or default_sources(kmsg_backlog_s=kmsg_backlog_s)
            sampler = Sampler(run_dir, host, sources, hz, chunk_seconds)
            sampler.start()
            return SidecarHandle(run_dir, host, sampler=sampler)
        host_dir = rundir.host_dir(run_dir, host)
        host_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "scope.collectors.sidecar", "--out", str(run_dir), "--hz", str(hz)]
        cmd += ["--host", host, "--chunk-seconds", str(chunk_seconds), "--parent-pid", str(os.getpid())]
        cmd += ["--kmsg-backlog-s", str(kmsg_backlog_s)]
        with open(host_dir / "sidecar.log", "a") as log:  # a crash's traceback lands in the log
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True)
        return SidecarHandle(run_dir, host, proc=proc)
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            log_path = rundir.host_dir(run_dir, host) / "sidecar.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "a") as fh:
                fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} sidecar failed to start: {message}\n")
        return SidecarHandle(run_dir, host, error=message)
