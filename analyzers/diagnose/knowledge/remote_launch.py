"""Signature rows for a launch that never reached the job's own code: the launcher could not get onto a host.

Multi-node launchers reach their hosts in one of three ways, and each prints its own failure before any rank runs:
  ssh     DeepSpeed's runner (pdsh or plain ssh per hostfile entry), mpirun's rsh launcher, torchrun / FlagAI-style
          wrappers that ssh to each node: OpenSSH's client words it (sshconnect.c, sshconnect2.c), pdsh wraps it
          ('pdsh@h: node: ssh exited with exit code 255', src/common/pipecmd.c; 255 is ssh's own failure);
  srun    slurmd on the node refused or never answered the step launch (src/api/step_launch.c 'Task launch for %ps
          failed on node %s: %m', the reason from src/common/slurm_errno.c);
  the Kubernetes API   an operator's or init container's client (Go's client-go, kubectl) could not dial the API
          server; Go's net package words every dial failure 'dial tcp ADDR: connect: REASON' (net/net.go OpError).
Same fields as knowledge/signatures.py; rows are built with signature_row.row.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

OPENSSH = "https://github.com/openssh/openssh-portable/blob/master/"
SLURM = "https://github.com/SchedMD/slurm/blob/master/"

# What every ssh-launched job needs, in the order it is checked: a key without a passphrase, the key on every host,
# every host's key known here, checked without a prompt (BatchMode fails where a launcher would hang or fail).
_PASSWORDLESS_SSH = (
    "set up passwordless ssh from this node to every host of the hostfile, this node included "
    "(ssh-keygen -t ed25519 with no passphrase, ssh-copy-id {ssh_host|HOST}), make each host's key known "
    "(ssh-keyscan -H {ssh_host|HOST} >> ~/.ssh/known_hosts, or StrictHostKeyChecking accept-new for the cluster's "
    "hosts in ~/.ssh/config), and check with ssh -o BatchMode=yes {ssh_host|HOST} hostname, which must print the "
    "name with no prompt"
)
# OpenSSH's connect() failure's strerror(): the host is not reachable at all, or nothing listens on the port
_UNREACHABLE = r"Connection timed out|No route to host|Network is unreachable|Operation timed out"
_SSH_CONNECT = r"ssh: connect to host (?P<ssh_host>\S+) port (?P<ssh_port>\d+): (?P<ssh_error>{})"
# slurmd's replies that are about the step's credential (slurm_errno.c ESLURMD_*CREDENTIAL*)
_CREDENTIAL = r"Invalid job credential|Job credential (?:expired|revoked|replayed)"
_TASK_LAUNCH = r"Task launch for (?P<step>\S+) failed on node (?P<node>[^\s:]+): (?P<reason>{})"
# srun's transport errors reaching slurmd (slurm_errno.c SLURM_COMMUNICATIONS_* / SLURM_PROTOCOL_SOCKET_*)
_SLURMD_UNREACHED = (
    r"Zero Bytes were transmitted or received|Communication connection failure|Socket timed out on send/recv "
    r"operation|Message (?:send|receive) failure|Connection refused|Connection timed out|No route to host"
)
# Go's net.OpError for a dial ('dial tcp 10.43.0.1:443: connect: connection refused', 'dial tcp 10.0.0.1:443:
# i/o timeout'): syscall errno strings are lower-case in Go
_GO_DIAL = (
    r"\bdial tcp (?P<address>\[?[\w.:-]+?\]?:\d+): (?:connect: )?"
    r"(?P<net_error>connection refused|i/o timeout|no route to host|network is unreachable)"
)
# The Kubernetes API's paths (/api/v1/..., /apis/GROUP/...), as client-go's reflector and kubectl request them
_K8S_API_DIAL = r"https://(?P<api>[^/\s\"]+)/apis?/\S*?\"?: " + _GO_DIAL.replace(r"\bdial", "dial")

# ssh going on after the host-key prompt was answered (sshconnect.c: 'Warning: Permanently added ...')
_KEY_ADDED = r"Warning: Permanently added "
# a Go controller's informers synced after the dial errors (client-go's WaitForNamedCacheSync, controllers'
# 'Caches are synced for X controller'): the errors were retried and the API answered
_CACHES_SYNCED = r"(?i)\bcaches are synced for\b"

# Rows whose line is harmless once the run went on past it (went_on_re matched): a question answered, a dial
# retried until the API answered; no finding at all, not a warning (readers/signature_scan marks went_on_past_it)
GONE_PAST_IS_HARMLESS = ("ssh_host_key_unknown", "k8s_api_unreachable", "go_dial_failed")

REMOTE_LAUNCH_SIGNATURES: tuple[Signature, ...] = (
    # ---- ssh: the host's key is not known, and ssh asks or refuses (sshconnect.c check_host_key) -------------------
    # 'The authenticity of host 'H (IP)' can't be established.' then 'Are you sure you want to continue connecting
    # (yes/no/[fingerprint])?' with StrictHostKeyChecking=ask (the default): a launcher has no terminal to answer,
    # so the connection waits or fails; 'Host key verification failed.' (sshconnect2.c verify_host_key) is the
    # refusal; 'No ED25519 host key is known for H and you have requested strict checking.' its strict form;
    # 'REMOTE HOST IDENTIFICATION HAS CHANGED' a host reinstalled under the same name or address.
    row(
        "ssh_host_key_unknown",
        (
            "authenticity of host",
            "continue connecting",
            "Host key verification failed",
            "host key is known for",
            "REMOTE HOST IDENTIFICATION HAS CHANGED",
        ),
        (
            r"The authenticity of host '(?P<ssh_host>[^' ]+)[^']*' can't be established",
            r"Are you sure you want to continue connecting \(yes/no",
            r"Host key verification failed\.",
            r"No \S+ host key is known for (?P<ssh_host>\S+) and you have requested strict checking",
            r"REMOTE HOST IDENTIFICATION HAS CHANGED",
        ),
        era="OpenSSH's client (all releases; '[fingerprint]' since 8.0); DeepSpeed's runner, pdsh, mpirun, ssh "
        "wrappers",
        cause="configuration",
        meaning="The launcher's ssh to a host stopped at the host-key check: the host's key is not in known_hosts "
        "(ssh asks, and a launcher has no one to answer) or it changed; passwordless ssh between the nodes is not "
        "set up, so no rank was started on that host.",
        remedy="The launcher reaches every host over ssh and cannot answer ssh's questions: "
        + _PASSWORDLESS_SSH
        + "; a host whose key changed (reinstalled): ssh-keygen -R {ssh_host|HOST}, then connect once.",
        reference=OPENSSH + "sshconnect.c; " + OPENSSH + "sshconnect2.c; "
        "https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node",
        fields_re=r"(?:authenticity of host '|host key is known for )(?P<ssh_host>[^' ]+)",
        # answered at a terminal: ssh adds the key ('Warning: Permanently added 'H' (ED25519) to the list of known
        # hosts.', sshconnect.c) and goes on
        went_on_re=_KEY_ADDED,
    ),
    # 'user@host: Permission denied (publickey,password).' (sshconnect2.c ssh_userauth2: no method left): the key
    # is not in the remote authorized_keys, or ssh wanted a password a launcher cannot type
    row(
        "ssh_permission_denied",
        "Permission denied (",
        r"(?:(?P<ssh_user>[\w.-]+)@(?P<ssh_host>[\w.:-]+): )?Permission denied \((?P<methods>[\w,-]+)\)\.",
        era="OpenSSH's client (all releases)",
        cause="configuration",
        meaning="The launcher's ssh to a host was refused at authentication: this node's key is not authorized "
        "there (or ssh asked for a password), so no rank was started on that host.",
        remedy="The host refused the launcher's ssh login ({methods|publickey}): "
        + _PASSWORDLESS_SSH
        + " (the same user on every host; ~/.ssh 700 and authorized_keys 600, or sshd refuses the key).",
        reference=OPENSSH + "sshconnect2.c",
        fields_re=r"(?:(?P<ssh_user>[\w.-]+)@(?P<ssh_host>[\w.:-]+): )?Permission denied \((?P<methods>[\w,-]+)\)",
    ),
    # 'ssh: connect to host H port 22: Connection timed out' (sshconnect.c ssh_connect_direct): the host is not
    # reachable from this node: a wrong address in the hostfile, a firewall, or another network
    row(
        "ssh_host_unreachable",
        "ssh: connect to host",
        _SSH_CONNECT.format(_UNREACHABLE),
        era="OpenSSH's client (all releases); DeepSpeed's runner, pdsh, mpirun, ssh wrappers",
        cause="network",
        meaning="The launcher could not reach a host over ssh: the address does not answer from this node, so no "
        "rank was started there.",
        remedy=(
            "The launcher reaches every host of its hostfile over ssh, and {ssh_host|the host} port {ssh_port|22} "
            "did not answer ({ssh_error|no reply}): check the hostfile lists this cluster's addresses, reachable "
            "from this node (ping, nc -zv {ssh_host|HOST} {ssh_port|22}; a firewall or security group must allow "
            "port {ssh_port|22}); a single-node run needs no hostfile (deepspeed --num_gpus N, --include "
            "localhost:0,1). Then " + _PASSWORDLESS_SSH + "."
        ),
        reference=OPENSSH + "sshconnect.c; https://github.com/FlagAI-Open/Aquila2/issues/92",
        fields_re=_SSH_CONNECT.format(_UNREACHABLE),
    ),
    # '... port 22: Connection refused': the host answers, nothing listens on that port (no sshd, another port)
    row(
        "ssh_connection_refused",
        "ssh: connect to host",
        _SSH_CONNECT.format("Connection refused"),
        era="OpenSSH's client (all releases)",
        cause="configuration",
        meaning="The launcher's ssh to a host was refused: the host answers but no ssh server listens on that port "
        "(sshd not running, or it listens on another port), so no rank was started there.",
        remedy=(
            "Nothing listens for ssh on {ssh_host|the host} port {ssh_port|22}: start sshd there (in a container: "
            "install and run openssh-server) or give the launcher sshd's port (Host entries with Port in "
            "~/.ssh/config; deepspeed --ssh_port, mpirun -mca plm_rsh_args '-p PORT'). Then " + _PASSWORDLESS_SSH + "."
        ),
        reference=OPENSSH + "sshconnect.c",
        fields_re=_SSH_CONNECT.format("Connection refused"),
    ),
    # pdsh's own line for a remote command it could not run: 'pdsh@h: node: ssh exited with exit code 255'
    # (src/common/pipecmd.c); 255 is ssh's status for its own failure (connect, host key, auth), not the command's
    row(
        "pdsh_ssh_failed",
        "ssh exited with exit code 255",
        r"(?P<ssh_host>[\w.:-]+): ssh exited with exit code 255",
        era="pdsh with the ssh rcmd module (DeepSpeed's default multi-node launcher)",
        cause="configuration",
        meaning="pdsh could not run the launch command on a host: ssh itself failed there (connection, host key or "
        "authentication), so no rank was started on it.",
        remedy="The ssh from this node to {ssh_host|the host} failed (exit code 255 is ssh's own error; the ssh line "
        "above it says which): " + _PASSWORDLESS_SSH + "; the host name must be reachable as the hostfile spells it.",
        reference="https://github.com/chaos/pdsh/blob/master/src/common/pipecmd.c",
        fields_re=r"(?P<ssh_host>[\w.:-]+): ssh exited with exit code 255",
        confidence="medium",
        echo=True,  # after ssh's own line, that line says why
    ),
    # ---- srun: slurmd on a node refused the step launch (src/api/step_launch.c) -------------------------------
    # The credential slurmctld signs for each step carries an expiry checked against the node's clock; slurmd
    # rejects it with ESLURMD_CREDENTIAL_EXPIRED ('Job credential expired') when the clocks differ (a node back from
    # a reboot before NTP synced) or the credential was revoked / the munge key differs ('Invalid job credential')
    row(
        "slurm_step_credential_refused",
        "Task launch for",
        _TASK_LAUNCH.format(_CREDENTIAL),
        era="Slurm srun (all releases)",
        cause="configuration",
        meaning="slurmd on a node refused to start the job step: it did not accept the step's credential (its "
        "clock is off from the controller's, or its munge key or daemon differs), so the job's own program never "
        "ran there.",
        remedy=(
            "The slurmd on {node|the node} refused step {step|the step}'s credential ({reason|credential}): the "
            "cluster, not the job. Compare that node's clock with the controller's (date; timedatectl / chronyc "
            "tracking: NTP synced after a reboot), check munge (munge -n | ssh {node|NODE} unmunge; the same "
            "munge.key everywhere) and restart munge and slurmd there (an administrator: scontrol update "
            "nodename={node|NODE} state=resume); until then exclude it (--exclude={node|NODE}) or run without the "
            "per-node srun step."
        ),
        reference=SLURM + "src/api/step_launch.c; " + SLURM + "src/common/slurm_errno.c; "
        "https://github.com/ai4d-iasc/trixie/issues/58",
        fields_re=_TASK_LAUNCH.format(_CREDENTIAL),
    ),
    row(
        "slurm_step_launch_unreached",
        "Task launch for",
        _TASK_LAUNCH.format(_SLURMD_UNREACHED),
        era="Slurm srun (all releases)",
        cause="configuration",
        meaning="srun could not talk to slurmd on a node to start the job step (the daemon down or hung, its port "
        "blocked, or the node's network), so the job's own program never ran there.",
        remedy=(
            "srun could not start step {step|the step} on {node|the node} ({reason|no reply}): check slurmd there "
            "(systemctl status slurmd, its log; scontrol show node {node|NODE}), that its port (SlurmdPort, 6818 by "
            "default) is open from this node, and the node's clock and munge; exclude it (--exclude={node|NODE}) "
            "until an administrator has it back."
        ),
        reference=SLURM + "src/api/step_launch.c; " + SLURM + "src/common/slurm_errno.c",
        fields_re=_TASK_LAUNCH.format(_SLURMD_UNREACHED),
    ),
    # ---- the Kubernetes API server, as Go clients dial it ----------------------------------------------------------
    # client-go's reflector ('Failed to list *v1.Pod: Get "https://10.43.0.1:443/api/v1/namespaces/x/pods?...": dial
    # tcp 10.43.0.1:443: connect: connection refused'), kubectl ('The connection to the server H:6443 was refused -
    # did you specify the right host or port?', 'Unable to connect to the server: dial tcp ...'). The pod has no
    # path to the API server: a service-mesh sidecar that is not running yet (Istio's istio-proxy starts after the
    # init containers, so an init container has no network), a NetworkPolicy, or a wrong API address.
    row(
        "k8s_api_unreachable",
        ("dial tcp", "The connection to the server"),
        (
            _K8S_API_DIAL,
            r"The connection to the server (?P<api>\S+) was refused",
            r"Unable to connect to the server: " + _GO_DIAL,
        ),
        era="Kubernetes Go clients (client-go reflector, kubectl, operators' init containers such as "
        "mpi-operator's kubectl-delivery)",
        cause="configuration",
        meaning="A pod of the job could not reach the Kubernetes API server, so the operator's step that needs it "
        "(listing the job's pods, delivering kubectl) never finished and the job never started.",
        remedy=(
            "This pod cannot reach the Kubernetes API server ({api|the API address}, {net_error|no connection}). In a "
            "namespace with a service-mesh sidecar (Istio: the injected istio-proxy starts only after the init "
            "containers, so an init container has no network), keep the sidecar off the job's pods (pod annotation "
            'sidecar.istio.io/inject: "false", or a namespace without istio-injection) or let the proxy start '
            "first (holdApplicationUntilProxyStarts); otherwise check NetworkPolicies / egress to the API server "
            "(kubectl get svc kubernetes -n default) and the address the client was given."
        ),
        reference="https://github.com/kubernetes/client-go/blob/master/tools/cache/reflector.go; "
        "https://istio.io/latest/docs/ops/common-problems/injection/; https://github.com/kubeflow/mpi-operator/issues/407",
        went_on_re=_CACHES_SYNCED,
        fields_re=r"(?:https://|to the server )(?P<api>[^/\s\"]+)|"
        r"(?P<net_error>connection refused|i/o timeout|no route to host|network is unreachable)",
    ),
    # Go's dial error for any other address (an operator's webhook, a rendezvous service, a metrics endpoint)
    row(
        "go_dial_failed",
        "dial tcp",
        _GO_DIAL,
        era="Go programs (net.Dial's OpError): Kubernetes operators, controllers, sidecars",
        cause="network",
        meaning="A Go program of the job (an operator, controller or sidecar) could not connect to an address it "
        "needs: nothing listens there, or the network between them drops it.",
        remedy=(
            "{address|The address} did not accept the connection ({net_error|no reply}): check that the service "
            "behind it runs and listens there (kubectl get svc,endpoints; nc -zv HOST PORT from the same pod), and "
            'that no NetworkPolicy, firewall or service-mesh sidecar (Istio: sidecar.istio.io/inject: "false" on '
            "pods that need the network before the proxy starts) blocks the path."
        ),
        reference="https://pkg.go.dev/net#OpError",
        fields_re=_GO_DIAL,
        went_on_re=_CACHES_SYNCED,
        confidence="medium",
    ),
)
