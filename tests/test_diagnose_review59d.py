"""The review of the fifteenth held-out set's classes (issue 40, diag59): each message read only in the form that
failed, never where a warning quotes it or the run went past it; one row per message, its fix by what the line
names. Lines written in the emitting program's format (glibc's loader, torch's ProcessGroupNCCL, the HF Trainer,
Megatron-LM, slurmstepd, bash / dash / zsh, coreutils' env, Hydra, Open MPI), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
    "of which 1.2 GiB is free.\n"
)

# 1. An 'undefined symbol: nccl*' that a warning quotes (TransformerEngine's optional import, a fused-kernel
# fallback) is no failure; the loader's and Python's failing forms read it once, its fix by the symbol.
TE_FALLBACK_THEN_OOM = (
    "/usr/local/lib/python3.10/dist-packages/transformer_engine/__init__.py:20: UserWarning: Could not load "
    "transformer_engine_torch: /usr/local/lib/python3.10/dist-packages/transformer_engine_torch.cpython-310-x86_64-"
    "linux-gnu.so: undefined symbol: ncclCommRegister\n"
    "step 5 loss 2.0\n"
    "Traceback (most recent call last):\n" + OOM
)
FALLBACK_THEN_COMPLETED = """\
UserWarning: apex fused kernels unavailable (/opt/apex/amp_C.so: undefined symbol: ncclGetVersion), falling back
step 1/100 loss 2.0
step 100/100 loss 0.2
Training complete
"""
LOADER_NCCL_SYMBOL = (
    "python: symbol lookup error: /usr/lib/x86_64-linux-gnu/libtorch_cuda.so: undefined symbol: "
    "ncclCommInitRankScalable\n"
)
EXTENSION_SYMBOL = (
    "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
    "undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
)


def test_an_undefined_symbol_is_read_once_in_its_failing_forms_its_fix_by_the_symbol(tmp_path: Path) -> None:
    top = top_failure(tmp_path, TE_FALLBACK_THEN_OOM)
    assert top.kind == "oom"
    assert not [f for f in diagnose_failures(tmp_path, TE_FALLBACK_THEN_OOM) if f.kind == "config_error"]
    assert diagnose_failures(tmp_path, FALLBACK_THEN_COMPLETED) == []
    loader = top_failure(tmp_path, LOADER_NCCL_SYMBOL)
    assert loader.metrics["code"] == "shared_library_symbol_mismatch"
    assert "ncclCommInitRankScalable from a newer NCCL" in loader.suggestion and "grep -i nccl" in loader.suggestion
    ext = top_failure(tmp_path, EXTENSION_SYMBOL)
    assert ext.metrics["code"] == "shared_library_symbol_mismatch"
    assert "--no-build-isolation" in ext.suggestion and "grep -i nccl" not in ext.suggestion


# 2. NCCL's 'unknown result code' only in its error forms, and never the root beside the failure it echoes.
RETRIED_THEN_COMPLETED = """\
[2024-05-01 10:00:00] WARNING comm_retry.py:40 all_reduce attempt 1 failed: NCCL error: unknown result code; retrying
[2024-05-01 10:00:01] step 10/100 loss 1.2
[2024-05-01 10:05:01] step 100/100 loss 0.3
Training complete
"""
QUOTED_IN_A_COMMENT = """\
node1:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
# Known issue: an NCCL plugin built for 2.19 prints 'unknown result code' with NCCL 2.18; see FAQ
"""
TORCH_UNKNOWN_RESULT = """\
[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, \
unknown result code, NCCL version 2.18.1
[rank1]: Last error:
[rank1]: Unknown NCCL error!
"""
OOM_THEN_ECHO = (
    OOM + "[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unknown result code, NCCL version 2.18.1\n"
)


def test_nccls_unknown_result_code_counts_only_as_the_error_that_ended_the_run(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, RETRIED_THEN_COMPLETED) == []
    assert diagnose_failures(tmp_path, QUOTED_IN_A_COMMENT) == []
    torch_own = top_failure(tmp_path, TORCH_UNKNOWN_RESULT)
    assert torch_own.metrics["code"] == "nccl_unknown_result_code" and "torch.cuda.nccl.version()" in (
        torch_own.suggestion
    )
    echoed = diagnose_failures(tmp_path, OOM_THEN_ECHO)
    assert echoed[0].kind == "oom"
    assert [f.severity for f in echoed if f.metrics.get("code") == "nccl_unknown_result_code"] == ["warning"]


# 3. A row's line the run went past is no best guess: the Windows socket warning, an optional step's missing
# program, each followed by the HF Trainer's progress dicts or a plain loop's lines.
WINDOWS_WARNING = (
    r"[W C:\actions-runner\_work\pytorch\pytorch\builder\windows\pytorch\torch\csrc\distributed\c10d\socket.cpp:601]"
    r" [c10d] The client socket has failed to connect to [DESKTOP-ABC]:29500 (system error: 10049 - The requested"
    r" address is not valid in its context.)."
    "\n"
)
HF_TRAINER_PROGRESS = """\
{'loss': 0.6931, 'grad_norm': 1.2, 'learning_rate': 4.9e-05, 'epoch': 0.5}
{'loss': 0.41, 'grad_norm': 0.9, 'learning_rate': 1e-06, 'epoch': 1.0}
{'train_runtime': 120.5, 'train_samples_per_second': 8.3, 'train_steps_per_second': 1.0, 'train_loss': 0.55, \
'epoch': 1.0}
"""
PLAIN_LOOP_PROGRESS = """\
epoch 0 step 10 loss 0.912
epoch 0 step 20 loss 0.850
epoch 1 step 40 loss 0.702
"""
OPTIONAL_STEP_MISSING = """\
slurmstepd: error: execve(): nvidia-smi: No such file or directory
srun: error: cn01: task 0: Exited with exit code 2
"""


def test_a_line_the_run_went_past_is_no_best_guess_under_either_progress_format(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, WINDOWS_WARNING + HF_TRAINER_PROGRESS) == []
    assert diagnose_failures(tmp_path, WINDOWS_WARNING + PLAIN_LOOP_PROGRESS) == []
    assert diagnose_failures(tmp_path, OPTIONAL_STEP_MISSING + HF_TRAINER_PROGRESS) == []
    # a log of nothing but the Windows build's warning shows no failure: nothing in it stopped
    assert diagnose_failures(tmp_path, WINDOWS_WARNING + WINDOWS_WARNING) == []


# 4. Megatron-LM core as main words it now: the product alone.
MEGATRON_BARE_PRODUCT = """\
  File "/workspace/Megatron-LM/megatron/core/parallel_state.py", line 736, in initialize_model_parallel
    raise RuntimeError(f"world_size ({world_size}) is not divisible by {model_size}")
RuntimeError: world_size (6) is not divisible by 4
"""


def test_megatrons_current_world_size_check_quotes_its_bare_product(tmp_path: Path) -> None:
    top = top_failure(tmp_path, MEGATRON_BARE_PRODUCT)
    assert top.metrics["code"] == "world_size_not_layout_multiple"
    assert "'world_size (6) is not divisible by 4'" in top.suggestion


# 5. A #! interpreter the node lacks (slurmstepd's 'bad interpreter'), env's missing program, Hydra's format error.
BAD_INTERPRETER = """\
slurmstepd: error: execve(): bad interpreter(/home/u/miniconda3/envs/llm/bin/python): No such file or directory
srun: error: cn01: task 0: Exited with exit code 2
"""
ENV_PYTHON_MISSING = "/usr/bin/env: 'python': No such file or directory\n"
HYDRA_EXEC_FORMAT = (
    "[proxy:0:0@n1] HYDU_create_process (lib/utils/launch.c:117): execvp error on file /home/u/train.py "
    "(Exec format error)\n"
)


def test_an_interpreter_or_format_the_node_cannot_run_names_the_interpreter(tmp_path: Path) -> None:
    interp = top_failure(tmp_path, BAD_INTERPRETER)
    assert interp.metrics["code"] == "slurm_task_program_missing"
    assert "#!/home/u/miniconda3/envs/llm/bin/python" in interp.suggestion
    env = top_failure(tmp_path, ENV_PYTHON_MISSING)
    assert env.kind == "config_error" and "lacks python" in env.suggestion and "conda activate" in env.suggestion
    exec_format = top_failure(tmp_path, HYDRA_EXEC_FORMAT)
    assert exec_format.metrics["code"] == "launch_program_not_executable"
    assert "'/home/u/train.py' executable" in exec_format.suggestion and "#! line" in exec_format.suggestion


# 6. One row for a shell's missing program, whatever the shell; the fix by the program.
SHELLS_MISSING_TORCHRUN = (
    "/var/spool/slurmd/job123/slurm_script: line 12: torchrun: command not found\n",
    "run.sh: line 5: torchrun: command not found\n",
    "bash: line 1: torchrun: command not found\n",
    "sh: 1: torchrun: not found\n",
    "zsh: command not found: torchrun\n",
)
SYSTEM_PROGRAM_MISSING = "bash: line 1: sshd: command not found\n"


def test_a_shells_missing_program_is_one_row_its_fix_by_the_program(tmp_path: Path) -> None:
    for n, log in enumerate(SHELLS_MISSING_TORCHRUN):
        (tmp_path / str(n)).mkdir()
        top = top_failure(tmp_path / str(n), log)
        assert top.metrics["code"] == "launch_program_missing", log
        assert "lacks torchrun" in top.suggestion and "srun --export=ALL" in top.suggestion, log
    (tmp_path / "system").mkdir()
    system = top_failure(tmp_path / "system", SYSTEM_PROGRAM_MISSING)
    assert system.metrics["code"] == "launch_program_missing"
    assert "Install sshd in the image" in system.suggestion and "conda activate" not in system.suggestion


# 7. One row for a backend the build lacks; Open MPI's help text quoting the program it names below.
MPI_BACKEND_MISSING = (
    "RuntimeError: Distributed package doesn't have MPI built in. MPI is only included if you build PyTorch from "
    "source on a host that has MPI installed.\n"
)
OMPI_EXECUTABLE_NOT_FOUND = """\
--------------------------------------------------------------------------
mpirun was unable to find the specified executable file, and therefore
did not launch the job.  This error was first reported for process
rank 0; it may have occurred for other processes as well.

NOTE: A common cause for this error is misspelling a mpirun command
      line parameter option (remember that mpirun interprets the first
      unrecognized command line token as the executable).

Node:       node01
Executable: torchrun
--------------------------------------------------------------------------
"""


def test_a_missing_backend_is_one_row_and_mpirun_quotes_its_executable(tmp_path: Path) -> None:
    mpi = top_failure(tmp_path, MPI_BACKEND_MISSING)
    assert mpi.metrics["code"] == "torch_without_nccl"
    assert "USE_MPI=1" in mpi.suggestion and "is_mpi_available()" in mpi.suggestion
    ompi = top_failure(tmp_path, OMPI_EXECUTABLE_NOT_FOUND)
    assert ompi.metrics["code"] == "mpirun_executable_not_found"
    assert "(torchrun)" in ompi.suggestion and "which torchrun" in ompi.suggestion


# Second review (59d2) 1. An extension's 'undefined symbol' that ended one rank's traceback is that rank's death:
# the other rank's steps after it (torchrun's [rankN]: tags), and torchrun's report of the rank's exit, do not hide it.
RANK_IMPORT_DIED = """\
[rank3]: Traceback (most recent call last):
[rank3]:   File "/opt/job/pretrain.py", line 12, in <module>
[rank3]:     from apex.normalization import FusedLayerNorm
[rank3]: ImportError: /opt/conda/lib/python3.11/site-packages/fused_layer_norm_cuda.cpython-311-x86_64-linux-gnu.so: \
undefined symbol: _ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEE
[rank0]: iteration       10/  500000 | consumed samples:          320 | lm loss: 9.81E+00
[rank0]: iteration       20/  500000 | consumed samples:          640 | lm loss: 9.02E+00
"""
TORCHRUN_REPORTS_RANK3 = """\
E1203 08:14:52.118000 5521 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 3 \
(pid: 5530) of binary: /opt/conda/bin/python3.11
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
pretrain.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-12-03_08:14:52
  host      : gpu-node-07
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 5530)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
SAME_RANK_WENT_ON = """\
[rank3]: ImportError: /opt/conda/lib/python3.11/site-packages/fused_layer_norm_cuda.cpython-311-x86_64-linux-gnu.so: \
undefined symbol: _ZN2at4_ops5zeros4callEN3c108ArrayRefINS2_6SymIntEEE
[rank3]: apex fused layer norm unavailable, using torch.nn.LayerNorm
[rank3]: iteration       10/  500000 | consumed samples:          320 | lm loss: 9.81E+00
[rank0]: iteration       10/  500000 | consumed samples:          320 | lm loss: 9.80E+00
"""


def test_a_loading_error_one_rank_died_at_is_the_root_whatever_the_other_ranks_did(tmp_path: Path) -> None:
    for n, log in enumerate((RANK_IMPORT_DIED, RANK_IMPORT_DIED + TORCHRUN_REPORTS_RANK3)):
        (tmp_path / str(n)).mkdir()
        top = top_failure(tmp_path / str(n), log)
        assert top.metrics["code"] == "shared_library_symbol_mismatch", log
    (tmp_path / "went_on").mkdir()
    assert not [
        f
        for f in diagnose_failures(tmp_path / "went_on", SAME_RANK_WENT_ON)
        if f.metrics.get("code") == "shared_library_symbol_mismatch"
    ]


# 2. srun's 'Exited with exit code 2' (capitalised) ends the job that a task whose program was missing never ran in;
# with no srun line, the other tasks' steps leave it a clue naming it, not a clean run.
SRUN_TASK_NEVER_RAN = """\
1: [2024-12-03 09:00:01] rank 1 of 2 on gpu-a01, world size 2
slurmstepd: error: execve(): python3: No such file or directory
1: epoch 0 step 50 loss 4.112
1: epoch 0 step 100 loss 3.870
"""
SRUN_EXIT = "srun: error: gpu-a02: task 0: Exited with exit code 2\n"


def test_a_task_srun_never_started_stays_the_cause_or_a_clue_beside_the_others_steps(tmp_path: Path) -> None:
    ended = top_failure(tmp_path, SRUN_TASK_NEVER_RAN + SRUN_EXIT)
    assert ended.metrics["code"] == "slurm_task_program_missing"
    assert "lacks python3" in ended.suggestion
    (tmp_path / "no_end").mkdir()
    found = diagnose_failures(tmp_path / "no_end", SRUN_TASK_NEVER_RAN)
    assert [f for f in found if f.metrics.get("code") == "slurm_task_program_missing"]


# 3. A helper the batch script ran (Lmod's module, nvidia-smi) missing is no failure where the job's own output
# follows; a missing main program is one, whatever the script echoed after it.
HELPER_MISSING_THEN_OUTPUT = (
    """\
/var/spool/slurmd/job48121/slurm_script: line 14: module: command not found
Evaluating checkpoint /ckpt/step_12000 on 2000 samples
exact_match: 0.412  f1: 0.587
Finished in 312.4 s
""",
    """\
/var/spool/slurmd/job48122/slurm_script: line 6: nvidia-smi: command not found
2024-12-03 10:02:11,410 INFO vllm.engine: loading weights from /models/mistral-7b
2024-12-03 10:04:52,118 INFO vllm.engine: processed 4800 prompts
""",
)
MAIN_MISSING_THEN_ECHO = """\
/var/spool/slurmd/job48123/slurm_script: line 9: torchrun: command not found
job finished at Tue Dec  3 10:05:00 UTC 2024
"""


def test_a_missing_helper_the_script_went_on_without_is_no_failure(tmp_path: Path) -> None:
    for n, log in enumerate(HELPER_MISSING_THEN_OUTPUT):
        (tmp_path / str(n)).mkdir()
        assert diagnose_failures(tmp_path / str(n), log) == [], log
    (tmp_path / "main").mkdir()
    top = top_failure(tmp_path / "main", MAIN_MISSING_THEN_ECHO)
    assert top.metrics["code"] == "launch_program_missing" and "lacks torchrun" in top.suggestion


# 4. The HF Trainer's progress is its log dict alone on a line; a dict a message quotes after a fatal error, or a
# config dump with a 'loss' key, is no progress that hides the error.
FATAL_THEN_QUOTED_DICT = """\
step 2200 loss 1.74
ERROR: tokenized shard /scratch/ds/train-00017.arrow has 0 rows, aborting
writing crash checkpoint with {'epoch': 3, 'global_step': 2210, 'best_model_checkpoint': None}
"""
FATAL_THEN_CONFIG_DUMP = """\
ERROR: cannot read dataset index /scratch/ds/index.json: permission denied, exiting
resolved config: {'model_name': 'qwen2-7b', 'lr': 1e-05, 'loss': 'cross_entropy', 'epoch': 0}
"""


def test_only_the_trainers_own_log_dict_is_progress_that_hides_an_error(tmp_path: Path) -> None:
    for n, (log, words) in enumerate(((FATAL_THEN_QUOTED_DICT, "has 0 rows"), (FATAL_THEN_CONFIG_DUMP, "index.json"))):
        (tmp_path / str(n)).mkdir()
        top = top_failure(tmp_path / str(n), log)
        assert top.metrics["code"] == "unmatched_error" and words in top.summary, log
    (tmp_path / "went_on").mkdir()
    assert diagnose_failures(tmp_path / "went_on", WINDOWS_WARNING + HF_TRAINER_PROGRESS) == []


# 5. The Windows build's 10049 warning is a finding only where the run stopped right after it (a traceback, a
# launcher's failure, the log ending in the distributed init); the program's own output after it means it went on.
WINDOWS_WENT_ON = (
    WINDOWS_WARNING
    + WINDOWS_WARNING
    + """\
reading 2400 validation images from D:\\data\\val
batch 75/75 top1=0.761
wrote predictions.csv
"""
)
WINDOWS_THEN_TRACEBACK = (
    WINDOWS_WARNING
    + """\
Traceback (most recent call last):
  File "C:\\work\\train.py", line 40, in <module>
    torch.distributed.barrier()
RuntimeError: Connection reset by peer
"""
)


def test_the_windows_socket_warning_counts_only_where_the_run_stopped_right_after_it(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, WINDOWS_WENT_ON) == []
    (tmp_path / "stopped").mkdir()
    codes = [f.metrics.get("code") for f in diagnose_failures(tmp_path / "stopped", WINDOWS_THEN_TRACEBACK)]
    assert "windows_store_address_noise" in codes


# 6, 8, 10. A missing program's fix by what the line names, the same for the shell's, slurmstepd's and Hydra's rows:
# an environment's program by its full path is that environment missing on the node; srun, mpirun and conda each
# their own setup; a tool of the image (nvidia-smi) installed there; the container runtime's exec the image.
FULL_PATH_INTERPRETER = "bash: line 1: /scratch/alice/envs/ft/bin/python3: No such file or directory\n"
SRUN_NOT_THERE = "/var/spool/slurmd/job90412/slurm_script: line 22: srun: command not found\n"
CONDA_NOT_THERE = "/var/spool/slurmd/job90413/slurm_script: line 4: conda: command not found\n"
HYDRA_TOOL_MISSING = (
    "[proxy:0:1@gpu-b07] HYDU_create_process (lib/utils/launch.c:117): execvp error on file nvidia-smi "
    "(No such file or directory)\n"
)
SLURMSTEPD_MPIRUN_MISSING = "slurmstepd: error: execve(): mpirun: No such file or directory\n"
CONTAINER_EXEC_MISSING = (
    "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
    'runtime create failed: runc create failed: unable to start container process: exec: "deepspeed": executable '
    "file not found in $PATH: unknown.\n"
)


def test_a_missing_programs_fix_is_chosen_by_the_program_in_every_row(tmp_path: Path) -> None:
    expected = (
        (FULL_PATH_INTERPRETER, "/scratch/alice/envs/ft/bin/python3 does not exist on the compute node", "PATH lacks"),
        (SRUN_NOT_THERE, "not running on a node of a SLURM cluster", "conda activate"),
        (CONDA_NOT_THERE, "etc/profile.d/conda.sh", "srun --export=ALL"),
        (HYDRA_TOOL_MISSING, "lacks nvidia-smi (not installed there", "conda activate"),
        (SLURMSTEPD_MPIRUN_MISSING, "mpirun --prefix", "conda activate"),
        (CONTAINER_EXEC_MISSING, "Install deepspeed in the image", "conda activate"),
    )
    for n, (log, says, not_says) in enumerate(expected):
        (tmp_path / str(n)).mkdir()
        top = top_failure(tmp_path / str(n), log)
        assert top.kind == "config_error", log
        assert says in top.suggestion and not_says not in top.suggestion, (log, top.suggestion)


# 7. torch's companion extensions (libtorchaudio, libtorchtrt) are extensions, not torch's own libraries; the
# loader names the library that needs the symbol, never one that lacks it.
TORCHAUDIO_SYMBOL = (
    "OSError: /home/bob/.local/lib/python3.11/site-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: "
    "_ZN3c1017RegisterOperatorsD1Ev\n"
)
UCX_SYMBOL = "nixlbench: symbol lookup error: /opt/nixl/lib/libplugin_UCX.so: undefined symbol: ucp_ep_query_v2\n"


def test_a_companion_extensions_symbol_is_its_rebuild_and_the_generic_fix_names_who_needs_it(tmp_path: Path) -> None:
    audio = top_failure(tmp_path, TORCHAUDIO_SYMBOL)
    assert audio.metrics["code"] == "shared_library_symbol_mismatch"
    assert "torchaudio==" in audio.suggestion and "two torch installs" not in audio.suggestion
    (tmp_path / "ucx").mkdir()
    ucx = top_failure(tmp_path / "ucx", UCX_SYMBOL)
    assert ucx.metrics["code"] == "shared_library_symbol_mismatch"
    assert "libplugin_UCX.so needs ucp_ep_query_v2" in ucx.suggestion and " lacks " not in ucx.suggestion


# 9. mpirun's help text is read up to its closing dashes: a later job's 'Executable:' is not the program it named,
# and a few other processes' lines interleaved into it do not hide its own.
OMPI_HEAD = """\
--------------------------------------------------------------------------
mpirun was unable to find the specified executable file, and therefore
did not launch the job.  This error was first reported for process
rank 0; it may have occurred for other processes as well.
"""
OMPI_THEN_OTHER_JOB = (
    OMPI_HEAD
    + """\
--------------------------------------------------------------------------
+ echo "fallback run"
fallback run
Executable: /opt/tools/bin/launcher-helper
"""
)
OMPI_INTERLEAVED = (
    OMPI_HEAD
    + "".join(f"[gpu-c03] [INFO] data prefetcher warmed shard {n}\n" for n in range(7))
    + """\

NOTE: A common cause for this error is misspelling a mpirun command
      line parameter option (remember that mpirun interprets the first
      unrecognized command line token as the executable).

Node:       gpu-c01
Executable: deepspeed
--------------------------------------------------------------------------
"""
)


def test_mpiruns_help_text_is_read_to_its_closing_dashes(tmp_path: Path) -> None:
    other = top_failure(tmp_path, OMPI_THEN_OTHER_JOB)
    assert other.metrics["code"] == "mpirun_executable_not_found" and "launcher-helper" not in other.suggestion
    (tmp_path / "interleaved").mkdir()
    interleaved = top_failure(tmp_path / "interleaved", OMPI_INTERLEAVED)
    assert "(deepspeed)" in interleaved.suggestion


# 11. The UCC backend missing from the build gets its own fix, not the NCCL install's.
UCC_BACKEND_MISSING = """\
Traceback (most recent call last):
  File "/workspace/bench_allreduce.py", line 18, in <module>
    dist.init_process_group(backend="ucc")
RuntimeError: Distributed package doesn't have UCC built in
"""


def test_a_missing_ucc_backend_is_told_to_use_a_build_with_ucc_or_another_backend(tmp_path: Path) -> None:
    top = top_failure(tmp_path, UCC_BACKEND_MISSING)
    assert top.metrics["code"] == "torch_without_nccl"
    assert "USE_C10D_UCC=1" in top.suggestion and "is_ucc_available()" in top.suggestion
    assert "nvidia-nccl-cu12" not in top.suggestion


# 13. A guide's example of the message, indented under its heading, is no shell that ran; the same message where a
# script ran it is.
DOC_EXAMPLE = """\
Known issues:
    /bin/sh: 1: accelerate: not found
"""
RAN_IN_SCRIPT = "/bin/sh: 1: accelerate: not found\n"


def test_an_example_quoted_under_a_documentation_heading_is_no_failure(tmp_path: Path) -> None:
    assert diagnose_failures(tmp_path, DOC_EXAMPLE) == []
    (tmp_path / "ran").mkdir()
    assert top_failure(tmp_path / "ran", RAN_IN_SCRIPT).metrics["code"] == "launch_program_missing"
