"""The words of a finding: a summary that names cause, rank and host, and a fix someone can apply at 3 a.m."""

from __future__ import annotations

import re
from typing import Any

from scope.analyzers.diagnose.knowledge.native_libraries import NET_PLUGIN
from scope.analyzers.diagnose.knowledge.raising_frames import raised_in
from scope.analyzers.diagnose.knowledge.remedies import (
    LARGER_SHM,
    NCCL_BUILD_FOR_CUDA,
    NCCL_CHAIN_IN_NETWORK,
    NCCL_DEBUG_RERUN,
    NCCL_RESULT_FIXES,
    NET_PLUGIN_CRASH,
    PEERMEM,
    TIMEOUT_KNOBS,
    WATCHDOG_USUAL_CAUSES,
)
from scope.analyzers.diagnose.knowledge.xid import xid_info
from scope.analyzers.diagnose.model import Anomaly
from scope.analyzers.diagnose.readers.signature_scan import fill_remedy
from scope.analyzers.diagnose.reasoning.rootcause import Incident
from scope.analyzers.diagnose.words.nccl_internal import internal_error_advice
from scope.analyzers.diagnose.words.summaries import cap as _cap
from scope.analyzers.diagnose.words.summaries import summary, who

__all__ = ["suggestion", "summary", "who"]


# The rule every collective-mismatch finding states (Flight Recorder, gloo/torch size checks, NCCL's COLL lines).
SAME_COLLECTIVES = "every rank must issue the same collectives in the same order"

FIXES: dict[str, str] = {
    "fr_not_joined": (
        "Look at what {r} did instead of joining: stack dumps (py-spy dump --pid, or stacks/ in the "
        "run directory) and logs around that time; a rank that never enqueues a collective is stuck "
        "in host code (a lock, the GIL, I/O, the data loader) or took another code path."
    ),
    "fr_gpu_stalled": (
        "Check the GPU of {r}: kernel log for Xid errors (dmesg), nvidia-smi -q; a GPU that stops "
        "completing kernels is faulted or runs a kernel that never ends. Drain it if an Xid shows."
    ),
    "fr_missing_dump": (
        "Read {r}'s stderr and exit status and its host's kernel log (OOM killer, Xid): it died "
        "before dumping. Set TORCH_FR_DUMP_TEMP_FILE to a shared path so every rank dumps."
    ),
    "fr_mismatch": (
        f"E{SAME_COLLECTIVES[1:]} with the same shapes: look for a "
        "rank-dependent branch or a data-dependent shape before this call on {r} "
        "(TORCH_DISTRIBUTED_DEBUG=DETAIL reports the mismatch at the call site)."
    ),
    "c10d_desync": (
        f"Ranks are at different collectives: {SAME_COLLECTIVES}; "
        "find the rank-dependent branch that skips or adds a collective (TORCH_DISTRIBUTED_DEBUG=DETAIL; Flight "
        "Recorder dumps with TORCH_FR_BUFFER_SIZE=2000)."
    ),
    "collective_mismatch_detected": (
        f"Ranks called collectives with different sizes or types: {SAME_COLLECTIVES} with the same shapes; "
        "look for a rank-dependent shape or set of keys (metrics "
        "logged with sync_dist, a dict reduced per rank) (TORCH_DISTRIBUTED_DEBUG=DETAIL names the call)."
    ),
    # NCCL's own INFO COLL lines (NCCL_DEBUG_SUBSYS=COLL) showing one rank's first call with other arguments
    # (NVIDIA/nccl#147: a Broadcast of another count and dtype on rank 0)
    "info_collective_mismatch": (
        "{r} called this collective with another count or dtype than its peers: "
        f"{SAME_COLLECTIVES} with the same count and dtype; look for a rank-dependent branch, a "
        "data-dependent shape, or a model or buffer built differently on {r} (TORCH_DISTRIBUTED_DEBUG=DETAIL "
        "names the call)."
    ),
    "hang_suspects": (
        "Dump the stack of {r} (py-spy dump --pid PID) and read its log: it is blocked outside the "
        "collective (data loading, I/O, a lock, an infinite loop) or took another code path."
    ),
    "c10d_heartbeat_monitor": (
        "Run py-spy dump --native on the stuck rank: look for a thread holding the GIL inside a "
        "CUDA call or a hung NCCL kernel; check its host for Xid errors. "
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only changes when it is reported."
    ),
    # The search first, then the specific check the log can point to (across nodes, an environment that differs:
    # ecmwf/WeatherGenerator#360, rebuilt identically on every node), then the class's usual causes (one rank's own
    # work, uneven batches): words/endings.explain_timeout leads with the work where the log shows it.
    "c10d_watchdog_timeout": (
        "Find the rank that never reached this collective: enable the Flight Recorder (TORCH_FR_BUFFER_SIZE=2000, "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1) and run scope diagnose on the dumps; compare 'last enqueued' across ranks; "
        "check for a rank stuck in I/O; across nodes, check that every node runs the same torch and NCCL versions "
        "(one environment, built identically). " + WATCHDOG_USUAL_CAUSES
    ),
    "gloo_timeout": (
        "A peer never sent or received its part: find the rank without a timeout (it is the one "
        "missing) and dump its stack; raise the process-group timeout only if that rank is just slow ("
        + TIMEOUT_KNOBS
        + ")."
    ),
    "host_oom_kill": (
        "The host ran out of memory: reduce host memory per rank (data-loader workers, pinned "
        "memory, CPU offload) or raise the container/cgroup memory limit."
    ),
    "nan_inf": (
        "Training diverged: lower the learning rate, clip gradients, check the input batch, use bf16 or "
        "loss scaling with fp16; torch.autograd.set_detect_anomaly(True) finds the first bad op."
    ),
    "python_exception": (
        "Fix the exception raised on {r} (traceback in the evidence); the errors on the other ranks are its cascade."
    ),
    "gpu_application_fault": (
        "Debug the job, not the GPU: rerun with CUDA_LAUNCH_BLOCKING=1 or under "
        "compute-sanitizer, and check that NCCL, CUDA and the driver versions match; do "
        "not drain the node for this."
    ),
    "nccl_socket_connect": (
        "Make the hosts reach each other on the interface NCCL uses: set NCCL_SOCKET_IFNAME to "
        "the routable NIC, open the ports in firewalls/security groups, and check MASTER_ADDR. 'Connection "
        "refused' from one address: nothing listens there, because that host's process died or never started or "
        "its network is broken: name the host (getent hosts <address>), read its own log and NIC state, and "
        "leave it out of the next job (sbatch --exclude=<node>) until it is fixed."
    ),
    # the /dev/shm class in its threads' order (LianjiaTech/BELLE#136: --ipc=host or --shm-size;
    # msr-fiddle/pipedream#76: --shm-size; NCCL's troubleshooting guide: --shm-size=1g --ulimit memlock=-1)
    "nccl_crash_signal": (
        "A bus error inside NCCL is almost always a too small /dev/shm in the container. "
        + LARGER_SHM
        + "; NCCL's troubleshooting guide runs containers with --shm-size=1g --ulimit memlock=-1. NCCL_SHM_DISABLE=1 "
        "confirms it (and works around it at some cost); a segfault inside NCCL calls for matching "
        "NCCL/CUDA/driver versions."
    ),
    "nccl_system_error": (
        f"{NCCL_DEBUG_RERUN} to see the failing system call; "
        "check the network interfaces (NCCL_SOCKET_IFNAME) and ulimits; between containers on different hosts, "
        "run them with --network=host (a bridge network's addresses are not reachable from the other host) and "
        "--ipc=host or a larger --shm-size."
    ),
    # ncclInternalError: words/nccl_internal.py chooses its advice by what else the incident shows
    "nccl_warn": "Rerun with NCCL_DEBUG=INFO to see the context of the warning.",
    # the failing node's checks first (vllm-project/vllm#7896: one node removed; pytorch/pytorch#152077, #130414,
    # NVIDIA/nccl#976, #1338: fabric manager, NVLS, an old NCCL for a new GPU), the build for another CUDA after
    # (first only where the log shows two CUDA versions: _cuda_error_advice)
    "nccl_cuda_error": (
        "A CUDA call failed inside NCCL (ncclUnhandledCudaError): rerun with NCCL_DEBUG=INFO to see the 'Cuda "
        "failure' WARN that names the CUDA error. Check each node's GPUs (Xid in dmesg, nvidia-smi -q, dcgmi diag "
        "-r 1) and memory headroom. When it fails on one node of a cluster only, exclude or drain that node and "
        "have its GPU checked. Where the CUDA versions differ (the framework's build, the NCCL package, the "
        "driver's): " + NCCL_BUILD_FOR_CUDA[0].lower() + NCCL_BUILD_FOR_CUDA[1:] + "."
    ),
    "nccl_invalid_usage": (
        "Fix the NCCL usage: one GPU per rank (torch.cuda.set_device(local_rank) before "
        "init_process_group; with a GPU list other than 0..N-1, CUDA_VISIBLE_DEVICES=<that list> so local rank i "
        "is GPU i, as Lightning-AI/pytorch-lightning#8139's workaround), the same collectives and dtypes on every "
        "rank."
    ),
    "rendezvous_error": (
        "The ranks did not all meet: check MASTER_ADDR/MASTER_PORT (port already in use?), that "
        "every node started, and the rendezvous timeout."
    ),
    "child_exit": ("{sig_advice}"),
    "peer_lost": (
        "Find the peer that went away (its own stderr or exit status): this rank only saw it vanish. If no peer "
        "failed on its own, the network dropped it: check the fabric between the hosts (ibstat, ib_write_bw; "
        "NCCL_IB_DISABLE=1 as a test where the nodes have no working InfiniBand), NCCL_SOCKET_IFNAME, and exclude "
        "a node whose links fail."
    ),
    "peer_exited_same_host": (
        "Find the local process that went away first: its own stderr and exit status (a segfault, SIGBUS, an OOM "
        "kill: dmesg -T | grep -i -e segfault -e 'Killed process'); this rank's errors are its cascade, not a "
        "network fault."
    ),
    "timeout_silent_rank": (
        "{r} printed nothing while its peers waited in the collective: if it was busy with long work of its own "
        "(pre-processing a dataset on one rank under main_process_first, saving a checkpoint), raise the "
        f"process-group timeout ({TIMEOUT_KNOBS}) or do that work once before the job "
        "and cache it; otherwise dump its stack (py-spy dump --pid) to see where it is stuck."
    ),
    "nvidia_peermem": (
        f"If GPUDirect RDMA transfers fail, {PEERMEM}; after an unclean process exit these lines are usually harmless."
    ),
}


# A segfault (not a bus error) inside NCCL: an NCCL bug or a mismatch, found by the subsystem it died in.
NCCL_SEGFAULT = (
    "A segfault inside NCCL is an NCCL bug or a library mismatch, not a /dev/shm problem: note the NCCL version "
    "and the backtrace's functions, move to a newer NCCL release (or back to the last one that worked), and turn "
    "off the subsystem the backtrace or the last INFO lines name as a test (NCCL_RAS_ENABLE=0 for ras*, "
    "NCCL_NVLS_ENABLE=0 for nvls*, NCCL_IB_GID_INDEX set explicitly / NCCL_IB_DISABLE=1 for net_ib*); check that "
    "NCCL, CUDA and the driver match."
)


def suggestion(inc: Incident, first: Anomaly, ranks: list[int], hosts: list[str]) -> str:
    remedies = signature_remedies(inc)
    if first.details.get("signature"):
        return _cap(" ".join(remedies))
    base = _cap(_suggestion(inc, first, ranks, hosts))
    if base.startswith(GENERIC) and remedies:
        return _cap(" ".join(remedies))  # the remedy of the cause says more than the generic reading advice
    return " ".join([base, *(r for r in remedies if r not in base)])


GENERIC = "Read the evidence lines in order"

# Two CUDA versions in one log (a CUDA build against an older driver, a wheel for another CUDA): the build-for-CUDA
# advice goes first (NVIDIA/caffe#492: 'CUDA version: 8000' under 'CUDA driver version: 9000').
_CUDA_MISMATCH = re.compile(r"(?i)driver version is insufficient|CUDA driver version|built (?:with|for) CUDA")


def signature_remedies(inc: Incident) -> list[str]:
    """The remedy of every signature that fired in the incident (and the incidents merged into it), in order."""
    found = [a for a in sorted(inc.anomalies, key=lambda a: a.sort_key()) if a.details.get("remedy")]
    found += [a for m in inc.merged for a in m.anomalies if a.details.get("remedy")]
    # Two lines of one message (DDP's "Expected to have finished reduction" and its "Parameter indices which did
    # not receive grad" line) fill one template, once with the fields the second line states: the fuller reading
    # stands for both, where the first one came. Readings of one row that state different values (two peers, two
    # hosts) or an NCCL chain's different codes are each said.
    said: list[tuple[str, str, dict[str, str] | None]] = []  # (signature, text, filled slots)
    for a in found:
        one_code = _one_code(a)
        text = one_code or str(a.details["remedy"])
        signature = str(a.details.get("signature") or "")
        slots = None if one_code else a.details.get("_remedy_slots")
        for i, (other_signature, other_text, other_slots) in enumerate(said):
            if text == other_text:
                break
            if signature and signature == other_signature and slots is not None and other_slots is not None:
                if slots.items() <= other_slots.items():
                    break
                if other_slots.items() <= slots.items():
                    said[i] = (signature, text, slots)
                    break
        else:
            said.append((signature, text, slots))
    return [text for _, text, _ in said]


_NETWORK_CHAIN = re.compile(r"socket\.cc|net_socket|net_ib|\bnet\.cc|\bnet\.h")


def _one_code(a: Anomaly) -> str | None:
    """An NCCL error-return chain that names its code: that code's clause alone, not the six codes' table."""
    code = str(a.details.get("nccl_result") or "")
    if a.details.get("signature") != "nccl_error_return" or code not in NCCL_RESULT_FIXES:
        return None
    name, fix = NCCL_RESULT_FIXES[code]
    if _NETWORK_CHAIN.search(a.message) and code in ("2", "3", "6"):
        fix = NCCL_CHAIN_IN_NETWORK
    return f"{NCCL_DEBUG_RERUN} to see the WARN line that opens the chain. Code {code} ({name}): {fix}."


def _suggestion(inc: Incident, first: Anomaly, ranks: list[int], hosts: list[str]) -> str:
    d: dict[str, Any] = first.details
    code = inc.code
    r = who(ranks, hosts) or "the rank"
    if code == "fr_not_joined" and d.get("gpu_stalled"):
        st = d["gpu_stalled"]
        return (
            f"{_cap(r)} also stopped completing GPU work (done through #{st['completed']} on PG {st['pg']} while "
            f"peers finished #{st['peers_completed']}): check its host's kernel log for Xid errors and the GPU's "
            f"health (nvidia-smi -q), and drain it if it is faulted. " + FIXES["fr_not_joined"].format(r=r)
        )
    if code == "xid" or (first.code == "xid" and code not in FIXES):
        return str(d.get("action") or xid_info(int(d.get("xid", 0))).action)
    if code == "nccl_ib_completion_error":
        return _ib_advice(d)
    if code == "nccl_crash_signal" and not d.get("bus_error"):
        return NET_PLUGIN_CRASH if d.get("library") == NET_PLUGIN else NCCL_SEGFAULT
    if code == "child_exit" and d.get("exitcode") == 1:
        return OWN_ERROR_EXIT.format(code=1)
    if code == "child_exit" and _own_error_exit(d.get("exitcode")):
        return OWN_EXIT_STATUS.format(code=d["exitcode"])
    if code == "child_exit":
        # a signal's meaning and checks are added from knowledge/signals.py (words/endings.py)
        return (
            "Read the rank's stderr (ranks/<r>/stderr.log) for the error "
            "that made it exit; run it with faulthandler enabled to get a stack on a crash."
        )
    if code == "python_exception" and d.get("frames"):
        # the traceback's frames name the component that raised it: its remedy, not "fix the exception"
        component = raised_in(list(d["frames"]), first.message)
        if component:
            return fill_remedy(*component)
    if code == "nccl_socket_connect" and d.get("peer"):
        return _socket_advice(str(d["peer"]), str(d.get("reason") or ""))
    if code == "collective_mismatch_detected" and d.get("op"):
        ops = list(dict.fromkeys(_call_of(str(op)) for _, op, _ in d.get("rank_ops") or []))
        if len(ops) > 1:  # different operations, not different sizes of one
            return _what_each_rank_ran(d) + FIXES["collective_mismatch_detected"].replace(
                "collectives with different sizes or types", f"different collectives ({' vs '.join(ops)})", 1
            )
        return _what_each_rank_ran(d) + _mismatch_advice(str(d["op"]))
    if code == "nccl_cuda_error" and _CUDA_MISMATCH.search(" ".join(a.message for a in inc.anomalies)):
        return f"{NCCL_BUILD_FOR_CUDA}: this log shows two CUDA versions. " + FIXES[code]
    if code == "nccl_system_error" and d.get("nccl_result") == "internal":
        return internal_error_advice(inc, FIXES["nccl_system_error"])
    if code in FIXES:
        return FIXES[code].format(r=r, sig_advice="")
    if d.get("action"):
        return str(d["action"])
    return "Read the evidence lines in order; the first is the cause, the rest its consequences."


# A worker that exited with a small positive status ended on its own error (Python exits with 1 on an uncaught
# exception); torchrun's report then says 'error_file: <N/A>' and points at its errors page, whose documented fix
# is the @record decorator (pytorch.org/docs/stable/elastic/errors.html). 128+N is a signal (knowledge/signals.py).
OWN_ERROR_EXIT = (
    "Exit code {code} is the rank's own error (an uncaught Python exception exits with 1): its traceback is in "
    "that rank's output before the launcher's summary (or its own log file). To have the launcher's report carry "
    "it (error_file, not <N/A>), decorate the script's entry point with @record (from "
    "torch.distributed.elastic.multiprocessing.errors import record). Where the output holds no traceback, run "
    "the command on one process to see it."
)


# Any other small status is the program's own choice, with no traceback to find: sys.exit(N) (torch's @record
# re-raises a non-zero SystemExit without an error file), argparse's 2, the shell's 126/127.
OWN_EXIT_STATUS = (
    "Exit code {code} is a status the rank's program chose, not an uncaught exception (that exits with 1): a "
    "sys.exit({code}) / exit({code}) in the script or a library it calls (argparse exits with 2 on bad arguments, "
    "python with 2 on a script it cannot open; the shell with 126 / 127 for a command not executable / not "
    "found). Read that rank's last output lines before the launcher's summary, and search the code for the "
    "exit call."
)


def _own_error_exit(code: object) -> bool:
    return isinstance(code, int) and 0 < code < 128


# The torch function of a c10d OpType, as the program calls it.
_OP_CALLS = {
    "ALLGATHER": "all_gather",
    "_ALLGATHER_BASE": "all_gather_into_tensor",
    "ALLREDUCE": "all_reduce",
    "BROADCAST": "broadcast",
    "REDUCE_SCATTER": "reduce_scatter",
    "_REDUCE_SCATTER_BASE": "reduce_scatter_tensor",
    "GATHER": "gather",
    "SCATTER": "scatter",
    "ALLTOALL": "all_to_all",
    "ALLTOALL_BASE": "all_to_all_single",
}


def _call_of(op: str) -> str:
    return _OP_CALLS.get(op.upper(), op.lower())


def _what_each_rank_ran(d: dict[str, Any]) -> str:
    """The calls torch's fingerprints name, rank by rank ('Rank 0 called all_reduce([20, 10]) where rank 1
    called reduce([20, 10]).'): the operation to look for in the code, as the message names it."""
    ran = [(int(r), _call_of(str(op)), str(shape)) for r, op, shape in d.get("rank_ops") or []]
    if len(ran) < 2:
        return ""
    (r0, c0, s0), (r1, c1, s1) = ran[0], ran[1]
    shapes = d.get("shapes") or []
    if c0 == c1 and not s0 and len(shapes) == 2:
        s0, s1 = f"[{shapes[0].strip('[]')}]", f"[{shapes[1].strip('[]')}]"
    first = f"{c0}({s0.strip('[]')})" if s0 else c0
    other = f"{c1}({s1.strip('[]')})" if s1 else c1
    return f"Rank {r0} called {first} where rank {r1} called {other}. "


def _mismatch_advice(op: str) -> str:
    """The fingerprint names the op the ranks disagree on: name it, and for the gathers (per-rank data) the fix
    their threads confirmed - the same shape on every rank (xljh0520/JOTR#4: pad / fix the dataset, no samples
    dropped per rank; pytorch/pytorch#97066 (a PR): the same size and dtype on every rank)."""
    call = _call_of(op)
    fix = FIXES["collective_mismatch_detected"].replace("collectives with different", f"{call} with different", 1)
    if "gather" in call or "all_to_all" in call:
        fix += (
            f" Per-rank data passed to {call} must have the same shape on every rank: pad each rank's tensor to the "
            "largest size (all_gather the sizes first, then trim), or use all_gather_object for Python objects; "
            "a dataset split that gives one rank fewer samples shows up here."
        )
    return fix


# What a connect error other than a refusal says of the one address (a timeout, no route): no answer came back.
_UNANSWERED = (
    "'{reason}' from one address: nothing answered there, because that host is down, a firewall drops the "
    "packets or the address is on an interface the other hosts cannot route to (NCCL_SOCKET_IFNAME)"
)


def _socket_advice(peer: str, reason: str) -> str:
    """The connect fix with the address the line names, bare (no '<port>', no IPv6 '%iface' scope) so it can be
    looked up as it is; the sentence about one address is the refusal's only where the line says refused."""
    address = peer.split("<")[0].split("%")[0]
    fix = FIXES["nccl_socket_connect"].replace("<address>", address)
    if reason and "refused" not in reason.lower():
        refused = fix[fix.index("'Connection refused'") : fix.index(": name the host")]
        fix = fix.replace(refused, _UNANSWERED.format(reason=reason))
    return fix


def _ib_advice(d: dict[str, Any]) -> str:
    if d.get("ib_status") in (4, 10):  # protection / remote access: the HCA could not reach registered memory
        return (
            "The NIC could not access the registered (GPU) memory: PCIe ACS or the IOMMU in the path breaks "
            "GPUDirect RDMA between HCA and GPU, or nvidia-peermem is missing. Disable ACS on the PCIe switches "
            "(BIOS / setpci) or boot with iommu=pt; NCCL_NET_GDR_LEVEL=0 confirms it (slower)."
        )
    base = (
        "Packets to the peer were lost until the retry counter ran out: check the link and switch port of "
        "both hosts (ibstat; port counters symbol_error, link_downed, port_rcv_errors)"
    )
    local, remote = d.get("local_gid"), d.get("remote_gid")
    if local and remote and _gid_kind(local) != _gid_kind(remote):
        base = (
            f"The two ends use different kinds of GID (local {local}, remote {remote}): one host picked an "
            "IPv4-mapped RoCEv2 GID and the other a link-local one, so their packets never meet. Set "
            "NCCL_IB_GID_INDEX to the same RoCEv2 index on every host (show_gids; typically 3), or "
            "NCCL_IB_ROCE_VERSION_NUM=2 with NCCL_IB_ADDR_FAMILY=AF_INET. " + base
        )
    if d.get("roce"):
        base += (
            "; on RoCE set the GID index that maps to RoCEv2 on the right IP (NCCL_IB_GID_INDEX=3 typically, "
            "see show_gids) and the traffic class (NCCL_IB_TC), and check PFC/ECN on the switches"
        )
    elif d.get("ib_status") == 12:
        base += (
            "; if the NICs are RoCE (Ethernet) and it fails at once, the GID index is the usual cause: set "
            "NCCL_IB_GID_INDEX to the RoCEv2 GID on the routable IP (show_gids; the index ib_write_bw works with)"
        )
    return base + ". NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT only hide a flaky link."


def _gid_kind(gid: str) -> str:
    """'::ffff:10.0.0.1' (IPv4-mapped: RoCEv2 on an IPv4 address), 'fe80::...' (link-local), else global."""
    low = gid.lower()
    return "ipv4" if low.startswith("::ffff:") else "link-local" if low.startswith("fe80") else "global"
