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
    what: str  # the wait, in a sentence's words ("waits for ...")
    remedy: str
    source: str


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
)


def wait_place(files: list[str]) -> WaitPlace | None:
    """The first known wait place among a stack's frame files, innermost first."""
    for file in files:
        for place in WAIT_PLACES:
            if place.file_part in file:
                return place
    return None
