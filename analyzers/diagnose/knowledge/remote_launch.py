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

import re

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

OPENSSH = "https://github.com/openssh/openssh-portable/blob/master/"
SLURM = "https://github.com/SchedMD/slurm/blob/master/"

# What every ssh-launched job needs, in the order it is checked: a key without a passphrase, the key on every host,
# every host's key known here, checked without a prompt (BatchMode fails where a launcher would hang or fail). One
# text for every row of a launcher's ssh (knowledge/signatures.py launcher_ssh_host_unresolved too).
PASSWORDLESS_SSH = (
    "set up passwordless ssh from this node to every host of the hostfile, this node included "
    "(ssh-keygen -t ed25519 with no passphrase, ssh-copy-id {ssh_host|HOST}), make each host's key known "
    "(ssh-keyscan -H {ssh_host|HOST} >> ~/.ssh/known_hosts, or StrictHostKeyChecking accept-new for the cluster's "
    "hosts in ~/.ssh/config), and check with ssh -o BatchMode=yes {ssh_host|HOST} hostname, which must print the "
    "name with no prompt"
)
# OpenSSH's connect() failure's strerror(): the host is not reachable at all, or nothing listens on the port
_UNREACHABLE = r"Connection timed out|No route to host|Network is unreachable|Operation timed out"
_SSH_CONNECT = r"ssh: connect to host (?P<ssh_host>\S+) port (?P<ssh_port>\d+): (?P<ssh_error>{})"
# ssh's authentication methods as sshconnect2.c lists them after 'Permission denied (': the list opens with one of
# these, so NCCL's 'ibv_open_device failed: Permission denied (13)' is not ssh's
_SSH_METHOD = r"(?:publickey|password|keyboard-interactive|hostbased|gssapi-[\w-]+)"
# 'user@host: Permission denied (publickey,password).', at the line's start, after a date-time stamp, pdsh's 'node: '
# or a wrapper's '[node] ': anchored, so
# a long line is read once. A git remote ('git@github.com: ...', a pip or git clone over ssh) is no launcher's host.
_SSH_DENIED = (
    r"^\s*(?:\d{4}-\d\d-\d\d[T ][\d:.,]+Z? )?(?:[\w.-]+: |\[[\w.-]+\] )?"
    r"(?!git@)(?:(?P<ssh_user>[\w.-]+)@(?P<ssh_host>[\w.:-]+): )?Permission denied "
    r"\((?P<methods>" + _SSH_METHOD + r"[\w,-]*)\)"
)
# sshd closed the connection before the key exchange (sshd.c: MaxStartups' random early drop of unauthenticated
# connections, 10:30:100 by default; also a host's sshd refusing through tcp wrappers): OpenSSH >= 8.2 words it
# 'kex_exchange_identification: Connection closed by remote host' / '... read: Connection reset by peer' (before
# 8.2 'ssh_exchange_identification: ...')
_SSH_KEX = (
    r"(?:kex|ssh)_exchange_identification: "
    r"(?P<ssh_error>Connection closed by remote host|read: Connection reset by peer)"
)
# pdsh's own line: 'pdsh@HOST: NODE: ssh exited with exit code 255' (pipecmd.c: '%p: %S: ...', %p is 'pdsh@host')
_PDSH_SSH_255 = r"pdsh@[\w.-]+: (?P<ssh_host>[\w.-]+): ssh exited with exit code 255"
# slurm_errno.c's reasons that are about the step's credential (ESLURMD_*CREDENTIAL*)
_CREDENTIAL = r"Invalid job credential|Job credential (?:expired|revoked|replayed)"
# src/api/step_launch.c: 'Task launch for %ps failed on node %s: %m' (%ps: 'StepId=J.S' since 20.11, 'J.S' before)
_TASK_LAUNCH = r"Task launch for (?P<step>\S+) failed on node (?P<node>[^\s:]+): (?P<reason>{})"
# srun's transport errors reaching slurmd (slurm_errno.c SLURM_COMMUNICATIONS_* / SLURM_PROTOCOL_SOCKET_*)
_SLURMD_UNREACHED = (
    r"Zero Bytes were transmitted or received|Communication connection failure|Socket timed out on send/recv "
    r"operation|Message (?:send|receive) failure|Connection refused|Connection timed out|No route to host"
)
# Go's net errors for a dial, lower-case as Go words syscall errnos: net.OpError ('dial tcp 10.43.0.1:443: connect:
# connection refused', '... i/o timeout'), the resolver's DNSError ('dial tcp: lookup H on 10.96.0.10:53: no such
# host'), net/http's 'TLS handshake timeout' (the TCP connect answered, TLS did not)
_NET_ERROR = (
    r"connection refused|i/o timeout|no route to host|network is unreachable|connection timed out|"
    r"connection reset by peer"
)
_GO_DIAL = (
    r"\bdial tcp (?P<address>\[[0-9a-fA-F:.]+\]:\d+|[\w.-]+:\d+): (?:connect: |read: )?(?P<net_error>"
    + _NET_ERROR
    + r")|\bdial tcp: lookup (?P<lookup>[\w.-]+)(?: on [\w.:\[\]]+)?: (?P<dns_error>no such host|server misbehaving"
    r"|i/o timeout)|net/http: (?P<tls_error>TLS handshake timeout)"
)
# The Kubernetes API's paths (/api/v1/..., /apis/GROUP/...), as client-go's reflector and kubectl request them
# (the path up to its closing quote or ': ', possessive and bounded: a line of many URLs and no delimiter is read
# once per URL, not to its end each time)
_K8S_API_DIAL = (
    r"https://(?P<api>[\w.-]+(?::\d+)?|\[[0-9a-fA-F:.]+\]:\d+)/apis?/[^\s\":]{0,2000}+\"?: (?:" + _GO_DIAL + ")"
)
# the API address a line names: client-go's URL, kubectl's 'to the server H', Go's 'dial tcp ADDR'
_K8S_FIELDS = (
    r"(?:https://|to the server |dial tcp )(?P<api>\[[0-9a-fA-F:.]+\]:\d+|[\w.-]+(?::\d+)?)|"
    r"(?P<net_error>" + _NET_ERROR + r"|no such host|TLS handshake timeout)"
)

# ssh going on after the host-key prompt was answered (sshconnect.c: 'Warning: Permanently added 'H,IP' (TYPE) to
# the list of known hosts.'): it names the host, which reasoning/remote_launch.py compares with the failed line's
KEY_ADDED = re.compile(r"Warning: Permanently added '(?P<hosts>[^']+)'")
# A Go client that went on after its dial errors: the API answered. client-go's informers synced ('Caches are
# synced for X', newer releases 'Caches populated'), leader election won ('successfully acquired lease',
# leaderelection.go), controller-runtime's controllers started ('Starting workers'), an operator's job completed
# ('PyTorchJob default/x successfully completed.', kubeflow training-operator: the job's kind names it; a bare
# 'successfully completed' is any program's, an Argo step's before the real failure among them)
_API_ANSWERED = (
    r"(?i)\bcaches are synced for\b|\bcaches populated\b|successfully acquired lease|\bStarting workers\b|"
    r"\b(?:PyTorch|TF|MPI|XGBoost|Paddle|JAX|MX|Train)Job [\w.-]+/[\w.-]+ (?:is )?successfully completed\b"
)

# A Go program that went on after its own dial errors: its own words that it is up (Envoy's 'Envoy proxy is ready',
# istio-agent's 'ADS: new connection', a server's 'listening on' / 'serving on', fluent-bit's 'flush chunk ...
# succeeded at retry N'): a dial retried until the service came, no failure. 'is NOT ready' is not 'is ready'.
# Read under _API_ANSWERED's (?i), the pattern it is joined to.
_PROGRAM_READY = (
    r"\b(?:is|now) ready\b|\bready to (?:serve|accept)|\b(?:serving|listening) on\b|\bsucceeded at retry\b|"
    r"\bADS: new connection\b|\bstarted (?:successfully|server)\b|\bconnection (?:established|restored)\b"
)

# Rows of a launch that never reached the job's code: each is no failure where the run went on past it
# (reasoning/setting_refused.WENT_PAST_CODES): a question answered, a dial retried, a host left out while the
# others trained, or a side client (a logger's uploader) that failed while training went on
LAUNCH_WENT_PAST_CODES = (
    "ssh_host_key_unknown",
    "ssh_permission_denied",
    "ssh_host_unreachable",
    "ssh_connection_refused",
    "ssh_kex_closed",
    "pdsh_ssh_failed",
    "slurm_step_credential_refused",
    "slurm_step_launch_unreached",
    "slurm_controller_unreachable",
    "slurm_step_environment_failed",
    "slurm_step_launch_failed",
    "k8s_api_unreachable",
    "kubectl_no_kubeconfig",
    "go_dial_failed",
)

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
        + PASSWORDLESS_SSH
        + "; a host whose key changed (reinstalled): ssh-keygen -R {ssh_host|HOST}, then connect once.",
        reference=OPENSSH + "sshconnect.c; " + OPENSSH + "sshconnect2.c; "
        "https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node",
        # answered at a terminal, ssh adds that host's key and goes on: reasoning/remote_launch.py reads KEY_ADDED
        # for the same host (another host's key added says nothing of this one)
        fields_re=r"(?:authenticity of host '|host key is known for )(?P<ssh_host>[^' ]+)",
    ),
    # 'user@host: Permission denied (publickey,password).' (sshconnect2.c ssh_userauth2: no method left): the key
    # is not in the remote authorized_keys, or ssh wanted a password a launcher cannot type
    row(
        "ssh_permission_denied",
        "Permission denied (",
        _SSH_DENIED,
        era="OpenSSH's client (all releases)",
        cause="configuration",
        meaning="The launcher's ssh to a host was refused at authentication: this node's key is not authorized "
        "there (or ssh asked for a password), so no rank was started on that host.",
        remedy="The host refused the launcher's ssh login ({methods|publickey}): "
        + PASSWORDLESS_SSH
        + " (the same user on every host; ~/.ssh 700 and authorized_keys 600, or sshd refuses the key).",
        reference=OPENSSH + "sshconnect2.c",
        fields_re=_SSH_DENIED,
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
            "localhost:0,1). Then " + PASSWORDLESS_SSH + "."
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
            "~/.ssh/config; deepspeed --ssh_port, mpirun -mca plm_rsh_args '-p PORT'). Then " + PASSWORDLESS_SSH + "."
        ),
        reference=OPENSSH + "sshconnect.c",
        fields_re=_SSH_CONNECT.format("Connection refused"),
    ),
    # sshd dropped the connection before the key exchange: under pdsh's fan-out (DeepSpeed runs pdsh -f 1024) more
    # unauthenticated connections arrive at once than sshd's MaxStartups (10:30:100) lets through
    row(
        "ssh_kex_closed",
        ("kex_exchange_identification", "ssh_exchange_identification"),
        _SSH_KEX,
        era="OpenSSH >= 8.2's client ('ssh_exchange_identification' before); pdsh, DeepSpeed's runner, mpirun",
        cause="configuration",
        meaning="A host's ssh server closed the launcher's connection before the key exchange (too many "
        "connections opened at once for sshd's MaxStartups, or sshd refused this client), so no rank was started "
        "there.",
        remedy=(
            "The ssh server on the host closed the connection before the key exchange ({ssh_error|closed}): with "
            "pdsh's fan-out (DeepSpeed's runner starts pdsh -f 1024) more connections arrive at once than sshd's "
            "MaxStartups (10:30:100 by default) admits: open fewer at a time (pdsh -f 32; deepspeed "
            "--launcher_args '-f 32') or raise MaxStartups in the hosts' sshd_config (e.g. MaxStartups 200:30:400) "
            "and restart sshd; check the host's sshd log (journalctl -u sshd) for a refusal of its own "
            "(hosts.deny, DenyUsers)."
        ),
        reference=OPENSSH + "sshd.c; https://man.openbsd.org/sshd_config#MaxStartups",
        fields_re=_SSH_KEX,
    ),
    # pdsh's own line for a remote command it could not run: 'pdsh@h: node: ssh exited with exit code 255'
    # (src/common/pipecmd.c); 255 is ssh's status for its own failure (connect, host key, auth), not the command's
    row(
        "pdsh_ssh_failed",
        "ssh exited with exit code 255",
        _PDSH_SSH_255,
        era="pdsh with the ssh rcmd module (DeepSpeed's default multi-node launcher)",
        cause="configuration",
        meaning="pdsh could not run the launch command on a host: ssh itself failed there (connection, host key or "
        "authentication), so no rank was started on it.",
        remedy="The ssh from this node to {ssh_host|the host} failed (exit code 255 is ssh's own error; the ssh line "
        "above it says which): " + PASSWORDLESS_SSH + "; the host name must be reachable as the hostfile spells it.",
        reference="https://github.com/chaos/pdsh/blob/master/src/common/pipecmd.c",
        fields_re=_PDSH_SSH_255,
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
    # srun (or slurmd) could not reach slurmctld: 'Unable to contact slurm controller (connect failure)'
    # (slurm_errno.c SLURM_PROTOCOL_... / slurmctld down or unreachable), in a step launch's reason or on its own
    row(
        "slurm_controller_unreachable",
        "Unable to contact slurm controller",
        r"Unable to contact slurm controller",
        era="Slurm (all releases)",
        cause="configuration",
        meaning="A Slurm command or daemon could not reach the controller (slurmctld down, restarting or "
        "unreachable from this node), so the step was not started.",
        remedy=(
            "Slurm could not reach its controller: the cluster, not the job. Check slurmctld (scontrol ping; "
            "systemctl status slurmctld on the controller), that SlurmctldHost in slurm.conf resolves and its port "
            "(SlurmctldPort, 6817 by default) is open from {node|this node}, and munge; resubmit once scontrol ping "
            "answers UP."
        ),
        reference=SLURM + "src/common/slurm_errno.c",
        fields_re=_TASK_LAUNCH.format(".+"),
    ),
    # slurmd could not build the step's environment (slurm_errno.c ESLURMD_SETUP_ENVIRONMENT_ERROR: the user's
    # login environment for --get-user-env / --export, the job's spool or tmp directory, a prolog)
    row(
        "slurm_step_environment_failed",
        "could not set up environment",
        r"Slurmd could not set up environment for batch job",
        era="Slurm (all releases)",
        cause="configuration",
        meaning="slurmd on a node could not set up the job's environment (the user's login environment, the job's "
        "spool or temporary directory, a prolog), so the job's own program never ran there.",
        remedy=(
            "The slurmd on {node|the node} could not set up the job's environment: the user must exist there with the "
            "same uid (id USER on that node; LDAP / sssd), the home and the job's working directory must be mounted, "
            "SlurmdSpoolDir and /tmp writable and not full (df), and the prolog must succeed (slurmd's log on that "
            "node); a --get-user-env that times out needs a lighter login shell. Exclude the node "
            "(--exclude={node|NODE}) until an administrator fixes it."
        ),
        reference=SLURM + "src/common/slurm_errno.c",
        fields_re=_TASK_LAUNCH.format(".+"),
    ),
    # any other reason slurmd or srun gives for a step it could not launch ('Invalid node name specified', 'Access
    # denied', 'Unable to create TMPDIR'): the step never ran, and the reason is the line's own
    row(
        "slurm_step_launch_failed",
        "Task launch for",
        _TASK_LAUNCH.format(r"[^\n]+"),
        era="Slurm srun (all releases)",
        cause="configuration",
        meaning="srun could not launch the job step on a node, so the job's own program never ran there.",
        remedy=(
            "Step {step|the step} could not be launched on {node|the node}: {reason|see the line}. That reason is "
            "slurmd's on that node (its log: scontrol show node {node|NODE}, slurmd.log): a node name that slurm.conf "
            "and the node disagree on, a missing user or directory there, a full disk; exclude it "
            "(--exclude={node|NODE}) and ask the administrator to fix or drain it."
        ),
        reference=SLURM + "src/api/step_launch.c; " + SLURM + "src/common/slurm_errno.c",
        fields_re=_TASK_LAUNCH.format(r"[^\n]+"),
        confidence="medium",
    ),
    # ---- the Kubernetes API server, as Go clients dial it ----------------------------------------------------------
    # client-go's reflector ('Failed to list *v1.Pod: Get "https://10.43.0.1:443/api/v1/namespaces/x/pods?...": dial
    # tcp 10.43.0.1:443: connect: connection refused'), kubectl ('The connection to the server H:6443 was refused -
    # did you specify the right host or port?', 'Unable to connect to the server: dial tcp ...'). The pod has no
    # path to the API server: a service-mesh sidecar that is not running yet (Istio's istio-proxy starts after the
    # init containers, so an init container has no network), a NetworkPolicy, or a wrong API address.
    # kubectl with no kubeconfig and outside a cluster falls back to http://localhost:8080 (client-go's
    # clientcmd default): the refusal there says kubectl was given no cluster at all, not that the network failed
    row(
        "kubectl_no_kubeconfig",
        "The connection to the server",
        r"The connection to the server (?P<api>localhost:8080) was refused",
        era="kubectl (all releases: its default server when no kubeconfig is found)",
        cause="configuration",
        meaning="kubectl found no kubeconfig and is not running inside a cluster, so it tried its default server "
        "localhost:8080, where no API server listens.",
        remedy=(
            "No kubeconfig reached kubectl (it fell back to localhost:8080): point it at a kubeconfig "
            "(export KUBECONFIG=/path/to/config, or ~/.kube/config; on a control-plane node "
            "/etc/kubernetes/admin.conf) and check with kubectl cluster-info. In a pod, run it with a service "
            "account that is mounted (automountServiceAccountToken not false) so it uses the in-cluster config, and "
            "a Role that allows what it does."
        ),
        reference="https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/; "
        "https://github.com/kubernetes/client-go/blob/master/tools/clientcmd/client_config.go",
        fields_re=r"to the server (?P<api>\S+) was refused",
    ),
    row(
        "k8s_api_unreachable",
        ("dial tcp", "The connection to the server", "TLS handshake timeout"),
        (
            _K8S_API_DIAL,
            r"The connection to the server (?P<api>\S+) was refused",
            r"Unable to connect to the server: (?:" + _GO_DIAL + ")",
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
        went_on_re=_API_ANSWERED,
        fields_re=_K8S_FIELDS,
    ),
    # Go's dial error for any other address: a logger's uploader (wandb-core), a container runtime pulling an image
    # (docker, containerd), an operator's webhook, a metrics push. Where the run trained on past it, it was a side
    # client's failure and no finding (reasoning/setting_refused.WENT_PAST_CODES)
    row(
        "go_dial_failed",
        ("dial tcp", "TLS handshake timeout"),
        _GO_DIAL,
        era="Go programs (net.Dial's OpError, the resolver's DNSError, net/http): container runtimes, loggers' "
        "uploaders, Kubernetes operators and controllers",
        cause="network",
        meaning="A Go program the run depends on could not connect to an address it needs: nothing listens there, "
        "the name does not resolve, or the network between them drops the connection.",
        remedy=(
            "A Go client could not reach {address|the address the line names} ({net_error|no connection}): from the "
            "same host or pod check that the service runs and listens there (nc -zv HOST PORT; curl -v for an "
            "https:// address), that the name resolves (nslookup HOST; 'no such host' is DNS), and that a proxy "
            "(HTTPS_PROXY / NO_PROXY), firewall or egress rule lets it through; under Kubernetes also the service's "
            "endpoints (kubectl get svc,endpoints) and NetworkPolicies."
        ),
        reference="https://pkg.go.dev/net#OpError; https://pkg.go.dev/net#DNSError",
        fields_re=_GO_DIAL,
        went_on_re=_API_ANSWERED + "|" + _PROGRAM_READY,
        confidence="medium",
    ),
)
