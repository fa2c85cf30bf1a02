"""Regenerate analyzers/diagnose/knowledge/nccl_warns.py: every NCCL WARN message class (format string) of the
releases 2.18-2.28, per source file, with the class of cause it reports.

    python scripts/nccl_warn_table.py /path/to/nccl-git-checkout > analyzers/diagnose/knowledge/nccl_warns.py

Reads the tags v2.18.* .. v2.28.* of a local NCCL git repository (git show, no build). A message class
is one WARN(...) format string; the first and last release that print it are kept. The cause class of
each comes from RULES below (what the source file does and what the message says), first match wins;
the table, not this script, is what scope reads at run time.
"""

from __future__ import annotations

import re
import subprocess
import sys

TAGS = re.compile(r"v2\.(18|19|2[0-8])\.\d+-\d+$")
# adjacent string literals, PRIx64-style macros, #stringified and string-valued macro parameters
WARN = re.compile(
    r'\bWARN\(\s*((?:"(?:[^"\\]|\\.)*"\s*|PRI[diuxX]\d+\s*|NCCL_\w+_FMT\s*|#?\s*[A-Za-z_]\w*\s*(?="))+'
    r'(?:"(?:[^"\\]|\\.)*"\s*)?)'
)
PART = re.compile(r'"((?:[^"\\]|\\.)*)"|(PRI[diuxX]\d+)|(NCCL_\w+_FMT|#?\s*[A-Za-z_]\w*)')

# (file regex, message regex, kind, subsystem). kind "info": NCCL recovers (falls back, ignores a setting).
RULES: tuple[tuple[str, str, str, str], ...] = (
    (
        r"",
        r"(?i)ignoring|ignored|continue without|falling back|fallback|disabling|setting it to|limiting|"
        r"cap it|set both|using point-to-point network instead|Skipping|not dumping|Could not find real path",
        "info",
        "recovered",
    ),
    (
        r"",
        r"Got completion from peer|async (?:fatal|error) event|Got async|fatal error \(detected",
        "network_fault",
        "ib",
    ),
    # NCCL PR #605: a receive larger than posted is most often ranks calling different sizes or running with
    # different NCCL_PROTO / NCCL_ALGO (the 2.12+ text says so itself)
    (
        r"",
        r"collective mismatch error|posted incorrect receive info|message truncated",
        "collective_mismatch",
        "desync",
    ),
    (
        r"",
        r"Connection closed by remote peer|Call to recv from|Socket recv failed|socket progress error|"
        r"Could not receive type",
        "network_fault",
        "peer_lost",
    ),
    (
        r"",
        r"(?i)Failed to (?:CUDA )?(?:c|m|host )?alloc|malloc\(size|unable to allocate|out of memory",
        "oom",
        "memory",
    ),
    (
        r"",
        r"(?i)mismatched NCCL version|NCCL version mismatch|wrong version|incompatible version",
        "config_error",
        "version",
    ),
    (
        r"",
        r"(?i)pass NULL|wrong socket state|not ready|unexpected socket state|Internal error|has bugs|"
        r"List loop|Inactive op|Proxy append|already completed|doesn't match any expected|nonexistent|null operation|"
        r"Could not find pool|Couldn't find opId|called when|sendReq\(|wc->opcode|Unknown pattern|Unknown collnet|"
        r"Sendrecv plan|reqSize|respSize|Cannot store sizes|unknown state|already connected|could not find mr|"
        r"not at head|Unknown device code|Unknown command|refcount|Listencomm|Expected graph id|ring %d does|"
        r"tree already|rev link|reverse path|ran out of room|too many|limited to",
        "nccl_error",
        "internal",
    ),
    (
        r"bootstrap\.cc|misc/socket\.cc|net_socket\.cc",
        r"(?i)interface|IFNAME|NCCL_COMM_ID|No valid|address family|"
        r"IP family|getting address info|string is null|same subnet|NTHREADS|NSOCKS",
        "config_error",
        "socket_config",
    ),
    (r"bootstrap\.cc", r"mismatch|already checked in|truncated", "config_error", "bootstrap_config"),
    (r"misc/socket\.cc", r"wrong magic|wrong type", "config_error", "socket_config"),
    (r"bootstrap\.cc|misc/socket\.cc|net_socket\.cc|ipcsocket\.cc", r"", "network_fault", "socket"),
    (
        r"net_ib\.cc|ibvwrap|ibvsymbols|mlx5dv|gdaki",
        r"(?i)incompatible|link_layer|merge|MERGE|virtual|vNic|"
        r"No IP interface|Unable to open|Unable to query|Ip address|FLID|RoceGetVersion|dlvsym|not initialized|"
        r"not found|No network devices|data_direct|Cannot use physical",
        "config_error",
        "ib_config",
    ),
    (r"net_ib\.cc|ibvwrap|ibvsymbols|mlx5dv|gdaki", r"", "network_fault", "ib"),
    (r"shm\.cc|shmutils", r"Invalid argument", "nccl_error", "internal"),
    (r"shm\.cc|shmutils", r"", "config_error", "shm"),
    (r"nvls|register", r"NVLS", "config_error", "nvls"),
    (r"transport/p2p\.cc|transport/net\.cc|register", r"(?i)peer with device|IPC|register|GDR", "config_error", "p2p"),
    (
        r"nvls|mnnvl|dev_runtime|Multicast",
        r"Fabric Manager|IMEX|not supported|not working|none available|"
        r"Multicast support",
        "config_error",
        "nvls",
    ),
    (r"coll_net|transport\.cc|gin", r"", "config_error", "transport_config"),
    (r"net\.cc|plugin|tuner|profiler", r"", "config_error", "plugin"),
    (r"include/checks\.h|cudawrap\.h", r"Cuda failure", "crash", "cuda"),
    (r"cudawrap|nvmlwrap|gdrwrap|strongstream|alloc\.h", r"", "config_error", "driver"),
    (r"include/checks\.h", r"", "nccl_error", "system_call"),
    # NCCL's own search or dictionary failed: the site returns ncclInternalError, a bug a later release fixed
    # (analyzers/diagnose/knowledge/nccl_own_topology.py: NVIDIA/nccl#1748, #326)
    (r"graph/", r"Could not find NET with id|KV Convert to", "nccl_error", "topology"),
    (r"graph/", r"", "config_error", "topology"),
    (
        r"argcheck|group\.cc|enqueue\.cc|init\.cc|allocator|scheduler|register",
        r"(?i)invalid|improper|not initialized|"
        r"Attempt to use|already been destroyed|Duplicate GPU|exceeds ndev|device count|not allowed|Either none or all|"
        r"not in a group|Streams given|FP8|Data type supplied|ncclRedOp|to self|revoked|NULL|not a valid|mismatchs|"
        r"unknown to this|corrupted|NCCL_\w+|not supported|requested|no algorithm|CollNet|MNNVL|CC On|Split|Window|"
        r"symmetric|alignment|not power|does not satisfy|extends beyond|No suitable space",
        "config_error",
        "usage",
    ),
    (r"enqueue\.cc", r"ncclMaxSharedMem", "nccl_error", "version"),
    (r"proxy\.cc", r"Failed to execute operation", "network_fault", "peer_lost"),
    (r"proxy\.cc", r"CUDA (?:context|device)|old driver", "config_error", "driver"),
    (r"ras/", r"", "nccl_error", "ras"),
    (r"", r"", "nccl_error", "internal"),
)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def classify(path: str, fmt: str) -> tuple[str, str]:
    for file_re, msg_re, kind, subsystem in RULES:
        if re.search(file_re, path) and re.search(msg_re, fmt):
            return kind, subsystem
    raise AssertionError("the last rule matches everything")


def extract(repo: str) -> list[dict[str, str]]:
    tags = sorted(
        (t for t in git(repo, "tag").split() if TAGS.match(t)), key=lambda t: [int(x) for x in re.findall(r"\d+", t)]
    )
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for tag in tags:
        for ref in git(repo, "grep", "-l", "WARN(", tag, "--", "src").split():
            path = ref.split(":", 1)[1]
            for m in WARN.finditer(git(repo, "show", ref)):
                fmt = "".join(a if a else ("d" if b else "%s") for a, b, _ in PART.findall(m.group(1)))
                fmt = fmt.replace("\\n", "").replace('\\"', '"').strip()
                if not fmt.strip("%s ") or fmt == "%s":
                    continue
                row = rows.setdefault((path, fmt), {"file": path, "format": fmt, "first": tag, "last": tag})
                row["last"] = tag
    return sorted(rows.values(), key=lambda r: (r["file"], r["format"]))


def main() -> int:
    rows = extract(sys.argv[1])
    print("# ruff: noqa: E501  (generated: one message class per row, as NCCL prints it)")
    print('"""NCCL WARN message classes of releases 2.18-2.28 by source file, with the class of cause each reports.')
    print()
    print("Generated by scripts/nccl_warn_table.py from the NCCL sources (github.com/NVIDIA/nccl, tags v2.18.1-1 ..")
    print("v2.28.9-1); do not edit by hand. Columns: source file, WARN format string, first and last release that")
    print('prints it, finding kind ("info": NCCL recovers and goes on), subsystem."""')
    print()
    print("ROWS: tuple[tuple[str, str, str, str, str, str], ...] = (")
    for r in rows:
        kind, subsystem = classify(r["file"], r["format"])
        vals = (r["file"].removeprefix("src/"), r["format"], r["first"], r["last"], kind, subsystem)
        print("    (" + ", ".join(repr(v) for v in vals) + "),")
    print(")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
