"""Line formats of launchers, schedulers and the Python runtime (rows of LineFormat):
torchrun, SLURM, Kubernetes, W&B, tracebacks."""

from __future__ import annotations

import re

from scope.analyzers.goodput.formats.rows import LineFormat

# glog's prefix (torchrun, c10d, NCCL's C++ side): `W0511 08:18:59.185000 1922528 torch/distributed/run.py:803]`,
# the pid before the file; anywhere in the line, as torchrun's rank prefix comes before it
# (`[rank0]:W0116 02:41:13.328000 846088 torch/...py:851]`). One rule for parse (a bare-timestamp line keeps
# it as its text) and launches (whose process printed a line).
GLOG_PREFIX = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+(?P<pid>\d+) \S+\.(?:py|cc|cpp|cu|h):\d+\]")

_ELASTIC = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/agent/server/api.py"
_ELASTIC_RDZV = (
    "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py"
)
_ELASTIC_MP = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/multiprocessing/api.py"
_SLURMSTEPD = "https://github.com/SchedMD/slurm/blob/master/src/slurmd/slurmstepd/req.c (*** JOB/STEP ... CANCELLED AT)"
_SRUN = "https://github.com/SchedMD/slurm/blob/master/src/srun/srun_job.c / step_launch.c (task exit lines)"
_K8S = "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kuberuntime/kuberuntime_container.go (events)"
_PY = "https://github.com/python/cpython/blob/main/Python/traceback.c"
_BASH = (
    "https://git.savannah.gnu.org/cgit/bash.git/tree/jobs.c (a non-interactive shell's notice of a job a signal "
    "ended: `script: line N: PID Killed  command`, the signal's name from strsignal)"
)
_C10D = "https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (watchdog)"

_DS_RUNNER = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/launcher/runner.py (main: logger.info cmd)"
_DS_LAUNCH = "https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/launcher/launch.py (sigkill_handler)"
_DS_LAUNCH_MAIN = _DS_LAUNCH.replace("(sigkill_handler)", "(main: the poll loop)")

ROWS: tuple[LineFormat, ...] = (
    # --- launchers and schedulers ----------------------------------------------------------------------------
    # the `deepspeed` runner's command line (pdsh / mpirun / local): a launch of the job begins
    LineFormat(
        "deepspeed_runner_cmd", "DeepSpeed", ("init_begin",), r"\[runner\.py:\d+:main\] cmd = ", "cmd = ", _DS_RUNNER
    ),
    # its per-node launcher, once a rank ended: -15 is SIGTERM from outside (a cancel, a time limit, a
    # preemption), a stop and no failure of the job's own
    LineFormat(
        "deepspeed_sigterm",
        "DeepSpeed",
        ("stop",),
        r"sigkill_handler\].*exits with return code = -15\b",
        "exits with return code",
        _DS_LAUNCH,
    ),
    # otherwise a rank died: it kills the others and names the command's return code
    LineFormat(
        "deepspeed_sigkill",
        "DeepSpeed",
        ("failure",),
        r"sigkill_handler\].*exits with return code = (?P<code>-?\d+)",
        "exits with return code",
        _DS_LAUNCH,
    ),
    # its per-node launcher as each rank exits with code 0 (launch.py main: `Process {pid} exits successfully.`);
    # a rank that fails is named by sigkill_handler instead, so a failure after these lines still decides
    LineFormat(
        "deepspeed_process_done",
        "DeepSpeed",
        ("job_end",),
        r"\[launch\.py:\d+:main\] Process \d+ exits successfully\.",
        "exits successfully",
        _DS_LAUNCH_MAIN,
    ),
    LineFormat(
        "torchrun_restart",
        "torchrun",
        ("restart",),
        r"Worker group (?:FAILED|UNHEALTHY)\. (?P<left>\d+)/(?P<max>\d+) attempts left",
        "attempts left",
        _ELASTIC,
    ),
    LineFormat(
        "torchrun_rendezvous",
        "torchrun",
        ("init_begin",),
        r"Rendezvous'ing worker group",
        "Rendezvous'ing worker group",
        _ELASTIC,
    ),
    # Elastic membership: a node joining restarts the worker group without a failure (not counted against
    # --max-restarts); the rendezvous that follows says the group's new size.
    LineFormat(
        "torchrun_new_nodes",
        "torchrun",
        ("restart",),
        r"Detected (?P<joined>\d+) new nodes from group_rank=\d+; will restart worker group",
        "new nodes from group_rank",
        _ELASTIC,
        membership=True,
    ),
    LineFormat(
        "torchrun_world_sizes",
        "torchrun",
        ("world",),
        r"(?<!\w)global_world_sizes=\[(?P<world>\d+)",
        "global_world_sizes=[",
        _ELASTIC + " (_rendezvous: Rendezvous complete for workers)",
    ),
    LineFormat(
        "torchrun_group_world_size",
        "torchrun",
        ("world",),
        r"(?<!\w)group_world_size=(?P<nodes>\d+)",
        "group_world_size=",
        _ELASTIC + " (_rendezvous: Rendezvous complete for workers)",
    ),
    LineFormat(
        "torchrun_rdzv_joined",
        "torchrun",
        ("world",),
        r"has joined round \d+ of the rendezvous '[^']*' as rank \d+ in a world of size (?P<nodes>\d+)",
        "in a world of size",
        _ELASTIC_RDZV,
    ),
    LineFormat(
        "torchrun_child_failed",
        "torchrun",
        ("failure",),
        r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d+)",
        "failed (exitcode:",
        _ELASTIC_MP,
    ),
    # W&B's footer as the process exits: `(success).` only for exit code 0 (else `(failed N)`)
    LineFormat(
        "wandb_finish_success",
        "Weights & Biases",
        ("job_end",),
        r"^wandb: Waiting for W&B process to finish\.\.\. \(success\)",
        "Waiting for W&B process",
        "https://github.com/wandb/wandb/blob/main/wandb/sdk/wandb_run.py (_footer_exit_status_info)",
    ),
    LineFormat(
        "torchrun_done",
        "torchrun",
        ("job_end",),
        r"worker group successfully finished",
        "successfully finished",
        _ELASTIC,
    ),
    # the agent's exit barrier, entered only from the SUCCEEDED state (torch 1.9-2.x, `_exit_barrier`:
    # `Local worker group finished (WorkerState.SUCCEEDED)`; older releases print the bare state name)
    LineFormat(
        "torchrun_group_succeeded",
        "torchrun",
        ("job_end",),
        r"Local worker group finished \((?:WorkerState\.)?SUCCEEDED\)",
        "Local worker group finished",
        _ELASTIC + " (_exit_barrier)",
    ),
    # slurmstepd's notice as it signals the step: the node failed under the job (a failure, not the job's own)
    LineFormat(
        "slurm_node_failure",
        "SLURM",
        ("failure",),
        r"\*\*\* (?:JOB|STEP) (?P<job>[\d.]+) ON (?P<node>\S+) CANCELLED AT (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"
        r" DUE TO NODE FAILURE(?:, REQUEUED)? \*\*\*",
        "CANCELLED AT",
        _SLURMSTEPD,
    ),
    # otherwise the job was stopped from outside: `scancel` (no reason), its time limit, a preemption; no rank
    # failed (a rank that failed first printed its failure before, and the first ending decides)
    LineFormat(
        "slurm_cancelled",
        "SLURM",
        ("stop",),
        r"\*\*\* (?:JOB|STEP) (?P<job>[\d.]+) ON (?P<node>\S+) CANCELLED AT (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"
        r"(?: DUE TO (?!NODE FAILURE)(?P<why>[A-Z ]+?))?(?:, REQUEUED)? \*\*\*",
        "CANCELLED AT",
        _SLURMSTEPD,
    ),
    LineFormat(
        "srun_task_exit",
        "SLURM",
        ("failure",),
        r"srun: error: (?P<node>\S+): tasks? (?P<rank>[\d,\-]+): (?:Exited with exit code \d+|Killed|\w+ fault)",
        "srun: error:",
        _SRUN,
    ),
    # the shell that ran the launcher saying SIGKILL ended it (the OOM killer, a wrapper killing its launch):
    # untimed, and the launch it names may never have reached a step
    LineFormat("shell_job_killed", "bash", ("failure",), r"^\S+: line \d+: +\d+ Killed\s", " Killed ", _BASH),
    LineFormat(
        "slurm_requeue",
        "SLURM",
        ("restart",),
        r"SLURM_RESTART_COUNT[=: ]+(?P<attempt>[1-9]\d*)",
        "SLURM_RESTART_COUNT",
        _SLURMSTEPD,
    ),
    LineFormat(
        "lightning_slurm_requeue",
        "Lightning",
        ("restart",),
        r"(?:Requeued SLURM job|requeing job):? (?P<job>\d+)",
        " job",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/"
        "signal_connector.py (auto-requeue)",
    ),
    # Lightning's SIGTERM handler as it is signalled: a scheduler's cancel, time limit or preemption, or the
    # launcher stopping the peers of a rank that failed (that rank's failure is printed first: it decides)
    LineFormat(
        "lightning_sigterm",
        "Lightning",
        ("stop",),
        r"\[rank: \d+\] Received SIGTERM: \d+",
        "Received SIGTERM",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/connectors/"
        "signal_connector.py (_sigterm_notifier_fn)",
    ),
    LineFormat(
        "k8s_backoff", "Kubernetes", ("restart",), r"Back-off restarting failed container", "Back-off restarting", _K8S
    ),
    LineFormat("k8s_oomkilled", "Kubernetes", ("failure",), r"Reason:\s+(?:OOMKilled|Error)\b", "Reason:", _K8S),
    LineFormat(
        "python_keyboard_interrupt",
        "Python",
        ("interrupt",),
        r"^\s*(?:\[rank\d+\]:\s*)?KeyboardInterrupt\s*$",
        "KeyboardInterrupt",
        _PY + " (the exception line of a traceback Ctrl-C ended)",
    ),
    # a terminal echoes Ctrl-C as `^C` on a line of its own (termios ECHOCTL); a log kept with `| tee` shows it
    # after the last line the job printed
    LineFormat(
        "tty_ctrl_c",
        "terminal",
        ("interrupt",),
        r"^\s*(?:>\s*)?\^C\s*$",
        "^C",
        "https://man7.org/linux/man-pages/man3/termios.3.html (ECHOCTL: a control character echoed as ^X)",
    ),
    LineFormat(
        "torchrun_sigint",
        "torchrun",
        ("interrupt",),
        r"Received (?:Signals\.SIGINT|2) death signal|SignalException: Process \d+ got signal: 2\b"
        r"|Sending process \d+ closing signal SIGINT",
        " signal",
        _ELASTIC + "; torch/distributed/elastic/multiprocessing/api.py (_terminate_process_handler)",
    ),
    # the agent's own SIGTERM (a scheduler's cancel or preemption, a `kill`): the workers are stopped from outside
    LineFormat(
        "torchrun_sigterm",
        "torchrun",
        ("stop",),
        r"Received (?:Signals\.SIGTERM|15) death signal",
        " death signal",
        _ELASTIC + " (_terminate_process_handler: SignalException; the agent then sends SIGTERM to its workers)",
    ),
    # PaddlePaddle's fatal-signal handler, as a rank is signalled: `[SignalInfo: *** SIGTERM (@0x1157b0) received
    # by PID 1136639 (TID 0x7f90..) from PID 1136560 ***]` under `FatalError: `Termination signal` is detected by
    # the operating system.`: terminated from outside (paddle.distributed.launch ending its ranks, a scheduler's
    # cancel), not failed; the tracebacks after it (its DataLoader workers killed by the same signal) follow from it
    LineFormat(
        "paddle_sigterm",
        "PaddlePaddle",
        ("stop",),
        r"\[SignalInfo: \*\*\* SIGTERM \(@0x[0-9a-f]+\) received by PID \d+",
        "SignalInfo: *** SIGTERM",
        "https://github.com/PaddlePaddle/Paddle/blob/develop/paddle/fluid/platform/init.cc (SignalHandle: "
        "`Termination signal` and the signal's info)",
    ),
    # paddle.distributed.launch's watch loop once a trainer exited non-zero: it logs the failed ranks, then
    # terminates the others (SIGTERM: their `SignalInfo` lines come from this failure, endings.PEER_STOP_ROWS)
    LineFormat(
        "paddle_launch_abort",
        "PaddlePaddle",
        ("failure",),
        r"ABORT!!! Out of all (?P<world>\d+) trainers, the trainer process with rank=\S+ was aborted",
        "ABORT!!! Out of all",
        "https://github.com/PaddlePaddle/Paddle/blob/release/2.6/python/paddle/distributed/utils/launch_utils.py "
        "(watch_local_trainers: `ABORT!!! Out of all {} trainers, the trainer process with rank={} was aborted. "
        "Please check its log.`, then terminate_local_procs)",
    ),
    LineFormat(
        "lightning_keyboard_interrupt",
        "Lightning",
        ("interrupt",),
        r"Detected KeyboardInterrupt, attempting graceful shutdown",
        "Detected KeyboardInterrupt",
        "https://github.com/Lightning-AI/pytorch-lightning/blob/master/src/lightning/pytorch/trainer/call.py",
    ),
    LineFormat(
        "python_traceback",
        "Python",
        ("failure",),
        r"^\s*(?:\[rank\d+\]:\s*)?Traceback \(most recent call last\)",
        "Traceback (most",
        _PY,
    ),
    LineFormat(
        "c10d_watchdog_timeout",
        "PyTorch c10d",
        ("failure",),
        # `WorkNCCL(...) ran for N milliseconds before timing out`: the collective was enqueued N ms before
        # this line and never completed (stated_hangs.py takes that span as hung)
        r"Watchdog caught collective operation timeout(?:.*?\bran for (?P<dur_ms>\d+) milliseconds)?",
        "Watchdog caught",
        _C10D,
    ),
)
