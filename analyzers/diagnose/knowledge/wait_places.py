"""Where a stuck process's main thread can wait outside any collective, by the file its stack shows.

A hang read from stack dumps (py-spy dump, faulthandler) is decided by who waits where: most processes
inside a collective, one or a few elsewhere. The elsewhere is the cause, and the library file it waits in
says what kind of wait it is and what to do. One row a place; the source is where the wait happens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WaitPlace:
    file_part: str  # a substring of the frame's file path ("" for a row that goes by the function)
    what: str  # the wait, in a sentence's words ("waits for ...")
    remedy: str
    source: str
    # a substring of the frame's function: a native frame (gdb's bt) names its library, not the source file
    func_part: str = ""

    def holds(self, func: str, file: str) -> bool:
        return bool(self.file_part and self.file_part in file) or bool(self.func_part and self.func_part in func)


WAIT_PLACES: tuple[WaitPlace, ...] = (
    WaitPlace(
        "torch/utils/data/dataloader.py",
        "waits for a batch from its DataLoader's worker processes",
        "A DataLoader whose workers stopped delivering (a worker deadlocked or died without the main process "
        "noticing) holds this process while its peers wait in the collective: run that loader with "
        "num_workers=0 (the validation loader, if it hangs at evaluation), or give it timeout= so a stuck "
        "worker raises; py-spy dump the worker processes to see where they stand",
        "torch/utils/data/dataloader.py (_MultiProcessingDataLoaderIter._try_get_data blocks on the workers' "
        "result queue); BLOOM-176B chronicles 2022-05 (DataLoader worker deadlock at eval, fixed with "
        "num_workers=0 for validation, Megatron-DeepSpeed PR 282)",
    ),
    WaitPlace(
        "torch/utils/data/_utils/pin_memory.py",
        "waits for the DataLoader's pin-memory thread",
        "The DataLoader's pin-memory thread stopped delivering batches: try pin_memory=False, then num_workers=0, "
        "to find which part of the loader is stuck",
        "torch/utils/data/_utils/pin_memory.py (_pin_memory_loop feeds the main process through a queue)",
    ),
    WaitPlace(
        "multiprocessing/pool.py",
        "waits for a multiprocessing pool's result",
        "A multiprocessing pool of the job's own (pre-processing, a metric) never returned: dump its worker "
        "processes; a pool forked after CUDA or NCCL initialised can deadlock (use the spawn start method)",
        "Python's multiprocessing/pool.py (ApplyResult.get / Pool.map wait on the workers)",
    ),
    # a rank that is not the store's server asks it for a key at start-up (init_process_group, the rendezvous) and
    # blocks in recv until the answer comes: a server that never started answers nothing
    WaitPlace(
        "",
        "waits for a key of the rendezvous store (TCPStore at MASTER_ADDR:MASTER_PORT)",
        "The rendezvous store does not answer: rank 0 (the TCPStore server) could not listen on MASTER_PORT "
        "because another process holds it (ss -ltnp | grep PORT or lsof -i:PORT; stop the stale job or give a "
        "free --master_port / MASTER_PORT), died, or never reached init_process_group; or the peer that should "
        "set the key never did. Read rank 0's own log first",
        "torch/csrc/distributed/c10d/TCPStore.cpp (TCPStore::doGet / doWait block in tcputil::recvBytes until the "
        "server answers); pytorch/pytorch#129367 (a rank stuck in TCPStore::get when rank 0's port was taken)",
        func_part="c10d::TCPStore::",
    ),
)


def wait_place(frames: list[tuple[str, str, int]]) -> tuple[WaitPlace, tuple[str, str, int]] | None:
    """The first known wait place among a stack's (function, file, line) frames, innermost first, with the
    frame that shows it."""
    for frame in frames:
        for place in WAIT_PLACES:
            if place.holds(frame[0], frame[1]):
                return place, frame
    return None
