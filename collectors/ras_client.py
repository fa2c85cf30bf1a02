"""Ask NCCL's RAS service for the job's status, for the hang watchdog; never blocks long, never raises.

NCCL >= 2.24 runs a RAS thread in every process, listening on localhost:28028 (NCCL_RAS_ADDR moves
it; NCCL_RAS_ENABLE=0 switches it off). The `ncclras` client is used when it is on PATH; otherwise we
speak its protocol over TCP (NCCL's src/ras/client.cc): send `CLIENT PROTOCOL 2`, read `SERVER
PROTOCOL <n>`, send `TIMEOUT <s>`, read `OK`, send `STATUS`, then read the text reply until the
server closes the connection. Nothing listening costs one refused connect (or `connect_timeout_s`).
The reply is stored as `hosts/<host>/ras.txt` in the run directory; analyzers/diagnose/readers/ras.py reads it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scope.rundir import host_dir

RAS_PORT = 28028
RAS_PROTOCOL = 2
LEG_TIMEOUT_S = 5  # how long RAS waits for the other processes (NCCL's own default)
QUERY_TIMEOUT_S = 15.0
MAX_REPLY_BYTES = 16 << 20
RAS_FILE = "ras.txt"


@dataclass
class RasReply:
    text: str | None
    via: str  # "ncclras" | "tcp" | ""
    note: str = ""


def ras_address(env: dict[str, str] | None = None) -> tuple[str, int]:
    """NCCL_RAS_ADDR (host:port) if set, else localhost:28028."""
    addr = (env if env is not None else os.environ).get("NCCL_RAS_ADDR", "")
    host, _, port = addr.rpartition(":")
    if host and port.isdigit():
        return host.strip("[]"), int(port)
    return "localhost", RAS_PORT


def query_ras(
    address: tuple[str, int] | None = None,
    timeout_s: float = QUERY_TIMEOUT_S,
    connect_timeout_s: float = 0.5,
    use_client: bool = True,
) -> RasReply:
    """The RAS status text, or None with a note saying why there is none."""
    host, port = address or ras_address()
    client = shutil.which("ncclras") if use_client else None
    if client:
        reply = _via_client(client, host, port, timeout_s)
        if reply.text:
            return reply
    try:
        return RasReply(_via_tcp(host, port, timeout_s, connect_timeout_s), "tcp")
    except (OSError, ValueError) as exc:
        return RasReply(None, "", f"no NCCL RAS reply from {host}:{port} ({type(exc).__name__}: {exc})")


def _via_client(client: str, host: str, port: int, timeout_s: float) -> RasReply:
    cmd = [client, "-h", host, "-p", str(port), "-t", str(LEG_TIMEOUT_S)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return RasReply(None, "ncclras", f"ncclras failed ({type(exc).__name__})")
    if out.returncode != 0 or not out.stdout.strip():
        return RasReply(None, "ncclras", f"ncclras exited {out.returncode}: {out.stderr.strip()[:200]}")
    return RasReply(out.stdout, "ncclras")


def _via_tcp(host: str, port: int, timeout_s: float, connect_timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    with socket.create_connection((host, port), timeout=connect_timeout_s) as sock:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        reader = sock.makefile("rb")
        sock.sendall(f"CLIENT PROTOCOL {RAS_PROTOCOL}\n".encode())
        hello = reader.readline(4096).decode(errors="replace")
        if not hello.upper().startswith("SERVER PROTOCOL"):
            raise ValueError(f"not an NCCL RAS server (said {hello.strip()[:80]!r})")
        sock.sendall(f"TIMEOUT {LEG_TIMEOUT_S}\n".encode())
        ok = reader.readline(4096).decode(errors="replace")
        if ok.strip().upper() != "OK":
            raise ValueError(f"NCCL RAS refused the timeout (said {ok.strip()[:80]!r})")
        sock.sendall(b"STATUS\n")
        chunks: list[bytes] = []
        size = 0
        while size < MAX_REPLY_BYTES:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            chunk = reader.read1(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if not text.strip():
        raise ValueError("NCCL RAS closed the connection without a status")
    return text


class RasQuery(threading.Thread):
    """Runs query_ras on its own thread so the watchdog's dump collection goes on meanwhile."""

    def __init__(self, run_dir: Path, host: str, **kwargs: Any) -> None:
        super().__init__(name="scope-ras-query", daemon=True)
        self.run_dir, self.host, self.kwargs = Path(run_dir), host, kwargs
        self.outcome: dict[str, Any] = {"status": "pending"}

    def run(self) -> None:
        try:
            reply = query_ras(**self.kwargs)
            if reply.text is None:
                self.outcome = {"status": "absent", "note": reply.note}
                return
            path = host_dir(self.run_dir, self.host) / RAS_FILE
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{RAS_FILE}.tmp")
            try:
                tmp.write_text(reply.text)
                os.replace(tmp, path)
            except OSError:  # a full disk: no partial file stays behind
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise
            self.outcome = {"status": "ok", "via": reply.via, "file": str(path.relative_to(self.run_dir))}
        except Exception as exc:  # the watchdog must never fail because of RAS
            self.outcome = {"status": "error", "note": f"{type(exc).__name__}: {exc}"}

    def result(self, wait_s: float) -> dict[str, Any]:
        self.join(timeout=max(0.0, wait_s))
        return dict(self.outcome)
