"""Classes that the thirteenth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (OpenSSH's and pdsh's, slurmd's via srun, slurmstepd's, Lightning's, client-go's, torch's),
never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# DeepSpeed's runner over pdsh: ssh to one host of the hostfile gets no answer (sshconnect.c ssh_connect_direct),
# and pdsh reports ssh's own status 255 (src/common/pipecmd.c).
SSH_HOST_UNREACHABLE = """\
[2024-03-01 10:00:00,000] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w gpu-a,gpu-b export PYTHONPATH=/w; cd /w
gpu-b: ssh: connect to host gpu-b port 22: No route to host
pdsh@gpu-a: gpu-b: ssh exited with exit code 255
"""
# the host key unknown (sshconnect.c check_host_key) and a login refused (sshconnect2.c ssh_userauth2)
SSH_HOST_KEY_UNKNOWN = """\
Starting node 1/2: 10.0.4.12
The authenticity of host '10.0.4.12 (10.0.4.12)' can't be established.
ECDSA key fingerprint is SHA256:0000000000000000000000000000000000000000000.
Are you sure you want to continue connecting (yes/no/[fingerprint])?
Host key verification failed.
"""
# the prompt answered at a terminal: ssh adds the key and goes on
SSH_HOST_KEY_ACCEPTED = """\
The authenticity of host '10.0.4.12 (10.0.4.12)' can't be established.
Are you sure you want to continue connecting (yes/no/[fingerprint])? yes
Warning: Permanently added '10.0.4.12' (ECDSA) to the list of known hosts.
"""
SSH_LOGIN_REFUSED = "trainer@10.0.4.13: Permission denied (publickey,password).\n"


def test_a_launcher_that_cannot_ssh_to_a_host_names_the_host_and_passwordless_ssh(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SSH_HOST_UNREACHABLE)
    assert top.kind == "network_fault"
    assert "gpu-b port 22" in top.suggestion and "passwordless ssh" in top.suggestion
    (tmp_path / "key").mkdir()
    top = top_failure(tmp_path / "key", SSH_HOST_KEY_UNKNOWN)
    assert top.kind == "config_error"
    assert "ssh-keyscan -H 10.0.4.12" in top.suggestion and "StrictHostKeyChecking" in top.suggestion
    (tmp_path / "accepted").mkdir()
    assert not diagnose_failures(tmp_path / "accepted", SSH_HOST_KEY_ACCEPTED)
    (tmp_path / "auth").mkdir()
    top = top_failure(tmp_path / "auth", SSH_LOGIN_REFUSED)
    assert top.kind == "config_error" and "ssh-copy-id 10.0.4.13" in top.suggestion


# Lightning under SLURM: the world size is SLURM's task count; rank 0 waits at DDP init for ranks that never start,
# until slurmstepd ends the job at its time limit.
LIGHTNING_WAITING_UNTIL_CANCELLED = """\
GPU available: True (cuda), used: True
Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/32
slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-02-02T10:00:00 DUE TO TIME LIMIT ***
"""
# the same cancel after training steps is the cancel's own finding, not a start-up wait
LIGHTNING_CANCELLED_WHILE_TRAINING = """\
Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2
All distributed processes registered. Starting with 2 processes
Epoch 0:  40%|####      | 40/100 [00:10<00:15, 4.00it/s, loss=0.5]
slurmstepd: error: *** JOB 4243 ON gpu07 CANCELLED AT 2024-02-02T11:00:00 ***
"""


def test_a_cancel_after_a_start_up_wait_is_the_wait_with_slurms_task_count(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LIGHTNING_WAITING_UNTIL_CANCELLED)
    assert top.kind == "config_error"
    assert "world size (32) from SLURM's task count" in top.suggestion
    assert "--ntasks-per-node equal Trainer(devices=...)" in top.suggestion and "--cpus-per-task" in top.suggestion
    (tmp_path / "training").mkdir()
    assert top_failure(tmp_path / "training", LIGHTNING_CANCELLED_WHILE_TRAINING).kind == "crash"


# client-go's reflector (tools/cache/reflector.go) in an init container that has no network yet
K8S_API_UNREACHABLE = (
    "E0301 12:00:00.000000       1 reflector.go:138] pkg/mod/k8s.io/client-go/tools/cache/reflector.go:167: Failed to "
    'watch *v1.ConfigMap: failed to list *v1.ConfigMap: Get "https://10.96.0.1:443/api/v1/namespaces/train/'
    'configmaps?limit=500&resourceVersion=0": dial tcp 10.96.0.1:443: i/o timeout\n'
)


# the same error retried until the informers synced: the API answered, no failure
K8S_API_RETRIED = K8S_API_UNREACHABLE + (
    "I0301 12:00:05.000000       1 shared_informer.go:318] Caches are synced for configmap controller\n"
)


def test_a_pod_that_cannot_reach_the_kubernetes_api_is_named_with_the_sidecar(tmp_path: Path) -> None:
    top = top_failure(tmp_path, K8S_API_UNREACHABLE)
    assert top.kind == "config_error"
    assert "10.96.0.1:443" in top.suggestion and "i/o timeout" in top.suggestion
    assert 'sidecar.istio.io/inject: "false"' in top.suggestion
    (tmp_path / "retried").mkdir()
    assert not diagnose_failures(tmp_path / "retried", K8S_API_RETRIED)


# srun's step launch refused by slurmd (src/api/step_launch.c), with slurm_errno.c's reasons
SLURM_CREDENTIAL_REFUSED = "srun: error: Task launch for 1234.0 failed on node gpu12: Invalid job credential\n"
SLURM_SLURMD_UNREACHED = (
    "srun: error: Task launch for 77.2 failed on node n3: Zero Bytes were transmitted or received\n"
)


def test_a_step_launch_slurmd_refused_is_the_clusters_config(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SLURM_CREDENTIAL_REFUSED)
    assert top.kind == "config_error"
    assert "gpu12" in top.suggestion and "munge" in top.suggestion and "clock" in top.suggestion
    (tmp_path / "unreached").mkdir()
    top = top_failure(tmp_path / "unreached", SLURM_SLURMD_UNREACHED)
    assert top.kind == "config_error" and "systemctl status slurmd" in top.suggestion and "n3" in top.suggestion


# torch's python_arg_parser.h deviceFromLong: the local rank -1 a script defaults to without a launcher
NEGATIVE_LOCAL_RANK = """\
Traceback (most recent call last):
  File "finetune.py", line 88, in <module>
    torch.cuda.set_device(args.local_rank)
  File "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py", line 404, in set_device
    torch._C._cuda_setDevice(device)
RuntimeError: Device index must not be negative
"""


def test_a_negative_device_index_is_a_local_rank_no_launcher_set(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NEGATIVE_LOCAL_RANK)
    assert top.kind == "config_error"
    assert "LOCAL_RANK" in top.suggestion and "torchrun --nproc_per_node=N" in top.suggestion


# the c10d watchdog (ProcessGroupNCCL.cpp) on rank 0 alone, then on two ranks
_WATCHDOG = (
    "[rank{r}]:[E305 08:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=88, OpType=_ALLGATHER_BASE, NumelIn=1024, NumelOut=4096, Timeout(ms)=600000) ran for "
    "600012 milliseconds before timing out.\n"
)


def test_a_timeout_rank_0_alone_reports_leads_with_rank_0_only_code(tmp_path: Path) -> None:
    # a bare all-gather timeout in rank 0's output: rank-0-only code is one of the usual causes, not the lead (the
    # second review of diag57: an ordinary step's timeout reads the same)
    top = top_failure(tmp_path, _WATCHDOG.format(r=0))
    assert top.kind == "timeout" and not top.suggestion.startswith("Only rank 0")
    assert "if rank == 0" in top.suggestion and "Flight Recorder" in top.suggestion
    assert top.suggestion.endswith("call state_dict on every rank and save on rank 0.")  # the last of the causes
    # right after rank 0's state_dict call: the lead
    (tmp_path / "point").mkdir()
    top = top_failure(tmp_path / "point", "[rank0]: gathering the state_dict to save\n" + _WATCHDOG.format(r=0))
    assert top.suggestion.startswith("Only rank 0 reported this timeout")
    assert "_ALLGATHER_BASE" in top.suggestion and "state_dict" in top.suggestion
    assert "Flight Recorder" in top.suggestion
    (tmp_path / "two").mkdir()
    two = diagnose_failures(tmp_path / "two", _WATCHDOG.format(r=0) + _WATCHDOG.format(r=1))
    assert two and not two[0].suggestion.startswith("Only rank 0")
