"""`python -m scope.collectors.sidecar`: the sidecar subprocess that `start_sidecar` launches.

Niced to 19 before any thread starts (threads inherit it); stops cleanly on SIGTERM or SIGINT
(flushing its last chunk) and on its own when the parent process is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys

from scope.collectors.sidecar import default_host, default_sources
from scope.collectors.sidecar.sampler import Sampler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scope.collectors.sidecar")
    parser.add_argument("--out", required=True)
    parser.add_argument("--hz", type=float, default=1.0)
    parser.add_argument("--host", default=None)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--chunk-seconds", type=float, default=30.0)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--nvml-replay", default=None)
    parser.add_argument("--ib-root", default=None)
    parser.add_argument("--kmsg-backlog-s", type=float, default=3600.0)
    args = parser.parse_args(argv)
    with contextlib.suppress(OSError, AttributeError):
        os.nice(19)
    sources = default_sources(ib_root=args.ib_root, nvml_replay=args.nvml_replay, kmsg_backlog_s=args.kmsg_backlog_s)
    sampler = Sampler(args.out, args.host or default_host(), sources, args.hz, args.chunk_seconds, args.parent_pid)
    signal.signal(signal.SIGTERM, lambda *_: sampler.request_stop())
    if args.parent_pid is not None:
        # Under a launcher, Ctrl-C reaches the whole process group: keep sampling through the job's
        # shutdown; the launcher stops us (SIGTERM), or we notice it is gone.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, lambda *_: sampler.request_stop())
    sampler.run(args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
