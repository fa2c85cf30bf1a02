"""The counter sidecar: host counters for real, InfiniBand from a sysfs tree in the real layout,
NVML from a recorded-format replay, kernel-log lines, attach with py-spy, and the derived signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from scope.collectors.sidecar import start_sidecar
from scope.collectors.sidecar.attach import attach_pids, find_py_spy
from scope.collectors.sidecar.base import SourceContext
from scope.collectors.sidecar.host import HostSource
from scope.collectors.sidecar.infiniband import InfinibandSource, read_snapshot
from scope.collectors.sidecar.kmsg import KmsgSource, classify, parse_record
from scope.collectors.sidecar.nvml import NvmlSource, NvmlUnavailable, PynvmlApi
from scope.collectors.sidecar.nvml_replay import ReplayNvml
from scope.collectors.sidecar.sampler import Sampler

from scope import counter_signals
from scope.cli import main as scope_main
from tests.conftest import shared_data

REPLAY = Path(__file__).parent / "data" / "nvml_replay" / "h100_2gpu.json"
HOST_COLUMNS = {
    "ts_ns",
    "n_cpus",
    "cpu_user_s",
    "cpu_system_s",
    "cpu_idle_s",
    "cpu_iowait_s",
    "load1",
    "mem_total_bytes",
    "mem_available_bytes",
    "procs_running",
    "host",
}


def replay_source() -> NvmlSource:
    return NvmlSource(api_factory=lambda: ReplayNvml(REPLAY))


# ----- host counters, for real --------------------------------------------------------------------


@pytest.mark.subprocess
def test_sampling_writes_host_columns_with_increasing_timestamps(tmp_path: Path) -> None:
    before = time.time_ns()
    handle = start_sidecar(tmp_path, hz=10, host="h1", chunk_seconds=0.5, sources=[HostSource()])
    time.sleep(2.0)
    handle.stop()
    after = time.time_ns()
    host = counter_signals.read_counters(tmp_path, "host")
    assert set(host.columns) >= HOST_COLUMNS
    assert len(host) >= 5  # 10 Hz for 2 s, niced: a saturated machine may skip some ticks
    ts = host["ts_ns"].to_numpy()
    assert (ts[1:] > ts[:-1]).all() and before <= ts[0] and ts[-1] <= after
    assert (host["mem_total_bytes"] > host["mem_available_bytes"]).all() and (host["n_cpus"] >= 1).all()
    assert len(list((tmp_path / "hosts" / "h1" / "counters" / "host").glob("*.parquet"))) >= 2  # chunked
    net = counter_signals.read_counters(tmp_path, "net")
    assert "lo" in set(net["iface"]) and {"rx_bytes", "tx_bytes"} <= set(net.columns)
    busy = counter_signals.host_utilization(host)["cpu_busy_pct"].dropna()
    assert len(busy) >= 3 and busy.between(0, 100).all()
    status = json.loads((tmp_path / "hosts" / "h1" / "sidecar.json").read_text())
    assert status["stopped"] and status["sources"]["host"]["samples"] == len(host)


@pytest.mark.subprocess
def test_killed_sampler_subprocess_leaves_readable_chunks(tmp_path: Path) -> None:
    handle = start_sidecar(tmp_path, hz=10, host="h1", chunk_seconds=0.5)
    assert handle.proc is not None and handle.error is None
    folder = tmp_path / "hosts" / "h1" / "counters" / "host"
    deadline = time.monotonic() + 30
    while len(list(folder.glob("*.parquet"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(handle.proc.pid, signal.SIGKILL)
    handle.proc.wait(10)
    files = sorted(folder.glob("*.parquet"))
    assert len(files) >= 2
    for path in files:
        assert pq.read_table(path).num_rows > 0  # every chunk on disk is whole
    host = counter_signals.read_counters(tmp_path, "host")
    assert not host.attrs["skipped"] and len(host) >= 5 and host["ts_ns"].is_monotonic_increasing
    (folder / "9-9-99999.parquet").write_bytes(b"not parquet")  # a damaged chunk is named, not fatal
    again = counter_signals.read_counters(tmp_path, "host")
    assert len(again) == len(host) and "9-9-99999.parquet" in again.attrs["skipped"][0]


def test_start_sidecar_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    handle = start_sidecar(blocker / "run", in_thread=True, sources=[HostSource()])
    assert handle.error and handle.notices and not handle.alive
    handle.stop()


# ----- InfiniBand from a sysfs tree in the real layout --------------------------------------------


def make_ib_port(root: Path, device: str, port: int, layer: str, counters_: dict[str, int]) -> Path:
    port_dir = root / device / "ports" / str(port)
    (port_dir / "counters").mkdir(parents=True)
    (port_dir / "hw_counters").mkdir()
    (port_dir / "state").write_text("4: ACTIVE\n")
    (port_dir / "phys_state").write_text("5: LinkUp\n")
    (port_dir / "rate").write_text("400 Gb/sec (4X NDR)\n")
    (port_dir / "link_layer").write_text(f"{layer}\n")
    set_ib_counters(port_dir, counters_)
    return port_dir


def set_ib_counters(port_dir: Path, values: dict[str, int]) -> None:
    for name, value in values.items():
        folder = "hw_counters" if name in ("out_of_sequence", "local_ack_timeout_err") else "counters"
        (port_dir / folder / name).write_text(f"{value}\n")


IB_START = {
    "port_xmit_data": 1_000_000,
    "port_rcv_data": 2_000_000,
    "port_xmit_packets": 10_000,
    "port_rcv_packets": 20_000,
    "symbol_error": 0,
    "link_downed": 0,
    "port_xmit_wait": 5,
    "out_of_sequence": 0,
    "local_ack_timeout_err": 1,
}


def test_ib_byte_counters_of_two_snapshots_are_in_4_byte_words(tmp_path: Path) -> None:
    root = tmp_path / "infiniband"
    port = make_ib_port(root, "mlx5_0", 1, "InfiniBand", IB_START)
    make_ib_port(root, "mlx5_1", 1, "Ethernet", IB_START)
    before = read_snapshot(root)
    set_ib_counters(port, {**IB_START, "port_xmit_data": 1_000_000 + 250_000_000, "port_rcv_data": 2_000_000 + 5_000})
    after = read_snapshot(root)
    # 250e6 words x 4 bytes; 5,000 words x 4
    assert after[("mlx5_0", 1)]["xmit_bytes"] - before[("mlx5_0", 1)]["xmit_bytes"] == 1_000_000_000
    assert after[("mlx5_0", 1)]["rcv_bytes"] - before[("mlx5_0", 1)]["rcv_bytes"] == 20_000
    assert after[("mlx5_1", 1)]["xmit_bytes"] == before[("mlx5_1", 1)]["xmit_bytes"]


def test_ib_source_table_rates_and_error_increments(tmp_path: Path) -> None:
    root = tmp_path / "infiniband"
    port = make_ib_port(root, "mlx5_0", 1, "InfiniBand", IB_START)
    sampler = Sampler(tmp_path / "run", "h1", [InfinibandSource(root)], hz=10)
    sampler.open()
    sampler.tick_all()
    set_ib_counters(port, {**IB_START, "port_xmit_data": 1_000_000 + 3_000_000, "symbol_error": 7})
    time.sleep(0.05)
    sampler.tick_all()
    sampler.stop()
    ib = counter_signals.read_counters(tmp_path / "run", "ib")
    assert list(ib["xmit_bytes"]) == [4_000_000, 16_000_000] and set(ib["link_layer"]) == {"InfiniBand"}
    rate = counter_signals.ib_bandwidth(ib).iloc[0]
    seconds = (ib["ts_ns"].iloc[1] - ib["ts_ns"].iloc[0]) / 1e9
    assert rate["xmit_bytes_per_s"] == pytest.approx(3_000_000 * 4 / seconds, rel=1e-12)
    errors = counter_signals.error_increments({"ib": ib})
    assert errors[["entity", "counter", "increment"]].values.tolist() == [["mlx5_0/1", "symbol_error", 7]]
    assert errors["ts_ns"].iloc[0] == ib["ts_ns"].iloc[1]


# ----- NVML through the replay -------------------------------------------------------------------


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("nvml_run")
    sampler = Sampler(run, "gpuhost", [replay_source()], hz=10)
    sampler.open()
    for _ in range(5):  # the recording's five ticks
        sampler.tick_all()
    sampler.stop()
    return run


def test_nvml_replay_gives_per_link_nvlink_rates(replay_run: Path) -> None:
    nvlink = counter_signals.read_counters(replay_run, "nvlink")
    assert len(nvlink) == 2 * 18 * 5 and nvlink["active"].all()
    bw = counter_signals.nvlink_bandwidth(nvlink)
    assert len(bw) == 2 * 18 * 4
    # make_replay.py: link L of GPU G sends (L + 1) * 1,024,000 * (G + 1) KiB per second.
    expected_tx = (bw["link"].astype("int64") + 1) * 1_024_000 * (bw["gpu"].astype("int64") + 1) * 1024
    assert (bw["tx_bytes_per_s"] == expected_tx).all()
    assert (bw["rx_bytes_per_s"] == expected_tx / 2).all()


def test_nvml_replay_yields_xid_throttling_errors_and_pcie_fallback(replay_run: Path) -> None:
    raw = {name: counter_signals.read_counters(replay_run, name) for name in counter_signals.TABLES}
    xid = counter_signals.xid_events(raw["events"], raw["gpu"])
    assert xid[["source", "gpu", "code"]].values.tolist() == [["nvml", 1, 74]]
    assert xid["meaning"].iloc[0] == "NVLink error"
    gpu_ts = sorted(raw["gpu"]["ts_ns"].unique())
    assert xid["ts_ns"].iloc[0] == gpu_ts[2]  # drained in tick 2
    throttle = counter_signals.throttle_intervals(raw["gpu"])
    assert throttle[["gpu", "reason", "samples"]].values.tolist() == [[0, "sw_thermal_slowdown", 2]]
    assert throttle[["start_ns", "end_ns"]].values.tolist() == [[gpu_ts[2], gpu_ts[4]]]
    errors = counter_signals.error_increments(raw)
    got = sorted(errors[["entity", "counter", "increment"]].values.tolist())
    assert got == [["1", "ecc_corrected_volatile", 2], ["1/5", "crc_errors", 12], ["1/5", "replay_errors", 3]]
    gpu1 = raw["gpu"][raw["gpu"]["gpu"] == 1]
    assert gpu1["pcie_tx_bytes"].isna().all() and gpu1["pcie_tx_kbps"].notna().sum() == 4


def test_replay_file_is_what_its_builder_writes() -> None:
    sys.path.insert(0, str(REPLAY.parent))
    try:
        import make_replay
    finally:
        sys.path.remove(str(REPLAY.parent))
    assert json.loads(REPLAY.read_text()) == json.loads(make_replay.dump(make_replay.build()))
    assert "NOT recorded from hardware" in json.loads(REPLAY.read_text())["provenance"]


def test_probe_prints_and_its_recording_replays_the_same(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from scope.collectors.sidecar import nvml

    recorded = tmp_path / "recorded.json"
    assert (
        nvml.main(["--probe", "--replay", str(REPLAY), "--ticks", "3", "--seconds", "0", "--record", str(recorded)])
        == 0
    )
    out = capsys.readouterr().out
    assert "GPU 1: NVIDIA H100 80GB HBM3" in out and "link 17 active=True tx 37.749 GB/s" in out
    assert "'code': 74" in out
    original, again = (
        NvmlSource(api_factory=lambda: ReplayNvml(REPLAY)),
        NvmlSource(api_factory=lambda: ReplayNvml(recorded)),
    )
    for source in (original, again):
        assert source.open(SourceContext(tmp_path)) is None
    for _ in range(3):
        a, b = original.sample(1), again.sample(1)
        assert a["nvlink"] == b["nvlink"] and a["gpu"] == b["gpu"] and a["events"] == b["events"]


def test_nvml_constants_match_pynvml() -> None:
    pynvml = pytest.importorskip("pynvml")
    from scope.collectors.sidecar import nvml_api as nvml

    for name in (
        "NVML_ERROR_NOT_SUPPORTED",
        "NVML_ERROR_TIMEOUT",
        "NVML_ERROR_GPU_IS_LOST",
        "NVML_CLOCK_SM",
        "NVML_CLOCK_MEM",
        "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX",
        "NVML_FI_DEV_NVLINK_ERROR_DL_CRC",
        "NVML_FI_DEV_NVLINK_LINK_COUNT",
        "NVML_FI_DEV_PCIE_COUNT_RX_BYTES",
        "NVML_VOLATILE_ECC",
    ):
        assert getattr(nvml, name) == getattr(pynvml, name), name
    assert pynvml.nvmlEventTypeXidCriticalError == nvml.NVML_EVENT_TYPE_XID_CRITICAL_ERROR


# ----- unavailable sources -----------------------------------------------------------------------


@pytest.mark.subprocess
def test_absent_sources_produce_one_notice_each(tmp_path: Path) -> None:
    def real_nvml() -> PynvmlApi:
        return PynvmlApi()

    try:
        PynvmlApi().close()
        nvml_absent = False  # a GPU machine: NVML is there
    except NvmlUnavailable:
        nvml_absent = True
    sources = [
        HostSource(proc_root=tmp_path / "no-proc"),
        InfinibandSource(tmp_path / "no-ib"),
        NvmlSource(api_factory=real_nvml),
        KmsgSource(tmp_path / "no-kmsg", dmesg_cmd="scope-no-dmesg"),
    ]
    handle = start_sidecar(tmp_path, hz=10, host="h1", sources=sources)
    time.sleep(0.5)
    handle.stop()
    absent = ["host", "infiniband", "kmsg"] + (["nvml"] if nvml_absent else [])
    for name in absent:
        assert sum(n.startswith(f"{name}: unavailable") for n in handle.notices) == 1, handle.notices
        assert handle.status()["sources"][name]["status"] == "unavailable"
    log = (tmp_path / "hosts" / "h1" / "sidecar.log").read_text()
    assert log.count("unavailable") == len(absent) and "Traceback" not in log


# ----- kernel log -------------------------------------------------------------------------------


def test_kernel_lines_classified(tmp_path: Path) -> None:
    xid_log = shared_data("gpud", "components", "accelerator", "nvidia", "xid", "testdata", "dmesg-with-xid-119.log")
    xids = [classify(line.partition("] ")[2]) for line in xid_log.read_text().splitlines() if "Xid" in line]
    assert xids and all(x == ("xid", 119, "0000:9b:00") for x in xids)
    peermem = shared_data("gpud", "pkg", "kmsg", "testdata", "kmsg.2.peermem.log").read_text().splitlines()
    record = parse_record(peermem[0])
    assert record is not None and classify(record.message, record.level)[0] == "peermem"
    nvswitch_open = parse_record("6,3964,206764307,-;nvidia-nvswitch2: open (major=510)")
    assert classify(nvswitch_open.message, nvswitch_open.level) is None  # chatter at info level


def test_kmsg_source_keeps_gpu_lines_with_wall_time(tmp_path: Path) -> None:
    uptime_us = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    lines = [
        f"6,100,{uptime_us - 2_000_000},-;eth0: link becomes ready",
        f"4,101,{uptime_us - 1_000_000},-;NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off the bus.",
        " SUBSYSTEM=pci",
        f"6,102,{uptime_us},-;python[42]: segfault at 0 ip 00007f error 4 in libnccl.so.2[7f7c+d3d3000]",
    ]
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("\n".join(lines) + "\n")
    source = KmsgSource(kmsg, backlog_s=60)
    host_dir = tmp_path / "host"
    host_dir.mkdir()
    assert source.open(SourceContext(host_dir)) is None
    rows = source.sample(time.time_ns())["events"]
    source.close()
    assert [(r["kind"], r["code"], r["pci"]) for r in rows] == [
        ("xid", 79, "0000:9b:00"),
        ("segfault", -1, None),
    ]
    assert abs(rows[1]["ts_ns"] - time.time_ns()) < 5e9
    logged = (host_dir / "kmsg.log").read_text().splitlines()
    assert len(logged) == 2 and logged[0].startswith("kern  :warn  : ") and "Xid" in logged[0]


# ----- attach -----------------------------------------------------------------------------------


@pytest.fixture()
def idle_rank3():
    env = {**os.environ, "RANK": "3", "LOCAL_RANK": "3"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    time.sleep(0.3)
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.subprocess
def test_attach_dumps_stacks_on_request_and_on_hang(tmp_path: Path, idle_rank3: subprocess.Popen) -> None:
    if find_py_spy() is None:
        pytest.skip("py-spy not installed (pip install py-spy)")
    from scope.collectors.hook.control import write_request

    run = tmp_path / "run"
    # A harmless handler underneath attach's own, so a late timer cannot kill the test process.
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)
    threading.Timer(0.5, lambda: write_request(run, "dump", reason="test")).start()
    threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGUSR1)).start()
    said: list[str] = []
    try:
        code = attach_pids(
            [idle_rank3.pid], run, seconds=5.0, hz=5, hang_after_s=1.5, sources=[HostSource()], say=said.append
        )
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert code == 0
    dumps = sorted((run / "ranks" / "3" / "stacks").glob("pyspy-*.txt"))
    reasons = {d.read_text().splitlines()[0].rpartition("reason: ")[2] for d in dumps}
    assert sorted(reasons) == ["SIGUSR1", "control request", "hang"] and len(dumps) == 3, said
    assert all("<module> (<string>:1)" in d.read_text() for d in dumps)  # the sleeping frame
    assert list((run / "control").glob("dump-*.json"))  # hooked ranks are asked to dump too
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["ranks"][0]["rank"] == 3 and manifest["status"] == "hung"
    assert len(counter_signals.read_counters(run, "host")) >= 10


@pytest.mark.subprocess
def test_attach_without_py_spy_says_so_once(tmp_path: Path, idle_rank3: subprocess.Popen) -> None:
    said: list[str] = []
    attach_pids([idle_rank3.pid], tmp_path, seconds=0.6, hz=5, sources=[HostSource()], py_spy="", say=said.append)
    assert sum("py-spy is not installed" in s for s in said) == 1


def test_attach_rejects_missing_pids(tmp_path: Path) -> None:
    from scope.errors import ScopeError

    with pytest.raises(ScopeError, match="no such process"):
        attach_pids([2**22 + 12345], tmp_path, seconds=0.1)


# ----- CLI and step joining -------------------------------------------------------------------------


def test_sample_cli_with_replay_and_steps_joined(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    ib_root = tmp_path / "infiniband"
    make_ib_port(ib_root, "mlx5_0", 1, "InfiniBand", IB_START)
    run = tmp_path / "run"
    status = tmp_path / "status.json"
    code = scope_main(
        [
            "sample",
            "--out",
            str(run),
            "--seconds",
            "1.2",
            "--hz",
            "5",
            "--host",
            "n1",
            "--nvml-replay",
            str(REPLAY),
            "--ib-root",
            str(ib_root),
            "--json",
            str(status),
        ]
    )
    assert code == 0
    sources = json.loads(status.read_text())["sources"]
    assert sources["nvml"]["status"] == "ok" and sources["infiniband"]["status"] == "ok"
    assert (run / "run.json").exists()
    nvlink = counter_signals.read_counters(run, "nvlink")
    start, end = int(nvlink["ts_ns"].min()), int(nvlink["ts_ns"].max())
    middle = (start + end) // 2
    steps = pd.DataFrame({"rank": [0, 0], "step": [1, 2], "start_ns": [start - 1, middle], "end_ns": [middle, end + 1]})
    tables = counter_signals.derive_tables(run, steps=steps, rank_hosts={0: "n1"})
    bw = tables["counter_nvlink_bw"]
    assert len(bw) > 0 and set(bw["step"]) <= {1, 2} and (bw.loc[bw["ts_ns"] >= middle, "step"] == 2).all()
    assert scope_main(["sample", "--out", str(run), "--hz", "50"]) == 2
    assert "--hz: 50 is outside the valid range" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert scope_main(["sample", "--out", str(run), "--nvml-replay", str(bad)]) == 3
    assert f"{bad}: not a readable NVML replay" in capsys.readouterr().err
