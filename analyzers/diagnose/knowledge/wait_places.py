"""Where a stuck process's main thread can wait outside any collective, by the file its stack shows.

A hang read from stack dumps (py-spy dump, faulthandler) is decided by who waits where: most processes
inside a collective, one or a few elsewhere. The elsewhere is the cause, and the library file it waits in
says what kind of wait it is and what to do. One row a place; the source is where the wait happens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WaitPlace:
    file_part: str  # a substring of the frame's file path ("" for a row that goes by the function alone)
    funcs: frozenset[str]  # the functions of that file that block (the wait itself, not any call into the file)
    what: str  # the wait, in a sentence's words ("waits for ...")
    remedy: str
    source: str
    # the blocking functions of a native frame (gdb's bt names the library's C++ function, no source file)
    func_re: str = ""
    # the wait is a collective's own (its completion on the GPU): the process waits inside a collective
    in_collective: bool = False

    def holds(self, func: str, file: str) -> bool:
        if self.func_re:
            return re.match(self.func_re, func) is not None
        return self.file_part in file and func in self.funcs


WAIT_PLACES: tuple[WaitPlace, ...] = (
    # Only the multi-process iterator waits: with num_workers=0 the main thread runs the dataset itself
    # (_SingleProcessDataLoaderIter._next_data -> fetch -> __getitem__), which is the user's code, not a wait.
    # With pin_memory=True the batches reach this queue through the pin-memory thread: the same frames.
    WaitPlace(
        "torch/utils/data/dataloader.py",
        frozenset({"_try_get_data", "_get_data"}),
        "waits for a batch from its DataLoader's worker processes",
        "A DataLoader whose workers stopped delivering (a worker deadlocked or died without the main process "
        "noticing) holds this process, and any peer waiting for it in a collective: run that loader with "
        "num_workers=0 (the validation loader, if it hangs at evaluation), or give it timeout= so a stuck "
        "worker raises; with pin_memory=True try pin_memory=False too (its pin-memory thread feeds the same "
        "queue); py-spy dump the worker processes to see where they stand",
        "torch/utils/data/dataloader.py (_MultiProcessingDataLoaderIter._try_get_data blocks on the data "
        "queue the workers, or the pin-memory thread, fill); BLOOM-176B chronicles 2022-05 (DataLoader worker "
        "deadlock at eval, fixed with num_workers=0 for validation, Megatron-DeepSpeed PR 282)",
    ),
    WaitPlace(
        "multiprocessing/pool.py",
        frozenset({"get", "wait", "map", "starmap", "next"}),
        "waits for a multiprocessing pool's result",
        "A multiprocessing pool of the job's own (pre-processing, a metric) never returned: dump its worker "
        "processes; a pool forked after CUDA or NCCL initialised can deadlock (use the spawn start method)",
        "Python's multiprocessing/pool.py (ApplyResult.get / wait, Pool.map, IMapIterator.next block on the workers)",
    ),
    # A rank whose collective library queued a GPU collective and polls for its completion event: the kernel
    # never finished, so a peer never joined it or the library's collective itself deadlocked (an NCCL release's
    # bug: horovod/horovod#2601, alltoall under NCCL 2.8.3, fixed in 2.8.4).
    WaitPlace(
        "",
        frozenset(),
        "waits for a collective it queued on the GPU to complete (the kernel never finished)",
        "The collective kernel this rank queued never completed: either a peer never launched the matching "
        "collective (compare every rank's stack: the one elsewhere is the cause), or every rank is inside it and "
        "the communication library deadlocked in that collective, an NCCL release's bug: print the NCCL version "
        "(NCCL_DEBUG=VERSION) and try a newer NCCL release (or the last one that worked); NCCL_DEBUG=INFO shows "
        "the collective's algorithm and protocol (NCCL_ALGO / NCCL_PROTO to test another)",
        "horovod/common/ops/cuda_operations.cc (GPUContext::impl::WaitForEvents polls cudaEventQuery on the "
        "events FinalizeGPUQueue recorded after the NCCL call, yielding between polls); horovod/horovod#2601",
        func_re=r"horovod::common::\S*WaitForEvents\b",
        in_collective=True,
    ),
    # A rank posting work to its proxy thread: src/proxy.cc ncclLocalOpAppend yields in a loop until the proxy
    # thread frees an op slot. The proxy frees slots as it picks ops up, whatever the network does, so a rank held
    # here is NCCL's own state going wrong, a release's bug (marin-community/marin#7344: proxy op slots leaked on
    # aarch64 before NCCL 2.29.3), not a missing rank. Listed before the launch row: its frames stand above this one.
    WaitPlace(
        "",
        frozenset(),
        "spins inside NCCL's own host code, waiting for a proxy op slot its proxy thread never frees "
        "(no wait for a peer)",
        "The process never got its collective onto the GPU: it spins in NCCL's proxy code (ncclLocalOpAppend), "
        "waiting for an op slot that only NCCL's own proxy thread frees, which is NCCL's state going wrong, not "
        "a peer missing: a known NCCL release bug (proxy op slots that leak, fixed in NCCL 2.29.3). Print the "
        "NCCL version (NCCL_DEBUG=VERSION) and run another NCCL release, a newer one first (pip install "
        "nvidia-nccl-cu12==VERSION, or the NCCL of another PyTorch build), checking its release notes for the fix",
        "NVIDIA/nccl src/proxy.cc (ncclLocalOpAppend: while (freeOp == -1) yield, slots freed by the proxy "
        "thread); marin-community/marin#7344 (fixed by NCCL 2.29.3)",
        func_re=r"ncclLocalOpAppend\b",
        in_collective=True,
    ),
    # A rank in NCCL's kernel launch: src/group.cc doLaunches -> src/enqueue.cc ncclLaunchKernelBefore_NoUncapturedCuda
    # -> uploadWork -> waitWorkFifoAvailable spins until the GPU has consumed earlier work from the work FIFO, and
    # ncclLaunchKernel's cuLaunchKernelEx blocks when the stream's launch queue is full. Both drain only as earlier
    # kernels finish, and an earlier collective kernel stuck on a peer that never joined never finishes: this is
    # also where a rank waiting for a missing peer stands, so the peer comes first (as the WaitForEvents row), the
    # release's bug second (huggingface/text-generation-inference#2099: every shard spinning in doLaunches under
    # CUDA graphs, NVIDIA/nccl#1251, fixed by another NCCL).
    WaitPlace(
        "",
        frozenset(),
        "waits in NCCL's kernel launch for the GPU to drain earlier work (an earlier kernel never finished)",
        "The rank cannot launch its collective because the GPU never finishes earlier work: either an earlier "
        "collective kernel waits for a peer that never joined it (compare every rank's stack: a rank outside the "
        "collective, or in another one, is the cause; TORCH_NCCL_DUMP_ON_TIMEOUT=1 records which rank never "
        "enqueued it), or, when every rank's dump stands in this launch code, NCCL's own launch went wrong, a "
        "known class of NCCL release bugs (kernel launches under CUDA graphs): print the NCCL version "
        "(NCCL_DEBUG=VERSION) and run another NCCL release, a newer one first (pip install "
        "nvidia-nccl-cu12==VERSION, or the NCCL of another PyTorch build), and try without CUDA graphs (eager "
        "mode) to confirm",
        "NVIDIA/nccl src/group.cc (doLaunches), src/enqueue.cc (ncclLaunchKernelBefore_NoUncapturedCuda -> "
        "uploadWork -> waitWorkFifoAvailable spins until the GPU consumed earlier work; ncclLaunchKernel -> "
        "cuLaunchKernelEx blocks on a full launch queue); NVIDIA/nccl#1251; "
        "huggingface/text-generation-inference#2099",
        func_re=r"(?:doLaunches|ncclLaunchKernel\w*|waitWorkFifoAvailable|uploadWork)\b",
        in_collective=True,
    ),
    # a rank that is not the store's server asks it for a key at start-up (init_process_group, the rendezvous) and
    # blocks in recv until the answer comes: a server that never started answers nothing
    WaitPlace(
        "",
        frozenset(),
        "waits for a key of the rendezvous store (TCPStore at MASTER_ADDR:MASTER_PORT)",
        "The rendezvous store does not answer: rank 0 (the TCPStore server) could not listen on MASTER_PORT "
        "because another process holds it (ss -ltnp | grep PORT or lsof -i:PORT; stop the stale job or give a "
        "free --master_port / MASTER_PORT), died, or never reached init_process_group; or the peer that should "
        "set the key never did. Read rank 0's own log first",
        "torch/csrc/distributed/c10d/TCPStore.cpp (TCPStore::doGet / doWait block in tcputil::recvBytes until the "
        "server answers); pytorch/pytorch#129367 (a rank stuck in TCPStore::get when rank 0's port was taken)",
        func_re=r"c10d::TCPStore::(?:doGet|doWait|get|wait)\b",  # a client waiting for a key, not the server
    ),
)

# A launcher waiting for its workers: what Ctrl-C on a job that stopped progressing interrupts (the launcher's
# traceback is all the console shows, the workers' stacks are elsewhere). The workers' stop is the hang; a worker
# that caught an OOM and skipped its batch falls out of step (facebookresearch/fairseq#708: fairseq's 'ran out of
# memory, skipping batch' under several GPUs; smaller --max-tokens fixed it).
LAUNCHER_WAITS = (
    "The launcher was waiting for its worker processes when it was stopped (Ctrl-C on a job that no longer made "
    "progress prints this): the workers hung, not the launcher. Before stopping it next time, dump each worker's "
    "stack (py-spy dump --pid WORKER_PID, the workers are the launcher's child processes) and read their own "
    "output for the last step each reached: a rank out of step (one that skipped a batch after an error it caught, "
    "an OOM it recovered from) leaves the others waiting in a collective; where a worker's log shows such an OOM, "
    "lower the batch size (fairseq: --max-tokens) until none occurs"
)
LAUNCHER_WAIT_PLACES: tuple[WaitPlace, ...] = (
    WaitPlace(
        "torch/distributed/launch.py",
        frozenset({"main"}),
        "torch.distributed.launch waits for its worker processes (process.wait())",
        LAUNCHER_WAITS,
        "torch/distributed/launch.py (torch < 1.9: main() starts one process per rank, then process.wait() on each)",
    ),
    WaitPlace(
        "torch/distributed/elastic/agent/server/api.py",
        frozenset({"_invoke_run"}),
        "torchrun's agent monitors its worker processes (_invoke_run's sleep between checks)",
        LAUNCHER_WAITS,
        "torch/distributed/elastic/agent/server/api.py (SimpleElasticAgent._invoke_run: time.sleep(monitor_interval) "
        "in a loop until the workers end)",
    ),
    WaitPlace(
        "torch/multiprocessing/spawn.py",
        frozenset({"join"}),
        "mp.spawn waits for its worker processes (ProcessContext.join)",
        LAUNCHER_WAITS,
        "torch/multiprocessing/spawn.py (start_processes: while not context.join(): ...)",
    ),
)

# The call a launcher's wait stands in, as its source line shows it under the launcher's frame ('process.wait()',
# 'time.sleep(monitor_interval)', 'ready = multiprocessing.connection.wait(...)'): spawn.py's join and launch.py's
# main also raise a failed worker's error, so only the wait call itself makes the frame a wait.
LAUNCHER_WAIT_CALL = re.compile(r"\b(?:wait|sleep|waitpid|select|poll)\(")
# The standard library's frames below such a wait (subprocess.Popen.wait -> _try_wait -> os.waitpid,
# multiprocessing.connection.wait -> selectors' select): the launcher's frame above them is the wait.
STDLIB_WAIT_FILE = re.compile(r"(?:^|/)(?:subprocess|selectors|multiprocessing/(?:connection|popen_\w+))\.py$")

Frame = tuple[str, str, int]  # (func, file, line)


def wait_place(frames: list[Frame], places: tuple[WaitPlace, ...] = WAIT_PLACES) -> tuple[WaitPlace, Frame] | None:
    """The first known wait among a stack's frames, innermost first, with the frame that waits."""
    for frame in frames:
        for place in places:
            if place.holds(frame[0], frame[1]):
                return place, frame
    return None
