"""Where a stuck process's main thread can wait outside any collective, by the file its stack shows.

A hang read from stack dumps (py-spy dump, faulthandler) is decided by who waits where: most processes
inside a collective, one or a few elsewhere. The elsewhere is the cause, and the library file it waits in
says what kind of wait it is and what to do. One row a place; the source is where the wait happens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WaitPlace:
    file_part: str  # a substring of the frame's file path
    funcs: frozenset[str]  # the functions of that file that block (the wait itself, not any call into the file)
    what: str  # the wait, in a sentence's words ("waits for ...")
    remedy: str
    source: str


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
)

Frame = tuple[str, str, int]  # (func, file, line)


def wait_place(frames: list[Frame]) -> tuple[WaitPlace, Frame] | None:
    """The first known wait among a stack's frames, innermost first, with the frame that waits."""
    for frame in frames:
        for place in WAIT_PLACES:
            if place.file_part in frame[1] and frame[0] in place.funcs:
                return place, frame
    return None
