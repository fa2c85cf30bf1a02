"""What a process was doing when it raised, read from the frames of a traceback whose exception line is cut away.

A pasted console or an excerpt often stops among a traceback's frames (reasoning/traceback_end.py): the line that
names the error is lost, but the frames still say where the process was: creating a directory, writing a checkpoint,
fetching a batch, in evaluation, in the backward pass, in a collective. Each row is one activity, told by the
frame's file (a regex on its path) and/or its function (a regex the whole name must match), with the stage of
knowledge/stages.py it puts the process in ('' where the activity belongs to no one stage: file I/O happens in a
save, in data loading, at start-up), the finding's kind, and what to check there. The innermost frame a row knows
names the activity; the outermost frame of a row with a stage names the stage it ran in (a directory created by
save_checkpoint is a checkpoint save's). Row order matters only within one frame: the first row that knows it wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class FrameMark:
    activity: str  # the row's id, the finding code's tail
    what: str  # the activity, as the words after 'while it was' ('creating a directory', 'in the forward pass')
    file: str = ""  # regex searched in the frame's file path ('' any file)
    func: str = ""  # regex the frame's function must match whole ('' any function)
    stage: str = ""  # knowledge/stages.STAGES name ('' none)
    code: str = ""  # regex searched in the source line printed under the frame ('' any line)
    kind: str = "crash"
    checks: str = ""  # what to check, the remedy's body
    source: str = ""

    def knows(self, file: str, func: str, code: str = "") -> bool:
        return bool(
            (not self.file or _rx(self.file).search(file))
            and (not self.func or _rx(self.func).fullmatch(func))
            and (not self.code or _rx(self.code).search(code))
        )


@cache
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# The checks of a raise in file I/O: the path's filesystem, several ranks at one path, space, permissions. A
# distributed filesystem's client can raise FileExistsError from os.makedirs(..., exist_ok=True) when another node
# created the directory at the same moment (its metadata was stale: NVIDIA-NeMo/Automodel#3686 catches it).
FS_CHECKS = (
    "check the filesystem under that path (df -hT <dir>: its free space and its type - NFS, Lustre, GPFS, virtiofs "
    "or a FUSE mount such as s3fs / gcsfuse behave unlike a local disk), its permissions for the user the job runs "
    "as (ls -ld <dir>), and whether several ranks create or write the same directory or file at once: create it "
    "on one rank (rank 0, then a barrier) or catch FileExistsError around os.makedirs(..., exist_ok=True), which "
    "a distributed filesystem's stale metadata can still raise when another node created the directory"
)
# An asynchronous write raises in its worker thread and is re-raised where its result is polled
# (concurrent.futures' result): a non-blocking I/O wrapper writing to NFS failed with EFAULT in
# facebookresearch/metaseq#493 (fixed in #497 by writing from a plain thread pool).
ASYNC_CHECKS = (
    "an asynchronous (non-blocking) write raised in its worker thread and was re-raised where its result was "
    "polled: write the file synchronously, or from a thread of your own (concurrent.futures.ThreadPoolExecutor "
    "around a plain write) instead of the library's non-blocking I/O path, above all on a network filesystem (NFS, "
    "Lustre, virtiofs: df -hT <dir> shows its type and free space); check that the file was completed (renamed "
    "into place)"
)
DATA_CHECKS = (
    "a sample or a file of the dataset failed to load: run the loader with num_workers=0 to see the exception in "
    "the main process, and check the files the dataset reads at that index (the path exists on every node, its "
    "permissions, a corrupt or empty file)"
)
PREP_CHECKS = (
    "the dataset's pre-processing (map / tokenization) raised: run it once on one process (num_proc=1) to see the "
    "failing example, and check the cache directory's free space and permissions (HF_DATASETS_CACHE)"
)
EVAL_CHECKS = (
    "the evaluation raised: run the evaluation alone on a few batches (the evaluation loader, its metric), with "
    "the same number of ranks; a rank that raises there leaves its peers waiting in the next collective"
)
STEP_CHECKS = (
    "the training step raised in the model's code: rerun with CUDA_LAUNCH_BLOCKING=1 (a CUDA error is then raised "
    "at the op that caused it) and look at the shapes and dtypes of that op's inputs"
)
LOAD_CHECKS = (
    "loading the checkpoint raised: check that the file exists and is complete on every node (its size against the "
    "saved one; a save cut short leaves a truncated file) and readable by the job's user, that the state it loads "
    "into matches what was saved (the same keys and shapes: the same model config), and for a sharded "
    "(torch.distributed.checkpoint) checkpoint the parallel layout: state saved per data-parallel rank that is no "
    "tensor (a dataloader's, an RNG's) does not reshard to another world size - load it with the degree it was saved "
    "with, or leave it out of the load; torch.load's weights_only default changed in torch 2.6"
)
PICKLE_CHECKS = (
    "torch.save pickles the whole object before writing it: a lambda, a local function or class, a lock, an open "
    "file, a generator or a live environment in it cannot be pickled - save state_dicts (model.state_dict(), "
    "optimizer.state_dict()) and plain values, not the objects that hold them"
)
# A program's own checkpoint module, by path (Megatron / NeMo checkpointing.py, torchtitan checkpoint.py, a
# checkpoint/ package's own modules: not a tree under a directory so named, such as the /checkpoint/$USER/ of
# fairseq's and metaseq's clusters); not torch/utils/checkpoint.py nor DeepSpeed's activation_checkpointing
CHECKPOINT_MODULE = (
    r"(?<!activation_checkpointing/)checkpointing\.py$|(?<!nn)/checkpoint(?:er|_manager|_io|ing)?/[^/]+\.py$|"
    r"(?<!torch/utils/)(?<!activation_)checkpoint(?:er|_manager)?\.py$"
)
# torch.distributed's collective calls (scope/collective_calls.py lists c10d's; readers/cut_traceback.py reads a
# cut stack in distributed_c10d.py first): the wrappers of other libraries around them
COLLECTIVE_FUNCS = (
    r"all_reduce|all_gather\w*|reduce_scatter\w*|broadcast\w*|barrier|gather|scatter|all_to_all\w*|reduce|"
    r"wait_for_everyone|gather_object|recv\w*|send\w*"
)

FRAME_MARKS: tuple[FrameMark, ...] = (
    # ---- file I/O --------------------------------------------------------------------------------------------
    FrameMark(
        "directory_creation",
        "creating a directory",
        file=r"<frozen os>|/os\.py$|/pathlib\.py$|^os$",
        func=r"makedirs|mkdir",
        kind="input_problem",
        checks=FS_CHECKS,
        source="CPython Lib/os.py (makedirs), pathlib.py (Path.mkdir); NVIDIA-NeMo/Automodel#3686",
    ),
    FrameMark(
        "async_write",
        "writing a file through non-blocking I/O",
        file=r"non_blocking_io\.py$|iopath/common/file_io\.py$|/async_checkpoint\w*\.py$|"
        r"torch/distributed/checkpoint/(?:_async_\w+|staging|_async_executor)\.py$",
        kind="input_problem",
        checks=ASYNC_CHECKS,
        source="iopath / fvcore NonBlockingIO (file_io.py, non_blocking_io.py: the write runs in a thread and "
        "raises where it is polled); torch/distributed/checkpoint/_async_*.py (async_save); "
        "facebookresearch/metaseq#493, #497",
    ),
    FrameMark(
        "file_io",
        "reading or writing a file",
        file=r"/shutil\.py$|/tempfile\.py$|<frozen codecs>|/(?:fsspec|s3fs|gcsfs|adlfs|boto3|botocore|s3transfer|"
        r"iopath|smart_open|megfile|obstore)/|/file_io(?:/|\.py$)|/path_manager\.py$",
        kind="input_problem",
        checks=FS_CHECKS,
        source="CPython Lib/shutil.py (copyfile, copytree, move, rmtree), tempfile.py; fsspec / s3fs / gcsfs / "
        "boto3 (object-store writes and reads); iopath PathManager",
    ),
    FrameMark(
        "file_io",
        "reading or writing a file",
        func=r"fsync|fdatasync|replace|rename|copyfile|copy2|copytree|rmtree",
        kind="input_problem",
        checks=FS_CHECKS,
        source="CPython os.fsync / os.replace / os.rename, shutil's copies (called from a program's own frame)",
    ),
    # ---- checkpoint load / save --------------------------------------------------------------------------------
    # A load raises from a missing or truncated file as well as from a state that does not match the model (keys,
    # shapes, a sharded checkpoint's parallel layout): no one kind, so a crash with both checks. torch.distributed
    # .checkpoint's loader and saver are told apart by file (its utils.py, planners and reduce_scatter serve both:
    # their frames say neither); filesystem.py reads and writes.
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        file=r"torch/serialization\.py$",
        func=r"load\w*|_legacy_load|_open_zipfile_reader|_open_file",
        checks=LOAD_CHECKS,
        source="torch/serialization.py (load, _load, _legacy_load, _open_zipfile_reader)",
    ),
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        file=r"torch/distributed/checkpoint/state_dict_loader\.py$",
        func=r"load\w*|_load\w*|local_step|global_step|read_data",
        checks=LOAD_CHECKS,
        source="torch/distributed/checkpoint/state_dict_loader.py (load, _load_state_dict: local_step / "
        "global_step plan the read; the planners' frames, default_planner.py, serve saves too)",
    ),
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        file=r"torch/distributed/checkpoint/filesystem\.py$",
        func=r"read\w*|_read\w*|_slice_file",
        checks=LOAD_CHECKS,
        source="torch/distributed/checkpoint/filesystem.py (FileSystemReader.read_data, read_metadata)",
    ),
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        func=r"load_checkpoint|_load_checkpoint|load_from_checkpoint|resume_from_checkpoint|_load_from_checkpoint|"
        r"load_state|from_pretrained",
        checks=LOAD_CHECKS,
        source="Megatron / DeepSpeed load_checkpoint, Lightning load_from_checkpoint, accelerate load_state, "
        "transformers from_pretrained",
    ),
    # safetensors' load names are common words elsewhere (a dataset's own load_file helper): its files only
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        file=r"/safetensors/",
        func=r"load\w*|safe_open",
        checks=LOAD_CHECKS,
        source="safetensors torch.py (load_file, load), safe_open",
    ),
    # A checkpoint module's load path (torchtitan CheckpointManager.load -> _states_to_load, Megatron
    # _load_base_checkpoint): the save row below knows these files by path alone, any function in them
    FrameMark(
        "checkpoint_load",
        "loading a checkpoint",
        file=CHECKPOINT_MODULE,
        func=r"\w*(?:load|restore|resume)\w*",
        checks=LOAD_CHECKS,
        source="torchtitan components/checkpoint.py (CheckpointManager.load, _states_to_load), Megatron "
        "training/checkpointing.py (load_checkpoint, _load_base_checkpoint), NeMo checkpointing.py",
    ),
    # torch.save pickles the object before it writes: a raise at pickler.dump is the object's (a lambda, a local
    # class, a lock, a generator), no filesystem's
    FrameMark(
        "checkpoint_pickling",
        "pickling the object torch.save writes",
        file=r"torch/serialization\.py$",
        func=r"_?save",
        code=r"\bpickler?\.dump\(|\bpickle_module\.dump\(",
        stage="checkpoint",
        checks=PICKLE_CHECKS,
        source="torch/serialization.py (_save: pickler.dump(obj) before the zip writer's write_record)",
    ),
    FrameMark(
        "checkpoint_save",
        "saving a checkpoint",
        file=r"torch/serialization\.py$|torch/distributed/checkpoint/(?:state_dict_saver|filesystem|_fsspec_filesystem)\.py$|"
        r"safetensors/|" + CHECKPOINT_MODULE,
        stage="checkpoint",
        kind="input_problem",
        checks=FS_CHECKS,
        source="torch/serialization.py (save, _save, _open_zipfile_writer), torch/distributed/checkpoint "
        "(state_dict_saver.py save / async_save, filesystem.py FileSystemWriter), safetensors (save_file); Megatron "
        "checkpointing.py, NeMo / Automodel components/checkpoint/checkpointing.py, torchtitan checkpoint.py (not "
        "torch/utils/checkpoint.py nor DeepSpeed's activation_checkpointing: those recompute activations)",
    ),
    FrameMark(
        "checkpoint_save",
        "saving a checkpoint",
        func=r"_?save_checkpoint\w*|save_pretrained|save_model|_save_model|save_state|save_state_dict|save_file|"
        r"save_on_\w+|_save_to_state_dict|write_checkpoint|save_sharded\w*|save_\w*checkpoint\w*",
        stage="checkpoint",
        kind="input_problem",
        checks=FS_CHECKS,
        source="transformers Trainer._save_checkpoint / save_model / save_pretrained, accelerate save_state, "
        "Lightning save_checkpoint, DeepSpeed save_checkpoint, Megatron save_checkpoint",
    ),
    # ---- data --------------------------------------------------------------------------------------------------
    FrameMark(
        "dataset_map",
        "pre-processing the dataset",
        file=r"datasets/arrow_dataset\.py$|datasets/(?:builder|load)\.py$",
        func=r"map|_map_single|filter|wrapper|download_and_prepare|_prepare_split\w*|load_dataset",
        stage="data_prep",
        kind="input_problem",
        checks=PREP_CHECKS,
        source="datasets arrow_dataset.py (Dataset.map, _map_single), builder.py (download_and_prepare)",
    ),
    FrameMark(
        "data_loading",
        "fetching a batch from the dataset",
        file=r"torch/utils/data/(?:dataloader\.py|_utils/fetch\.py|_utils/worker\.py)$",
        stage="steps",
        kind="input_problem",
        checks=DATA_CHECKS,
        source="torch/utils/data/dataloader.py (__next__, _next_data), _utils/fetch.py (fetch), _utils/worker.py",
    ),
    FrameMark(
        "data_loading",
        "fetching a batch from the dataset",
        # the program's own dataset or a dataset library's: an installed package's __getitem__ is a container's
        # (omegaconf's DictConfig, transformers' BatchEncoding, nn.Sequential), read at start-up or in the step
        file=r"^(?!.*/(?:site|dist)-packages/(?!(?:datasets|torchvision/datasets|webdataset|torchdata|lerobot)/))",
        func=r"__getitem__|__getitems__",
        stage="steps",
        kind="input_problem",
        checks=DATA_CHECKS,
        source="torch.utils.data.Dataset.__getitem__ (the dataset's own code, under the DataLoader's fetch)",
    ),
    # ---- collectives -------------------------------------------------------------------------------------------
    FrameMark(
        "collective",
        "in a collective call",
        file=r"torch/distributed/(?!checkpoint/)|deepspeed/comm/|accelerate/utils/operations\.py$|megatron/core/parallel_state\.py$|"
        r"megatron/core/tensor_parallel/mappings\.py$",
        func=COLLECTIVE_FUNCS,
        stage="steps",
        kind="timeout",
        source="torch/distributed/distributed_c10d.py, deepspeed/comm/comm.py, accelerate/utils/operations.py "
        "(gather, reduce, broadcast), megatron/core/tensor_parallel/mappings.py",
    ),
    # ---- evaluation --------------------------------------------------------------------------------------------
    FrameMark(
        "evaluation",
        "evaluating",
        func=r"evaluate|_evaluate|evaluation_loop|evaluation_step|prediction_step|prediction_loop|validation_step|"
        r"_run_evaluation|run_evaluation|eval_step|eval_loop|test_step|validate|_validate|run_validation",
        stage="evaluation",
        checks=EVAL_CHECKS,
        source="transformers Trainer.evaluate / evaluation_loop / prediction_step, Lightning validation_step / "
        "test_step, Megatron evaluate",
    ),
    # ---- the training step -------------------------------------------------------------------------------------
    FrameMark(
        "backward",
        "in the backward pass",
        file=r"torch/autograd/(?:__init__|graph)\.py$|torch/_tensor\.py$",
        func=r"backward|_engine_run_backward",
        stage="steps",
        checks=STEP_CHECKS,
        source="torch/_tensor.py (Tensor.backward), torch/autograd/__init__.py (backward), graph.py",
    ),
    FrameMark(
        "forward",
        "in the forward pass",
        file=r"torch/nn/modules/module\.py$",
        func=r"_call_impl|_wrapped_call_impl|__call__",
        stage="steps",
        checks=STEP_CHECKS,
        source="torch/nn/modules/module.py (Module._call_impl: a module's forward)",
    ),
    FrameMark(
        "forward",
        "in the forward pass",
        func=r"forward|_forward",
        stage="steps",
        checks=STEP_CHECKS,
        source="a module's forward (torch.nn.Module.forward)",
    ),
)

# Frames of the interpreter's own machinery: no program's call (the program's frame that called into them is
# the one quoted). Threads and futures re-raise another thread's exception; the frozen modules are the stdlib's.
STDLIB_FRAME = re.compile(r"<frozen [\w.]+>|/lib/python3\.\d+/(?!site-packages/|dist-packages/)")


def mark_of(file: str, func: str, code: str = "") -> FrameMark | None:
    """The first row that knows the frame (FILE, FUNC, its source line CODE); None when none does."""
    return next((m for m in FRAME_MARKS if m.knows(file, func, code)), None)
