"""Classes that the fifteenth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (c10d's C++ logging), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

# c10d's informational lines (TORCH_CPP_LOG_LEVEL=INFO) of a store coming up and its clients connecting, all within
# a few tens of milliseconds: socket.cpp's connect, TCPStore.cpp's server start, the libuv backend's loop.
CONNECT = "[c10d - debug] The client socket will attempt to connect to an IPv6 address of (10.1.2.3, 29400)."


def c10d_info(at: str, where: str, message: str) -> str:
    """One c10d line as torch >= 2.4 prints it: glog's letter and date, the time to the nanosecond, file:line."""
    return f"[I0312 {at} {where}] {message}"


STORE_COMING_UP = (
    "\n".join(
        [
            c10d_info("08:15:02.100200300", "socket.cpp:720", CONNECT),
            c10d_info(
                "08:15:02.110000000", "TCPStore.cpp:312", "[c10d - debug] The server has started on port = 29400."
            ),
            c10d_info("08:15:02.110100000", "TCPStoreLibUvBackend.cpp:1067", "[c10d - debug] Uv main loop running"),
            c10d_info("08:15:02.121000000", "socket.cpp:720", CONNECT),
            c10d_info("08:15:02.134000000", "socket.cpp:720", CONNECT),
            c10d_info("08:15:02.150000000", "socket.cpp:720", CONNECT),
        ]
    )
    + "\n"
)


def test_a_moment_of_informational_c10d_lines_is_no_hang(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, STORE_COMING_UP) == []


def test_the_same_lines_over_a_long_silence_still_stop_in_rendezvous(tmp_path: Path) -> None:
    # the last client connects and nothing follows for minutes: the log shows a wait, not a moment
    stalled = STORE_COMING_UP + c10d_info("08:19:40.000000000", "socket.cpp:720", CONNECT) + "\n"
    top = top_failure(tmp_path, stalled)
    assert top.kind == "hang" and "rendezvous" in top.summary


def test_lines_without_times_still_stop_in_rendezvous(tmp_path: Path) -> None:
    # torch < 2.4's prefix carries no time: how long the log sat after its last line is not shown
    untimed = "\n".join("[I socket.cpp:580] " + ln.split("] ", 1)[1] for ln in STORE_COMING_UP.strip().split("\n"))
    top = top_failure(tmp_path, untimed + "\n")
    assert top.kind == "hang" and "rendezvous" in top.summary
