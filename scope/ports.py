"""Whether a TCP port can be listened on, without importing the web stack (the demo asks before its run)."""

from __future__ import annotations

import errno
import socket


def port_taken(host: str, port: int) -> bool:
    """Whether another socket listens on host:port now. Port 0 (any free port) is never taken. The test
    binds as the dashboard's server will (SO_REUSEADDR), so a port whose last connection is only in
    TIME_WAIT counts as free, as it is for the server. Other bind errors (no such address, a privileged
    port) are not "taken": the server reports them itself."""
    if port == 0:
        return False
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False
