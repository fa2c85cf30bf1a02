"""A review of the watchdog-CUDA and cut-traceback readings against their look-alikes, on lines written here in the
emitting programs' formats.

1. One watchdog report of a CUDA fault is no evidence of NCCL's kernels: ProcessGroupNCCL's watchdog polls every few
   hundred ms and meets any kernel's sticky error first as often as not (an attention kernel in an inference server,
   a packed-sequence flash-attention in training, the peer waiting in its collective). The kernel search leads; the
   transports follow it. Several ranks faulting together stay an nccl_error.
2. A cut traceback's frames: a container's __getitem__ is no dataset's, a dataset's own load_file no checkpoint load,
   a checkpoint module's load path no save, and torch.save's pickler.dump no filesystem write.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
SITE = "/opt/venv/lib/python3.11/site-packages"


def _watchdog(rank: int, pg: str = "PG ID 2 PG GUID 3") -> str:
    return (
        f"[rank{rank}]:[E0904 19:47:{16 + rank:02d}.118204522 ProcessGroupNCCL.cpp:1895] [{pg} Rank {rank}] Process "
        "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n\n"
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent "
        "call first):\n"
        f"frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56 (0x7f2b in "
        f"{TORCH}/lib/libtorch_cuda.so)\n"
        f"frame #5: c10d::ProcessGroupNCCL::watchdogHandler() + 0x1da (0x7f2c in {TORCH}/lib/libtorch_cuda.so)\n\n"
    )


# an inference server's tensor-parallel rank 0: the attention kernel faulted, the watchdog met it first
SERVER_ONE_RANK = (
    "INFO 09-04 19:31:02 llm_engine.py:431] init engine (profile, create kv cache, warmup model) took 38.12 seconds\n"
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n" + _watchdog(0)
)
# training: rank 1's kernel faulted, rank 0 waited in its all-reduce until the timeout
TRAIN_ONE_RANK = (
    "+ torchrun --nproc_per_node=2 sft.py --packing\n"
    "{'loss': 1.4402, 'grad_norm': 0.91, 'learning_rate': 1.7e-05, 'epoch': 0.42}\n"
    + _watchdog(1, "PG ID 0 PG GUID 0(default_pg)")
    + "[rank0]:[E0904 19:57:17.301112345 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=8812, OpType=ALLREDUCE, NumelIn=50331648, NumelOut=50331648, Timeout(ms)=600000) ran "
    "for 600071 milliseconds before timing out.\n"
)


def test_one_watchdog_report_keeps_the_kernel_search_first(tmp_path: Path) -> None:
    for log in (SERVER_ONE_RANK, TRAIN_ONE_RANK):
        top = top_failure(tmp_path, log)
        assert top.kind == "crash" and top.metrics["code"] == "cuda_illegal_memory_access"
        fix = top.suggestion
        assert fix.startswith("Find the kernel") and "does not name the kernel" in fix
        assert fix.index("compute-sanitizer") < fix.index("NCCL_SHM_DISABLE=1")  # transports after the search


def test_several_ranks_faulting_together_stay_an_nccl_error(tmp_path: Path) -> None:
    top = top_failure(tmp_path, SERVER_ONE_RANK + _watchdog(1))
    assert top.kind == "nccl_error" and top.metrics["code"] == "nccl_watchdog_cuda_error"
    assert "ranks 0, 1" in top.suggestion and "several ranks together" in top.summary


def _cut(*frames: tuple[str, int, str, str], prefix: str = "") -> str:
    out = ["epoch 2 step 1200 loss 0.812", f"{prefix}Traceback (most recent call last):"]
    for file, line, func, source in frames:
        out += [f'{prefix}  File "{file}", line {line}, in {func}', f"{prefix}    {source}"]
    return "\n".join(out) + "\n"


def test_a_config_containers_getitem_is_no_data_loading(tmp_path: Path) -> None:
    log = _cut(
        ("/home/u/proj/train.py", 41, "main", 'warmup = cfg["sched"]["warmup"]'),
        (f"{SITE}/omegaconf/dictconfig.py", 375, "__getitem__", "self._format_and_raise(key=key, value=None, cause=e)"),
        (f"{SITE}/omegaconf/base.py", 231, "_format_and_raise", "format_and_throw("),
    )
    top = top_failure(tmp_path, log)
    assert "fetching a batch" not in top.summary and top.kind == "crash"


def test_a_datasets_own_load_file_is_data_loading_not_a_checkpoint_load(tmp_path: Path) -> None:
    log = _cut(
        ("/work/asr/train.py", 90, "<module>", "for batch in loader:"),
        (f"{SITE}/torch/utils/data/dataloader.py", 631, "__next__", "data = self._next_data()"),
        (f"{SITE}/torch/utils/data/_utils/fetch.py", 52, "fetch", "data = [self.dataset[idx] for idx in indices]"),
        ("/work/asr/data.py", 61, "__getitem__", "wav = self.load_file(self.paths[i])"),
        ("/work/asr/data.py", 40, "load_file", "return soundfile.read(path)[0]"),
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "input_problem" and "fetching a batch" in top.summary and "checkpoint" not in top.summary


def test_a_checkpoint_modules_load_path_is_no_save(tmp_path: Path) -> None:
    log = _cut(
        ("/workspace/torchtitan/torchtitan/train.py", 480, "main", "trainer.checkpointer.load(step=load_step)"),
        ("/workspace/torchtitan/torchtitan/components/checkpoint.py", 520, "load", "states = self._states()"),
        (
            "/workspace/torchtitan/torchtitan/components/checkpoint.py",
            610,
            "_states_to_load",
            "return {k: v for k, v in self.states.items() if k not in self.exclude}",
        ),
        prefix="[rank0]:",
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "crash" and "loading a checkpoint" in top.summary and "saving" not in top.summary


def test_torch_save_raising_in_its_pickler_is_the_objects_not_the_filesystems(tmp_path: Path) -> None:
    frames = (
        ("/srv/rl/train.py", 212, "<module>", 'torch.save({"agent": agent, "make_env": make_env}, path)'),
        (f"{SITE}/torch/serialization.py", 850, "save", "_save("),
    )
    pickling = top_failure(
        tmp_path, _cut(*frames, (f"{SITE}/torch/serialization.py", 1088, "_save", "pickler.dump(obj)"))
    )
    assert pickling.kind == "crash" and "pickling" in pickling.summary
    assert "state_dict" in pickling.suggestion and "df -hT" not in pickling.suggestion
    writing = (f"{SITE}/torch/serialization.py", 1117, "_save", "zip_file.write_record(name, storage, num_bytes)")
    top = top_failure(tmp_path, _cut(*frames, writing))
    assert top.kind == "input_problem" and "saving a checkpoint" in top.summary  # the write stays the filesystem's


def test_code_run_from_a_directory_named_checkpoint_is_no_save(tmp_path: Path) -> None:
    # fairseq's / metaseq's clusters keep jobs under /checkpoint/$USER/: a forward there is a forward
    log = _cut(
        ("/checkpoint/bob/lm/train.py", 120, "<module>", "logits = model(tokens)"),
        (f"{SITE}/torch/nn/modules/module.py", 1736, "_call_impl", "return forward_call(*args, **kwargs)"),
        ("/checkpoint/bob/lm/model.py", 58, "forward", "h = self.layers(x)"),
    )
    top = top_failure(tmp_path, log)
    assert top.kind == "crash" and "in the forward pass" in top.summary and "saving" not in top.summary
