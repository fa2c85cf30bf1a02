"""Signature rows for a communication library that this install does not have, or has in another version than the
code calling it was built for: a build without torch.distributed, a Windows build's socket noise, and NCCL's
'unknown result code'. Each is a configuration error of the install, never of the network: the remedy
names the backend the build has or the version to match, never MASTER_ADDR. signatures.py splices them in before
the rendezvous store rows (store_connect_failed) and the generic NCCL-call row (nccl_test_failure).

Sources:
- torch/distributed/distributed_c10d.py, _new_process_group_helper: "Distributed package doesn't have MPI built in.
  MPI is only included if you build PyTorch from source on a host that has MPI installed." (is_mpi_available() is
  False in every wheel): one row with its NCCL sibling, runtime_launcher.torch_without_nccl, whose remedy is
  MPI_NOT_BUILT_IN where the backend is MPI.
- torch/csrc/distributed/c10d/socket.cpp: the client's 'The client socket has failed to connect to [HOST]:PORT
  (system error: ...)' is a warning per address tried; 10049 is Winsock's WSAEADDRNOTAVAIL, printed by the Windows
  wheels (built on C:\\actions-runner\\...) for an address family or wildcard address it cannot connect to while
  another address of the same host succeeds (pytorch/pytorch#81584, #116056: harmless on Windows). A Windows build
  has no NCCL (is_nccl_available() False) and, from torch 2.4, no libuv store.
  The same file's 'The IPv6 network addresses of (HOST, PORT) cannot be retrieved (gai error: 11004 - ...)' is
  Winsock's WSANO_DATA for a host without an IPv6 address: the client goes on with IPv4 (the same row).
- torch/distributed/__init__.py: is_available() is hasattr(torch._C, "_c10d_init"); a build without the
  distributed package (USE_DISTRIBUTED=0: macOS wheels before torch 1.8, some ARM / Jetson wheels) defines none of
  the process-group functions, so the first call is Python's "module 'torch.distributed' has no attribute
  'init_process_group'".
- NCCL src/init.cc, ncclGetErrorString: 'unknown result code' is its default case, for an ncclResult_t the loaded
  libnccl does not know: the caller was compiled against another NCCL (a newer nccl.h with codes such as
  ncclRemoteError / ncclInProgress) than the libnccl.so.2 it runs with (NVIDIA/TensorRT-LLM#1131: torch 2.1.2's
  NCCL 2.18 under a plugin built for 2.19).
  Its link-time sibling: a library built against a newer NCCL (torch's libtorch_cuda.so, an extension) loaded with
  an older libnccl.so.2 fails at import with 'undefined symbol: ncclCommRegister' (any nccl* symbol the older
  release lacks), as glibc's loader words it: one reading of 'undefined symbol' (runtime_loading.
  shared_library_symbol_mismatch) gives NCCL_SYMBOL_REMEDY below where the symbol is NCCL's.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"
NCCL_INIT = "https://github.com/NVIDIA/nccl/blob/master/src/init.cc"

# The fix for glibc's 'undefined symbol: nccl*' (two NCCL installs mixed), chosen by the one row that reads the message
# (knowledge/runtime_loading.shared_library_symbol_mismatch) where the symbol is NCCL's
NCCL_SYMBOL_REMEDY = (
    "{lib|The library} needs {symbol|an NCCL function} from a newer NCCL than the libnccl.so.2 loaded: keep one NCCL "
    "package, the one this torch requires (pip list | grep -i nccl: a second nvidia-nccl-cu* or a package bundling "
    "its own NCCL; pip check; pip install nvidia-nccl-cu12==VERSION), and check that LD_LIBRARY_PATH / LD_PRELOAD "
    "do not put an older system or conda libnccl.so.2 first (ldd {lib|libtorch_cuda.so} | grep nccl); then "
    "torch.cuda.nccl.version() prints the NCCL in use."
)
NCCL_SYMBOL_REFERENCE = (
    "https://github.com/pytorch/pytorch/issues/119932 (another package's NCCL, incompatible); "
    "https://github.com/pytorch/pytorch/issues/186591 (nvidia-nccl-cu12 beside nvidia-nccl-cu13)"
)

BUILD_BACKEND_SIGNATURES: tuple[Signature, ...] = (
    row(
        "windows_store_address_noise",
        ("system error: 10049", "gai error: 11004"),
        (
            r"client socket has failed to connect to \S+ \(system error: 10049 - ",
            r"The IPv6 network addresses of .+ cannot be retrieved \(gai error: 11004 - ",
        ),
        era="torch Windows wheels (c10d socket.cpp on Winsock; torch >= 1.13)",
        cause="configuration",
        meaning="This is a Windows build of PyTorch: its rendezvous client warns 'system error: 10049' "
        "(WSAEADDRNOTAVAIL) for an address it cannot use, or 'gai error: 11004' for a host with no IPv6 "
        "address, and goes on to the next, which is harmless. A DDP run that fails on Windows fails on the "
        "backend: the Windows wheels have no NCCL (and from torch 2.4 no libuv store).",
        remedy=(
            'Use the gloo backend on Windows (init_process_group("gloo"); Lightning / accelerate pick it when told: '
            "PL_TORCH_DISTRIBUTED_BACKEND=gloo, or the strategy's process_group_backend='gloo'): the Windows "
            "wheels have no NCCL (torch.distributed.is_nccl_available() is False) and no MPI (only a build from "
            "source has it); on torch >= 2.4 also set USE_LIBUV=0 (init_method='env://?use_libuv=False'). For "
            "NCCL, run on Linux or WSL2. The 10049 warnings themselves need no change."
        ),
        reference=PT + "torch/csrc/distributed/c10d/socket.cpp; https://github.com/pytorch/pytorch/issues/81584; "
        "https://pytorch.org/docs/stable/distributed.html#backends",
        # the failure only where the run went no further (reasoning/setting_refused.WENT_PAST_CODES)
        confidence="low",
    ),
    row(
        "torch_without_distributed",
        "module 'torch.distributed' has no attribute",
        r"module 'torch\.distributed' has no attribute '(?:init_process_group|is_initialized|get_rank|get_world_size|"
        r"barrier|all_reduce|broadcast|all_gather|new_group|destroy_process_group|ReduceOp|group)'",
        era="torch builds with USE_DISTRIBUTED=0 (macOS wheels before 1.8, some ARM / Jetson wheels, custom builds)",
        cause="configuration",
        meaning="This PyTorch build has no distributed package at all (torch.distributed.is_available() is False): "
        "none of the process-group functions exist, whatever the backend.",
        remedy=(
            "Install a PyTorch build with torch.distributed (the official pip wheels for Linux and Windows, macOS "
            "from 1.8; on Jetson NVIDIA's wheel for its JetPack) or rebuild with USE_DISTRIBUTED=1; check with "
            "python -c 'import torch.distributed as d; print(d.is_available())'. Single-device code can guard its "
            "distributed calls with torch.distributed.is_available()."
        ),
        reference=PT + "torch/distributed/__init__.py",
    ),
    row(
        "nccl_unknown_result_code",
        "unknown result code",
        # the error forms only (a comment, an INFO line or a docstring that quotes the words is none): NCCL's own
        # error text ('NCCL error ...' of torch's ProcessGroupNCCL and of a plugin's check), torch's
        # DistBackendError, a failed nccl* call's message
        (
            r"\bNCCL error\b.{0,300}unknown result code",
            r"DistBackendError: .{0,300}unknown result code",
            r"\bnccl[A-Z]\w*(?:\(\))? (?:failed|returned)\b.{0,80}unknown result code",
        ),
        era="every NCCL release (ncclGetErrorString's default case)",
        cause="configuration",
        meaning="An NCCL call returned a result code the loaded NCCL library cannot name: the code calling it was "
        "built against another NCCL version than the libnccl.so.2 it runs with (a plugin or extension built for "
        "a newer NCCL than torch's bundled one, or an old system libnccl found first).",
        remedy=(
            "Make the NCCL the code runs with the one it was built for: compare python -c 'import torch; "
            "print(torch.cuda.nccl.version())' (and NCCL_DEBUG=VERSION) with the NCCL the extension or plugin "
            "was built against; install the matching torch or nvidia-nccl-cu12 wheel (pip install "
            "nvidia-nccl-cu12==VERSION) or rebuild the extension against the installed one; check that "
            "LD_LIBRARY_PATH / LD_PRELOAD do not put an older system libnccl.so.2 first (ldd on the extension, "
            "lsof -p PID | grep nccl)."
        ),
        reference=NCCL_INIT + "; https://github.com/NVIDIA/TensorRT-LLM/issues/1131",
        # the failure only where the run went no further (reasoning/setting_refused.WENT_PAST_CODES): a retried
        # call, or an exit handler's echo below the error that ended the run
    ),
)

# Rows that are no failure where the run went on past them, and a clue (never the root) beside the program's own
# error (reasoning/setting_refused.WENT_PAST_CODES)
BUILD_WENT_PAST_CODES = ("windows_store_address_noise", "nccl_unknown_result_code")
# Of those, the rows a clue only beside an error printed before them (an exit handler's echo of the failure that
# ended the run); an error after them is their consequence, never their root (the ranks' 'Unknown NCCL error!')
BUILD_ECHO_CODES = ("nccl_unknown_result_code",)
