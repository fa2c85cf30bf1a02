"""Two classes (a CUDA fault the watchdog reported, a traceback cut before its exception), on lines written here in
the emitting programs' formats:

1. A kernel's CUDA fault (illegal memory access, unspecified launch failure, misaligned address) that only
   ProcessGroupNCCL's watchdog reported (reasoning/watchdog_cuda.py, knowledge/watchdog_cuda.py): an nccl_error whose
   remedy bisects NCCL's transports before the kernel search; a compute op that raised it first keeps it a crash,
   and a real earlier root (an Xid, an OOM) still leads.
2. A traceback cut before its exception line (reasoning/cut_activity.py, knowledge/cut_frames.py): the frames say
   what the process was doing (a checkpoint save, file I/O, data loading, evaluation, the forward pass), which sets
   the kind and the checks; activation checkpointing is no checkpoint save.
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose import diagnose
from scope.analyzers.diagnose.knowledge.cut_frames import mark_of

from scope.finding import FAILURE_KINDS
from tests.helpers import top_failure

TORCH = "/opt/conda/envs/rl/lib/python3.11/site-packages/torch"

# ---- 1. the watchdog alone saw the fault ------------------------------------------------------------------------

# torch 2.1's wording ('NCCL watchdog thread', workCleanupLoop), two ranks of a four-GPU box, NCCL's INFO lines
# showing the SHM transport, torchrun's command line
WATCHDOG_21 = f"""\
+ torchrun --standalone --nproc_per_node=4 ppo_train.py --envs 4096
NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct
Iteration 412 | reward 13.71 | fps 88210
[E ProcessGroupNCCL.cpp:915] [Rank 2] NCCL watchdog thread terminated with exception: CUDA error: unspecified \
launch failure
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be \
incorrect.
Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f51e8a9d617 in {TORCH}/lib/libc10.so)
frame #2: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x80 (0x7f51e9b8a0f0 in \
{TORCH}/lib/libtorch_cuda.so)
frame #4: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x123 (0x7f51e9b8f473 in {TORCH}/lib/libtorch_cuda.so)
[E ProcessGroupNCCL.cpp:915] [Rank 3] NCCL watchdog thread terminated with exception: CUDA error: unspecified \
launch failure
"""

# torch 1.13's shape: std::terminate's what() names only the CUDA error; the stack under it is the watchdog's check
WATCHDOG_WHAT_ONLY = f"""\
epoch 3 step 1180 loss 0.4187
terminate called after throwing an instance of 'c10::CUDAError'
  what():  CUDA error: misaligned address
CUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.
Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:31 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x3e (0x7fb1 in {TORCH}/lib/libc10.so)
frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x90 (0x7fb2 in {TORCH}/lib/libtorch_cuda.so)
frame #4: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x6f (0x7fb3 in {TORCH}/lib/libtorch_cuda.so)
"""

# torch 2.5's wording under torchrun's rank tags, for the look-alikes below
WD_LINE = (
    "[rank{r}]:[E0611 07:41:{s}.553120934 ProcessGroupNCCL.cpp:1669] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
    "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
)
TWO_WATCHDOGS = WD_LINE.format(r=0, s=20) + WD_LINE.format(r=1, s=20)
# a compute op (a fused attention kernel) raised the same fault first, in the main thread
COMPUTE_FIRST = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/lab/finetune.py", line 301, in <module>
[rank0]:     out = model(input_ids=ids, attention_mask=mask)
[rank0]:   File "/home/lab/.venv/lib/python3.10/site-packages/xformers/ops/fmha/cutlass.py", line 204, in apply
[rank0]:     out, lse, rng_seed, rng_offset = cls.OPERATOR(
[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered
"""
OOM_FIRST = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/home/lab/finetune.py", line 288, in training_step
[rank1]:     loss.backward()
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 1 has a total capacity of \
23.64 GiB of which 412.00 MiB is free.
"""


def test_diagnose_watchdog_alone_is_an_nccl_error_led_by_the_transports_the_log_shows(tmp_path: Path) -> None:
    top = top_failure(tmp_path, WATCHDOG_21)
    assert top.kind == "nccl_error" and top.metrics["code"] == "nccl_watchdog_cuda_error"
    assert top.metrics["confidence"] == "medium"  # two ranks' watchdogs
    fix = top.suggestion
    assert "'unspecified launch failure'" in fix and "ranks 2, 3" in fix
    # the transport the INFO lines show is bisected first, then the others, then the algorithm
    order = [fix.index(s) for s in ("NCCL_SHM_DISABLE=1", "NCCL_P2P_DISABLE=1", "NCCL_IB_DISABLE=1", "NCCL_ALGO=Ring")]
    assert order == sorted(order) and "which the log shows NCCL using" in fix
    assert "all_reduce_perf" in fix and "-g 4" in fix  # torchrun's --nproc_per_node
    assert "ACSCtl" in fix and "compute-sanitizer" in fix  # PCIe peer access, then the kernel search


def test_diagnose_watchdog_stack_under_a_bare_cuda_error_is_the_watchdogs(tmp_path: Path) -> None:
    # one report: the watchdog meets any kernel's sticky fault, so the kernel search leads and the
    # transports follow it
    top = top_failure(tmp_path, WATCHDOG_WHAT_ONLY)
    assert top.kind == "crash" and top.metrics["code"] == "cuda_illegal_memory_access"
    assert "reported by ProcessGroupNCCL's watchdog (one process's watchdog)" in top.suggestion
    assert top.suggestion.index("Find the kernel") < top.suggestion.index("NCCL_P2P_DISABLE=1")


def test_diagnose_compute_op_raising_the_fault_first_keeps_the_kernel_search(tmp_path: Path) -> None:
    alone = top_failure(tmp_path, TWO_WATCHDOGS)
    assert alone.kind == "nccl_error" and "NCCL_P2P_DISABLE=1" in alone.suggestion
    mixed = top_failure(tmp_path, COMPUTE_FIRST + TWO_WATCHDOGS)
    assert mixed.kind == "crash" and mixed.metrics["code"] == "cuda_illegal_memory_access"
    assert "Find the kernel" in mixed.suggestion and "NCCL_SHM_DISABLE" not in mixed.suggestion


def test_diagnose_an_earlier_oom_or_xid_still_outranks_the_watchdog(tmp_path: Path) -> None:
    assert top_failure(tmp_path, TWO_WATCHDOGS).kind == "nccl_error"
    assert top_failure(tmp_path, OOM_FIRST + TWO_WATCHDOGS).kind == "oom"
    (tmp_path / "dmesg.log").write_text(
        "[Wed Jun 11 07:41:12 2025] NVRM: Xid (PCI:0000:41:00): 79, pid=2231, name=python, GPU has fallen off the "
        "bus.\n"
    )
    found = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert found[0].kind == "hardware_fault"


def test_diagnose_a_watchdog_that_ended_normally_is_no_finding(tmp_path: Path) -> None:
    assert top_failure(tmp_path, TWO_WATCHDOGS).kind == "nccl_error"
    healthy = (
        "[rank0]:[I0611 07:40:01.100 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group "
        "watchdog thread terminated normally\n"
        "step 500 loss 1.92\nTraining complete.\n"
    )
    (tmp_path / "job.log").write_text(healthy)
    assert not [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]


# ---- 2. a cut traceback's frames ---------------------------------------------------------------------------------

SITE = "/usr/local/lib/python3.10/site-packages"


def _cut(*frames: tuple[str, int, str, str], prefix: str = "") -> str:
    """A traceback of FRAMES (file, line, function, source), outermost first, cut after the last frame."""
    out = [f"{prefix}Traceback (most recent call last):"]
    for file, line, func, source in frames:
        out.append(f'{prefix}  File "{file}", line {line}, in {func}')
        if source:
            out.append(f"{prefix}    {source}")
    return "step 2999 loss 1.187\n" + "\n".join(out) + "\n"


HF_SAVE = _cut(
    ("/srv/jobs/sft/train.py", 140, "main", "trainer.train()"),
    (f"{SITE}/transformers/trainer.py", 2241, "_inner_training_loop", "self._maybe_log_save_evaluate(tr_loss, ...)"),
    (f"{SITE}/transformers/trainer.py", 2770, "_save_checkpoint", "self.save_model(output_dir, _internal_call=True)"),
    (f"{SITE}/torch/serialization.py", 652, "save", "with _open_zipfile_writer(f) as opened_zipfile:"),
    (f"{SITE}/torch/serialization.py", 520, "_open_zipfile_writer", "return container(name_or_buffer)"),
    prefix="[rank3]: ",
)
# a program's own save routine creating its output directory through pathlib
MKDIR_IN_SAVE = _cut(
    ("/home/ml/rl/run.py", 77, "<module>", "agent.learn(total_steps=10_000_000)"),
    ("/home/ml/rl/agent.py", 410, "save_checkpoint", "ckpt_dir.mkdir(parents=True, exist_ok=True)"),
    ("/usr/lib/python3.12/pathlib.py", 1311, "mkdir", "os.mkdir(self, mode)"),
)
LOADER = _cut(
    ("/work/seg/train.py", 55, "train_one_epoch", "for images, masks in loader:"),
    (f"{SITE}/torch/utils/data/dataloader.py", 631, "__next__", "data = self._next_data()"),
    (
        f"{SITE}/torch/utils/data/_utils/fetch.py",
        51,
        "fetch",
        "data = [self.dataset[idx] for idx in possibly_batched_index]",
    ),
    ("/work/seg/data.py", 88, "__getitem__", "mask = np.load(self.mask_paths[i])"),
)
EVAL_LOADER = _cut(
    ("/work/seg/train.py", 60, "main", "metrics = trainer.evaluate()"),
    (f"{SITE}/transformers/trainer.py", 3010, "evaluate", "output = eval_loop(eval_dataloader, ...)"),
    (f"{SITE}/torch/utils/data/dataloader.py", 631, "__next__", "data = self._next_data()"),
    ("/work/seg/data.py", 88, "__getitem__", "mask = np.load(self.mask_paths[i])"),
)
# activation (gradient) checkpointing recomputes a forward: no checkpoint save
ACTIVATION_CKPT = _cut(
    ("/work/llm/train.py", 201, "train_step", "logits = model(tokens)"),
    (f"{SITE}/torch/nn/modules/module.py", 1736, "_call_impl", "return forward_call(*args, **kwargs)"),
    (f"{SITE}/torch/utils/checkpoint.py", 488, "checkpoint", "return CheckpointFunction.apply(function, *args)"),
    ("/work/llm/model.py", 143, "forward", "attn = self.attn(self.norm(x))"),
)


def test_diagnose_cut_in_a_checkpoint_write_is_an_input_problem_with_the_filesystem_checks(tmp_path: Path) -> None:
    top = top_failure(tmp_path, HF_SAVE)
    assert top.kind == "input_problem" and top.metrics["code"] == "traceback_cut_in_checkpoint_save"
    assert "saving a checkpoint" in top.summary and "_save_checkpoint in transformers/trainer.py" in top.summary
    fix = top.suggestion
    assert "df -hT" in fix and "permissions" in fix and "exception line" in fix
    assert "Best guess, from the frames of a cut traceback" in top.summary


def test_diagnose_cut_creating_a_directory_in_a_save_names_the_programs_call(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MKDIR_IN_SAVE)
    assert top.kind == "input_problem" and top.metrics["code"] == "traceback_cut_in_directory_creation"
    assert "creating a directory" in top.summary and "during a checkpoint save" in top.summary
    fix = top.suggestion
    assert "save_checkpoint (home/ml/rl/agent.py:410): `ckpt_dir.mkdir(parents=True, exist_ok=True)`" in fix
    assert "FileExistsError" in fix and "several ranks" in fix


def test_diagnose_cut_in_data_loading_says_which_stage(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LOADER)
    assert top.kind == "input_problem" and "fetching a batch" in top.summary
    assert "num_workers=0" in top.suggestion and "`mask = np.load(self.mask_paths[i])`" in top.suggestion
    evaluating = top_failure(tmp_path, EVAL_LOADER)
    assert "during evaluation / prediction (evaluate in transformers/trainer.py)" in evaluating.summary


def test_diagnose_activation_checkpointing_is_the_forward_pass_not_a_save(tmp_path: Path) -> None:
    top = top_failure(tmp_path, ACTIVATION_CKPT)
    assert top.kind == "crash" and top.metrics["code"] == "traceback_cut_in_forward"
    assert "in the forward pass" in top.summary and "df -hT" not in top.suggestion
    assert mark_of(f"{SITE}/torch/utils/checkpoint.py", "checkpoint") is None
    assert mark_of(f"{SITE}/deepspeed/runtime/activation_checkpointing/checkpointing.py", "checkpoint") is None
    assert mark_of("/x/megatron/training/checkpointing.py", "save_checkpoint") is not None


def test_diagnose_a_whole_traceback_in_a_save_is_not_read_from_its_frames(tmp_path: Path) -> None:
    assert top_failure(tmp_path, HF_SAVE).kind == "input_problem"
    whole = HF_SAVE + "[rank3]: OSError: [Errno 28] No space left on device\n"
    assert not top_failure(tmp_path, whole).metrics["code"].startswith("traceback_cut_")


def test_diagnose_a_main_thread_meeting_the_fault_after_the_watchdog_stays_an_nccl_error(tmp_path: Path) -> None:
    assert top_failure(tmp_path, COMPUTE_FIRST + TWO_WATCHDOGS).kind == "crash"
    later = TWO_WATCHDOGS + COMPUTE_FIRST.replace("[rank0]", "[rank1]")
    top = top_failure(tmp_path, later)
    assert top.kind == "nccl_error" and "ranks 0, 1" in top.suggestion
