"""Signature rows for shared memory that earlier, killed runs left behind in /dev/shm: a POSIX shared-memory
segment outlives its processes until someone unlinks it, so a run killed mid-way (kill -9, a node's OOM killer, a
pod evicted) leaves its segments, and the next run on that host finds a name taken, a registry that still lists the
dead run, or /dev/shm full. Same fields as knowledge/signatures.py; signatures.py splices them in before the
generic /dev/shm rows (shm_too_small: a small /dev/shm is the other reason it fills).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

_LEFTOVERS = (
    "make sure no process of the earlier run is left (ps -ef | grep the script; kill the stragglers and zombies' "
    "parents), then remove the segments it left: ls -la /dev/shm lists them with their owner and time"
)
_TORCH_SHM = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/MapAllocator.cpp"

STALE_SHM_SIGNATURES: tuple[Signature, ...] = (
    # mosaicml-streaming registers each StreamingDataset's local directories in shared memory (streaming/base/shared/
    # prefix.py _check_and_find): the 'vs' form is another registration of the same directory, a run still alive
    # or the leftovers of a dead one; the error names its own clean-up. llm-foundry#436 (runs started and killed).
    row(
        "streaming_stale_shared_memory",
        "reused local directory",
        r"Reused local directory: .*\]\s*vs\b",
        era="mosaicml-streaming >= 0.5 (StreamingDataset; llm-foundry, composer)",
        cause="configuration",
        meaning="mosaicml-streaming found this dataset's local directory already registered in shared memory: "
        "another live job uses it, or a killed earlier run left its shared-memory registry behind.",
        remedy=(
            "Streaming's shared memory still lists this local directory: if no other job on this node uses it, "
            "it is stale state of an earlier, killed run: " + _LEFTOVERS + " (streaming's own clean-up: call "
            "streaming.base.util.clean_stale_shared_memory() once, on one process, before any StreamingDataset "
            "is created; or delete the local directory's cache); a job that runs beside it needs its own local "
            "directory."
        ),
        reference="https://github.com/mosaicml/llm-foundry/issues/436; mosaicml/streaming "
        "streaming/base/shared/prefix.py, streaming/base/util.py clean_stale_shared_memory",
    ),
    # the same registry's check of one dataset's own streams (prefix.py _check_self): two streams, one local dir
    row(
        "streaming_duplicate_local_dir",
        "reused local directory",
        # a list of the streams' directories, or one directory as a bare string (older releases)
        r"Reused local directory: (?:\[[^\]\n]*\]|[^\s\[][^\n]*?)\. Provide a different one",
        era="mosaicml-streaming >= 0.5",
        cause="configuration",
        meaning="Two streams of one StreamingDataset were given the same local directory.",
        remedy="Give each stream of the dataset its own local directory (Stream(local=...)).",
        reference="https://github.com/mosaicml/streaming/blob/main/streaming/base/shared/prefix.py (_check_self)",
    ),
    # CPython's SharedMemory(name, create=True) (Lib/multiprocessing/shared_memory.py: shm_open with O_CREAT|O_EXCL)
    # on a name that exists: a segment of an earlier run (or of a live one) holds it. The traceback's last frames
    # name the module; a FileExistsError elsewhere is a file's.
    row(
        "shm_segment_exists",
        "file exists",
        r"FileExistsError: \[Errno 17\] File exists: '(?P<shm_name>/[^/']+)'",
        era="Python >= 3.8 multiprocessing.shared_memory (streaming, vLLM, DataLoader-like shared buffers)",
        cause="configuration",
        meaning="A shared-memory segment could not be created because one of that name exists in /dev/shm: a "
        "segment that an earlier, killed run left behind (or another live job's).",
        remedy=(
            "The segment /dev/shm{shm_name|/NAME} exists already, left by an earlier run that did not unlink it: "
            + _LEFTOVERS
            + " (rm /dev/shm{shm_name|/NAME}); a library that names its own clean-up call (mosaicml-streaming's "
            "streaming.base.util.clean_stale_shared_memory()) does the same."
        ),
        reference="https://docs.python.org/3/library/multiprocessing.shared_memory.html",
        before_re=r"shared_memory|shm_open|SharedMemory",
        fields_re=r"File exists: '(?P<shm_name>/[^/']+)'",
    ),
    # torch's shared-memory tensors (DataLoader workers, torch.multiprocessing) map a POSIX segment '/torch_<pid>_...'
    # (ATen MapAllocator.cpp: shm_open(O_CREAT | O_EXCL) failing prints 'unable to open shared memory object <NAME>
    # in read-write mode: STRERROR (ERRNO)'): 17 is a name that exists. A full /dev/shm fails later, at the write
    # ('unable to write to file </torch_...>: No space left on device (28)'): shm_too_small's.
    row(
        "torch_shm_name_exists",
        "unable to open shared memory object",
        r"unable to open shared memory object <(?P<shm_name>[^>\n]+)> in read-write mode: [^(\n]*\(17\)",
        era="torch releases whose MapAllocator prints the errno (torch.multiprocessing, DataLoader workers)",
        cause="configuration",
        meaning="torch could not create a shared-memory segment for a tensor: one of that name exists in "
        "/dev/shm, left by an earlier run that was killed (or another live job's).",
        remedy=(
            "/dev/shm holds a leftover segment ({shm_name|/torch_*}): ls -la /dev/shm (torch_* segments of "
            "processes that no longer run are leftovers): " + _LEFTOVERS + "."
        ),
        reference=_TORCH_SHM,
        fields_re=r"shared memory object <(?P<shm_name>[^>\n]+)>",
    ),
    row(
        "torch_shm_too_many_files",
        "unable to open shared memory object",
        r"unable to open shared memory object <[^>]+> in read-write mode: [^(]*\(24\)",
        era="all torch releases (torch.multiprocessing's file_descriptor sharing strategy)",
        cause="configuration",
        meaning="torch ran out of file descriptors for shared-memory tensors: the default file_descriptor "
        "strategy keeps one open per tensor shared between processes.",
        remedy=(
            "Raise the open-files limit (ulimit -n 65536 in the job's shell or container) or switch the sharing "
            "strategy: torch.multiprocessing.set_sharing_strategy('file_system') at the start of the script."
        ),
        reference=_TORCH_SHM + "; https://pytorch.org/docs/stable/multiprocessing.html#sharing-strategies",
    ),
)
