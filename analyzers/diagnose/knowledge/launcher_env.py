"""Variables a job sets in the launching shell that Open MPI's mpirun does not carry to ranks on other hosts.

Open MPI starts remote ranks through its daemons (ssh / the scheduler), and a remote rank gets only the
variables named with `-x NAME` (mpirun(1): "-x <env>: Export the specified environment variables to the remote
nodes before executing the program"); ranks on the launching host inherit the shell's environment. So
`NCCL_SHM_DISABLE=1 mpirun -H a,b ...` runs host a with the setting and host b without it: the hosts disagree,
and a fix that works on one node does nothing on two. Sources: NVIDIA/nccl#260 (AddyLaddy: "You need to export
the environment variables to all nodes and processes - either by using a resource manager such as SLURM or via
the mpirun -x option"), NVIDIA/nccl#626 (sjeaugey: ranks on the mpirun node inherit the environment, "ranks on
remote nodes will not, so you need to pass those environment variables with the '-x' option of mpirun"),
NVIDIA/nccl#743 (sjeaugey: remote processes launched through SSH do not keep the environment; set it in
/etc/nccl.conf or ~/.nccl.conf instead). MPICH / Intel MPI's Hydra forwards the whole environment by default
(-genvall), and srun copies it, so only an Open MPI command line is read.
"""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.line_shapes import SHELL_ASSIGNMENT_RUN, SHELL_PROMPT

# The variables a rank reads that a shell setting is meant for (NCCL, its net plugins' UCX / libfabric, Horovod,
# PyTorch's NCCL knobs); Open MPI forwards its own OMPI_MCA_* settings itself.
FORWARDED_PREFIXES = r"NCCL_|UCX_|FI_|HOROVOD_|TORCH_NCCL_|TORCH_DISTRIBUTED_"
# An mpirun / mpiexec command line with the settings before it ('$ NCCL_X=1 NCCL_DEBUG=INFO mpirun ...',
# 'export NCCL_X=1; mpirun ...'); group 'env' holds the settings, 'args' the launcher's arguments. A comment line
# ('# NCCL_X=1 mpirun ...' in a printed run script) is no command: the prompt never matches a bare '# '.
# Possessive throughout: a 100,000-character line is read once (regex_safety.backtracking_risk).
COMMAND = re.compile(
    rf"^[ \t]*+{SHELL_PROMPT}(?P<env>(?:export[ \t]++\w++=[^\s;]*+[ \t]*+;[ \t]*+)*+{SHELL_ASSIGNMENT_RUN})"
    r"(?:[^\s/]*+/)*+(?:mpirun|mpiexec)[ \t]++(?P<args>.*)$",
    re.M,
)
# A setting the shell made earlier in the log ('export NCCL_IB_DISABLE=1' echoed by a run script).
EXPORTED = re.compile(rf"^[ \t]*+{SHELL_PROMPT}export[ \t]++((?:{FORWARDED_PREFIXES})\w*+)=", re.M)
SETTING = re.compile(rf"\b((?:{FORWARDED_PREFIXES})\w*)=")
# What only changes what NCCL prints: one host printing less is no misconfiguration worth a finding.
PRINT_ONLY = re.compile(r"NCCL_DEBUG(?:_SUBSYS|_FILE)?$")
# The settings written in front of the launcher ('A=1 B=2 mpirun ...'), to write the launch out with -x; anchored
# at the command's start, so it is tried once.
PREFIXED = re.compile(
    rf"^{SHELL_PROMPT}(?P<env>(?:[A-Z_][A-Z0-9_]*+=\S*+[ \t]++)++)(?P<launcher>mpirun|mpiexec)\b(?P<rest>.*)"
)
# Open MPI's own options (Hydra spells hosts -hosts / -f and environment -genv / -env; --hostfile with two dashes
# is Open MPI's spelling): the command is Open MPI's.
OPEN_MPI = re.compile(
    r"(?:^|\s)(?:-x|-H|--host|--hostfile|--machinefile|--allow-run-as-root|-{1,2}mca|--map-by|--bind-to|-npernode|"
    r"--npernode)\s"
)
HYDRA = re.compile(r"(?:^|\s)-(?:genv|genvall|envall|env|genvlist|hosts)\s")
# More than one host: a host list with a comma, or a hostfile. Ranks per node (-N, -npernode, ppr:N:node) say how
# many ranks go on each host, not that there is more than one host.
HOSTS = re.compile(r"(?:^|\s)(?:-H|--host|-host)\s+\S+,\S+|(?:^|\s)-{1,2}(?:hostfile|machinefile|default-hostfile)\s")
FORWARD = re.compile(r"(?:^|\s)-x\s+(\w+)")
# The variables whose echo on one host and not another is a mismatch worth a finding: the transport and
# interface choices, which make hosts connect differently (a debug or tuning knob on one host is not).
HOST_MISMATCH_PREFIXES = ("NCCL_P2P", "NCCL_SHM", "NCCL_IB", "NCCL_SOCKET", "NCCL_NET")

REMEDY = (
    "{launch}Open MPI's mpirun gives ranks on other hosts only the variables named with -x: pass each one through the "
    "launcher ({flags}), or set it in /etc/nccl.conf (or ~/.nccl.conf) on every node, which NCCL reads itself; "
    "then rerun. Ranks on the launching host had the setting, the others did not (NVIDIA/nccl#260, #626)."
)


def launch_with_x(command: str) -> str:
    """The log's own launch with each setting in front of mpirun passed by -x instead, as the fix's first words:
    'A=1 B=2 mpirun -H a,b prog' -> 'Launch with `mpirun -x A=1 -x B=2 -H a,b prog`. '; '' for other shapes."""
    m = PREFIXED.search(command)
    if m is None:
        return ""
    exports = " ".join(f"-x {v}" for v in m.group("env").split())
    return f"Launch with `{m.group('launcher')} {exports}{m.group('rest').rstrip()}`. "
