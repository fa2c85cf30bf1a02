"""The component an exception was raised in, read from its traceback's frames, and that component's remedy.

A Python exception no signature row names gets "fix the exception" unless its traceback says where it was
raised: a frame inside torch's checkpoint writer, a DataLoader worker or the model loader names a component
whose usual causes are known. The deepest frame that matches a row wins (the raise site before its callers);
a row's `message` must also match the exception's text where it is given (rows of one frame, most specific
message first). A remedy may quote `{path| }`: the file or folder the message names (filled by
signature_scan.fill_remedy, the slot syntax of the signature rows). Each row keeps its source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.remedies import ROOM_FOR_CHECKPOINTS


@dataclass(frozen=True)
class RaisingFrame:
    component: str
    frame: re.Pattern[str]  # on one traceback frame ('path:line in function')
    message: re.Pattern[str] | None
    remedy: str
    source: str


_LOAD_FRAME = re.compile(r"torch/serialization\.py:\d+ in (?:load|_load|_legacy_load|__init__|_open_zipfile_reader)")
_NOT_A_CHECKPOINT = (
    "; torch.load reads a zip archive or a pickle: check the file's first bytes (head -c 100) and size, and fetch "
    "it again."
)

RAISING_FRAMES: tuple[RaisingFrame, ...] = (
    RaisingFrame(
        "checkpoint save",
        re.compile(r"torch/serialization\.py:\d+ in (?:save|_open_zipfile_writer|_open_file|__init__)"),
        re.compile(
            r"cannot be opened|Parent directory .* does not exist|No such file|Permission denied|No space left|"
            r"Errno 28|Errno 13|Errno 2"
        ),
        "The checkpoint file{path| } could not be created by torch.save: check that its folder exists on every node "
        "that saves (os.makedirs(..., exist_ok=True) before the first save), that the job's user may write there, "
        "and that the volume has room (and its quota: a full checkpoint volume is the usual cause): "
        + ROOM_FOR_CHECKPOINTS
        + ".",
        "torch/serialization.py (_open_zipfile_writer: 'File ... cannot be opened.', torch 2.x 'Parent directory "
        "... does not exist.'); Sachini/ronin#51 (a full checkpoint volume)",
    ),
    RaisingFrame(
        "checkpoint load (git-LFS pointer)",
        _LOAD_FRAME,
        re.compile(r"invalid load key, 'v'"),
        "The file{path| } is a git-LFS pointer (a small text file starting 'version https://git-lfs'), not the "
        "checkpoint: run git lfs install && git lfs pull in the repository it came from, or download the file "
        "itself" + _NOT_A_CHECKPOINT,
        "pickle's 'invalid load key' is the first byte of a file that is no pickle: 'v' of git-lfs's pointer "
        "format (git-lfs docs/spec.md)",
    ),
    RaisingFrame(
        "checkpoint load (HTML page)",
        _LOAD_FRAME,
        re.compile(r"invalid load key, '<'"),
        "The file{path| } is an HTML page (a login, error or redirect page a download saved in its place), not "
        "the checkpoint: download it again from a direct link with the credentials it needs" + _NOT_A_CHECKPOINT,
        "pickle's 'invalid load key, '<'': the '<' of '<!DOCTYPE html>' / '<html>'",
    ),
    RaisingFrame(
        "checkpoint load",
        _LOAD_FRAME,
        re.compile(r"PytorchStreamReader failed|failed finding central directory|unexpected EOF|invalid load key"),
        "The checkpoint file{path| } is truncated or corrupt: a save that was cut off (a full volume, a job "
        "killed mid-save, a copy still in progress). Load the previous checkpoint, and write checkpoints to a "
        "temporary name and rename when complete.",
        "torch/serialization.py (torch.load's 'PytorchStreamReader failed reading zip archive': a zip cut short)",
    ),
    RaisingFrame(
        "DataLoader worker",
        re.compile(r"torch/utils/data/(?:_utils/worker\.py|dataloader\.py)"),
        re.compile(r"DataLoader worker|in DataLoader"),
        "The exception came from the dataset inside a DataLoader worker: its own traceback (after 'Original "
        "Traceback') names the sample code that failed; rerun with num_workers=0 to raise it in the main process, "
        "and check the file or sample it read.",
        "torch/utils/data/_utils/worker.py ('Caught X in DataLoader worker process N'); "
        "pytorch.org/docs/stable/data.html (num_workers=0)",
    ),
    RaisingFrame(
        "state_dict load",
        re.compile(r"torch/nn/modules/module\.py:\d+ in load_state_dict"),
        # only load_state_dict's own report: an exception from a user's hook inside it is that hook's
        re.compile(r"Error\(s\) in loading state_dict|size mismatch|Missing key|Unexpected key"),
        "The checkpoint's parameter names or shapes differ from the model's: load it into a model built with the "
        "same config (and the same wrapper: a 'module.' prefix from DDP, '_orig_mod.' from torch.compile), or "
        "convert it; strict=False only where missing keys are intended.",
        "torch/nn/modules/module.py (load_state_dict's 'Error(s) in loading state_dict for ...')",
    ),
    RaisingFrame(
        "model download",
        re.compile(r"huggingface_hub/(?:file_download|utils/_http|utils/_validators)\.py|transformers/utils/hub\.py"),
        None,
        "The model or tokenizer files could not be found or downloaded: check the name or local path, the network "
        "to the hub from every node (or download once and set HF_HUB_OFFLINE=1), the token for a gated model, and "
        "HF_HOME's free space.",
        "huggingface_hub file_download.py; huggingface.co/docs/huggingface_hub/package_reference/environment_variables",
    ),
)

# The file or folder the message names as the one it could not open or create; a member inside a checkpoint's
# archive ('failed locating file constants.pkl') is not a path and is never quoted.
_PATH = re.compile(
    r"\bFile '?\"?(?P<file>[^\s'\"]+)'?\"? cannot be opened|No such file or directory: '(?P<missing>[^']+)'|"
    r"Permission denied: '(?P<denied>[^']+)'|Parent directory (?P<folder>\S+) does not exist"
)


def raised_in(frames: list[str], message: str) -> tuple[str, dict[str, str]] | None:
    """The remedy template of the component the deepest matching frame names, and its `path` field; or None."""
    for frame in reversed(frames):
        for row in RAISING_FRAMES:
            if row.frame.search(frame) and (row.message is None or row.message.search(message)):
                m = _PATH.search(message)
                named = {k: v for k, v in m.groupdict().items() if v} if m else {}
                path = f"in {named['folder']}" if "folder" in named else next(iter(named.values()), "")
                return row.remedy, {"path": path}
    return None
