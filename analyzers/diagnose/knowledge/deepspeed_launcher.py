"""Signature rows for the `deepspeed` launcher's own refusals, raised in deepspeed/launcher/runner.py before any
rank starts: the resource pool (hostfile, or the local GPUs) against --include / --exclude / --num_nodes /
--num_gpus, the hostfile's lines, the ssh check of the first host, the master address, the multi-node runner; and
deepspeed.comm's MPI discovery (comm.py mpi_discovery) when a script is started by mpirun without the launcher.
Each is a configuration error whose names are on the line; the remedy quotes them (`{name}` slots).

Sources (DeepSpeed master, deepspeed/launcher/runner.py unless named):
- parse_resource_filter: "No slot 'S' specified on host 'H'", "Hostname 'H' not found in hostfile",
  'include_str and exclude_str are mutually exclusive.'; main: 'Cannot specify num_nodes/gpus with
  include/exclude', 'Unable to proceed, no GPU resources available', 'Num nodes is >1 but no extra nodes available
  via hostfile', 'Using hostfile at F but host=H was not reachable via ssh. ...', 'Unable to detect suitable
  master address via `hostname -I` ...', "launcher 'L' not installed."
- _parse_hostfile: 'Hostfile contains a bad entry: L, ...', 'Hostfile contains multiple entries for H, ...',
  'Hostfile is empty or not formatted correctly, ...'.
- multinode_runner.py: 'X backend does not support worker include/exclusion' / 'limiting num nodes/gpus',
  'MPICH / Intel MPI / mvapich requires same number of devices per node'.
- deepspeed/comm/comm.py mpi_discovery: 'from mpi4py import MPI'; 'MPI world size N does not match torch world
  size M', 'MPI rank N does not match torch rank M'.
- CUDA_VISIBLE_DEVICES: runner.py (#960, DeepSpeed 0.5.7) turns it into --include=localhost:<ids> on one node
  without a hostfile ('Detected CUDA_VISIBLE_DEVICES=0,2: setting --include=localhost:0,2'); before 0.15.2 the
  local pool's slots were 0..device_count-1, so a non-contiguous id was "not specified"
  (https://github.com/deepspeedai/DeepSpeed/issues/5818, fixed by PR #6530, commit 5cbbff4, in v0.15.2).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.remote_launch import PASSWORDLESS_SSH
from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

DS_RUNNER = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/launcher/runner.py"
DS_MULTINODE = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/launcher/multinode_runner.py"
DS_COMM = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/comm/comm.py"
DS_VISIBLE_FIX = "https://github.com/deepspeedai/DeepSpeed/pull/6530"
DS_RESOURCES = "https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node"
_DS = "DeepSpeed's launcher (deepspeed/launcher/runner.py)"
# the runner's own line when it turned the visible-devices variable into --include (any accelerator's variable)
_VISIBLE = r"Detected (?P<visible_env>\w*VISIBLE_DEVICES)=(?P<visible>[\w,]+)"

DEEPSPEED_LAUNCHER_SIGNATURES: tuple[Signature, ...] = (
    row(
        "deepspeed_launcher_no_slot",
        "specified on host",
        r"No slot '\d+' specified on host '[^']+'",
        era=_DS + ", all releases (parse_resource_filter)",
        cause="configuration",
        meaning="The launcher was asked for a GPU slot that the host's resource pool does not have: the "
        "hostfile's slots=N (or, without a hostfile, the GPUs this node shows) number slots 0..N-1.",
        remedy=(
            "--include / --exclude (or CUDA_VISIBLE_DEVICES{visible| }) asks for slot {slot|the slot} on host "
            "{ds_host|the host}, which the launcher's pool does not list. Where CUDA_VISIBLE_DEVICES (or another "
            "*_VISIBLE_DEVICES) is set when launching with `deepspeed`, DeepSpeed before 0.15.2 turns it into "
            "--include {ds_host|localhost}:<ids> but numbers the slots 0..N-1, so a non-contiguous id is refused: "
            "unset CUDA_VISIBLE_DEVICES and pass the GPUs as --include {ds_host|localhost}:<ids> (or --num_gpus N for "
            "the first N), or upgrade DeepSpeed to >= 0.15.2 (PR #6530 uses the real device ids). Otherwise "
            "give slots below the host's slots=N in the hostfile."
        ),
        reference=DS_RUNNER + "; " + DS_VISIBLE_FIX,
        fields_re=r"No slot '(?P<slot>\d+)' specified on host '(?P<ds_host>[^']+)'",
        context_re=_VISIBLE,
    ),
    row(
        "deepspeed_launcher_host_not_in_hostfile",
        "not found in hostfile",
        r"Hostname '[^']+' not found in hostfile",
        era=_DS + ", all releases (parse_resource_filter)",
        cause="configuration",
        meaning="--include / --exclude names a host that the launcher's resource pool (the hostfile, or "
        "'localhost' without one) does not list.",
        remedy=(
            "Host {ds_host|the host} in --include / --exclude is not in the pool: use the names the hostfile lists "
            "(deepspeed --hostfile, /job/hostfile by default; its lines are 'NAME slots=N'), or 'localhost' when no "
            "hostfile is used (a /job/hostfile left on a single node makes its names the pool: remove it or pass "
            "--hostfile of this run)."
        ),
        reference=DS_RUNNER,
        fields_re=r"Hostname '(?P<ds_host>[^']+)' not found in hostfile",
    ),
    row(
        "deepspeed_launcher_filter_conflict",
        ("are mutually exclusive", "with include/exclude"),
        (
            r"include_str and exclude_str are mutually exclusive",
            r"Cannot specify num_nodes/gpus with include/exclude",
        ),
        era=_DS + " (parse_resource_filter, main)",
        cause="configuration",
        meaning="The launcher was given resource filters that exclude each other: --include with --exclude, or "
        "--num_nodes / --num_gpus with either.",
        remedy=(
            "Give one way of choosing GPUs ({check|the conflict the launcher names}): --include HOST:ids[@HOST:ids] "
            "or --exclude HOST:ids, or --num_nodes / --num_gpus alone. A CUDA_VISIBLE_DEVICES set for the launcher "
            "counts as --include localhost:<ids> on one node: unset it when passing --num_gpus."
        ),
        reference=DS_RUNNER,
        fields_re=r"(?P<check>include_str and exclude_str are mutually exclusive|Cannot specify num_nodes/gpus "
        r"with include/exclude)",
    ),
    row(
        "deepspeed_launcher_bad_hostfile",
        ("Hostfile contains", "Hostfile is empty"),
        (
            r"Hostfile contains (?:a bad entry|multiple entries for)\b",
            r"Hostfile is empty or not formatted correctly",
        ),
        era=_DS + " (_parse_hostfile)",
        cause="configuration",
        meaning="The launcher's hostfile has a line it cannot read, a host listed twice, or no host at all.",
        remedy=(
            "Fix the hostfile ({entry|the line it names}): one line per host, 'HOSTNAME slots=N' (N the GPUs of "
            "that host), each host once, '#' for comments; an MPI-style 'host:N' or 'slots N' line is not read. "
            "A single-node run needs no hostfile (deepspeed --num_gpus N)."
        ),
        reference=DS_RUNNER + "; " + DS_RESOURCES,
        fields_re=r"Hostfile contains (?:a bad entry: (?P<entry>.{1,200}?)|multiple entries for (?P<dup_host>\S+)),"
        r" unable to proceed",
    ),
    row(
        "deepspeed_launcher_no_gpu",
        "no GPU resources available",
        r"Unable to proceed, no GPU resources available",
        era=_DS + " (main: the local pool when there is no hostfile)",
        cause="configuration",
        meaning="Without a hostfile the launcher counts this node's accelerators, and it counted none.",
        remedy=(
            "The launcher saw no GPU on this node: check nvidia-smi, that CUDA_VISIBLE_DEVICES is not empty or "
            "wrong, that a container was started with its GPUs (docker run --gpus all; a Slurm job with --gpus), "
            "and that this torch is a CUDA build (torch.cuda.device_count() > 0; DS_ACCELERATOR names another "
            "accelerator). On a login node with no GPU, launch on a compute node or give a hostfile."
        ),
        reference=DS_RUNNER,
    ),
    row(
        "deepspeed_launcher_nodes_without_hostfile",
        "no extra nodes available",
        r"Num nodes is >1 but no extra nodes available via hostfile",
        era=_DS + " (main)",
        cause="configuration",
        meaning="--num_nodes asks for more than one node but the launcher found no hostfile to list them.",
        remedy=(
            "Give the nodes in a hostfile ('HOSTNAME slots=N' per node) with deepspeed --hostfile PATH (default "
            "/job/hostfile, which was not found), or drop --num_nodes for a single-node run."
        ),
        reference=DS_RUNNER + "; " + DS_RESOURCES,
    ),
    row(
        "deepspeed_launcher_ssh_check",
        "was not reachable via ssh",
        r"Using hostfile at \S+ but host=\S+ was not reachable via ssh",
        era=_DS + " (main: ssh -o PasswordAuthentication=no HOST hostname, before the launch)",
        cause="configuration",
        meaning="The launcher's check that it can ssh without a password to the first host of its hostfile "
        "failed (ssh exited non-zero, 255 for a connection or key refusal).",
        remedy=(
            "The launcher could not ssh to {ssh_host|the first host} listed in {hostfile|the hostfile}: for a single "
            "node remove the hostfile (or pass --num_gpus without --hostfile); otherwise " + PASSWORDLESS_SSH + " "
            "(a non-default port: deepspeed --ssh_port). --no_ssh_check skips the check, --no_ssh launches each "
            "node by hand (--node_rank)."
        ),
        reference=DS_RUNNER,
        fields_re=r"Using hostfile at (?P<hostfile>\S+) but host=(?P<ssh_host>\S+) was not reachable via ssh",
    ),
    row(
        "deepspeed_launcher_master_addr",
        "suitable master address",
        r"Unable to detect suitable master address via .hostname -I.",
        era=_DS + " (main: ssh HOST hostname -I when --master_addr is not given)",
        cause="configuration",
        meaning="The launcher could not learn the first host's address (ssh HOST hostname -I failed or printed "
        "nothing).",
        remedy=(
            "Pass --master_addr with the first node's routable IP (the one the other nodes reach), or fix ssh to "
            "that host and 'hostname -I' on it (missing on macOS and some minimal images)."
        ),
        reference=DS_RUNNER,
    ),
    row(
        "deepspeed_launcher_runner_missing",
        "not installed",
        r"launcher '\w+' not installed",
        era=_DS + " (main: the multi-node runner's backend_exists)",
        cause="configuration",
        meaning="The multi-node launcher chosen (--launcher pdsh / openmpi / mvapich / mpich / impi / slurm) is not "
        "installed on the node that runs `deepspeed`.",
        remedy=(
            "Install the launcher {launcher|named} on this node (pdsh: apt-get install pdsh; openmpi: mpirun on PATH; "
            "slurm: srun), or choose one that is there with deepspeed --launcher."
        ),
        reference=DS_RUNNER + "; " + DS_MULTINODE,
        fields_re=r"launcher '(?P<launcher>\w+)' not installed",
    ),
    row(
        "deepspeed_launcher_backend_limits",
        ("backend does not support", "requires same number of devices per node"),
        (
            r"\w+ backend does not support (?:worker include/exclusion|limiting num nodes/gpus)",
            r"(?:MPICH|Intel MPI|mvapich) requires same number of devices per node",
        ),
        era="DeepSpeed's multi-node runners (deepspeed/launcher/multinode_runner.py: OpenMPI, MPICH, IMPI, "
        "MVAPICH, Slurm)",
        cause="configuration",
        meaning="The MPI / Slurm runner cannot honour the resource filter asked for: it launches every slot of "
        "every host the hostfile lists, the same count per node.",
        remedy=(
            "With --launcher {backend|of this kind} choose GPUs through the hostfile itself (its hosts and slots=N, "
            "the same N on every node), not --include / --exclude / --num_nodes / --num_gpus; or use the default "
            "pdsh launcher, which takes them."
        ),
        reference=DS_MULTINODE,
        fields_re=r"(?P<backend>\w+) backend does not support",
    ),
    row(
        "deepspeed_mpi_discovery_no_mpi4py",
        "No module named 'mpi4py'",
        r"No module named 'mpi4py'",
        era="deepspeed.comm (comm.py mpi_discovery, when RANK / WORLD_SIZE / MASTER_ADDR are not set)",
        cause="configuration",
        meaning="deepspeed.init_distributed found none of the launcher's variables (RANK, WORLD_SIZE, "
        "MASTER_ADDR, MASTER_PORT, LOCAL_RANK) and tried to read them from MPI, which needs mpi4py.",
        remedy=(
            "Start the script with a launcher that sets RANK / WORLD_SIZE / MASTER_ADDR (deepspeed, torchrun, "
            "accelerate launch) rather than plain python; under mpirun install mpi4py (pip install mpi4py), or "
            "pass dist_init_required / auto_mpi_discovery=False when the variables are set another way."
        ),
        reference=DS_COMM,
        # DeepSpeed's own frame (deepspeed/comm/comm.py; deepspeed/utils/distributed.py before deepspeed.comm): a
        # script's own 'from mpi4py import MPI' (Horovod, mpi4py programs) keeps the missing-package reading
        before_re=r"deepspeed[/\\][\w/\\]*\.py\", line \d+, in mpi_discovery\b",
    ),
    row(
        "deepspeed_mpi_discovery_mismatch",
        "does not match torch",
        r"MPI (?:world size|rank) \d+ does not match torch (?:world size|rank) \d+",
        era="deepspeed.comm (comm.py mpi_discovery)",
        cause="configuration",
        meaning="The process group was already made with another rank or world size than MPI reports: the script "
        "was started by mpirun and by another launcher's variables at once.",
        remedy=(
            "Launch one way ({check|MPI against torch}): with mpirun alone (unset RANK / WORLD_SIZE / LOCAL_RANK "
            "left from another launcher) or with deepspeed / torchrun alone, and mpirun -n equal to the ranks the "
            "process group expects."
        ),
        reference=DS_COMM,
        fields_re=r"(?P<check>MPI (?:world size|rank) \d+ does not match torch (?:world size|rank) \d+)",
    ),
)
