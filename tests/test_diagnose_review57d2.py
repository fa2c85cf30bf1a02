"""What the second review of diag57 found (issue 40), each on short lines in the emitting program's format
(OpenSSH's and pdsh's, DeepSpeed's launcher, srun's, torch's watchdog), never a thread's own text: a launch error
stays the root of a job that then failed for the host it never reached, and is no finding where the job ended
cleanly.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.helpers import diagnose_failures

PDSH = "[2024-03-01 10:00:00,000] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w gpu-a,gpu-b export X=1\n"
STEP = "gpu-a: [2024-03-01 10:00:30,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001]\n"
ENDED_A = "gpu-a: [2024-03-01 10:05:30,000] [INFO] [launch.py:351:main] Process 1234 exits successfully.\n"
ENDED_B = "gpu-b: [2024-03-01 10:05:30,000] [INFO] [launch.py:351:main] Process 2234 exits successfully.\n"


def _codes(tmp_path: Path, name: str, log: str) -> list[str]:
    (tmp_path / name).mkdir()
    return [a.metrics["code"] for a in diagnose_failures(tmp_path / name, log)]


# 1. the other host trained, but the job then failed for the host the launch never reached: the launch error leads
def test_a_launch_error_stays_the_root_of_a_job_that_then_failed(tmp_path: Path) -> None:
    unreached = PDSH + (
        "gpu-b: ssh: connect to host gpu-b port 22: Connection timed out\n"
        "pdsh@gpu-a: gpu-b: ssh exited with exit code 255\n"
    )
    exit_255 = "[2024-03-01 10:05:31,000] [INFO] [runner.py:585:main] ssh exited with exit code 255\n"
    assert _codes(tmp_path, "e5", unreached + STEP + ENDED_A + exit_255)[0] == "ssh_host_unreachable"
    host_key = PDSH + "gpu-b: Host key verification failed.\npdsh@gpu-a: gpu-b: ssh exited with exit code 255\n"
    died = (
        "gpu-a: [2024-03-01 10:00:31,000] [ERROR] [launch.py:325:sigkill_handler] ['python', '-u', 'train.py'] "
        "exits with return code = 1\n"
        "pdsh@gpu-a: gpu-a: ssh exited with exit code 1\n"
    )
    assert _codes(tmp_path, "e1", host_key + STEP + died)[0] == "ssh_host_key_unknown"
    watchdog = (
        "gpu-a: [rank0]:[E301 10:40:00.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
        "for 600021 milliseconds before timing out.\n"
    )
    denied = "user@gpu-b: Permission denied (publickey,password).\npdsh@gpu-a: gpu-b: ssh exited with exit code 255\n"
    assert _codes(tmp_path, "e6", denied + STEP + watchdog)[0] == "ssh_permission_denied"
    # the same job ended cleanly (every node's launcher said so): the host was reached on a retry, no failure
    assert not _codes(tmp_path, "healthy", unreached + STEP + ENDED_A + ENDED_B)


# 2. the clean ends that clear a launch error: the launcher's success line from every node, Slurm's rows too
def test_a_clean_end_clears_a_kex_retry_and_a_slurm_controller_blip(tmp_path: Path) -> None:
    kex = PDSH + (
        "gpu-b: kex_exchange_identification: Connection closed by remote host\n"
        "launch.sh: pdsh failed on gpu-b, retrying in 5 s (1/3)\n"
        "gpu-a: Evaluating: 100%|##########| 50/50 [00:10<00:00]\n"
        "gpu-a: eval_accuracy = 0.81\n"
    )
    assert not _codes(tmp_path, "d2", kex + ENDED_A + ENDED_B)
    # the same retry then a non-zero exit: the closed key exchange stays
    assert _codes(tmp_path, "d2_failed", kex + "pdsh@gpu-a: gpu-b: ssh exited with exit code 255\n")[0] in (
        "ssh_kex_closed",
        "pdsh_ssh_failed",
    )
    slurm = (
        "srun: error: Unable to contact slurm controller (connect failure)\n"
        "srun: job 4242 has been allocated resources\n"
        "0: step 10 loss 2.31\n0: step 20 loss 2.21\n0: Training complete.\n"
    )
    assert not _codes(tmp_path, "f6c", slurm)
    assert _codes(tmp_path, "f6c_alone", slurm.split("srun: job")[0])[0] == "slurm_controller_unreachable"


# 5. a pdsh fan-out whose hosts all fail: one finding per row, its remedy naming the first hosts and the count, in
# linear time (4,000 hosts: was 24,017 lines and 8.7 s, a finding and a remedy per host)
def test_a_fan_out_of_failed_hosts_is_one_finding_listing_them(tmp_path: Path) -> None:
    hosts = [f"gpu-{i}" for i in range(4000)]
    log = PDSH + "".join(f"{h}: Host key verification failed.\n" for h in hosts)
    log += "".join(f"pdsh@gpu-a: {h}: ssh exited with exit code 255\n" for h in hosts)
    # CPU time of this process (the diagnosis of one file runs in it): a busy 2-core machine stretches the wall
    # clock, not the work; the quadratic reading this guards against was 8.7 s of it
    start = time.process_time()
    (tmp_path / "fan").mkdir()
    found = diagnose_failures(tmp_path / "fan", log)
    took = time.process_time() - start
    assert [a.metrics["code"] for a in found].count("ssh_host_key_unknown") == 1
    top = found[0]
    assert "ssh-keyscan -H gpu-0" in top.suggestion and "gpu-1" not in top.suggestion.split("4000 hosts")[0]
    assert "The same failed on 4000 hosts: gpu-0, gpu-1, gpu-2, gpu-3 and 3996 more." in top.suggestion
    assert took < 4.0, took  # 1.4 s on the dev box


# 6. Lightning's ranks other than 0 print nothing after init in a healthy run, and an untimestamped init line
# measures no wait: the scheduler's own reading stands; rank 0 with a world beyond the node's devices is a wait
def test_a_lightning_cancel_is_a_start_up_wait_only_with_evidence_of_one(tmp_path: Path) -> None:
    limit = "slurmstepd: error: *** JOB 4242 ON gpu-a CANCELLED AT 2024-03-01T22:00:00 DUE TO TIME LIMIT ***\n"
    rank1 = "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/32\n"
    devices = "LOCAL_RANK: 1 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\n"
    assert _codes(tmp_path, "b6", rank1 + devices + limit)[0] == "slurm_time_limit"
    assert _codes(tmp_path, "b7", rank1 + limit)[0] == "slurm_time_limit"
    user = (
        "GPU available: True (cuda), used: True\nInitializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\n"
        "slurmstepd: error: *** JOB 4242 ON gpu-a CANCELLED AT 2024-03-01T10:00:20 ***\n"
    )
    assert _codes(tmp_path, "k1", user)[0] == "slurm_cancelled"
    rank0 = "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/12\n" + devices.replace("RANK: 1", "RANK: 0")
    assert _codes(tmp_path, "rank0", rank0 + limit)[0] == "cancelled_in_startup"
    # rank 0 whose timestamps measure three hours at init: a wait, whatever the world size
    timed = "[2024-03-01 19:00:00,000][lightning][INFO] - Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
    assert _codes(tmp_path, "timed", timed + limit)[0] == "cancelled_in_startup"


# 4. the API's recovery is read from the Kubernetes client's own lines: another program's 'successfully completed'
# (an Argo step's) is none, an operator's job of a named kind is
def test_only_the_kubernetes_clients_own_lines_say_the_api_answered(tmp_path: Path) -> None:
    dial = (
        'E0301 12:00:01.000000 1 reflector.go:138] Failed to watch *v1.Pod: Get "https://10.96.0.1:443/api/v1/'
        'namespaces/train/pods?limit=500": dial tcp 10.96.0.1:443: i/o timeout\n'
    )
    argo = dial + "Step 'download-data' successfully completed.\nError: timed out waiting for the condition\n"
    assert _codes(tmp_path, "g2", argo)[0] == "k8s_api_unreachable"
    operator = dial + "I0301 12:05:00.000000 1 job.go:120] PyTorchJob train/bert successfully completed.\n"
    assert not _codes(tmp_path, "operator", operator)


# 3. a sidecar's own dial errors retried until its own 'ready' line: no finding; without it the dial stays
def test_a_go_dial_the_same_program_recovered_from_is_no_finding(tmp_path: Path) -> None:
    dials = (
        "2024-03-01T10:00:00.000Z warn Envoy proxy is NOT ready: config not received from XDS server\n"
        "2024-03-01T10:00:01.000Z warn xds: dial tcp: lookup istiod.istio-system.svc on 10.96.0.10:53: no such host\n"
        "2024-03-01T10:00:02.000Z warn xds: dial tcp 10.96.12.3:15012: connect: connection refused\n"
    )
    assert _codes(tmp_path, "stuck", dials)[0] == "go_dial_failed"
    assert not _codes(tmp_path, "ready", dials + "2024-03-01T10:00:05.000Z info Envoy proxy is ready\n")


# 8. ssh's words behind a date-time stamp or a wrapper's '[node] ' prefix, and OpenSSH's pre-8.2 wording
def test_ssh_lines_behind_a_timestamp_or_a_bracketed_node_and_the_older_kex_wording(tmp_path: Path) -> None:
    stamped = "2024-03-01 10:00:00 user@gpu-b: Permission denied (publickey).\n"
    assert _codes(tmp_path, "f1", stamped)[0] == "ssh_permission_denied"
    bracketed = "[gpu-b] user@gpu-b: Permission denied (publickey).\n[gpu-b] exited with code 255\n"
    assert _codes(tmp_path, "f2", bracketed)[0] == "ssh_permission_denied"
    older = "gpu-b: ssh_exchange_identification: Connection closed by remote host\n"
    assert _codes(tmp_path, "f3", older)[0] == "ssh_kex_closed"
    # NCCL's errno text after a stamp is not ssh's
    nccl = "2024-03-01 10:00:00 NCCL WARN ibv_open_device failed: Permission denied (13)\n"
    assert "ssh_permission_denied" not in _codes(tmp_path, "nccl", nccl)


# 9. the other regexes of diag57 and of these fixes read a long line in linear time, not only the launch rows
def test_the_new_line_readings_read_a_long_line_in_linear_time() -> None:
    from scope.analyzers.diagnose.knowledge import remote_launch, scheduler_wait
    from scope.analyzers.diagnose.knowledge.remedies import RANK_ZERO_POINT
    from scope.analyzers.diagnose.reasoning import setting_refused

    patterns = {
        "STARTUP_CHATTER": scheduler_wait.STARTUP_CHATTER,
        "LIGHTNING_WORLD": scheduler_wait.LIGHTNING_WORLD,
        "LINE_TIME": scheduler_wait.LINE_TIME,
        "RANK_ZERO_POINT": RANK_ZERO_POINT,
        "_NONZERO_EXIT": setting_refused._NONZERO_EXIT,
        "_HOST_PREFIX": setting_refused._HOST_PREFIX,
        "_PROGRAM_READY+_API_ANSWERED": re.compile(remote_launch._API_ANSWERED + "|" + remote_launch._PROGRAM_READY),
    }
    lines = (
        "a" * 20_000 + "!",
        "save " + " " * 20_000 + "x",
        "exited with code " + "0" * 20_000,
        "GLOBAL_RANK: 0, MEMBER: " + "1" * 20_000,
        "2024-03-01 " + "1" * 20_000,
        "[" + "a" * 20_000,
        "PyTorchJob " + "a/" * 10_000,
    )
    slow = []
    for name, rx in patterns.items():
        compiled = rx if isinstance(rx, re.Pattern) else re.compile(rx)
        for line in lines:
            t0 = time.process_time()
            compiled.search(line)
            if time.process_time() - t0 > 0.05:
                slow.append((name, line[:20]))
    assert not slow, slow


# 8 (f9). a Go client's DNS or TLS failure: its remedy names the name that did not resolve, or the handshake
def test_a_go_dial_remedy_names_the_lookup_or_the_tls_handshake(tmp_path: Path) -> None:
    dns = (
        'Error: failed to pull image: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io '
        "on 127.0.0.53:53: server misbehaving\n"
    )
    (tmp_path / "dns").mkdir()
    top = diagnose_failures(tmp_path / "dns", dns)[0]
    assert top.suggestion.startswith("A Go client could not resolve registry-1.docker.io (server misbehaving):")
    tls = 'Error: Get "https://quay.io/v2/": net/http: TLS handshake timeout\n'
    (tmp_path / "tls").mkdir()
    top = diagnose_failures(tmp_path / "tls", tls)[0]
    assert top.suggestion.startswith("A Go client's TLS handshake timed out")
