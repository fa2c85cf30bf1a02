"""Signature rows (knowledge/runtime_errors.py's second theme): the launcher told to stop, the rendezvous store's
socket, the build (no NCCL, an extension built for another torch) and MPI's abort."""

from __future__ import annotations

import re

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

PT = "https://github.com/pytorch/pytorch/blob/main/"
# torch_without_nccl's fix where the backend asked for is MPI (distributed_c10d.py _new_process_group_helper:
# "MPI is only included if you build PyTorch from source on a host that has MPI installed"; is_mpi_available() is
# False in every wheel)
MPI_NOT_BUILT_IN = (
    'No PyTorch wheel or conda package has the MPI backend: use one this build has, backend="nccl" for GPUs on '
    'Linux, "gloo" for CPUs or on Windows / macOS (torch.distributed.is_mpi_available() / is_nccl_available() / '
    "is_gloo_available() say which); launching with mpirun still works with them (read RANK / WORLD_SIZE from "
    "OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE). For the MPI backend itself, build PyTorch from source with MPI "
    "installed (USE_MPI=1)."
)
# UCC's backend (ProcessGroupUCC) is built only with USE_C10D_UCC=1 against a UCC install: no wheel has it
UCC_NOT_BUILT_IN = (
    "This PyTorch build has no UCC backend (ProcessGroupUCC is compiled only from source with USE_C10D_UCC=1 and "
    'UCC / UCX installed): use backend="nccl" for GPUs or "gloo" for CPUs '
    "(torch.distributed.is_ucc_available() says whether this build has it), or build PyTorch from source with "
    "USE_C10D_UCC=1 (UCC_HOME / UCX_HOME pointing at their installs)."
)
# the launchers' own options (torch/distributed/run.py, paddle.distributed.launch, deepspeed's runner, accelerate
# launch) as an argparse 'unrecognized arguments' of the script names them ('-m torch.distributed.launch' too)
_OPTION_AFTER_SCRIPT = (
    r"(?P<script>[\w./-]+): error: unrecognized arguments: (?:.*?\s)?(?P<arg>-m torch\.distributed\.\w+|"
    r"--(?:gpus|ips|selected_gpus|nproc[_-]per[_-]node|nnodes|node[_-]rank|master[_-]addr|master[_-]port|"
    r"rdzv[_-]\w+|num[_-]gpus|num[_-]nodes|hostfile|num[_-]processes|num[_-]machines|machine[_-]rank|"
    r"multi[_-]gpu|main[_-]process[_-](?:ip|port)|deepspeed_multinode_launcher))(?=[\s=]|$)"
)
# What shows a launcher ran the script (its command, its module, its own log lines): a launcher-looking option the
# script rejects is the launcher's only then; with no launcher in the log it is the script's own option
# ('train.py: error: unrecognized arguments: --num_gpus 2' from a script run by hand). The launchers' own lines
# count: paddle.distributed.launch's launch_utils.py ('ABORT!!! Out of all 8 trainers', PaddlePaddle/PaddleOCR#3327),
# torchrun's elastic agent (torch.distributed.elastic, ChildFailedError). '-m torch.distributed.*'
# in the rejected arguments is the launcher itself and needs nothing more.
LAUNCHER_EVIDENCE = re.compile(
    r"-m\s+torch\.distributed\.|\btorchrun\b|torch/distributed/(?:run|launch)\.py|\bdeepspeed(?:\s|\.launcher)|"
    r"\baccelerate\s+launch\b|accelerate/commands/launch|paddle\.distributed\.|\blaunch_utils\.py\b|"
    r"\bLAUNCH INFO\b|deepspeed/launcher|torch\.distributed\.elastic|\bChildFailedError\b"
)
SELF_EVIDENT_ARG = re.compile(r"-m torch\.distributed\.")
# The negative local rank where the log shows a launcher (LAUNCHER_EVIDENCE): the launcher set LOCAL_RANK in the
# environment, and the script read its own argument instead: torchrun (torch >= 1.10, torch.distributed.run) passes
# no --local_rank (torch.distributed.launch's --use-env is its default and deprecated), so args.local_rank keeps
# argparse's default -1 (docs: torchrun 'Transitioning from torch.distributed.launch to torchrun').
LOCAL_RANK_FROM_ENV = (
    "The device index is the local rank, and it is -1 though a launcher started the script: the launcher set "
    "LOCAL_RANK in the environment, but the script read its own --local_rank argument, which torchrun no longer "
    "passes (torch.distributed.launch's --use-env is its default), so argparse's default -1 stayed. Read it from "
    "the environment: local_rank = int(os.environ['LOCAL_RANK']) (or default=int(os.environ.get('LOCAL_RANK', "
    "-1)) on the argument), then torch.cuda.set_device(local_rank); with DeepSpeed or HF TrainingArguments "
    "update to a release that reads LOCAL_RANK itself."
)
LOCAL_RANK_FROM_ENV_REFERENCE = (
    "https://pytorch.org/docs/stable/elastic/run.html#transitioning-from-torch-distributed-launch-to-torchrun"
)

# A variable a launcher sets for each process, as a KeyError names it ('KeyError: 'SLURM_LOCALID'').
_LAUNCHER_VARIABLE = (
    r"KeyError: ['\"](?P<var>SLURM_\w+|LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT|"
    r"OMPI_COMM_WORLD_\w+|PMIX?_\w+)['\"]"
)
# init_process_group's env:// rendezvous naming the variable it did not find (torch/distributed/rendezvous.py).
_ENV_RENDEZVOUS_VARIABLE = (
    r"env:// rendezvous: environment variable (?P<var>RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT) expected, but not set"
)
# A SLURM per-node list int() refused: '1(x2)', '2(x3),1', '1,2(x3)' (possessive: no backtracking into the list).
# Only the compressed form with its '(x' is SLURM's own: a plain '4,2' is as often CUDA_VISIBLE_DEVICES ('0,1') or a
# number with a thousands separator ('1,000') read with int().
_SLURM_COUNT = (
    r"invalid literal for int\(\) with base 10: "
    r"'(?P<value>(?:\d++,)*+\d++\(x\d++\)(?:,\d++(?:\(x\d++\))?+)*+)'"
)

LAUNCHER_SIGNATURES: tuple[Signature, ...] = (
    # torch.distributed.launch passes each worker its local rank as an argument: '--local-rank' since torch 2.0
    # (torch/distributed/run.py, launch.py), '--local_rank' before; a script whose argparse knows only the old
    # spelling exits with argparse's status 2 on every rank
    row(
        "launcher_local_rank_argument",
        "unrecognized arguments: --local",
        r"(?P<script>[\w./-]+): error: unrecognized arguments: (?P<arg>--local[-_]rank)\b",
        era="torch >= 2.0 (torch.distributed.launch passes --local-rank; --local_rank before)",
        cause="configuration",
        meaning="The launcher passed each worker its local rank as a command-line argument the script's argparse "
        "does not accept, so every worker exited with argparse's status 2 before doing anything.",
        remedy=(
            "Launch with torchrun, which passes the local rank in the LOCAL_RANK environment variable (read "
            "int(os.environ['LOCAL_RANK'])), or make {script|the script}'s argparse accept both spellings "
            "(parser.add_argument('--local-rank', '--local_rank', type=int)); or use the script's newer release."
        ),
        reference=PT + "torch/distributed/launch.py; https://github.com/huggingface/pytorch-image-models/issues/1724",
        fields_re=r"(?P<script>[\w./-]+): error: unrecognized arguments: (?P<arg>--local[-_]rank)\b",
    ),
    # A launcher's own option written after the script's name belongs to the script: argparse of the script rejects
    # it on every worker (and the launcher ran with its default, all GPUs). rosinality/ocr-pytorch#1 ('train.py:
    # error: unrecognized arguments: -m torch.distributed.launch --nproc_per_node 2': "use python -m
    # torch.distributed.launch train.py"), FreedomIntelligence/HuatuoGPT#25 (accelerate launch's options). The
    # options are the launchers' own (torch/distributed/run.py, paddle.distributed.launch, deepspeed, accelerate).
    row(
        "launcher_option_after_script",
        "unrecognized arguments:",
        _OPTION_AFTER_SCRIPT,
        era="torchrun / torch.distributed.launch, paddle.distributed.launch, deepspeed, accelerate launch",
        cause="configuration",
        meaning="A launcher's option was written after the training script's name, so it went to the script, "
        "whose argparse rejects it; the launcher itself ran with its default (every GPU of the host).",
        remedy=(
            "Put the launcher's options before the script: everything after the script's name is the script's "
            "(python -m paddle.distributed.launch --gpus 0,1 train.py ARGS, torchrun --nproc_per_node=N train.py ARGS, "
            "deepspeed --num_gpus N train.py ARGS, accelerate launch --num_processes N train.py ARGS); "
            "{arg|the option} goes before {script|the script}."
        ),
        reference="https://github.com/rosinality/ocr-pytorch/issues/1; "
        "https://github.com/FreedomIntelligence/HuatuoGPT/issues/25; " + PT + "torch/distributed/run.py",
        fields_re=_OPTION_AFTER_SCRIPT,
    ),
    # ---- the launcher's environment: variables a launcher sets for each process, read by the script -------------
    # srun sets SLURM_* for each task inside an allocation (SLURM's srun(1) 'OUTPUT ENVIRONMENT VARIABLES'),
    # torchrun LOCAL_RANK / RANK / WORLD_SIZE / LOCAL_WORLD_SIZE / MASTER_ADDR / MASTER_PORT / GROUP_RANK
    # (torch/distributed/run.py), Open MPI's mpirun OMPI_COMM_WORLD_* (mpirun(1)), PMI / PMIx launchers PMI_* /
    # PMIX_*: a KeyError on one is the script (or a framework mode made for that launcher) started without it
    # (Lightning-AI/pytorch-lightning#676: ddp2 read SLURM_LOCALID on a machine without SLURM).
    row(
        "launcher_variable_missing",
        "KeyError: '",
        _LAUNCHER_VARIABLE,
        era="all releases",
        cause="configuration",
        meaning="The script (or the framework's mode for one launcher) read a variable that launcher sets for each "
        "process, and the process was started without that launcher.",
        remedy=(
            "{var|The variable} is set by the launcher for each process (SLURM_* by srun inside a SLURM allocation; "
            "LOCAL_RANK, RANK, WORLD_SIZE, MASTER_ADDR by torchrun; OMPI_COMM_WORLD_* by Open MPI's mpirun): start "
            "the script with that launcher (srun python ... in the sbatch script, torchrun --nproc_per_node=N ...), "
            "or choose the framework's mode for the way it is started (Lightning outside SLURM: distributed_backend "
            "/ strategy 'ddp' or 'dp', not ddp2 or a SLURM environment plugin)."
        ),
        reference="https://slurm.schedmd.com/srun.html#SECTION_OUTPUT-ENVIRONMENT-VARIABLES; "
        + PT
        + "torch/distributed/run.py; https://github.com/Lightning-AI/pytorch-lightning/issues/676",
        fields_re=_LAUNCHER_VARIABLE,
    ),
    # init_process_group(init_method='env://') reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the
    # environment and raises _env_error(var) when one is absent (torch/distributed/rendezvous.py
    # _env_rendezvous_handler: 'Error initializing torch.distributed using env:// rendezvous: environment variable
    # RANK expected, but not set'); torchrun / torch.distributed.launch set all four for each worker, so a script
    # started as a plain 'python train.py' fails here before any rank talks to another.
    row(
        "env_rendezvous_variable_missing",
        "env:// rendezvous",
        _ENV_RENDEZVOUS_VARIABLE,
        era="torch >= 1.0 (torch/distributed/rendezvous.py, init_method='env://', the default)",
        cause="configuration",
        meaning="init_process_group's env:// rendezvous did not find a variable it reads in the environment: the "
        "script was not started by a launcher that sets it for each process.",
        remedy=(
            "{var|RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT} is set for each worker by the launcher: start the "
            "script through it (torchrun --nproc_per_node=N train.py ARGS, or python -m torch.distributed.launch "
            "--nproc_per_node=N train.py ARGS on old torch; srun with the variables exported under SLURM), or set "
            "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT yourself for each process (one GPU without a launcher: "
            "run the script's non-distributed mode)."
        ),
        reference=PT + "torch/distributed/rendezvous.py",
        fields_re=_ENV_RENDEZVOUS_VARIABLE,
    ),
    # torch refuses a negative device index where a Python int names the device (torch/csrc/utils/
    # python_arg_parser.h deviceFromLong, torch/csrc/Device.cpp: 'Device index must not be negative'): in a
    # distributed script the int is the local rank, whose default is -1 (argparse '--local_rank', default=-1;
    # DeepSpeed's engine and HF TrainingArguments the same) until a launcher sets LOCAL_RANK or passes --local_rank.
    # Azure/azureml-examples#346 (DeepSpeed engine's local_rank -1 in a release that did not pass it).
    row(
        "launcher_local_rank_unset",
        "Device index must not be negative",
        r"Device index must not be negative",
        era="torch >= 1.0 (a Python int as the device: .to(i), torch.device('cuda', i), torch.cuda.set_device(i))",
        cause="configuration",
        meaning="A tensor or module was moved to a negative device index: the local rank the script used is -1, its "
        "default when no launcher set LOCAL_RANK (or passed --local_rank) for the process, or when the script read "
        "its argument and not the LOCAL_RANK a launcher set.",
        remedy=(
            "The device index is the local rank, and it is -1: no launcher gave this process LOCAL_RANK. Start the "
            "script with the launcher that sets it (torchrun --nproc_per_node=N train.py, deepspeed train.py, "
            "accelerate launch; under SLURM srun with LOCAL_RANK taken from SLURM_LOCALID), use a release of the "
            "framework / environment whose launcher passes it, or read int(os.environ.get('LOCAL_RANK', 0)) so a "
            "single process uses cuda:0."
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/csrc/utils/python_arg_parser.h; "
        "https://github.com/Azure/azureml-examples/issues/346",
    ),
    # SLURM writes per-node counts compressed: '2(x3)' is 2 on each of 3 nodes, nodes that differ are comma
    # separated ('2(x3),1'): SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE (sbatch(1),
    # srun(1)). int() of such a value fails as soon as two nodes run the same count (sehoffmann/dmlcloud#39).
    row(
        "slurm_compressed_count",
        "invalid literal for int()",
        _SLURM_COUNT,
        era="SLURM, all releases",
        cause="configuration",
        meaning="A SLURM per-node count in SLURM's compressed form ('N(xM)': N on each of M nodes) was read with "
        "int(): it fails whenever two or more nodes run the same count.",
        remedy=(
            "'{value|N(xM)}' is SLURM's compressed per-node list (SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE, "
            "SLURM_JOB_CPUS_PER_NODE: 'N(xM)' is N on each of M nodes, commas between nodes that differ): the code "
            "that read it must expand it (or read a plain count: SLURM_NTASKS, SLURM_NNODES, SLURM_NTASKS_PER_NODE, "
            "SLURM_LOCALID per task); upgrade the tool that parses it, or patch its int() to take the number before "
            "'(x'."
        ),
        reference="https://slurm.schedmd.com/sbatch.html#OPT_SLURM_TASKS_PER_NODE; "
        "https://github.com/sehoffmann/dmlcloud/issues/39",
        fields_re=_SLURM_COUNT,
    ),
    # ---- the launcher told to stop, the build, MPI ---------------------------------------------------------
    row(
        "launcher_got_sighup",
        ("got signal: 1", "death signal", "closing signal sighup"),
        (
            r"SignalException: Process \d+ got signal: 1\b",
            r"Received (?:Signals\.SIGHUP|1) death signal",
            r"Sending process \d+ closing signal SIGHUP",
        ),
        era="torch >= 1.9 (torch/distributed/elastic/multiprocessing/api.py: SignalException)",
        kind="crash",
        cause="configuration",
        meaning="The launcher received SIGHUP: the terminal or SSH session that started the job closed, and "
        "the launcher took the workers down with it.",
        remedy=(
            "Start the job detached from the terminal: inside tmux / screen, or nohup torchrun ... > train.log 2>&1 & "
            "followed by disown (a shell still sends SIGHUP to its background jobs at logout), or through the "
            "scheduler (sbatch, a Kubernetes Job); nothing in the training failed: resume from the last checkpoint."
        ),
        reference=PT + "torch/distributed/elastic/multiprocessing/api.py",
        severity="warning",  # the launcher's end, after any error of the job itself
    ),
    row(
        "launcher_got_sigterm",
        ("got signal: 15", "death signal"),
        (r"SignalException: Process \d+ got signal: 15\b", r"Received (?:Signals\.SIGTERM|15) death signal"),
        era="torch >= 1.9 (torch/distributed/elastic: SignalException, 'Received ... death signal')",
        kind="crash",
        cause="configuration",
        meaning="The launcher itself was sent SIGTERM from outside the job: the scheduler's time limit or "
        "preemption, scancel, or Kubernetes deleting or evicting the pod; it stopped the workers.",
        remedy=(
            "Ask the scheduler why it stopped the job (sacct -j JOB -o State,Reason; kubectl describe pod / get "
            "events); for time limits and preemption, checkpoint on the signal and requeue (SLURM --signal=USR1@90 "
            "--requeue; Lightning's SLURM auto-requeue; torchrun --max-restarts with a resumable checkpoint)."
        ),
        reference=PT + "torch/distributed/elastic/multiprocessing/api.py",
        severity="warning",  # the launcher's end, after any error of the job itself
    ),
    row(
        "store_socket_timeout",
        "socket timeout",
        r"RuntimeError: Socket Timeout|^Socket Timeout$",
        era="torch 1.x (c10d TCPStore, Utils.hpp recvBytes / sendBytes)",
        kind="missing_rank",
        cause="configuration",
        meaning="A rank's connection to the rendezvous store (TCPStore on MASTER_ADDR:MASTER_PORT) timed out: "
        "the store's host is unreachable or its process is gone, or the other ranks did not arrive in time.",
        remedy=(
            "Check that MASTER_ADDR / MASTER_PORT reach rank 0's host from every node (the same on all nodes; "
            "firewall), that rank 0 is still alive (its own log), and that every rank starts within the "
            "timeout; raise init_process_group(timeout=...) only if ranks are just slow to arrive."
        ),
        reference=PT + "torch/csrc/distributed/c10d/TCPStore.cpp",
        confidence="medium",
    ),
    # torch 2.4 made libuv the TCPStore's default backend (pytorch/pytorch#127957) while the Windows wheels are
    # built without it: pytorch/pytorch#139990 (t-vi: USE_LIBUV=0 or use_libuv=0 in the URL), #148283,
    # kohya-ss/musubi-tuner#100 (USE_LIBUV=0 did not reach torchrun's static rendezvous), SkyworkAI/SkyReels-V2#55
    # (2.4-2.7 on Windows all fail: "I have been using the Windows system all along"); DeepSpeed#7064 guards it.
    row(
        "store_libuv_missing",
        "use_libuv was requested",
        r"use_libuv was requested but PyTorch was buil[dt] without libuv support",
        era="torch >= 2.4 on Windows (TCPStore's libuv default, pytorch/pytorch#127957)",
        cause="configuration",
        meaning="The rendezvous store asked for its libuv backend, which torch 2.4+ uses by default, but this "
        "PyTorch build (the Windows wheels) has no libuv: the process group cannot be created at all.",
        remedy=(
            "Ask for the old store backend: init_process_group(init_method='env://?use_libuv=False') (or "
            "'tcp://HOST:PORT?use_libuv=0'), or USE_LIBUV=0 in the environment for env:// init; torchrun's own "
            "rendezvous store ignores both on some releases: then launch the DDP workers another way, run under "
            "WSL / Linux, or use PyTorch 2.3.x, the last release that did not default to libuv."
        ),
        reference="https://github.com/pytorch/pytorch/issues/139990; https://github.com/kohya-ss/musubi-tuner/"
        "issues/100; https://github.com/SkyworkAI/SkyReels-V2/issues/55; "
        "https://pytorch.org/tutorials/intermediate/TCPStore_libuv_backend.html",
    ),
    row(
        "torch_without_nccl",
        ("distributed package doesn't have", "libnccl.so"),
        (
            # the backend asked of a build that lacks it: NCCL (Windows, macOS, CPU-only), MPI (every wheel), UCC
            r"Distributed package doesn't have (?:NCCL|MPI|UCC) built in",
            r"libnccl\.so(?:\.\d+)?: cannot open shared object file",
        ),
        era="torch builds without NCCL: Windows, macOS, CPU-only wheels; a CUDA wheel without nvidia-nccl",
        cause="configuration",
        meaning="This PyTorch install has no NCCL (or not the backend asked for): a Windows, macOS or CPU-only "
        "build, or a CUDA build whose NCCL library is missing; the MPI and UCC backends only a build from source "
        "has.",
        remedy=(
            'On Windows or macOS use backend="gloo" (init_process_group("gloo"); accelerate / Lightning pick it '
            "when told; MPI only in a build from source): torch.distributed.is_nccl_available() says whether this "
            "build has NCCL; on Linux install a CUDA build of PyTorch (pip install torch --index-url "
            "https://download.pytorch.org/whl/cu121) with its nvidia-nccl-cu12 package, and check "
            "torch.cuda.nccl.version()."
        ),
        remedy_when=(
            (r"doesn't have MPI built in", MPI_NOT_BUILT_IN),
            (r"doesn't have UCC built in", UCC_NOT_BUILT_IN),
        ),
        reference="https://pytorch.org/docs/stable/distributed.html#backends; "
        + PT
        + "torch/distributed/distributed_c10d.py (_new_process_group_helper)",
        fields_re=r"doesn't have (?P<backend>\w+) built in",
    ),
    row(
        "mpi_abort",
        "mpi_abort was invoked",
        r"MPI_ABORT was invoked on rank \d+",
        era="Open MPI, all releases (ompi_mpi_abort)",
        cause="application",
        meaning="A rank called MPI_Abort (its program gave up after an error of its own) and mpirun ended the job.",
        remedy=(
            "Read rank {abort_rank|the aborting rank}'s own output just before the abort: the error that made it call "
            "MPI_Abort is there (errorcode {errorcode|N}); the other ranks were only stopped."
        ),
        reference="https://www.open-mpi.org/doc/current/man3/MPI_Abort.3.php",
        ranks_re=r"MPI_ABORT was invoked on rank (\d+)",
        fields_re=r"on rank (?P<abort_rank>\d+)|errorcode (?P<errorcode>-?\d+)",
    ),
)
