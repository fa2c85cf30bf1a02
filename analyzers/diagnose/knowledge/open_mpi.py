"""Signature rows: Open MPI's runtime (ORTE in 1.x-4.x, PRRTE / PMIx in 5.x) starting and wiring up a job.

mpirun starts a daemon on every host (over ssh or the scheduler), the daemons connect back over TCP (the OOB),
and the ranks then open their own TCP connections (the TCP BTL). Each step has its own help text, printed
between dashed lines; the rows read its first line. The fixes are mpirun's own options (docs.open-mpi.org,
mpirun(1)): --mca oob_tcp_if_include / btl_tcp_if_include IFACE pins the interfaces, -x VAR exports a variable
of mpirun's environment to the ranks on other hosts, --prefix / PATH reach the Open MPI install there. Open MPI's
not-enough-slots text is launch_shape.py's; its signal handler's block is readers/nccl.py's (_ompi_signal).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

OMPI = "https://github.com/open-mpi/ompi/blob/v4.1.x/"
PRRTE = "https://github.com/openpmix/prrte/blob/master/"
MPIRUN = "https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html"

# The interfaces to pin, as the threads that fixed these errors did: the one the hosts reach each other on,
# never docker0 / virbr0 / lo, whose addresses repeat on every host (open-mpi/ompi#6377, #4963).
PIN_INTERFACES = (
    "pin Open MPI to the interface the hosts reach each other on: mpirun --mca oob_tcp_if_include IFACE --mca "
    "btl_tcp_if_include IFACE (eth0 in Kubernetes pods; a subnet such as 10.0.0.0/24 works too), or leave out "
    "the virtual ones (--mca btl_tcp_if_exclude lo,docker0,virbr0); give NCCL the same one (-x "
    "NCCL_SOCKET_IFNAME=IFACE)"
)

OPEN_MPI_SIGNATURES: tuple[Signature, ...] = (
    # ORTE orte/mca/oob/tcp/oob_tcp_connection.c, PRRTE src/mca/oob/tcp/oob_tcp_connection.c: a daemon's (or
    # mpirun's) OOB connection to another host failed; its text blames a firewall, the threads an interface that
    # does not route between the hosts (a second NIC, docker0, a pod network)
    row(
        "ompi_tcp_connect_failed",
        "unable to complete a TCP connection",
        r"A process or daemon was unable to complete a TCP connection",
        era="Open MPI 1.8 onwards (ORTE oob/tcp), PRRTE (Open MPI 5)",
        cause="network",
        meaning="Open MPI's daemons could not open a TCP connection from one host to another while starting the "
        "job (its out-of-band wire-up): a firewall between them, or an interface address the other host cannot "
        "reach.",
        remedy=(
            "Open the TCP ports between the hosts (iptables / firewalld, the cloud security group, a Kubernetes "
            "NetworkPolicy or service-mesh sidecar), and " + PIN_INTERFACES + "."
        ),
        reference=OMPI + "orte/mca/oob/tcp/oob_tcp_connection.c; " + PRRTE + "src/mca/oob/tcp/oob_tcp_connection.c; "
        "https://github.com/open-mpi/ompi/issues/6377; https://github.com/open-mpi/ompi/issues/4963",
    ),
    # orte/mca/plm/base/help-plm-base.txt ('ORTE was unable to reliably start one or more daemons.'), PRRTE's
    # 'PRTE was unable to ...': its causes are listed in the help text itself
    row(
        "ompi_daemons_not_started",
        "unable to reliably start one or more daemons",
        r"(?:ORTE|PRTE|PRRTE) was unable to reliably start one or more daemons",
        era="Open MPI 1.x-4.x (ORTE), 5.x (PRRTE)",
        cause="configuration",
        meaning="mpirun could not start its daemon (orted / prted) on one or more hosts: ssh to the host failed, "
        "or the daemon did not find Open MPI's binaries and libraries there, or could not call back.",
        remedy=(
            "Check from the launching host that 'ssh HOST orted --version' works without a password prompt for every "
            "host; install Open MPI at the same path on every host and point mpirun at it (mpirun --prefix "
            "/path/to/openmpi, or PATH / LD_LIBRARY_PATH set in ~/.bashrc, which non-interactive ssh reads); "
            "if ssh works, the daemons' call-back is the next suspect: " + PIN_INTERFACES + "."
        ),
        reference=OMPI + "orte/mca/plm/base/help-plm-base.txt; " + MPIRUN,
    ),
    # opal/mca/btl/tcp/btl_tcp_endpoint.c (mca_btl_tcp_endpoint_recv_connect_ack): a rank's TCP connection
    # reached another process than the one it dialled, as happens when every host has the same address on a
    # virtual interface (docker0, virbr0) or several interfaces; fixed by btl_tcp_if_include in
    # jbornschein/mpi4py-examples#12 and open-mpi/ompi#9858's thread
    row(
        "ompi_unexpected_process_identifier",
        "received unexpected process identifier",
        r"received unexpected process identifier",
        era="Open MPI, TCP BTL (btl_tcp_endpoint.c), all releases",
        cause="configuration",
        meaning="A rank's TCP connection reached a different process than the one it meant to: the hosts share "
        "an address on a virtual or secondary interface (docker0, virbr0, a second NIC), so Open MPI's TCP "
        "transport dials the wrong host.",
        remedy="Restrict the interfaces Open MPI's TCP transport uses: " + PIN_INTERFACES + ".",
        reference=OMPI + "opal/mca/btl/tcp/btl_tcp_endpoint.c; https://github.com/jbornschein/mpi4py-examples/"
        "issues/12; https://github.com/open-mpi/ompi/issues/9858",
    ),
    # orte/mca/odls help text: the program (or python / the script) is not on the remote host's PATH or not
    # executable there
    row(
        "ompi_cannot_launch_executable",
        "unable to launch the specified application",
        r"(?:mpirun|mpiexec|prterun) was unable to launch the specified application",
        era="Open MPI 1.x onwards (mpirun's launch help text)",
        cause="configuration",
        meaning="mpirun could not start the program on a host: the executable (or the interpreter) is not at "
        "that path there, not executable, or not on the PATH the remote daemon sees.",
        remedy=(
            "Make the program exist at the same path on every host (a shared filesystem or the same image), "
            "executable (chmod +x), and give its full path or export the PATH and the Python environment to the "
            "remote ranks (mpirun -x PATH -x LD_LIBRARY_PATH, or activate the environment in ~/.bashrc)."
        ),
        reference=OMPI + "orte/mca/odls/base/help-orte-odls-base.txt; " + MPIRUN,
    ),
)
