"""CANN's error codes that Ascend's collective library HCCL and its device-side process HCCP print (E<module><4
digits>: EI for HCCL, EJ for HCCP), as data, with the words every Ascend remedy shares (the plog, the versions, the
timeouts, the links). The codes' messages are CANN's error registry's (hicann/hcomm: 'errClass': 'HCCL Errors' /
'HCCP Errors', EI0001-EI0020, EJ0001-EJ0004); torch_npu quotes them under its 'HCCL function error'
(knowledge/hccl_errors.py), and CANN prints them in the plog. One row a code; each becomes a signature row.

A code is read by itself, in both of the forms CANN prints it: 'EI0006: <message>' (CANN 6-7) and, from CANN 8,
after the registry's errTitle, 'Communication_Error_Get_Socket(EI0006): <message>'. The code is the identity; the
registry's messages were reworded between releases (EI0002 'The wait execution of the Notify register times out
... remote rank: [N]' became 'A timeout occurs when the Notify register waits for execution. Waiting peer rank:
N'), so a row's words only read the message's details, never decide the match.
"""

from __future__ import annotations

from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

HCCL_TYPES = "https://github.com/hicann/hcomm/blob/master/include/hccl/hccl_types.h"
HCCL_CHECK = "https://github.com/Ascend/pytorch/blob/master/torch_npu/csrc/distributed/HCCLUtils.hpp"
NPU_EXCEPTION = "https://github.com/Ascend/pytorch/blob/master/torch_npu/csrc/core/npu/NPUException.cpp"
CANN_LOGS = "https://www.hiascend.com/document/detail/zh/canncommercial/5046/troublemanagement/logreference/atlaslog_24_0005.html"
HCCL_TROUBLESHOOTING = (
    "https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/850alpha002/hccl/hcclug/hcclug_000050.html"
)
EI0002_PAGE = "https://www.hiascend.com/document/detail/zh/canncommercial/80RC3/developmentguide/maintenref/troubleshooting/atlaserrorcode_15_0242.html"

# Where CANN writes what it knows (the plog of each process) and how to get it on the terminal: every HCCL remedy
# ends with it, since torch_npu's exception quotes only CANN's last message.
PLOG = (
    "CANN's own log says which step failed: plog-<pid>_*.log under $HOME/ascend/log (or ASCEND_PROCESS_LOG_PATH), "
    "more with ASCEND_GLOBAL_LOG_LEVEL=1, on the terminal with ASCEND_SLOG_PRINT_TO_STDOUT=1"
)
VERSIONS = (
    "check that the CANN toolkit, the NPU driver and firmware (npu-smi info) and torch_npu are releases made for "
    "each other (torch_npu's release notes list the CANN each needs), the same on every node"
)
TIMEOUT_KNOBS = (
    "HCCL_CONNECT_TIMEOUT (seconds to set up links, 120 by default) and HCCL_EXEC_TIMEOUT (seconds a collective may "
    "wait for its peers, 1800 by default)"
)
NETWORK = (
    "check the links between the ranks: the host NIC HCCL uses (HCCL_SOCKET_IFNAME, HCCL_IF_IP) reaches every "
    "node, its ports are open between them (HCCL_IF_BASE_PORT), and each NPU's RoCE link is up "
    "(hccn_tool -i <device> -link -g, -tls -g, -net_health -g)"
)


@dataclass(frozen=True)
class CannCode:
    code: str  # E<module><4 digits>, as CANN prints it before the message
    # a regex of the message's details (the registry's ErrMessage, both wordings where it changed): read into the
    # remedy, not needed to match
    words: str
    kind: str
    cause: str
    meaning: str
    remedy: str
    # an echo: a line that repeats what an earlier line of the same message reported (counts only alone)
    echo: bool = False
    page: str = HCCL_TROUBLESHOOTING  # the public page on the code (Ascend's troubleshooting guide)


# CANN's error registry (hicann/hcomm: 'errClass': 'HCCL Errors' / 'HCCP Errors'), the codes a collective prints
CANN_CODES: tuple[CannCode, ...] = (
    CannCode(
        "EI0001",
        r"[Ee]nvironment variable \[?(?P<cann_env>[A-Z]\w+)\]? is invalid",
        "config_error",
        "configuration",
        "HCCL refused the value of one of its environment variables.",
        "HCCL refused the value of {cann_env|an HCCL environment variable}: set it as the CANN environment "
        "variable reference says (the reason follows the message), or unset it.",
    ),
    CannCode(
        "EI0002",
        r"Notify register (?:times out|waits for execution)",
        "timeout",
        "stall",
        "An HCCL collective waited longer than HCCL_EXEC_TIMEOUT for a peer's signal: a peer failed or fell "
        "behind, or ranks ran different numbers of steps.",
        "A collective waited past HCCL_EXEC_TIMEOUT (1800 s by default) for remote rank {cann_rank|named in the "
        "message}: read that rank's log for an earlier error (it is the cause); if every rank reports it at times "
        "far apart, raise HCCL_EXEC_TIMEOUT or find the slow rank; check that every rank runs the same number of "
        "samples and steps, and grep the plog for 'error cqe' (a lost link).",
        page=EI0002_PAGE,
    ),
    CannCode(
        "EI0003",
        "",
        "config_error",
        "configuration",
        "An HCCL collective was given an invalid argument.",
        "Fix the argument the message names (its op, parameter and value): dtype, count and root of the collective "
        "on every rank.",
    ),
    CannCode(
        "EI0004",
        "",
        "config_error",
        "configuration",
        "HCCL refused the rank table or this process's rank in it.",
        "Fix the rank table the message names (RANK_TABLE_FILE): every device's id, IP and rank as the nodes "
        "really are (hccn_tool -i <device> -ip -g), and RANK_ID / the rank passed to init within it.",
    ),
    CannCode(
        "EI0005",
        r"(?:arguments for collective communication|parameters of operator \S+) are inconsistent between ranks",
        "collective_mismatch",
        "desync",
        "Ranks called the same HCCL collective with different arguments (the message names the parameter and both "
        "values).",
        "Make every rank call the collective with the same arguments (the message names the parameter, the local "
        "and the remote value): tensor sizes and dtypes, the op, the group; the same script and rank table on "
        "every node.",
    ),
    CannCode(
        "EI0006",
        r"Getting socket times out",
        "network_fault",
        "network",
        "HCCL could not set up its links to a peer within HCCL_CONNECT_TIMEOUT: the peer never connected (it "
        "failed, started late or is unreachable).",
        "HCCL timed out setting up links to a peer (HCCL_CONNECT_TIMEOUT, 120 s by default): look for a rank that "
        "failed or never reached the collective (its log says why); if all ranks report it at times further apart "
        "than the timeout, raise HCCL_CONNECT_TIMEOUT; " + NETWORK + ".",
    ),
    CannCode(
        "EI0007",
        r"Failed to allocate resource",
        "oom",
        "application",
        "HCCL could not allocate a resource (memory or Notify registers): the device's were exhausted.",
        "Free the NPU's resources for HCCL: fewer communicators or streams, a smaller batch, smaller HCCL buffers "
        "(HCCL_BUFFSIZE); no other process on the NPU (npu-smi info).",
    ),
    CannCode(
        "EI0008",
        r"HCCL versions are inconsistent",
        "config_error",
        "configuration",
        "Ranks run different HCCL (CANN) versions.",
        "Install the same CANN toolkit (and so HCCL) on every node; the message names the local and remote version.",
    ),
    CannCode(
        "EI0009",
        r"transport init error",
        "network_fault",
        "network",
        "HCCL could not set up the transport of an NPU's network port (its RoCE link).",
        "An NPU's network transport did not come up: check each NPU's optical module, IP and link (hccn_tool -i "
        "<device> -optical -g, -ip -g, -link -g, -lldp -g) on the device the message names.",
    ),
    CannCode(
        "EI0010",
        r"P2P communication failed",
        "nccl_error",
        "nccl_bug",
        "HCCL's peer-to-peer transfer between NPUs failed.",
        "Check that each NPU is healthy (npu-smi info); CANN's advice is HCCL_INTRA_ROCE_ENABLE=1 (RoCE inside the "
        "node instead of the direct link).",
    ),
    CannCode(
        "EI0011",
        r"Failed to allocate \[?\S+\]? bytes of NPU memory",
        "oom",
        "application",
        "HCCL could not allocate NPU memory for its buffers.",
        "Leave NPU memory free for HCCL: a smaller batch or model share, no other process on the NPU (npu-smi "
        "info), smaller HCCL buffers (HCCL_BUFFSIZE, in MB).",
    ),
    CannCode(
        "EI0012",
        r"SDMA memory copy task exception",
        "nccl_error",
        "nccl_bug",
        "An HCCL memory-copy (SDMA) task failed: a network fault, a peer that exited, or a buffer freed or too small.",
        "Check for a rank that exited first (its log says why) and for a link fault; check that the tensors passed "
        "to the collective are the size it expects and are not freed before it completes.",
    ),
    CannCode(
        "EI0013",
        r"An error CQE occurred",
        "network_fault",
        "network",
        "An RDMA completion error between two NPUs (the message names both): the link dropped or the peer exited.",
        "Check the network between the two devices the message names (a port going down; hccn_tool -i <device> "
        "-link -g) and whether the peer process exited first (its own log says why).",
    ),
    CannCode(
        "EI0014",
        "",
        "config_error",
        "configuration",
        "The rank table does not match the devices of this node.",
        "Fix the rank table (RANK_TABLE_FILE) to match the node's devices and IPs (hccn_tool -i <device> -ip -g).",
    ),
    CannCode(
        "EI0015",
        r"Failed to collect cluster information of the communicator based on rootInfo",
        "network_fault",
        "network",
        "Not every rank reached the root of an HCCL communicator in time (its rootInfo detection).",
        "Check that every rank created the communicator (one may have failed first), that the hosts reach the "
        "root's host (HCCL_SOCKET_IFNAME on every node, open ports), and raise HCCL_CONNECT_TIMEOUT for a slow "
        "start.",
    ),
    CannCode(
        "EI0016",
        r"Value \S+ for config \S+ is invalid",
        "config_error",
        "configuration",
        "HCCL refused a configuration value.",
        "Set the config the message names to one of its expected values.",
    ),
    CannCode(
        "EI0017",
        r"Config (?P<cann_rt_config>\w+) is missing in the ranktable file",
        "config_error",
        "configuration",
        "The rank table lacks a field HCCL needs.",
        "Add {cann_rt_config|the field the message names} to the rank table (RANK_TABLE_FILE), as the rank table "
        "reference for this CANN release lists it.",
    ),
    CannCode(
        "EI0018",
        r"An error CQE occurred",
        "network_fault",
        "network",
        "A completion error on the UB link between two NPUs (the message names both): the link dropped, the peer "
        "exited, or a device's HBM or UB module failed.",
        "Check the link between the two devices the message names (hccn_tool -i <device> -link -g), whether the "
        "peer process exited first (its own log says why), and the devices' health (npu-smi info -t health).",
    ),
    CannCode(
        "EI0019",
        r"Failed to enable listening for the host network adapter socket",
        "config_error",
        "configuration",
        "HCCL could not listen on its host socket: the port is taken (an earlier run or another process).",
        "HCCL's host port is taken: make sure no earlier run still holds it (ss -ltnp), move HCCL's ports "
        "(HCCL_IF_BASE_PORT, or HCCL_HOST_SOCKET_PORT_RANGE=auto) and keep them out of the ephemeral range (sysctl "
        "-w net.ipv4.ip_local_reserved_ports=<range>).",
    ),
    CannCode(
        "EI0020",
        r"Failed to enable listening for the NPU network adapter socket",
        "config_error",
        "configuration",
        "HCCL could not listen on the NPU's network port: the port is taken, usually by another process on the "
        "same NPU.",
        "The NPU's HCCL port is taken: with several processes on one NPU give each its own ports "
        "(HCCL_NPU_SOCKET_PORT_RANGE, or =auto); otherwise make sure no earlier run still holds the NPU (npu-smi "
        "info).",
    ),
    CannCode(
        "EJ0001",
        r"Failed to initialize the HCCP process",
        "config_error",
        "configuration",
        "HCCL's device-side process (HCCP) could not start: the previous training process still held it.",
        "An earlier training process still holds the NPUs' HCCP: make sure it has exited (npu-smi info, ps), wait "
        "about 10 s after killing it, then start again.",
    ),
    CannCode(
        "EJ0002",
        r"network port is down",
        "network_fault",
        "network",
        "An NPU's network port is down.",
        "Bring the NPU's port up and check its cable and switch port (hccn_tool -i <device> -link -g).",
    ),
    CannCode(
        "EJ0003",
        r"Failed to bind the IP port",
        "config_error",
        "configuration",
        "HCCP could not bind its IP port: the port is taken (an earlier process) or the address is not this device's.",
        "Make sure no earlier training process still runs on the node, and that the device IPs match the rank "
        "table (hccn_tool -i <device> -ip -g).",
    ),
    CannCode(
        "EJ0004",
        r"Check ip fail",
        "config_error",
        "configuration",
        "HCCP refused a device IP address.",
        "Fix the device IP the message names: each NPU's address (hccn_tool -i <device> -ip -g) must match the rank "
        "table and be one the device has.",
    ),
)


# the peer a message names: 'remote rank: [6]' (EI0002 before CANN 8), 'Waiting peer rank: 6' (after), 'Remote
# rank: [6]' (EI0012)
_PEER_RANK = r"(?:[Rr]emote|peer) rank:? \[?(?P<cann_rank>\d+)"


def cann_code(code: str) -> str:
    """A regex of CODE as CANN prints it before its message: 'EI0006: ' or, from CANN 8, 'Title(EI0006): '."""
    return rf"\b{code}\)?: "


def _cann_row(c: CannCode) -> Signature:
    return row(
        f"cann_{c.code.lower()}",
        # the code's module and first digits ('EI00'), the codes' one needle: each needle is a pass over the whole
        # log (readers/scan.py), and the row's regex names the code itself
        c.code[:4],
        cann_code(c.code),
        era="CANN 6-8 (HCCL / HCCP error registry), printed in torch_npu's exception or the plog",
        kind=c.kind,
        cause=c.cause,
        meaning=c.meaning,
        remedy=f"{c.remedy} {PLOG}.",
        reference=f"{c.page}; hicann/hcomm HCCL error registry ({c.code})",
        fields_re=f"{c.words}|{_PEER_RANK}" if c.words else _PEER_RANK,
        echo=c.echo,
    )


CANN_SIGNATURES: tuple[Signature, ...] = tuple(_cann_row(c) for c in CANN_CODES)
