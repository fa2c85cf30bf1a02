"""The CUDA (and HIP) caching allocator's out-of-memory message, as data: the figures it states and the
wordings that torch releases gave it. The memory analyzer (analyzers/memory/oom.py) reads an OOM line's
figures with these rows; adding a wording is adding a row and a test case.

FIGURES: one row per figure, its patterns tried in order (the first that matches gives the value). Each
pattern has one group `v`: a size ("12.19 MiB", "0 bytes") or, for the GPU, a number.
WORDINGS: which release wrote a message, told by a phrase only that wording has; each with a real message.
"""

from __future__ import annotations

from dataclasses import dataclass

SIZE = r"(?P<v>\d+(?:\.\d+)? ?(?:bytes|[KMGTP]iB|B))"


@dataclass(frozen=True)
class Figure:
    name: str
    patterns: tuple[str, ...]
    meaning: str


FIGURES: tuple[Figure, ...] = (
    Figure("tried_to_allocate", (rf"Tried to allocate {SIZE}",), "the request that failed"),
    Figure("gpu", (r"GPU (?P<v>\d+)",), "the device index"),
    Figure(
        "capacity",
        (rf"total capaci?ty of {SIZE}", rf"{SIZE} total capacity"),
        "the device's memory ('capacty': the 2.1 typo)",
    ),
    Figure("free", (rf"of which {SIZE} is free", rf"{SIZE} free;"), "free on the device when it failed"),
    Figure(
        "allocated",
        (rf"{SIZE} is allocated by PyTorch", rf"{SIZE} already allocated"),
        "held by tensors through PyTorch's allocator",
    ),
    Figure(
        "reserved_unallocated",
        # <= 1.4 called it "cached": the cache beyond what is allocated (25.59 GiB allocated beside 14.59
        # MiB "cached" in DeepSpeed#237 cannot be a total)
        (rf"{SIZE} is reserved by PyTorch but unallocated", rf"{SIZE} cached\)"),
        "cached by the allocator but not in use: free only for requests that fit its blocks",
    ),
    Figure(
        "reserved",
        (rf"{SIZE} reserved in total by PyTorch",),
        "allocated + reserved-but-unallocated (stated by 1.5 to 2.0)",
    ),
    Figure(
        "process_in_use",
        (rf"this process has {SIZE} memory in use",),
        "all of this process's device memory, PyTorch's and not (CUDA context, NCCL buffers)",
    ),
    Figure(
        "private_pools",
        (rf"with {SIZE} allocated in private pools",),
        "of the allocated, held in private pools (CUDA graphs)",
    ),
)


@dataclass(frozen=True)
class Wording:
    id: str
    phrase: str  # a regex only this wording has
    era: str
    example: str
    source: str


# Most specific first: the first row whose phrase matches names the wording.
WORDINGS: tuple[Wording, ...] = (
    Wording(
        "capacity_of_which_free_typo",
        r"total capacty of",
        "PyTorch 2.1 (the 'capacty' typo)",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacty "
        "of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this process has 3.44 GiB memory in "
        "use. Of the allocated memory 2.58 GiB is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but "
        "unallocated.",
        "https://github.com/Synthintel0/MyGirlGPT/issues/11",
    ),
    Wording(
        "capacity_of_which_free",
        r"total capacity of .* of which",
        "PyTorch 2.2 and later (torch.OutOfMemoryError from 2.5, HIP builds alike)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.78 GiB. GPU 0 has a total capacity of "
        "31.47 GiB of which 12.73 GiB is free. Including non-PyTorch memory, this process has 18.73 GiB memory in "
        "use. Of the allocated memory 9.08 GiB is allocated by PyTorch, and 9.35 GiB is reserved by PyTorch but "
        "unallocated.",
        "https://github.com/murong-xu/CADS/issues/4",
    ),
    Wording(
        "reserved_in_total",
        r"reserved in total by PyTorch",
        "PyTorch 1.5 to 2.0",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.73 GiB (GPU 0; 8.00 GiB total "
        "capacity; 17.20 GiB already allocated; 0 bytes free; 19.15 GiB reserved in total by PyTorch)",
        "https://github.com/YingqianWang/iPASSR/issues/9",
    ),
    Wording(
        "cached",
        r"cached\)",
        "PyTorch 1.4 and earlier",
        "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB "
        "already allocated; 9.28 GiB free; 4.68 MiB cached)",
        "https://github.com/pytorch/pytorch/issues/16417",
    ),
)
