"""The component an exception was raised in, read from its traceback's frames, and that component's remedy.

A Python exception no signature row names gets "fix the exception" unless its traceback says where it was
raised: a frame inside torch's checkpoint writer, a DataLoader worker or the model loader names a component
whose usual causes are known. The deepest frame that matches a row wins (the raise site before its callers);
a row's `message` must also match the exception's text where it is given. Each remedy may quote `{path}`, the
file the message names (the checkpoint it could not open).

Sources: torch/serialization.py (`_open_zipfile_writer` raises "File ... cannot be opened." when the
PyTorchFileWriter cannot create the file: a missing folder, no permission, a full volume; `torch.load`'s
"PytorchStreamReader failed reading zip archive" is a truncated file), confirmed by Sachini/ronin#51 (a full
checkpoint volume); torch/utils/data/_utils/worker.py (a worker's exception is re-raised in the main process as
"Caught X in DataLoader worker process N"; num_workers=0 runs the dataset in the main process,
pytorch.org/docs/stable/data.html); transformers' modeling_utils / huggingface_hub file_download (a model
that cannot be found or downloaded, HF_HOME / HF_HUB_OFFLINE, huggingface.co/docs/huggingface_hub/package_reference/
environment_variables); torch.nn.Module.load_state_dict's "Error(s) in loading state_dict" (the checkpoint's
keys or shapes differ from the model's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RaisingFrame:
    component: str
    frame: re.Pattern[str]  # on one traceback frame ('path:line in function')
    message: re.Pattern[str] | None
    remedy: str


RAISING_FRAMES: tuple[RaisingFrame, ...] = (
    RaisingFrame(
        "checkpoint save",
        re.compile(r"torch/serialization\.py:\d+ in (?:save|_open_zipfile_writer|_open_file|__init__)"),
        re.compile(r"cannot be opened|No such file|Permission denied|No space left|Errno 28|Errno 13|Errno 2"),
        "The checkpoint file{path| } could not be created by torch.save: check that its folder exists on every node "
        "that saves (os.makedirs(..., exist_ok=True) before the first save), that the job's user may write there, "
        "and that the volume has room (df -h and the quota on that path: a full checkpoint volume is the usual "
        "cause); free space or save to another volume, and keep fewer checkpoints.",
    ),
    RaisingFrame(
        "checkpoint load",
        re.compile(r"torch/serialization\.py:\d+ in (?:load|_load|__init__|_open_zipfile_reader)"),
        re.compile(r"PytorchStreamReader failed|failed finding central directory|unexpected EOF|invalid load key"),
        "The checkpoint file{path| } is truncated or corrupt: a save that was cut off (a full volume, a job "
        "killed mid-save, a copy still in progress). Load the previous checkpoint, and write checkpoints to a "
        "temporary name and rename when complete.",
    ),
    RaisingFrame(
        "DataLoader worker",
        re.compile(r"torch/utils/data/(?:_utils/worker\.py|dataloader\.py)"),
        re.compile(r"DataLoader worker|in DataLoader"),
        "The exception came from the dataset inside a DataLoader worker: its own traceback (after 'Original "
        "Traceback') names the sample code that failed; rerun with num_workers=0 to raise it in the main process, "
        "and check the file or sample it read.",
    ),
    RaisingFrame(
        "state_dict load",
        re.compile(r"torch/nn/modules/module\.py:\d+ in load_state_dict"),
        None,
        "The checkpoint's parameter names or shapes differ from the model's: load it into a model built with the "
        "same config (and the same wrapper: a 'module.' prefix from DDP, '_orig_mod.' from torch.compile), or "
        "convert it; strict=False only where missing keys are intended.",
    ),
    RaisingFrame(
        "model download",
        re.compile(r"huggingface_hub/(?:file_download|utils/_http|utils/_validators)\.py|transformers/utils/hub\.py"),
        None,
        "The model or tokenizer files could not be found or downloaded: check the name or local path, the network "
        "to the hub from every node (or download once and set HF_HUB_OFFLINE=1), the token for a gated model, and "
        "HF_HOME's free space.",
    ),
)

_PATH = re.compile(r"(?:File|file|path) '?\"?([^\s'\"]+\.\w{1,12})'?\"?")


def raised_in(frames: list[str], message: str) -> str | None:
    """The remedy of the component the deepest matching frame names, or None."""
    for frame in reversed(frames):
        for row in RAISING_FRAMES:
            if row.frame.search(frame) and (row.message is None or row.message.search(message)):
                m = _PATH.search(message)
                path = f" ({m.group(1)})" if m else ""
                return row.remedy.replace("{path| }", path)
    return None
