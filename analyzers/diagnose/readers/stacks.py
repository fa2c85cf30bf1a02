"""Stack dumps: faulthandler (`Thread 0x... (most recent call first):`), py-spy dump (`Thread 123 (idle):
"MainThread"` then `func (file:line)`), scope's own hook and attach dumps, the dumpstacks recipe (`# ThreadID`)
and gdb backtraces (`(gdb) bt`), as files or inside stderr.

What matters for a hang is where each rank's main thread stands: inside a collective (it waits for
peers) or somewhere else (it is the one the others wait for).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scope.analyzers.diagnose.knowledge.late_work import evaluation_caller
from scope.analyzers.diagnose.knowledge.stuck_waits import STUCK_WAITS
from scope.analyzers.diagnose.knowledge.wait_places import WAIT_PLACES, WaitPlace, wait_place

from scope.collective_calls import NATIVE_CALLS, PY_CALLS
from scope.op_names import canonical_op

_FH_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+) \(most recent call first\):")
_FH_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+) in (\S+)')
_SPY_THREAD = re.compile(r'^Thread (0x[0-9a-fA-F]+|\d+) \(([\w+]+)\)(?:: "([^"]*)")?')
_SPY_FRAME = re.compile(r"^\s+(\S+) \(([^:()]+):(\d+)\)")
_SPY_PROCESS = re.compile(r"^Process (\d+): (.*)")
# scope's hook: a header line, then traceback.format_stack() per thread (innermost frame last).
_HOOK_HEADER = re.compile(r"^# scope stack dump: reason=(\S+) rank=(\d+) pid=(\d+) time_ns=(\d+)")
# `scope attach`'s py-spy dump file: this header, then py-spy's own 'Process N:' line and threads.
_ATTACH_HEADER = re.compile(r"^# py-spy dump --pid (\d+) \(rank (\d+|None)\) at (\d+) ns on \S+; reason: (.+?)\s*$")
_HOOK_THREAD = re.compile(r"^Thread (.+?) \(id (\d+)(?:, daemon=(\w+))?\)(?:, most recent call last:|: (.*))$")
_TB_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+), in (\S+)')
# The stack-dump recipe many projects paste in (sys._current_frames() + traceback.extract_stack, after the
# ActiveState 'dumpstacks' recipe): a '# ThreadID: N' header a thread ('######### ProcessID=N, ThreadID=N
# #########' in allenai/allennlp#5088), then 'File: "path", line N, in func' frames, outermost first.
RECIPE_HEADS = ("# ThreadID: ", " ThreadID=")
_RECIPE_THREAD = re.compile(r"^#+\s*(?:ProcessID=(\d+),\s*)?ThreadID[=:]\s*(\d+)")
_RECIPE_FRAME = re.compile(r'^\s*File: "([^"]+)", line (\d+), in (\S+)')
# gdb's backtrace of a stuck process ('(gdb) bt', or 'thread apply all bt' with a 'Thread N (Thread 0x... (LWP
# n))' header a thread, thread 1 the main one): '#3  0x7f... in c10d::TCPStore::doGet(...) () from libtorch_cpu.so'
# or '#0  __libc_recv (fd=98, ...) at recv.c:28'. Native frames name a function and a library, not Python's.
# The prompt is read without its '(' too: a paste whose selection began one character late ('gdb) bt').
# 'thread apply all bt' is often pasted from its first 'Thread N (Thread 0x... (LWP n)):' header on, with no
# prompt: that header (the LWP is gdb's word for a kernel thread, printed by no other dumper) opens a dump too.
GDB_PROMPTS = ("gdb) bt", "gdb) backtrace", "gdb) thread apply all bt")
GDB_LWP = " (LWP "
_GDB_THREAD = re.compile(r"^Thread (\d+) \((?:Thread 0x[0-9a-fA-F]+|LWP \d+)")  # live process / core file
_GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-fA-F]+ in )?(.+?)(?: (?:at|from) (\S+?)(?::(\d+))?)?\s*$")
# lldb's backtrace of a stuck process ('(lldb) bt', 'bt all', or a thread's block pasted alone): a thread header
# ('* thread #1, name = 'python', stop reason = signal SIGSTOP'), then its frames ('    frame #2: 0x00007f...
# libtorch_cuda.so`c10d::ProcessGroupNCCL::abort() + 664', or '... at futex.cc:217:18'): the library before the
# backtick, the function after it. PyTorch's own C++ stack of an exception ('frame #0: c10::Error::Error(...) +
# 0x9c (0x7f... in libc10.so)') has no address before the name nor a backtick: not read as lldb's.
LLDB_PROMPTS = ("lldb) bt", "lldb) thread backtrace")
LLDB_STOP = ", stop reason = "
_LLDB_THREAD = re.compile(r"^\s*\*?\s*thread #(\d+)[,:]")
_LLDB_FRAME = re.compile(r"^\s*\*?\s*frame #(\d+): 0x[0-9a-fA-F]+ ([^`\s]+)`(.+?)(?: \+ \d+)?(?: at \S+)?\s*$")
_LLDB_FIRST_FRAME = re.compile(r"^[ \t]*\*?[ \t]*frame #0: 0x[0-9a-fA-F]+ [^`\s]+`", re.M)
# lldb's stop reason of a process that faulted or aborted (lldb's StopInfoUnixSignal prints 'signal SIGSEGV: invalid
# address (fault address: 0x...)', a core file 'signal SIGABRT'; on macOS the Mach exception, 'EXC_BAD_ACCESS (code=1,
# address=0x0)'): its backtrace is a crash's report, read as the signal (readers/scan.py), not as a place it waits.
# A stuck process attached to stops on SIGSTOP (or SIGINT, an interrupt): those stay dumps of a live process.
_LLDB_CRASH = re.compile(
    r"stop reason = (?:signal (SIG(?:SEGV|ABRT|BUS|FPE|ILL))\b|(EXC_BAD_ACCESS|EXC_BAD_INSTRUCTION|EXC_ARITHMETIC"
    r"|EXC_CRASH)\b)"
)
_MACH_SIGNALS = {
    "EXC_BAD_ACCESS": "SIGSEGV", "EXC_BAD_INSTRUCTION": "SIGILL", "EXC_ARITHMETIC": "SIGFPE", "EXC_CRASH": "SIGABRT",
}  # fmt: skip
# A debugged process that went on after its backtrace and ended well (gdb's '[Inferior 1 (process N) exited
# normally]', lldb's 'Process N exited with status = 0 (0x00000000)') was not stuck where the backtrace shows it.
# A non-zero exit is left to the dump (the run failed; a kill after the dump, '[Inferior 1 (process N) killed]',
# is the stuck process ended by hand).
_DEBUGGER_EXIT = re.compile(r"^\[Inferior \d+ \(process \d+\) exited normally\]|^Process \d+ exited with status = 0 ")
# py-spy's main-thread header ('Thread 688514 (idle): "MainThread"') marks a dump quoted without its 'Process'
# and 'Python v' lines, as dumps pasted into a thread or a chronicle are.
MARKERS = (
    "(most recent call first)", "Python v", "# scope stack dump", '): "MainThread"', *RECIPE_HEADS, *GDB_PROMPTS,
    GDB_LWP, *LLDB_PROMPTS, LLDB_STOP,
)  # fmt: skip

# parse_stacks's order of the formats' dumps
_FORM_ORDER = {"python": 0, "hook": 0, "gdb": 1, "lldb": 1, "recipe": 2}
# faulthandler prints 'Fatal Python error: ...', a blank line, then the threads of the crashing process.
FATAL_GAP = 3
_WAIT_FUNCS = frozenset({"wait", "synchronize", "_wait"})
# DDP's gradient all-reduce runs inside backward (C++ reducer): a hung rank's stack shows only this.
_BACKWARD_FUNCS = frozenset({"_engine_run_backward", "run_backward"})
_LIBRARY_HINTS = ("site-packages", "dist-packages", "/lib/python", "<frozen", "threading.py")
# A native frame of a library, not the job's own code: a shared object, gdb's unknown file, libc's internals
# (`__libc_recv`, `pthread_cond_wait`) and the C++ namespaces of PyTorch and the standard library.
_NATIVE_LIBRARY_FUNCS = ("__", "pthread_", "std::", "c10::", "c10d::", "at::", "torch::", "cuda", "nccl")
# py-spy prints a frame of an installed package relative to its site-packages ('torch/nn/modules/conv.py'):
# the packages a training job's stack passes through, and the standard library's modules it waits in (not
# "datasets/": a project's own folder is often called so).
_PACKAGE_ROOTS = (
    "torch/", "transformers/", "accelerate/", "deepspeed/", "megatron/", "lightning/", "pytorch_lightning/",
    "numpy/", "multiprocessing/", "concurrent/", "queue.py", "selectors.py", "socket.py",
)  # fmt: skip
# Frames of a profiler/dumper running inside the rank (a signal handler sits on top of the frame the
# signal interrupted): skip them to see where the job itself was.
_OBSERVER_HINTS = ("collectors/hook/", "faulthandler", "py-spy")
# the places a stuck main thread waits in: wait_places' rows, then stuck_waits' (shutdown, init, barrier, save)
_PLACES = WAIT_PLACES + STUCK_WAITS


@dataclass
class ThreadStack:
    name: str
    frames: list[tuple[str, str, int]] = field(default_factory=list)  # (func, file, line), innermost first
    current: bool = False


@dataclass
class StackDump:
    pid: int | None = None
    threads: list[ThreadStack] = field(default_factory=list)
    first_line: int = 1
    rank: int | None = None
    time_ns: int | None = None
    reason: str = ""
    form: str = "python"  # the format it was read from: python (faulthandler, py-spy), hook, gdb, lldb or recipe
    signal: str = ""  # lldb's stop reason of a crash ('SIGSEGV'): the dump is the crash's report
    signal_line: int = 0  # the line of that stop reason

    def main_thread(self) -> ThreadStack | None:
        for t in self.threads:
            if t.name == "MainThread" or t.current:
                return t
        return self.threads[-1] if self.threads else None


def has_stacks(text: str) -> bool:
    return any(m in text for m in MARKERS) or ("frame #0: 0x" in text and _LLDB_FIRST_FRAME.search(text) is not None)


def parse_stacks(text: str) -> list[StackDump]:
    """Every dump in the text, read in one pass; a new dump starts at a dump's header (py-spy's 'Process' line,
    scope's own, gdb's prompt) or at a thread header that cannot belong to the dump before it. Python's dumps come
    first, then gdb's, then the recipe's, each in the text's order (the order scan's findings list them in)."""
    parser = _Parser()
    for lineno, line in enumerate(text.splitlines(), 1):
        parser.feed(lineno, line)
    return sorted((d for d in parser.dumps if d.threads), key=lambda d: _FORM_ORDER[d.form])


class _Parser:
    """One pass over a text's lines, one format's reader a method: dump headers, scope's hook dumps (traceback
    order), faulthandler and py-spy threads and frames, gdb's backtraces, the dumpstacks recipe. The dump being
    read (`current`) says which format the lines after its header are read as."""

    def __init__(self) -> None:
        self.dumps: list[StackDump] = []
        self.current: StackDump | None = None
        self.thread: ThreadStack | None = None
        self.pending: list[ThreadStack] = []  # py-spy headers with no frames yet (a grouped listing)
        self.fatal_at = -FATAL_GAP - 1  # the line of the last 'Fatal Python error:' (faulthandler's crash header)
        # the recipe tells processes apart by the id on each thread's header: the dump of each id read so far
        self.recipe_dumps: dict[int | None, StackDump] = {}

    @property
    def form(self) -> str:
        return self.current.form if self.current is not None else ""

    def feed(self, lineno: int, line: str) -> None:
        if line.startswith(("[Inferior ", "Process ")) and _DEBUGGER_EXIT.match(line):
            self._debugger_exit()
            return
        if self._header(lineno, line) or self._hook_line(line) or self._recipe_line(lineno, line):
            return
        if line.startswith("Fatal Python error:"):
            self.fatal_at = lineno
        elif not (self._gdb_line(lineno, line) or self._lldb_line(lineno, line) or self._thread_header(lineno, line)):
            self._frame(line)

    def _open(self, dump: StackDump) -> None:
        self.current, self.thread, self.pending = dump, None, []
        self.dumps.append(dump)

    def _header(self, lineno: int, line: str) -> bool:
        if line.removeprefix("(").startswith(GDB_PROMPTS):
            self._open(StackDump(first_line=lineno, form="gdb"))
            return True
        if line.removeprefix("(").startswith(LLDB_PROMPTS):
            self._open(StackDump(first_line=lineno, form="lldb"))
            return True
        if self.form != "gdb" and GDB_LWP in line and _GDB_THREAD.match(line):
            self._open(StackDump(first_line=lineno, form="gdb"))  # a prompt-less paste: the header is read next
            return False
        m = _ATTACH_HEADER.match(line)
        if m:
            dump = StackDump(pid=int(m.group(1)), first_line=lineno, time_ns=int(m.group(3)), reason=m.group(4))
            dump.rank = int(m.group(2)) if m.group(2) != "None" else None
            self._open(dump)
            return True
        m = _HOOK_HEADER.match(line)
        if m:
            dump = StackDump(pid=int(m.group(3)), first_line=lineno, rank=int(m.group(2)), time_ns=int(m.group(4)))
            dump.reason, dump.form = m.group(1), "hook"
            self._open(dump)
            return True
        m = _SPY_PROCESS.match(line)
        if m and not _headed(self.current, int(m.group(1))):  # else: py-spy's own line under scope attach's header
            self._open(StackDump(pid=int(m.group(1)), first_line=lineno))
        return m is not None

    def _hook_line(self, line: str) -> bool:
        """A line of scope's hook dump: a thread header, or a frame (prepended, so frames stay innermost first)."""
        if self.form != "hook":
            return False
        m = _HOOK_THREAD.match(line)
        if m and self.current is not None:
            self.thread = None if m.group(4) else ThreadStack(name=m.group(1))
            if self.thread:
                self.current.threads.append(self.thread)
            return True
        if self.thread is None:
            return False
        m = _TB_FRAME.match(line)
        if m:
            self.thread.frames.insert(0, (m.group(3), m.group(1), int(m.group(2))))
            return True
        if not line.strip() or line.startswith((" ", "\t")):
            return True  # a frame's source line, or the blank between threads
        # another format's line: the hook's dump ended before it, and what follows opens a dump of its own
        self.thread, self.current = None, None
        return False

    def _thread_header(self, lineno: int, line: str) -> bool:
        """faulthandler's or py-spy's thread header."""
        m = _FH_THREAD.match(line) or _SPY_THREAD.match(line)
        if not m:
            return False
        name = (m.group(3) or m.group(1)) if m.re is _SPY_THREAD else m.group(2)
        last = self.thread if self.form == "python" else None
        if m.re is _SPY_THREAD and last is not None and not last.frames and last.name == name:
            self.pending.append(last)  # headers listed together share the stack under the last of them
        else:
            self.pending = []
        if self.current is None or self.form != "python" or _starts_new_dump(self.current, m, name):
            self.current = StackDump(first_line=lineno, pid=_spy_pid(m, name))
            if m.re is _FH_THREAD and 0 < lineno - self.fatal_at <= FATAL_GAP:
                self.current.reason = "fatal"  # faulthandler's dump of a crash, not of a process that waits
            self.dumps.append(self.current)
        self.thread = ThreadStack(name=name or "?", current=m.group(1) == "Current thread")
        self.current.threads.append(self.thread)
        return True

    def _frame(self, line: str) -> None:
        """A faulthandler or py-spy frame."""
        if self.thread is None or self.form != "python":
            return
        m = _FH_FRAME.match(line) or _SPY_FRAME.match(line)
        if m and not line.strip().startswith(("Arguments", "Locals")):
            fh = m.re is _FH_FRAME
            self.thread.frames.append(
                (m.group(3), m.group(1), int(m.group(2))) if fh else (m.group(1), m.group(2), int(m.group(3)))
            )
            for other in self.pending:
                other.frames = self.thread.frames

    def _gdb_line(self, lineno: int, line: str) -> bool:
        """A line of gdb's backtrace after its prompt: one thread a 'Thread N' header (or the current thread
        alone), its frames a function without its arguments, the source file or the library."""
        dump = self.current
        if dump is None or dump.form != "gdb":
            return False
        if self.thread is not None and self.thread.current and self.thread.frames and line.startswith("#0 "):
            dump = StackDump(first_line=lineno, form="gdb")  # a second backtrace pasted without its own prompt
            self._open(dump)
        m = _GDB_THREAD.match(line)
        if m or (self.thread is None and line.startswith("#0 ")):
            name = "MainThread" if m and m.group(1) == "1" else f"gdb thread {m.group(1) if m else '?'}"
            self.thread = ThreadStack(name=name, current=m is None)
            dump.threads.append(self.thread)
            if m:
                return True
        f = _GDB_FRAME.match(line) if self.thread is not None else None
        if f is None or self.thread is None:
            return False
        self.thread.frames.append((f.group(2).rsplit(" (", 1)[0], f.group(3) or "?", int(f.group(4) or 0)))
        return True

    def _debugger_exit(self) -> None:
        """The process gdb or lldb dumped ran on and exited cleanly: its last dump shows no stuck process."""
        dump = next((d for d in reversed(self.dumps) if d.form in ("gdb", "lldb")), None)
        if dump is not None:
            dump.reason = "exit"

    def _lldb_line(self, lineno: int, line: str) -> bool:
        """A line of lldb's backtrace: a thread header (a thread seen again opens the next dump) or a frame, its
        function without the arguments, its library as the file (a native frame: no line). A frame #0 outside an
        lldb dump opens one: a thread's frames pasted without their header."""
        m = _LLDB_THREAD.match(line) if "thread #" in line else None
        if m and (LLDB_STOP in line or "name = " in line or "tid = " in line):
            name = "MainThread" if m.group(1) == "1" else f"lldb thread {m.group(1)}"
            dump = self.current
            if dump is None or dump.form != "lldb" or any(t.name == name for t in dump.threads):
                self._open(StackDump(first_line=lineno, form="lldb"))
            self.thread = ThreadStack(name=name, current=line.lstrip().startswith("*"))
            if self.current is not None:
                self.current.threads.append(self.thread)
                _lldb_crash(self.current, lineno, line)
            return True
        f = _LLDB_FRAME.match(line) if "frame #" in line else None
        if f is None:
            return False
        if self.form != "lldb" or self.thread is None:
            if f.group(1) != "0":
                return False
            dump = StackDump(first_line=lineno, form="lldb")
            self._open(dump)
            self.thread = ThreadStack(name="lldb thread ?", current=True)
            dump.threads.append(self.thread)
        self.thread.frames.append((f.group(3).split("(", 1)[0].strip(), f.group(2), 0))
        return True

    def _recipe_line(self, lineno: int, line: str) -> bool:
        """The recipe's thread header (in any format's dump: it opens or continues a recipe dump), or a frame of
        its thread (outermost first: prepended, so frames stay innermost first)."""
        m = _RECIPE_THREAD.match(line)
        if m:
            pid = int(m.group(1)) if m.group(1) else None
            name = f"thread {m.group(2)}"
            dump = self.recipe_dumps.get(pid)
            if dump is None or any(t.name == name for t in dump.threads):  # a thread id seen again: the next dump
                dump = self.recipe_dumps[pid] = StackDump(pid=pid, first_line=lineno, form="recipe")
                self.dumps.append(dump)
            self.current, self.thread, self.pending = dump, ThreadStack(name=name), []
            dump.threads.append(self.thread)
            return True
        thread = self.thread
        f = _RECIPE_FRAME.match(line) if thread is not None and self.form == "recipe" else None
        if f is None or thread is None:
            return False
        thread.frames.insert(0, (f.group(3), f.group(1), int(f.group(2))))
        if f.group(3) == "<module>" and not thread.current:
            self._second_main_opens_a_dump(thread, lineno)
            thread.current = True
        return True

    def _second_main_opens_a_dump(self, thread: ThreadStack, lineno: int) -> None:
        """A process has one main thread (the one started at <module>): a second one in a recipe dump is the
        next dump's, with the threads after it (another process, or the same one dumped again)."""
        dump = self.current
        if dump is None or not any(t.current for t in dump.threads if t is not thread):
            return
        dump.threads.remove(thread)
        moved = self.recipe_dumps[dump.pid] = StackDump(pid=dump.pid, first_line=lineno, form="recipe")
        moved.threads.append(thread)
        self.dumps.append(moved)
        self.current = moved


def _lldb_crash(dump: StackDump, lineno: int, line: str) -> None:
    """A thread header whose stop reason is a fault or an abort marks its dump as that crash's report (the first
    such thread: the one that took the signal)."""
    crash = _LLDB_CRASH.search(line) if not dump.signal else None
    if crash is not None:
        dump.signal = crash.group(1) or _MACH_SIGNALS[crash.group(2)]
        dump.signal_line = lineno


def crash_frames(dump: StackDump) -> list[str]:
    """The frames of the thread an lldb crash stopped in, innermost first, as 'func from library' (the signal's
    readers name the faulting library from them)."""
    thread = next((t for t in dump.threads if t.current and t.frames), dump.main_thread())
    return [f"{func} from {file}" for func, file, _ in (thread.frames if thread is not None else [])]


def _headed(dump: StackDump | None, pid: int) -> bool:
    """The dump was opened by scope attach's header for this pid and holds no thread yet."""
    return dump is not None and dump.pid == pid and bool(dump.reason) and not dump.threads


def _starts_new_dump(dump: StackDump, m: re.Match[str], name: str | None) -> bool:
    """faulthandler lists the current thread last: a thread header after it opens a new dump. A process has
    one main thread: a second py-spy 'MainThread' is the next process's dump (quoted without its 'Process'
    line)."""
    if m.re is _FH_THREAD:
        return any(t.current for t in dump.threads)
    return name == "MainThread" and any(t.name == "MainThread" for t in dump.threads)


def _spy_pid(m: re.Match[str], name: str | None) -> int | None:
    """A py-spy main thread's id is its process id (Linux: the main thread's tid is the pid)."""
    if m.re is _SPY_THREAD and name == "MainThread" and m.group(1).isdigit():
        return int(m.group(1))
    return None


def _without_observer(frames: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """Drop the innermost frames that belong to a dumper running in a signal handler."""
    for i, (_, file, _) in enumerate(frames):
        if any(h in file for h in _OBSERVER_HINTS):
            rest = frames[i + 1 :]
            while rest and any(h in rest[0][1] for h in _OBSERVER_HINTS):
                rest = rest[1:]
            return rest or frames
    return frames


def where(dump: StackDump) -> dict[str, object]:
    """Where the main thread stands: the collective it waits in, or the innermost user frame."""
    thread = dump.main_thread()
    if thread is None or not thread.frames:
        return {"state": "unknown"}
    frames = _without_observer(thread.frames)
    known = wait_place(frames, _PLACES)
    # a collective library's own wait or spin below the collective's call (py-spy --native shows both): the
    # call names the collective, the library's frame says what kind of wait it is
    library = _library_wait(known)
    for func, file, line in frames:
        if func in PY_CALLS and "distributed" in file:  # issuing calls too: they name the collective
            return {"state": "in_collective", "op": canonical_op(func), "frame": f"{file}:{line} in {func}", **library}
    for func, file, line in frames:
        if func in _BACKWARD_FUNCS and "autograd" in file:
            return {
                "state": "in_collective",
                "op": "backward (DDP gradient all-reduce)",
                "frame": f"{file}:{line} in {func}",
                **library,
            }
    native = next((f for f in frames if _native_collective(f[0])), None)
    if native is not None:  # gdb's frame in a process group's call or its Work's wait
        op = native[0].split("(", 1)[0].rsplit("::", 1)[-1]
        return {"state": "in_collective", "op": canonical_op(op), "frame": _at(native), **library}
    top = frames[0]
    if top[0] in _WAIT_FUNCS and "distributed" in top[1]:
        return {"state": "in_collective", "op": "wait", "frame": f"{top[1]}:{top[2]} in {top[0]}", **library}
    if library:
        return {"state": "in_collective", "op": "a collective", **library}
    if known is not None:  # a known wait (a DataLoader's queue): the frame of that library says what it is
        place, at = known
        during = next((f[0] for f in frames if evaluation_caller(f[0])), None)
        return {
            "state": "elsewhere",
            "frame": _at(at),
            "innermost": _at(top),
            "waits_for": place.what + (f", during evaluation ({during})" if during else ""),
            "remedy": place.remedy,
        }
    user = next((f for f in frames if not _library_file(f[1]) and not _native_library(f)), top)
    return {
        "state": "elsewhere",
        "frame": _at(user),
        "innermost": _at(top),
    }


def _library_wait(known: tuple[WaitPlace, tuple[str, str, int]] | None) -> dict[str, object]:
    """A collective library's own wait for its GPU work (knowledge/wait_places.py, in_collective): where it
    stands, what the wait is and its remedy; empty for any other wait."""
    if known is None or not known[0].in_collective:
        return {}
    place, at = known
    return {"frame": _at(at), "waits_for": place.what, "remedy": place.remedy}


def _at(frame: tuple[str, str, int]) -> str:
    """'file:line in func'; a native frame (line 0) names its library alone."""
    func, file, line = frame
    if "::" in func:  # gdb's C++ frame without debug info keeps the signature: the name alone says it
        func = func.split("(", 1)[0]
    return f"{file}:{line} in {func}" if line else f"{file} in {func}"


def _native_collective(func: str) -> bool:
    """A C++ frame of c10d's process groups in a collective or its wait ('c10d::ProcessGroupNCCL::allreduce',
    'c10d::ProcessGroupNCCL::WorkNCCL::wait'), as gdb names it."""
    name = func.split("(", 1)[0]  # gdb without debug info keeps the C++ signature on the name
    return name.startswith("c10d::") and "ProcessGroup" in name and name.rsplit("::", 1)[-1] in NATIVE_CALLS


def _native_library(frame: tuple[str, str, int]) -> bool:
    """A native frame of a library (gdb's): a shared object, an unknown file, libc or PyTorch's C++."""
    func, file, _ = frame
    if file.endswith(".py"):  # a Python frame ('__del__', '__call__' are the job's own methods)
        return False
    return ".so" in file or file in ("?", "??") or func.startswith(_NATIVE_LIBRARY_FUNCS)


def _library_file(file: str) -> bool:
    """A frame of an installed package or the standard library, not the job's own code."""
    return any(h in file for h in _LIBRARY_HINTS) or file.startswith(_PACKAGE_ROOTS)
