"""Signature rows for a worker's end as its launcher or runtime reports it, when that report is the only word:
torch.multiprocessing.spawn's 'terminated with signal', a Kubernetes container's exit code, a TPU replica that
cannot reach its mesh master. Same fields as knowledge/signatures.py, built with signature_row.row; the
signal an exit status stands for is read by words/endings.explain_exit_status (knowledge/signals.py).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.node_environment import program_fields, program_remedies
from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"

# The words before the program a shell, zsh, env or the container runtime could not start (launch_program_missing):
# its path comes next (quoted whole: '/usr/sbin/sshd' says where it was looked for)
_MISSING_PROGRAM = (
    r"(?:sh: (?:line \d+: |\d+: )?(?!command not found: )|: line \d+: |command not found: |bin/env: [\u2018'\"]?|"
    r'exec: ")'
)

LAUNCH_REMEDY = (
    "Install {path|the missing program} in the image (or fix the path / PATH that names it) on every "
    "node; where it is sshd or ssh, the MPI launcher (mpirun, the MPI Operator's launcher) starts the "
    "ranks on the other hosts over ssh: use an image with openssh-server (an SSH-enabled container) or "
    "install it, or launch without MPI's ssh (torchrun, srun)."
)

LAUNCHER_SIGNATURES: tuple[Signature, ...] = (
    # torchrun's dynamic rendezvous refuses a (re-)join once the run's rendezvous is closed: another agent (node)
    # closed it on its way out. Since pytorch#117066 an agent that gets a death signal closes it for all, so the
    # surviving nodes end too; pytorch#152525 closes it only when the run completes or fails.
    row(
        "torchrun_rendezvous_closed",
        "RendezvousClosedError",
        r"RendezvousClosedError",
        era="torch.distributed.elastic dynamic rendezvous (torchrun --rdzv_backend c10d / etcd); the shut-down on a "
        "leaving agent from pytorch#117066 until pytorch#152525",
        kind="missing_rank",
        cause="configuration",
        meaning="This node's torchrun agent found the job's rendezvous closed: another node's agent left (it got a "
        "signal, failed, or finished) and closed it, so this agent cannot rejoin and ends too.",
        remedy=(
            "Find the node that left first (its agent's 'Received N death signal' or its failure); if one node's "
            "preemption or restart should not end the run, use a PyTorch version with pytorch/pytorch#152525 "
            "(older ones close the rendezvous for every node when one agent gets a signal) and restart the left "
            "node with the same --rdzv_id."
        ),
        reference=PT + "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py; "
        "https://github.com/pytorch/pytorch/issues/150916",
        confidence="medium",
    ),
    # kubectl describe pod: a container's last state; 128 + N is signal N (137 with reason OOMKilled has its row)
    row(
        "k8s_container_signal_exit",
        "Exit Code:",
        r"^Exit Code:\s+(?:129|13\d|14\d|15\d)\b",
        era="Kubernetes (kubectl describe pod: State / Last State: Terminated, Reason, Exit Code)",
        cause="application",
        meaning="A container of the job ended by a signal: Kubernetes reports 128 + the signal number.",
        remedy=(
            "Exit code {exit_code|128+N} is 128 + the signal that ended the container; its own log (kubectl logs "
            "--previous) shows what it was doing, the pod's events (kubectl describe pod) why it was stopped."
        ),
        reference="https://kubernetes.io/docs/tasks/debug/debug-application/determine-reason-pod-failure/",
        fields_re=r"Exit Code:\s+(?P<exit_code>\d+)",
        confidence="medium",
    ),
    # torch.multiprocessing.spawn's join: a child killed by a signal leaves no Python error of its own
    row(
        "spawn_process_signal",
        "terminated with signal",
        r"process \d+ terminated with signal SIG[A-Z]+",
        era="torch >= 1.4 (torch/multiprocessing/spawn.py: ProcessExitedException)",
        cause="application",
        meaning="A process started by torch.multiprocessing.spawn (mp.spawn, xmp.spawn) was killed by a signal; "
        "the parent then stopped the others.",
        remedy=(
            "Process {process|the} was ended by {signal|a signal}, so it printed no Python error of its own: the "
            "signal is the lead, and that process's last lines show what it was doing."
        ),
        reference=PT + "torch/multiprocessing/spawn.py",
        fields_re=r"process (?P<process>\d+) terminated with signal (?P<signal>SIG[A-Z]+)",
    ),
    row(
        "xla_mesh_master_unreachable",
        "client mesh master",
        r"Failed to connect to client mesh master",
        era="PyTorch/XLA with the XRT runtime (torch_xla <= 2.1; PJRT became the default in 2.0)",
        cause="configuration",
        meaning="A process could not reach the XRT mesh master that the TPU replicas share: no TPU runtime is "
        "configured, or the process is outside the replicas (the master lives only while xmp.spawn's replicas run).",
        remedy=(
            'Configure the TPU runtime before launching: on XRT export XRT_TPU_CONFIG="tpu_worker;0;$TPU_IP:8470" '
            "(the TPU's IP, port 8470 reachable from this host); on torch_xla >= 2.0 set PJRT_DEVICE=TPU instead. "
            "If the traceback shows xm.rendezvous (or another mesh call) made by the launcher after xmp.spawn "
            "returned, call it only inside the function the spawned replicas run: the master is gone by then."
        ),
        reference="https://docs.pytorch.org/xla/release/r2.7/_sources/learn/pjrt.md.txt",
        confidence="medium",
    ),
    # A shell (bash -c, dash's sh -c, zsh, a batch script bash runs), coreutils' env (a script's #!/usr/bin/env
    # line) or the container runtime could not start a program the launch names. One row whatever the shell; its
    # fix by the program: one that lives in a Python environment or module (torchrun, deepspeed, python) is the
    # node's environment (node_environment.ENV_REMEDY); another is missing from the image or node. MPI's launchers
    # (mpirun, the Kubeflow MPI Operator) reach the other hosts over ssh, so a worker image without sshd leaves the
    # launcher nothing to connect to and the job prints no result. Open MPI's own daemon (orted / prted) missing on
    # a remote PATH has its row in open_mpi.py (mpirun --prefix).
    row(
        "launch_program_missing",
        ("No such file or directory", "command not found", ": not found", "executable file not found"),
        (
            # the shell's name ('/bin/bash: line 1: ', dash's 'sh: 1: ') or the script bash runs ('run.sh: line 5: ',
            # Slurm's '/var/spool/slurmd/job123/slurm_script: line 12: ')
            r"(?:(?:^|[\s\]>:])(?:/(?:usr/)?bin/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?|(?:^|[\s\]>:])\S+: line \d+: )"
            r"(?!(?:orted|prted):)\S+: (?:No such file or directory|command not found|not found)\s*$",
            # zsh's own order ('zsh: command not found: torchrun'; a script's 'job.zsh:5: command not found: X')
            r"(?:^|[\s\]>:])(?:\S*/)?(?:zsh|[\w.-]+\.zsh:\d+): command not found: \S+\s*$",
            # coreutils' env for a #!/usr/bin/env line ('/usr/bin/env: 'python': No such file or directory')
            r"(?:^|[\s\]>:])(?:/usr)?/bin/env: [\u2018'\"]?[^\s'\u2019\"]+[\u2019'\"]?: No such file or directory",
            r'exec: "[^"]+": executable file not found in \$PATH',
        ),
        era="every shell and container runtime (bash, dash, zsh, coreutils env, runc / containerd's exec)",
        cause="configuration",
        meaning="The launch asked a shell or the container runtime to run a program that the image or node does "
        "not have (or not on the PATH): what it should have started never ran.",
        remedy=LAUNCH_REMEDY,
        # a program of a Python environment or module: the environment is not activated where the shell runs (a
        # non-interactive ssh or batch shell does not read the profile that activates it)
        # (the container runtime's exec of a program the image lacks: the row's own install-in-image advice)
        remedy_when=((r'exec: "', LAUNCH_REMEDY), *program_remedies(_MISSING_PROGRAM)),
        reference="https://github.com/NVIDIA/cloudai/issues/720 (MPI Operator workers started with /usr/sbin/sshd "
        "in an image without it); bash's 'No such file or directory' / 'command not found', dash's 'not found' "
        "and zsh's 'command not found: X' for a command it cannot run; runc's 'executable file not found in "
        "$PATH'; https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/launcher/multinode_runner.py "
        "(pdsh: the environment passes through .deepspeed_env)",
        confidence="medium",
        fields_re=program_fields(_MISSING_PROGRAM),
    ),
)
