"""Whose code a native crash stopped in: the shared library of the innermost frame of a core dump's or gdb's
backtrace ('#0  0x... in at::cuda::getCurrentCUDABlasHandle() () from .../torch/lib/libtorch_cuda_cu.so'),
and what to do when a crash is inside it. One row a library family; the source is where the name comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NativeLibrary:
    pattern: str  # the library file's name (a search in the frame's 'from' path)
    owner: str
    remedy: str
    source: str


# The owner a crash's faulting frame names when NCCL called it through its net-plugin API (readers/nccl.py).
NET_PLUGIN = "NCCL's network plugin (libnccl-net.so)"

NATIVE_LIBRARIES: tuple[NativeLibrary, ...] = (
    NativeLibrary(
        r"/libtorch\w*\.so|/libc10\w*\.so",
        "PyTorch",
        "a crash inside PyTorch's own library is a PyTorch bug or a build that does not match this CUDA / driver: "
        "upgrade PyTorch (check the PyTorch version's known issues for the function named) or install the build "
        "for this CUDA, then rebuild the extensions compiled against it (mmcv-full, apex, flash-attn)",
        "PyTorch wheels ship torch/lib/libtorch*.so and libc10*.so; open-mmlab/mmpretrain#603 (SIGSEGV in "
        "at::cuda::getCurrentCUDABlasHandle with torch 1.8, pytorch/pytorch#55669, fixed by upgrading)",
    ),
    NativeLibrary(
        r"/libnccl\w*\.so",
        "NCCL",
        "a crash inside NCCL: upgrade NCCL (the nvidia-nccl wheel or libnccl2) and rerun with NCCL_DEBUG=INFO",
        "NCCL builds as libnccl.so (nvidia-nccl-cu* wheels, libnccl2 packages)",
    ),
    NativeLibrary(
        r"/libcuda\.so",
        "the CUDA driver",
        "a crash inside the CUDA driver's library: check the driver against the CUDA the framework was built for "
        "(nvidia-smi) and dmesg for Xid errors",
        "the NVIDIA driver installs libcuda.so",
    ),
)

# gdb's frame 0 ('#0  0x... in FUNC (...) from LIB'), as a core dump's or an attached process's backtrace.
_FRAME0 = re.compile(r"^#0\s+(?:0x[0-9a-fA-F]+ in )?(\S+?)(?:\s*\(.*?\))?(?:\s*\(\))?\s*(?:from\s+(\S+))?\s*$", re.M)
_FROM = re.compile(r"^\s+from\s+(\S+)", re.M)


def crashed_in(text: str) -> tuple[str, NativeLibrary] | None:
    """(function, library row) of the first backtrace's frame 0 whose library a row knows; gdb continues a long
    frame's 'from LIB' on the next line."""
    m = _FRAME0.search(text)
    if m is None:
        return None
    lib = m.group(2)
    if lib is None:
        nxt = _FROM.match(text, m.end() + 1)
        lib = nxt.group(1) if nxt else ""
    for row in NATIVE_LIBRARIES:
        if re.search(row.pattern, lib):
            return m.group(1), row
    return None


@dataclass(frozen=True)
class CrashFrame:
    """A frame 0 that only a process ending on a signal shows: gdb's backtrace of its core file (or of the process
    stopped at the signal) is the crash's own report, where a waiting process's frame 0 is a wait (poll, futex)."""

    pattern: str  # gdb's '#0 ' line
    signum: int
    signal: str
    meaning: str
    source: str
    caller_faulted: bool = False  # frame 0 is no code of its own: the fault is frame 1's


CRASH_FRAMES: tuple[CrashFrame, ...] = (
    CrashFrame(
        r"^#0\s+0x0+ in \?\? \(\)",
        11,
        "SIGSEGV",
        "a call through a NULL function pointer: the program counter is 0, so frame 1 made the call",
        "gdb prints '?? ()' for a pc no symbol covers; page 0 is never mapped in a Linux process (vm.mmap_min_addr), "
        "so a jump there faults at once (NVIDIA/nccl#1091: a net plugin's init calling a NULL pointer)",
        caller_faulted=True,
    ),
    CrashFrame(
        r"^#0\s+(?:0x[0-9a-fA-F]+ in )?(?:__GI_raise|raise|__pthread_kill_implementation|__pthread_kill_internal|"
        r"__GI_abort|abort)\b",
        6,
        "SIGABRT",
        "the process aborted itself (a failed assertion, std::terminate, a library's fatal check)",
        "glibc stdlib/abort.c raises SIGABRT; glibc 2.35+ delivers it in __pthread_kill_implementation "
        "(nptl/pthread_kill.c), older ones in raise (sysdeps/unix/sysv/linux/raise.c)",
    ),
)


# gdb's own notice of the signal that stopped the process, above the backtrace: 'Program received signal SIGSEGV,
# Segmentation fault.', 'Thread 1 "pt_main_thread" received signal SIGSEGV, ...', a core file's 'Program terminated
# with signal SIGSEGV' (gdb's infrun.c print_signal_received_reason, corelow.c). Only the signals a fault or an
# abort raises: SIGINT / SIGTRAP / SIGSTOP are gdb stopping a live process (Ctrl-C on a hang, a breakpoint).
# with inferiors gdb numbers a thread 'Thread 2.1'; group 1 is the thread's number, where the notice names one.
GDB_SIGNAL_NOTICE = re.compile(
    r"^(?:Program |Thread (?:\d+\.)?(\d+) (?:\"[^\"]*\" )?)(?:received|terminated with) signal "
    r"(SIGSEGV|SIGBUS|SIGABRT|SIGFPE|SIGILL)\b"
)
# a core file's '[Current thread is 1 (Thread 0x7f12345 (LWP 4242))]': the thread the signal stopped
GDB_CURRENT_THREAD = re.compile(r"^\[Current thread is (?:\d+\.)?(\d+) ")
# 'thread apply all bt' heads each thread's frames with 'Thread 3 (Thread 0x7f00cc000640 (LWP 4245) "python"):'
GDB_THREAD_HEADER = re.compile(r"^Thread (?:\d+\.)?(\d+) \(")

# NCCL's calls into an external net plugin (src/net.cc / plugin/net.cc: ncclNetInit -> netGetState ->
# ncclNet_v6_as_v7_init, which calls the plugin's own init; NCCL >= 2.24: ncclNetInit -> ncclNetPluginInit): the
# frame inside such a call is the plugin's code.
NET_PLUGIN_CALLER = re.compile(
    r"\b(?:ncclNet(?:_v\d+_as_v\d+)?_\w+|ncclNetInit|netGetState|ncclNetPluginLoad|ncclNetPluginInit)\b"
)
# A frame NCCL's own code runs in, by its function's name: as UCX prints it without a path ('ncclGroupEnd()  ???:0',
# 'pncclRedOpDestroy()'), as gdb does with a space before the arguments ('ncclIbInit (logFunction=...)'); not a
# method of another library's class named after NCCL ('c10d::ProcessGroupNCCL::ncclCommWatchdog()' is PyTorch's).
NCCL_SYMBOL = re.compile(r"(?<![\w:])p?nccl[A-Z]\w* ?\(")
# The path glibc and libstdc++ take from abort() to the signal, as gdb names its frames (UCX's names are in
# readers/nccl.py's _DELIVERY_FRAME): below them is the frame that aborted ('?? () from libstdc++.so.6' is
# std::terminate's handler).
ABORT_PATH_FRAME = re.compile(
    r"\b(?:__pthread_kill_implementation|__pthread_kill_internal|__GI___pthread_kill|pthread_kill|__GI_raise|raise|"
    r"__GI_abort|abort|std::terminate|__cxa_\w+|__gnu_cxx::__verbose_terminate_handler)\b ?\(|libstdc\+\+\.so"
)


def crash_frame(line: str) -> CrashFrame | None:
    """The row a gdb frame-0 line matches, None for a frame a running or waiting process shows."""
    return next((row for row in CRASH_FRAMES if re.match(row.pattern, line.strip())), None)
