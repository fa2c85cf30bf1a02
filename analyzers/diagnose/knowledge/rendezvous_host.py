"""Signature rows for torchrun's rendezvous store that no node hosts, or that the clients reach under another name
than the one typed. Same fields as knowledge/signatures.py; signatures.py splices them in before store_connect_failed
(the generic MASTER_ADDR advice), which keeps every store connect failure these do not read.

With --rdzv_backend c10d the elastic agent of every node calls _create_tcp_store
(torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py): it hosts the TCPStore only where the rdzv_conf
option is_host says so or, unset, where _matches_machine_hostname(host) finds --rdzv_endpoint's host to be this
machine (its hostname, FQDN or one of its addresses); every other node is a client. The backend's own docstring
names when the guess fails: 'the rendezvous endpoint has a CNAME as the hostname or does not match the FQDN of the
machine' (pytorch/pytorch#79388: a Kubernetes Service address). Then no node hosts it and every client times out
in TCPStore's connect (torch/csrc/distributed/c10d/socket.cpp: 'The client socket has timed out after ... while
trying to connect to (HOST, PORT)').

socket.cpp prints each address it tried as getnameinfo() turns it back into a name ('[HOST]:PORT'): where the
endpoint was typed as an IP and the line names a host, the resolver maps that IP to a name (/etc/hosts, DNS), and
the address behind it did not answer (pytorch/pytorch#85300: an /etc/hosts entry, 'No route to host').
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py"
# TCPStore's client giving up (socket.cpp), not on errno 97 / 99 (an address family this host lacks: another row)
_CLIENT_GAVE_UP = (
    r"client socket has (?:failed to connect to|timed out after \S+ while trying to connect to)"
    r"(?![^\n]*errno: 9[79]\b)"
)
# the host and port the client tried: '(HOST, PORT)', '[HOST]:PORT', 'HOST:PORT'
_TRIED = r"connect to (?:any network address of )?[\[(]?(?P<store_host>[\w.:-]+?)\]?(?:, |:)(?P<store_port>\d+)"
# the launch used the c10d rendezvous: torchrun's command line or the elastic agent's printed launch configs
_C10D_BACKEND = r"rdzv[_-]backend[\s:=]{1,16}c10d\b"
# the rendezvous done after the failing connect (the elastic agent's 'Rendezvous complete for workers', a node
# joined, NCCL's communicator ready, a training step): a retried connect, no failure
# (reasoning/setting_refused.WENT_PAST_CODES)
_RDZV_WENT_ON = (
    r"Rendezvous complete|\bjoined\b[^\n]*\brendezvous\b|\bInit COMPLETE\b|"
    r"^[^\w\[\n]*(?:\[[^\]\n]*\]:?\s*)*(?i:(?:global[ _])?(?:step|iter(?:ation)?|epoch))\b\s*[:=#]?\s*\d"
)
# The nearest of these before the failing connect: the c10d backend named (the rendezvous under way), or the
# rendezvous already complete, when the failing store is the workers' own (MASTER_ADDR:MASTER_PORT that the
# rendezvous handed out, init_process_group's): store_connect_failed's generic advice, not this row's
_C10D_OR_DONE = _C10D_BACKEND + r"|Rendezvous complete"
# the endpoint typed as an IPv4 address (torchrun's command line or its launch configs)
IP_ENDPOINT = r"(?:rdzv[_-]endpoint|master[_-]addr)[\s:=]{1,16}(?P<typed_ip>\d{1,3}(?:\.\d{1,3}){3})\b"

RENDEZVOUS_HOST_SIGNATURES: tuple[Signature, ...] = (
    row(
        "store_endpoint_ip_renamed",
        ("failed to connect to",),
        # socket.cpp's per-address line naming a host (a letter first: not an address) for an endpoint typed as an IP
        # whatever the errno (110 timed out, 111 refused by a host the name maps to, 113 / 101 no route): a retry that
        # then reached node 0 is told by went_on_re (the rendezvous completed), not by the errno
        r"client socket has failed to connect to \[?(?P<store_host>[A-Za-z][\w.-]*)\]?:\d+",
        era="torch >= 1.12 c10d TCPStore client (socket.cpp names each address tried, resolved back to a name)",
        cause="configuration",
        meaning="The rendezvous endpoint was given as an IP address, but the store client's line names a host: "
        "the resolver maps that address to a name (/etc/hosts, DNS), and the address behind it did not answer "
        "from this node.",
        remedy=(
            "The endpoint was typed as {typed_ip|an IP}, and the client reached it as {store_host|a host name}: "
            "check what each resolves to on this node (getent hosts {store_host|NAME}; getent hosts "
            "{typed_ip|IP}) and fix or remove the /etc/hosts (or DNS) entry that maps the address to a name that "
            "leads elsewhere; then check that the store's node started first and is reachable at {typed_ip|that "
            "address} from here (route, firewall, the port open; ranks in containers: host networking)."
        ),
        reference="https://github.com/pytorch/pytorch/issues/85300; "
        "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/socket.cpp",
        confidence="medium",
        context_re=IP_ENDPOINT,
        context_needed=True,
        fields_re=r"connect to \[?(?P<store_host>[A-Za-z][\w.-]*)\]?:\d+",
        went_on_re=_RDZV_WENT_ON,
        severity="warning",  # as the row below: node 0's own error outranks a client's
    ),
    row(
        "c10d_rendezvous_store_unhosted",
        ("failed to connect to", "while trying to connect to"),
        _CLIENT_GAVE_UP,
        era="torchrun / torch.distributed.run >= 1.9 with --rdzv_backend c10d (the elastic agent's TCPStore)",
        cause="configuration",
        meaning="A node's elastic agent could not reach the c10d rendezvous store: only the node that recognises "
        "--rdzv_endpoint's host as itself hosts it, so where none does (an alias, a Service or load-balancer "
        "name) every node is a client and all time out; or the endpoint is unreachable from this node.",
        remedy=(
            "With --rdzv_backend c10d only the node whose own host name or address is --rdzv_endpoint's host "
            "starts the rendezvous store (torch.distributed.elastic's _matches_machine_hostname); the others "
            "connect to it, here to {store_host|the endpoint} port {store_port|PORT}. Where no node recognises "
            "the endpoint as itself (a DNS alias or CNAME, a Kubernetes Service or load-balancer name, an address "
            "on no local interface) none hosts it and every node times out: set --rdzv_endpoint to node 0's own "
            "name (hostname -f) or one of its addresses (hostname -I), or tell node 0 it hosts the store with "
            "--rdzv_conf is_host=1 (is_host=0 on the others; torch releases whose c10d backend reads is_host). "
            "Check that the name resolves to node 0 on every node (getent hosts {store_host|HOST}; /etc/hosts), "
            "that node 0's launcher started, and that the port is open between the nodes."
        ),
        reference=PT + "; https://github.com/pytorch/pytorch/issues/79388",
        confidence="medium",
        context_re=_C10D_OR_DONE,
        context_needed=True,
        context_requires=_C10D_BACKEND,
        fields_re=_TRIED,
        went_on_re=_RDZV_WENT_ON,
        # a client's timeout is also the echo of node 0's launcher that died (a traceback there): that outranks it;
        # the agent's exception lines after it are its echo (reasoning/rendezvous_echo.py)
        severity="warning",
    ),
)
