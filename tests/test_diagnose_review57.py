"""What the review of diag57 found (issue 40), each on short lines in the emitting program's format (OpenSSH's and
pdsh's, slurmd's via srun, slurmstepd's, client-go's, Go's net package, Lightning's, accelerate's, torch's), never
a thread's own text: a launch failure the run went past, another host's key, a side client's dial, a cancel of a
run that trained, a timeout in rank 0's output alone.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from scope.analyzers.diagnose.knowledge.remote_launch import REMOTE_LAUNCH_SIGNATURES

from tests.helpers import diagnose_failures, top_failure

PDSH = "[2024-03-01 10:00:00,000] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w gpu-a,gpu-b,gpu-c export X=1\n"


def _case(tmp_path: Path, name: str, log: str) -> list:
    (tmp_path / name).mkdir()
    return diagnose_failures(tmp_path / name, log)


# 1. another host's key added says nothing of the host whose check failed (pdsh's 'node: ' prefix is the host)
def test_a_host_key_failure_is_not_silenced_by_another_hosts_key(tmp_path: Path) -> None:
    pdsh = (
        PDSH + "gpu-b: Host key verification failed.\n"
        "gpu-c: Warning: Permanently added 'gpu-c,10.0.0.3' (ED25519) to the list of known hosts.\n"
        "pdsh@gpu-a: gpu-b: ssh exited with exit code 255\n"
    )
    top = _case(tmp_path, "pdsh", pdsh)[0]
    assert top.metrics["code"] == "ssh_host_key_unknown" and "ssh-keyscan -H gpu-b" in top.suggestion
    wrapper = (
        "Starting node 1/2: 10.0.4.12\n"
        "The authenticity of host '10.0.4.12 (10.0.4.12)' can't be established.\n"
        "Are you sure you want to continue connecting (yes/no/[fingerprint])?\n"
        "Host key verification failed.\n"
        "Starting node 2/2: 10.0.4.13\n"
        "Warning: Permanently added '10.0.4.13' (ECDSA) to the list of known hosts.\n"
    )
    top = _case(tmp_path, "wrapper", wrapper)[0]
    assert top.metrics["code"] == "ssh_host_key_unknown" and "ssh-keyscan -H 10.0.4.12" in top.suggestion
    # the same host's key added: the question was answered
    answered = wrapper.replace("'10.0.4.13' (ECDSA)", "'10.0.4.12' (ECDSA)")
    assert not _case(tmp_path, "answered", answered)


# 2. a dial of the Kubernetes API before a rank that ran and failed: the job started, its own failure is the root
def test_a_kubernetes_dial_before_a_ranks_own_failure_is_not_the_root(tmp_path: Path) -> None:
    log = (
        'E0301 12:00:01.000000       1 reflector.go:138] Failed to watch *v1.Pod: Get "https://10.96.0.1:443/api/v1/'
        'namespaces/train/pods?limit=500": dial tcp 10.96.0.1:443: i/o timeout\n'
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 40, in <module>\n'
        "[rank0]:     loss.backward()\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
        "of 79.15 GiB of which 1.2 GiB is free.\n"
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "oom" and top.metrics["code"] != "k8s_api_unreachable"


# 3. a healthy operator's log: a dial error, then the lease acquired, the workers started, the job completed
def test_an_operator_that_retried_its_dial_and_went_on_is_no_failure(tmp_path: Path) -> None:
    log = (
        "E0301 12:00:01.000000 1 leaderelection.go:330] error retrieving resource lock kubeflow/training-operator:"
        ' Get "https://10.96.0.1:443/apis/coordination.k8s.io/v1/namespaces/kubeflow/leases/training-operator": dial '
        "tcp 10.96.0.1:443: connect: connection refused\n"
        "I0301 12:00:05.000000       1 leaderelection.go:258] successfully acquired lease kubeflow/training-operator\n"
    )
    assert not _case(tmp_path, "lease", log)
    workers = log.splitlines()[0] + '\n2024-03-01T12:00:05Z\tINFO\tStarting workers\t{"worker count": 1}\n'
    assert not _case(tmp_path, "workers", workers)
    populated = log.splitlines()[0] + "\nI0301 12:00:05.000000 1 shared_informer.go:320] Caches populated\n"
    assert not _case(tmp_path, "populated", populated)


# 4. a side client's dial (wandb's uploader) while training went on is no failure; one alone is worded for any Go
# program, not an operator
def test_a_go_dial_the_run_trained_past_is_no_failure(tmp_path: Path) -> None:
    log = (
        "Epoch 1: 100%|##########| 100/100 [00:10<00:00, 10.00it/s, loss=0.3]\n"
        '{"level":"ERROR","msg":"filestream: fatal error","error":"Post \\"https://api.wandb.ai/files/u/p/r/file_stream'
        '\\": dial tcp 35.186.228.49:443: i/o timeout"}\n'
        "Epoch 2: 100%|##########| 100/100 [00:10<00:00, 10.00it/s, loss=0.2]\n"
        "Training complete.\n"
    )
    assert not _case(tmp_path, "wandb", log)
    pull = 'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp 54.1.2.3:443: i/o timeout\n'
    top = _case(tmp_path, "pull", pull)[0]
    assert top.metrics["code"] == "go_dial_failed" and "54.1.2.3:443" in top.suggestion
    assert "operator, controller or sidecar" not in top.summary + top.suggestion


# 5/6. a cancel of a run that trained (metric lines on a rank that prints no step), a preemption, a user's scancel
# seconds after the init line, a cancel after NCCL built its rings: none is a wait for ranks that never joined
def test_a_cancel_is_a_start_up_wait_only_where_the_log_shows_one(tmp_path: Path) -> None:
    cancel = "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-02-02T10:00:00 DUE TO TIME LIMIT ***\n"
    lightning_rank1 = (
        "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/8\n"
        "LOCAL_RANK: 1 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\n"
        "[2024-02-02 08:10:00] train/loss=2.31 lr=1.0e-4\n"
        "[2024-02-02 09:59:00] train/loss=0.51 lr=1.0e-4\n"
    )
    top = _case(tmp_path, "metrics", lightning_rank1 + cancel)[0]
    assert top.metrics["code"] == "slurm_time_limit"
    accelerate = (
        "Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 8\nProcess index: 0\n"
        "loss 2.310 lr 1.0e-4 tokens/s 51234\nloss 0.511 lr 1.0e-4 tokens/s 51201\n"
        "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-02-02T10:00:00 ***\n"
    )
    assert _case(tmp_path, "accelerate", accelerate)[0].metrics["code"] == "slurm_cancelled"
    # the devices the node shows match MEMBER m/N; data loading after init: no world-size mismatch
    loading = (
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\nLoading train dataset shards 0-63\n"
    )
    assert _case(tmp_path, "loading", loading + cancel)[0].metrics["code"] == "slurm_time_limit"
    init = "[2024-02-02 10:00:00,000][lightning][INFO] - Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n"
    preempted = (
        init + "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-02-02T10:00:20 DUE TO PREEMPTION ***\n"
    )
    for name, log in (
        ("preempted", preempted),
        ("scancel", init + "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-02-02T10:00:20 ***\n"),
        (
            "rings",
            "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/16\n"
            "gpu07:1234:1290 [0] NCCL INFO Channel 00/24 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13\n"
            + cancel,
        ),
    ):
        found = _case(tmp_path, name, log)
        assert not any(f.metrics.get("code") == "cancelled_in_startup" for f in found), name
    # a long wait (the time limit) with the devices the node shows fewer than MEMBER's world: the task count
    mismatch = (
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/12\n"
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]\n"
    )
    top = _case(tmp_path, "mismatch", mismatch + cancel)[0]
    assert top.metrics["code"] == "cancelled_in_startup" and "--ntasks-per-node" in top.suggestion
    # a user's cancel with no times, the job script's own count: 64 tasks on 2 nodes is more than a node's GPUs
    counted = (
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/64\n"
        "slurmstepd: error: *** JOB 77 ON gpu01 CANCELLED AT 2024-05-01T09:00:00 ***\n"
        "Running on 2 nodes.\nRunning 64 tasks.\n"
    )
    top = _case(tmp_path, "counted", counted)[0]
    assert top.metrics["code"] == "cancelled_in_startup" and "world size (64)" in top.suggestion


# 7. a watchdog timeout in rank 0's output alone says nothing of the other ranks: no rank-0-only lead; where the
# other ranks' lines are there and silent, the lead, without repeating the usual causes' rank-0 work
WATCHDOG = (
    "[rank0]:[E305 08:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=88, OpType=_ALLGATHER_BASE, NumelIn=1024, NumelOut=4096, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.\n"
)


def test_rank_zero_alone_needs_the_other_ranks_in_the_input(tmp_path: Path) -> None:
    # rank 0's output alone: an all-reduce (torchrun's tagged stream), an all-gather in the untagged old format
    allreduce = "[rank0]: step 100 loss 2.1\n" + WATCHDOG.replace("_ALLGATHER_BASE", "ALLREDUCE")
    untagged = (
        "[E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, "
        "OpType=_ALLGATHER_BASE, NumelIn=1024, NumelOut=4096, Timeout(ms)=1800000) ran for 1800512 milliseconds "
        "before timing out.\n"
    )
    for name, log in (("allreduce", allreduce), ("untagged", untagged)):
        top = _case(tmp_path, name, log)[0]
        assert top.metrics["code"] == "c10d_watchdog_timeout" and "Only rank 0" not in top.suggestion, name
    # the other ranks' lines there and silent at an ordinary step's all-reduce (torchrun's first watchdog abort kills
    # the others): no lead, rank-0-only code stays among the usual causes (second review, a5)
    both = "[rank1]: step 100 loss 2.1\n[rank0]: step 100 loss 2.1\n" + WATCHDOG.replace("_ALLGATHER_BASE", "ALLREDUCE")
    top = _case(tmp_path, "both", both)[0]
    assert "Only rank 0" not in top.suggestion and top.suggestion.count("if rank == 0") == 1
    assert "save_pretrained" not in top.suggestion  # an all-reduce is no gather a save issues
    # torchrun's tagged stream, rank 0 alone in an all-gather during a step: no lead either (a4)
    top = _case(tmp_path, "gather", "[rank0]: step 100 loss 2.1\n" + WATCHDOG)[0]
    assert "Only rank 0" not in top.suggestion
    # the same all-gather right after rank 0's state_dict call: the lead names it, without repeating the usual
    # causes' rank-0 work
    gathered = "[rank0]: step 100 loss 2.1\n[rank0]: calling model.state_dict() for the rank-0 save\n" + WATCHDOG
    top = _case(tmp_path, "state_dict", gathered)[0]
    assert top.suggestion.startswith("Only rank 0 reported this timeout")
    assert "(here an all-gather, _ALLGATHER_BASE)" in top.suggestion and ", find the rank" in top.suggestion
    assert top.suggestion.count("if rank == 0") == 1
    # a save's own line: the save, as the late work, is what the remedy names (on every rank)
    saving = "[rank0]: step 100 loss 2.1\n[rank0]: Saving checkpoint to /ckpt/step-100\n" + WATCHDOG
    assert "above the save time" in _case(tmp_path, "saving", saving)[0].suggestion
    # the save's words in a line long before the timeout are no sign of where it came
    early = "[rank0]: calling model.state_dict() for the rank-0 save\n" + "".join(
        f"[rank0]: step {i} loss 2.1\n" for i in range(1, 30)
    )
    assert "Only rank 0" not in _case(tmp_path, "early", early + WATCHDOG)[0].suggestion


# 8. 'Permission denied (' is ssh's only with ssh's method names, and a git remote is no launcher's host
def test_permission_denied_is_ssh_only_with_its_methods_and_not_a_git_remote(tmp_path: Path) -> None:
    ib = (
        "node1:1234:1290 [0] misc/ibvwrap.cc:123 NCCL WARN Call to ibv_open_device failed: Permission denied (13).\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error, NCCL version 2.18.1\n"
    )
    assert _case(tmp_path, "ib", ib)[0].metrics["code"] != "ssh_permission_denied"
    git = (
        "  Running command git clone --filter=blob:none --quiet ssh://****@github.com/org/lib.git /tmp/pip-build\n"
        "  git@github.com: Permission denied (publickey).\n"
        "  fatal: Could not read from remote repository.\n"
    )
    found = _case(tmp_path, "git", git)
    assert not any(f.metrics.get("code") == "ssh_permission_denied" for f in found)
    pdsh = PDSH + "worker-1: root@worker-1: Permission denied (publickey,gssapi-keyex,gssapi-with-mic,password).\n"
    top = _case(tmp_path, "pdsh", pdsh)[0]
    assert top.metrics["code"] == "ssh_permission_denied" and "ssh-copy-id worker-1" in top.suggestion


# 9. srun's step launch with any reason, the controller, the step's environment; Go's other dial errors; sshd's
# early close under pdsh's fan-out
def test_srun_go_and_ssh_failures_beyond_the_tuned_wordings(tmp_path: Path) -> None:
    cases = {
        "srun: error: Task launch for StepId=99.0 failed on node n7: Invalid node name specified\n": (
            "slurm_step_launch_failed",
            "Invalid node name specified",
        ),
        "srun: error: Task launch for StepId=99.0 failed on node n7: Slurmd could not set up environment for batch "
        "job\n": ("slurm_step_environment_failed", "--exclude=n7"),
        "srun: error: Unable to contact slurm controller (connect failure)\n": (
            "slurm_controller_unreachable",
            "scontrol ping",
        ),
        "Unable to connect to the server: dial tcp 10.0.0.5:6443: connect: connection timed out\n": (
            "k8s_api_unreachable",
            "connection timed out",
        ),
        'E0301 1 reflector.go:138] Failed to watch *v1.Pod: Get "https://10.96.0.1:443/api/v1/pods": net/http: TLS '
        "handshake timeout\n": ("k8s_api_unreachable", "TLS handshake timeout"),
        'E0301 1 reflector.go:138] Failed to list *v1.Pod: Get "https://kubernetes.default.svc/api/v1/pods": dial '
        "tcp: lookup kubernetes.default.svc on 10.96.0.10:53: no such host\n": ("k8s_api_unreachable", "no such host"),
        # client-go before 1.17: the URL unquoted, its query up to ': dial'
        "Failed to list *v1.Pod: Get https://10.0.0.1:443/api/v1/namespaces/x/pods?limit=500&resourceVersion=0: "
        "dial tcp 10.0.0.1:443: connect: connection refused\n": ("k8s_api_unreachable", "sidecar"),
        "gpu-017: kex_exchange_identification: Connection closed by remote host\n"
        "pdsh@gpu-001: gpu-017: ssh exited with exit code 255\n": ("ssh_kex_closed", "MaxStartups"),
        "kex_exchange_identification: read: Connection reset by peer\n": ("ssh_kex_closed", "pdsh -f 32"),
    }
    for i, (log, (code, said)) in enumerate(cases.items()):
        top = _case(tmp_path, str(i), log)[0]
        assert (top.metrics["code"], said in top.suggestion) == (code, True), log


# 10. a negative local rank under torchrun: the script read its argument, not the LOCAL_RANK torchrun set
def test_a_negative_local_rank_under_torchrun_leads_with_the_environment(tmp_path: Path) -> None:
    log = (
        "W0301 10:00:00.000000 1234 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for "
        "each process to be 1 in default\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "finetune.py", line 88, in <module>\n'
        '[rank0]:     device = torch.device("cuda", args.local_rank)\n'
        "[rank0]: RuntimeError: Device index must not be negative\n"
    )
    top = top_failure(tmp_path, log)
    assert top.metrics["code"] == "launcher_local_rank_unset"
    assert "os.environ['LOCAL_RANK']" in top.suggestion and "no launcher gave" not in top.suggestion


# 11. ssh to one host failed, the others trained and exited successfully: no failure
def test_an_ssh_failure_the_run_went_past_is_no_failure(tmp_path: Path) -> None:
    log = (
        PDSH + "gpu-b: ssh: connect to host gpu-b port 22: Connection timed out\n"
        "pdsh@gpu-a: gpu-b: ssh exited with exit code 255\n"
        "gpu-a: [2024-03-01 10:00:20,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001]\n"
        "gpu-a: [2024-03-01 10:05:20,000] [INFO] [launch.py:347:main] Process 1234 exits successfully.\n"
    )
    assert not diagnose_failures(tmp_path, log)


# 12. the launch rows read a long line in linear time
def test_the_launch_rows_read_a_long_line_in_linear_time() -> None:
    lines = (
        "a" * 20_000 + " Permission denied (publickey).",
        "a@" + "b" * 20_000 + " Permission denied (publickey).",
        "a" * 20_000 + " ssh exited with exit code 255",
        ":" * 20_000 + " ssh exited with exit code 255",
        "dial tcp " + "1:" * 10_000 + "x",
        ("https://h/api/" + "x" * 50) * 400 + " dial tcp 1:1",
        "Task launch for " + "a" * 20_000,
    )
    slow = []
    for row in REMOTE_LAUNCH_SIGNATURES:
        for pattern in (*row.patterns, row.fields_re):
            rx = re.compile(pattern) if pattern else None
            for line in lines if rx else ():
                t0 = time.process_time()
                rx.search(line)  # type: ignore[union-attr]
                if time.process_time() - t0 > 0.05:
                    slow.append((row.id, line[:20]))
    assert not slow, slow


# 13. kubectl with no kubeconfig; an IPv6 API address read whole
def test_kubectl_without_a_kubeconfig_and_an_ipv6_api_address(tmp_path: Path) -> None:
    log = "The connection to the server localhost:8080 was refused - did you specify the right host or port?\n"
    top = _case(tmp_path, "kubectl", log)[0]
    assert top.metrics["code"] == "kubectl_no_kubeconfig" and top.suggestion.startswith("No kubeconfig reached kubectl")
    assert "KUBECONFIG" in top.suggestion and "istio" not in top.suggestion.lower()
    top = _case(tmp_path, "ipv6", "Unable to connect to the server: dial tcp [fd00:10:96::1]:443: i/o timeout\n")[0]
    assert top.metrics["code"] == "k8s_api_unreachable" and "([fd00:10:96::1]:443, i/o timeout)" in top.suggestion


# 14. one passwordless-ssh text for every launcher ssh row
def test_the_launcher_ssh_rows_share_one_passwordless_ssh_text() -> None:
    from scope.analyzers.diagnose.knowledge.remote_launch import PASSWORDLESS_SSH
    from scope.analyzers.diagnose.knowledge.signatures import by_id

    rows = by_id()
    sharing = [
        i
        for i in ("launcher_ssh_host_unresolved", "ssh_host_unreachable", "pdsh_ssh_failed")
        if PASSWORDLESS_SSH in rows[i].remedy
    ]
    assert len(sharing) == 3
