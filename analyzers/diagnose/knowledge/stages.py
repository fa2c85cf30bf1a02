"""The stages of a distributed job, and the lines each emitting program prints when it reaches one.

launch -> rendezvous -> comm_init -> first_collective -> (data_prep) -> steps (<-> evaluation, checkpoint) -> exit

Each marker row names the program that prints it and the source where the text is printed, so a new
launcher or framework is a new row. A log's stage is the stage of its last marker line (reasoning/stages.py);
`ends` rows close a stage (the evaluation's result, a saved checkpoint, the last training step), so what
follows them is the next stage. A stage's row says what was expected next, the known causes of a stop
there, and what to check: the words of a finding for a log that ends in it with no error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.line_shapes import LAUNCHERS, NCCL_TESTS_ROW, SHELL_ASSIGNMENT_RUN
from scope.analyzers.diagnose.knowledge.remedies import P2P_BLOCKED, TIMEOUT_KNOBS
from scope.analyzers.diagnose.knowledge.serving_stages import SERVING_MARKERS, SERVING_NEEDLES
from scope.analyzers.diagnose.knowledge.stage_marker import Marker

# data_prep comes after steps in this order only so that a pre-processing progress bar (also a step counter to
# the steps row) is read as pre-processing: a line's marker is its furthest stage (line_marker).
STAGES = (
    "launch",
    "rendezvous",
    "comm_init",
    "first_collective",
    "steps",
    "data_prep",
    "evaluation",
    "checkpoint",
    "exit",
)


TORCHRUN = "torch/distributed/elastic (agent/server/api.py, rendezvous/*.py)"
C10D = "torch/distributed/distributed_c10d.py"
NCCL_INIT = "NCCL src/init.cc, bootstrap.cc, transport/*.cc (NCCL_DEBUG=INFO)"
NCCL_TESTS = "nccl-tests src/common.cu (banner, table header, result rows, summary)"
HF = "transformers/trainer.py"
LIGHTNING = "lightning/fabric/utilities/distributed.py, pytorch_lightning/loops"
DEEPSPEED = "deepspeed/launcher/launch.py, runner.py, comm/comm.py, runtime/engine.py"
MEGATRON = "megatron/training/training.py, initialize.py"
PIPELINING = "torch/distributed/pipelining/stage.py (PipelineStage._shape_inference)"
C10D_SOCKET = "torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp), TCPStore.cpp"

# What a stop right after c10d's client connected to the store means: the TCP connection opened, so no firewall
# refused it; a proxy in the path that accepts the connection and passes nothing on does this (in Kubernetes an
# Istio sidecar intercepting the store's port: kubeflow/trainer#1636, where the envoy log shows the inbound
# connections on the master port removed, and #1637; kubeflow/pytorch-operator#329 runs its PyTorchJob with
# sidecar.istio.io/inject: "false"; NVIDIA/nccl#1638, the same sidecar stopping NCCL's bootstrap), or the store
# still waiting for ranks that never started (world size larger than the ranks launched).
C10D_CONNECTED_WHY = (
    "the rank's TCP connection to the store opened and nothing came after it: no firewall refused it (that fails "
    "the connect or times it out), so the store is waiting - for ranks that never started or died before init "
    "(every rank's own log says which), for a world size larger than the ranks launched (check --nnodes / "
    "--nproc_per_node / WORLD_SIZE against what ran), or for a rank blocked before its own init_process_group"
)
# Added where the log shows Kubernetes or a service mesh (KUBERNETES_SHOWN): something in the path that accepts the
# connection and passes nothing on (kubeflow/trainer#1636: Istio's envoy sidecar intercepting the master port).
C10D_SIDECAR_WHY = (
    "in Kubernetes a service-mesh sidecar (Istio's envoy) injected into the pods can accept the connection and pass "
    "nothing on: run the job's pods without it (annotation sidecar.istio.io/inject: \"false\" on each replica's pod "
    "template, or exclude the port with traffic.sidecar.istio.io/excludeInboundPorts / excludeOutboundPorts)"
)
# What shows a job runs in Kubernetes pods or behind a mesh: a training operator's pod names ('pytorch-simple-
# master-0', '...-worker-1'), the service-account variables, kubeflow, Istio, envoy.
KUBERNETES_SHOWN = re.compile(
    r"\b[\w-]+-(?:master|worker|launcher)-\d+\b|KUBERNETES_\w+|\bkubeflow\b|\bistio\b|\benvoy\b|\bkubectl\b",
    re.I,
)
# What a stop in Lightning's sanity check means: the first validation steps never finished.
SANITY_CHECK_WHY = (
    "the log ends in Lightning's sanity check, the validation steps run before training: the first validation "
    "step hangs - in the validation dataloader (its worker processes: num_sanity_val_steps=0 or num_workers=0 as a "
    "test) or in a collective of validation (a pipeline-parallel send/recv between stages, a metric's sync across "
    "ranks), where NCCL_P2P_LEVEL / NCCL_P2P_DISABLE / NCCL_SHM_DISABLE set in the environment are the first "
    "thing to try removing"
)

MARKERS: tuple[Marker, ...] = (
    # ---- launch: a launcher ran (its command line, its banner) ------------------------------------------
    Marker(
        "launch",
        "shell",
        rf"^[ \t]*+(?:[^\s$#]*+[$#][ \t]++)?(?:export[ \t]++\w++=[^\s;]*+[ \t]*+;[ \t]*+)*+{SHELL_ASSIGNMENT_RUN}"
        rf"(?:{LAUNCHERS})\s",
        "the command line the job was started with",
    ),
    Marker("launch", "torchrun", r"Starting elastic_operator with launch configs", TORCHRUN),
    Marker("launch", "deepspeed", r"WORLD INFO DICT|nnodes=\d+, num_local_procs=\d+", DEEPSPEED),
    # ---- rendezvous: the ranks find each other (store, process group) ---------------------------------
    Marker("launch", "torchrun", r"Rendezvous'ing worker group|Starting worker group|Rendezvous complete", TORCHRUN),
    Marker("rendezvous", "c10d", r"Waiting in store based barrier|Added key: store_based_barrier_key", C10D),
    # c10d's client socket to the TCPStore (TORCH_CPP_LOG_LEVEL=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL): a log
    # whose last lines are these connects stopped between reaching the store and the process group's end
    Marker(
        "rendezvous",
        "c10d",
        r"\[c10d(?: - \w+)?\] The client socket (?:has connected to|is attempting to connect to|will attempt to "
        r"connect to)",
        C10D_SOCKET,
        why=C10D_CONNECTED_WHY,
    ),
    # 'initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/2' is Lightning 1.x's wording of the same line
    Marker("rendezvous", "lightning", r"(?:Initializing distributed|initializing ddp): GLOBAL_RANK", LIGHTNING),
    Marker(
        "rendezvous",
        "deepspeed",
        r"Initializing TorchBackend in DeepSpeed|Distributed backend already initialized",
        DEEPSPEED,
    ),
    Marker("rendezvous", "megatron", r"> initializing torch distributed", MEGATRON),
    Marker(
        "rendezvous",
        "accelerate",
        r"Distributed environment: (?:MULTI_GPU|DistributedType\.\w+)",
        "accelerate/state.py",
    ),
    # ---- comm_init: NCCL / gloo set up the communicator ------------------------------------------------
    # NCCL's first lines (bootstrap interface, network plugin, version) are printed by a healthy run too, and a
    # snippet of them is how a healthy run is often quoted: a log ending on them is no stop
    Marker(
        "comm_init",
        "nccl",
        r"NCCL INFO (?:Bootstrap|NET/|Using network|cudaDriverVersion)|^NCCL version \d",
        NCCL_INIT,
        stops=False,
    ),
    Marker(
        "comm_init",
        "nccl",
        r"NCCL INFO (?:Channel \d+|Init START|.* via (?:P2P|SHM|NET)|Connected all|comm 0x[0-9a-f]+ rank \d+ nranks|"
        r"Trees|Setting affinity|Pattern \d)",
        NCCL_INIT,
    ),
    Marker(
        "comm_init",
        "nccl-tests",
        r"^#?[^\S\n]*n?Thread \d+ nGpus \d+|^[#>]?[^\S\n]*Using devices"
        r"|^[#>]?[^\S\n]*Rank\s+\d+ (?:Group \d+ )?(?:Pid \d+ )?(?:on \S+ )?uses? device",
        NCCL_TESTS,
    ),
    Marker("comm_init", "megatron", r"> initializing (?:tensor|pipeline) model parallel", MEGATRON),
    *SERVING_MARKERS,  # vLLM and sglang (knowledge/serving_stages.py)
    # NCCL's socket.cc retries a refused connect and says so at INFO: once at start-up is normal, but a log whose
    # last lines are the retries is a rank that cannot reach its peer's bootstrap address
    Marker(
        "comm_init",
        "nccl",
        r"NCCL INFO Call to connect returned",
        "NCCL src/misc/socket.cc (socketConnect / socketStartConnect retry loop)",
        alone=True,
        why="the rank keeps retrying a connection its peer refuses: nothing listens at the address the peer "
        "published (the interface NCCL chose is one the other host cannot reach, or the peer never started)",
    ),
    # ---- first_collective: set-up finished, the first collective or step comes next ------------------
    Marker("first_collective", "nccl", r"NCCL INFO .*Init COMPLETE", NCCL_INIT, ends=True),
    Marker("first_collective", "c10d", r"Completed store-based barrier", C10D, ends=True),
    # Lightning prints its model summary right after this banner, so a log that ends on it (or on the dashes
    # under it) is in DDP's constructor, whose parameter broadcast is the first collective: no stage is done
    Marker(
        "first_collective",
        "lightning",
        r"All (?:distributed|DDP) processes registered",
        LIGHTNING + " (1.x: 'All DDP processes registered. Starting ddp with N processes')",
        why="every rank registered, then DDP's first broadcast of the parameters never completed over NCCL "
        "(the same run with PL_TORCH_DISTRIBUTED_BACKEND=gloo, or NCCL_P2P_DISABLE=1, tells NCCL's transport apart)",
    ),
    Marker(
        "first_collective",
        "nccl-tests",
        r"^[#>]?[^\S\n]+(?:size|bytes)\s+(?:count|N)\s+type\b|out-of-place\s+in-place",
        NCCL_TESTS,
    ),
    # torch.distributed.pipelining's PipelineStage built without input_args / output_args infers the stages'
    # shapes at runtime, at the first step: each stage after the first logs 'Shape inference: stage N receiving
    # from stage N-1' and blocks in dist.recv_object_list from the previous stage's rank (pipelining/stage.py
    # _shape_inference, at debug level: TORCH_LOGS / verbose logging). A log that ends there stopped in that
    # exchange, before the first step (pytorch/torchtitan#1492: multi-node stages stuck in it, fixed in PyTorch,
    # worked around with explicit shapes). Not 'running shape-inference at runtime': the stage's constructor says
    # it, before any exchange.
    Marker(
        "first_collective",
        "torch.pipelining",
        r"Shape inference: stage \d+ receiving from stage \d+",
        PIPELINING,
        one_line=True,
        why="the pipeline stages stopped in their runtime shape inference: a later stage waits in "
        "recv_object_list for the stage before it, which never sent (a hang of runtime shape inference on "
        "multi-node runs, fixed in later PyTorch releases: pytorch/torchtitan#1492): upgrade PyTorch, or give "
        "each PipelineStage explicit input_args / output_args (the micro-batch's shapes and dtype) so the "
        "exchange is skipped; the previous stage's ranks' own lines say whether they reached their send",
    ),
    # the stage's send of its output shapes to the next stage (send_object_list): a stop there as any first
    # collective's, not one line alone (the receiver's line says more)
    Marker("first_collective", "torch.pipelining", r"Shape inference: stage \d+ sending to stage \d+", PIPELINING),
    # the receive returned (or there was none) and the stage ran its forward on the shapes: it passed the exchange
    Marker(
        "first_collective",
        "torch.pipelining",
        r"Shape inference: stage \d+ (?:inputs .*, outputs|running forward|skipping send)",
        PIPELINING,
        ends=True,
    ),
    Marker("first_collective", "transformers", r"\*\*\*\*\* Running training \*\*\*\*\*", HF, ends=True),
    Marker("first_collective", "torchtitan", r"Training starts at step", "torchtitan/train.py", ends=True),
    Marker("first_collective", "megatron", r"\[after dataloaders are built\]|training \.\.\.$", MEGATRON, ends=True),
    # ---- steps: training (or benchmark) progress ---------------------------------------------------
    Marker(
        "steps",
        "frameworks",
        r"(?i)(?:(?<!job )\bstep\s*[:=]?\s*\d+|\biteration\s+\d+\s*/|\bIter(?:ation)?\s*#?\d+|\bepoch\s*[:=]?\s*\d+|"
        r"\{'loss': |\d+/\d+ \[\d+:\d+<|\bepoch: \[\d+\]\s+\[\s*\d+/\d+\]\s+eta: )",
        "torchtitan, Megatron, DeepSpeed, HF Trainer, Lightning, horovod benchmarks, tqdm; torchvision "
        "references' MetricLogger.log_every ('Epoch: [27]  [ 500/1352]  eta: 0:13:43  lr: ...', detection/utils.py, "
        "copied by DETR, D-FINE, RT-DETR)",
        comment_ok=False,
    ),
    Marker("steps", "nccl-tests", NCCL_TESTS_ROW, NCCL_TESTS),
    # ---- data_prep: the dataset pre-processed (tokenized, mapped) before training, often on one process ----
    Marker(
        "data_prep",
        "frameworks",
        r"Running tokenizer on (?:the )?(?:train |eval )?dataset|Tokenizing (?:Prompts|dataset|train dataset)|"
        r"Grouping texts in chunks of|Map \(num_proc=\d+\)|Converting format of dataset|Running tokenizer on",
        "transformers examples run_clm.py ('Running tokenizer on dataset', 'Grouping texts in chunks of'), "
        "LLaMA-Factory data/loader.py, axolotl prompt tokenizers ('Tokenizing Prompts'), datasets Dataset.map "
        "('Map (num_proc=N)')",
        comment_ok=False,
    ),
    # ---- evaluation / prediction ---------------------------------------------------------------------
    Marker("evaluation", "transformers", r"\*\*\*\*\* Running (?:Evaluation|Prediction) \*\*\*\*\*", HF),
    # Lightning's own progress bars only (callbacks/progress/tqdm_progress.py: 'Validation DataLoader 0:  50%|',
    # 'Testing: |          | 0/? [00:00<?, ?it/s]', 1.x's 'Validating: 0it [00:00, ?it/s]'; rich_progress.py:
    # 'Validation DataLoader 0 ━━━━ 5/10'), at a line's start: a script's own print that begins with the word
    # ('Testing mpi backend: ...', 'Testing connection...', 'Validation of the config') is no evaluation
    Marker(
        "evaluation",
        "lightning",
        r"^[^\S\n]*(?:(?:Validation|Testing|Predicting) DataLoader \d+\b|"
        r"(?:Validation|Testing|Predicting|Validating)(?::[^\S\n]*+(?:\d+%|\||\d+it\b)|[^\S\n]+[━╸╺]))",
        LIGHTNING + " (callbacks/progress/tqdm_progress.py, rich_progress.py)",
    ),
    # Lightning's sanity check: a few validation steps before the first training step (fit_loop's
    # _run_sanity_check; its bar is 'Sanity Checking: |   | 0/? [00:00<?, ?it/s]'). Runs stuck there:
    # Lightning-AI/pytorch-lightning#13585 (ddp_spawn on 2 GPUs), MIC-DKFZ/nnDetection#170 (the data loader's
    # workers: fixed with augment_cfg.multiprocessing=False)
    Marker(
        "evaluation",
        "lightning",
        r"^[^\S\n]*Sanity Checking\b",
        LIGHTNING + " (loops/fit_loop.py _run_sanity_check, callbacks/progress/tqdm_progress.py)",
        why=SANITY_CHECK_WHY,
    ),
    Marker(
        "evaluation",
        "frameworks",
        # 'Evaluating' as scripts print it for their evaluation ('Evaluating: 100%|', 'Evaluating the results...',
        # 'Evaluating iter 2/10', 'Evaluating checkpoint /ckpt/step_100 on 2000 samples'), never the word for
        # something else ('Evaluating options', 'Evaluating expression')
        r"(?i)\b(?:running evaluation|start(?:ing)? evaluation|evaluating(?=[^\S\n]*(?:[:.…]|$)|[^\S\n]+(?:the|on|"
        r"at|with|for|iter\w*|epoch|step|checkpoint|ckpt|model|val\w*|test\w*|dev|eval\w*|batch\w*|dataset|split|"
        r"samples?|results?|metrics?|predictions?|\d)\b))",
        "training scripts (tqdm(desc='Evaluating'), their own prints)",
    ),
    Marker("evaluation", "megatron", r"validation loss at iteration", MEGATRON, ends=True),
    Marker("evaluation", "transformers", r"\{'eval_loss': |\*\*\*\*\* eval metrics \*\*\*\*\*", HF, ends=True),
    # ---- checkpoint ------------------------------------------------------------------------------------
    Marker(
        "checkpoint",
        "frameworks",
        r"(?i)\bsaving (?:model )?checkpoint|saving the checkpoint|Saving model checkpoint to|\[Torch\] Saving|"
        r"Saving (?:FSDP|DeepSpeed) model|Saving current state to",
        "transformers/trainer.py, Megatron checkpointing.py, torchtitan checkpoint.py, DeepSpeed engine.py, "
        "accelerate/checkpointing.py (save_state)",
    ),
    Marker(
        "checkpoint",
        "frameworks",
        r"(?i)successfully saved checkpoint|checkpoint saved|Finished saving|saved checkpoint|\bsaved in\b|"
        r"\[Torch\] Saved|checkpoint .*is ready",
        "Megatron checkpointing.py, torchtitan checkpoint.py",
        ends=True,
    ),
    # ---- steps closed: training finished (exit comes next) --------------------------------------------
    Marker(
        "steps",
        "frameworks",
        r"(?i)Training complete(?:d|\.?\s*$)|\btrain_runtime\b|`Trainer\.fit` stopped|"
        r"Finished (?:training|optimization)|Training finished|"
        r"training (?:is )?done|after training is done|^\[-{5,}\] Global test environment tear-down",
        "transformers/trainer.py, lightning loops, Megatron training.py; googletest's end of all tests",
        ends=True,
    ),
    # ---- exit: a clean end ---------------------------------------------------------------------------
    Marker(
        "exit",
        "nccl-tests",
        r"^#\s*Avg bus bandwidth|^#\s*Out of bounds values|Collective test concluded",
        NCCL_TESTS,
    ),
    Marker(
        "exit",
        "nccl",
        r"NCCL INFO (?:comm 0x[0-9a-f]+ rank \d+ nranks \d+ .*- Destroy COMPLETE|Destroyed comm|"
        r"\[Service thread\] Connection closed by localRank)",
        NCCL_INIT,
    ),
    Marker(
        "exit",
        "torchrun",
        r"Local worker group finished|Done waiting for other agents|worker group successfully finished",
        TORCHRUN,
    ),
    Marker(
        "exit", "benchmarks", r"(?i)^total images/sec|Total img/sec on|Img/sec per GPU", "horovod / tf_cnn_benchmarks"
    ),
)


@dataclass(frozen=True)
class StageInfo:
    name: str
    words: str  # how the stage reads in a sentence
    expected_next: str
    causes: str  # known causes of a stop in this stage, with what to check
    kind: str = "hang"


# Each stage's causes in the order its threads' confirmed fixes ran. Rendezvous: the master port
# (pytorch/pytorch#129367: a free MASTER_PORT; RLHFlow/Online-RLHF#11: accelerate's main_process_port: 0).
# Communicator init: peer-to-peer through ACS / the IOMMU (NVIDIA/nccl#85, #104, #257, ROCm/rccl#1129,
# Lightning-AI/pytorch-lightning#19425 and #9641), then the bootstrap's TCP filtered (NVIDIA/nccl#1638: an Istio
# sidecar), then builds that differ between nodes (NVIDIA/nccl#447), a loose NVLink bridge (NVIDIA/nccl#340) and a
# GPU-sharing layer intercepting CUDA (Project-HAMi/HAMi#2641: CUDA_DISABLE_CONTROL=true).
STAGE_INFO: dict[str, StageInfo] = {
    s.name: s
    for s in (
        StageInfo(
            "launch",
            "launch, before any rank printed",
            "the launcher's or the ranks' first lines",
            "a launcher that cannot start the remote ranks: ssh or the hostfile between nodes, an MPI / UCX / "
            "libfabric stack that does not match the installed OFED or driver (run the same command with one "
            "process per node, then `ucx_info -d` / `fi_info`; mpirun --mca pml ob1 --mca btl tcp,self to take "
            "UCX out), or a scheduler still waiting for nodes",
        ),
        StageInfo(
            "rendezvous",
            "rendezvous (the ranks finding each other)",
            "every rank joining the store / process group",
            "the master port where the log does not show it: not a real port (0 in a config such as accelerate's "
            "main_process_port) - give MASTER_PORT / torchrun --master_port / accelerate --main_process_port / "
            "deepspeed --master_port a real, free port (a port already in use fails with EADDRINUSE instead of "
            "stopping); MASTER_ADDR:MASTER_PORT not "
            "reachable from every node (firewall, wrong interface); a rank that never started or died before init "
            "(its own output); or a world size larger than the ranks launched; check each node's launch command",
            "missing_rank",
        ),
        StageInfo(
            "comm_init",
            "communicator init (NCCL / gloo set-up)",
            "'Init COMPLETE' on every rank, then the first collective",
            P2P_BLOCKED + "; the bootstrap's local or inter-node TCP blocked (firewall, host security or "
            "endpoint-protection software filtering local sockets, a service-mesh sidecar such as Istio's "
            "intercepting the pod's traffic: NCCL_SOCKET_IFNAME=lo on one node to test); a driver / CUDA / NCCL "
            "build that differs between nodes (check `nvidia-smi` and torch.cuda.nccl.version() on each); a loose "
            "NVLink bridge (nvidia-smi nvlink -s); a GPU-sharing layer preloaded in the container (HAMi's libvgpu.so: "
            "CUDA_DISABLE_CONTROL=true for whole-GPU pods); or a rank that never reached init",
        ),
        StageInfo(
            "first_collective",
            "the first collective after set-up",
            "the first result row or training step",
            P2P_BLOCKED + "; a rank that never reached the collective; or the network between nodes "
            "(NCCL_IB_DISABLE=1 tells an IB fault apart)",
        ),
        StageInfo(
            "steps",
            "training steps",
            "the next step line, or the end of training",
            "a rank stuck in a collective or in data loading: dump each rank's stack (py-spy dump --pid)",
        ),
        StageInfo(
            "data_prep",
            "dataset pre-processing (tokenization / map)",
            "the pre-processing's end, then the first training step",
            "pre-processing run on the main process while the other ranks wait for it in a barrier "
            "(main_process_first, wait_for_everyone): once it outlasts the process-group timeout (30 min by "
            "default) the waiting ranks time out; raise the timeout above the pre-processing time ("
            + TIMEOUT_KNOBS
            + ") or "
            "pre-process once beforehand and load the saved dataset on every rank (datasets' cache / "
            "save_to_disk); a pre-processing that slows to a crawl near its end has a few very long samples",
        ),
        StageInfo(
            "evaluation",
            "evaluation / prediction",
            "the evaluation's result and the next training step",
            "evaluation run on one rank (rank 0) while the others wait in the next collective until the process-group "
            "timeout fires (30 min by default): run evaluation on every rank, or raise the timeout ("
            + TIMEOUT_KNOBS
            + ")",
        ),
        StageInfo(
            "checkpoint",
            "a checkpoint save",
            "the save's completion and the next step",
            "a save slower than the collective timeout while the other ranks wait (raise the timeout: "
            + TIMEOUT_KNOBS
            + "; or save asynchronously), or a full or slow checkpoint volume (df -h on the checkpoint path)",
        ),
        StageInfo("exit", "exit", "nothing: the job ended", "", kind=""),
    )
}

# Lower-case substrings, one of which a line must hold before its marker's regex is tried (row order of
# MARKERS: a new row needs its needles at the same place): the regexes are case-insensitive alternations, slow to
# try on every line of a log.
NEEDLES: tuple[tuple[str, ...], ...] = (
    (
        "mpirun",
        "mpiexec",
        "srun",
        "horovodrun",
        "torchrun",
        "deepspeed",
        "accelerate launch",
        "torch.distributed.",
        "torch/distributed/",
    ),
    ("elastic_operator",),
    ("world info dict", "num_local_procs"),
    ("rendezvous", "worker group"),
    ("store based barrier", "store_based_barrier_key"),
    ("client socket",),
    ("global_rank",),
    ("torchbackend", "backend already"),
    ("initializing torch distributed",),
    ("distributed environment",),
    ("nccl info", "nccl version"),
    ("nccl info",),
    ("thread", "using devices", "uses device", "use device"),
    ("model parallel",),
    *SERVING_NEEDLES,
    ("call to connect returned",),
    ("init complete",),
    ("completed store-based",),
    ("processes registered",),
    ("type", "out-of-place"),
    ("shape inference",),
    ("shape inference",),
    ("shape inference",),
    ("running training",),
    ("training starts",),
    ("dataloaders are built", "training ..."),
    ("step", "iter", "epoch", "'loss'", "<"),
    (".",),
    ("tokeniz", "grouping texts", "map (num_proc", "converting format"),
    ("running evaluation", "running prediction"),
    ("validat", "testing", "predicting"),
    ("sanity checking",),
    ("evaluat",),
    ("validation loss",),
    ("eval_loss", "eval metrics"),
    ("saving",),
    ("saved", "finished saving", "is ready"),
    ("training complete", "train_runtime", "trainer.fit", "finished", "done"),
    ("avg bus", "out of bounds", "concluded"),
    ("destroy", "destroyed", "connection closed"),
    ("worker group", "other agents"),
    ("images/sec", "img/sec"),
)


def line_marker(line: str) -> Marker | None:
    """The marker of one line: the furthest stage among those that match (an 'Init COMPLETE' line also names
    its comm and rank; a progress bar of an evaluation is also a step counter), closing markers first."""
    low = line.lower()
    best: Marker | None = None
    comment = low.lstrip().startswith("#")
    for i, needles in enumerate(NEEDLES):
        if not any(n in low for n in needles):
            continue
        m = MARKERS[i]
        if (comment and not m.comment_ok) or not _compiled(i).search(line):
            continue
        if best is None or (STAGES.index(m.stage), m.ends) > (STAGES.index(best.stage), best.ends):
            best = m
    return best


_EACH: dict[int, re.Pattern[str]] = {}


def _compiled(i: int) -> re.Pattern[str]:
    if i not in _EACH:
        _EACH[i] = re.compile(MARKERS[i].pattern, re.M)
    return _EACH[i]
