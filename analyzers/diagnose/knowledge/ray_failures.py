"""Signature rows for Ray's words about a failure whose own error is elsewhere: Ray Tune's end-of-run summary (the
trial's exception is in the error file its table names), Ray Train's TrainingFailedError (the worker's exception
is printed above it, or in the worker's log), and Ray Core's report of a worker or node that died (the exit
detail says how: Ray's memory monitor, SIGKILL, a Python exit code, a node whose heartbeats stopped). Each is the
failure only where the log holds nothing better: the worker's own exception, printed in the same output, is the
root and these rows its clue (reasoning/setting_refused.WENT_PAST_CODES). Ray's memory monitor's kill ('Task was
killed due to the node running low on memory') is signatures.ray_memory_monitor_oom's, a row before these.

Sources (github.com/ray-project/ray):
- python/ray/tune/tune.py: raise TuneError("Trials did not complete", incomplete_trials), or with
  raise_on_failed_trial=False logger.error("Trials did not complete: %s", ...); the progress reporter's
  'Number of errored trials: N' table (| Trial name | # failures | error file |) and 'Trial X errored after N
  iterations at ... Error file: PATH' (tune/experimental/output.py); each trial's error.txt in its folder.
- python/ray/train/base_trainer.py: TrainingFailedError's 'The Ray Train run failed. Please inspect the previous
  error messages for a cause.'; ray/train/v2 api/exceptions.py: 'Training failed due to worker errors'
  (WorkerGroupError / TrainingFailedError, followed by '[Rank N Error Snippet]:').
- python/ray/exceptions.py: RayActorError / ActorDiedError 'The actor died unexpectedly before finishing this
  task.' (class_name, actor_id, pid, ip lines), WorkerCrashedError 'The worker died unexpectedly while executing
  this task. Check python-core-worker-*.log files for more information.'; src/ray/gcs (gcs_actor_manager.cc):
  'The actor is dead because its worker process has died. Worker exit type: T Worker exit detail: D', 'The actor
  died because its node has died.'; src/ray/raylet/node_manager.cc: '(raylet) A worker died or was killed while
  executing a task by an unexpected system error. ... Worker PID: N Worker exit type: T Worker exit detail: D',
  HandleClientConnectionError's 'Worker unexpectedly exits with a connection error code N. End of file. There are
  some potential root causes. (1) The process is killed by SIGKILL by OOM killer ...'; _raylet.pyx: 'Worker exits
  with an exit code N.' (' The worker may have exceeded K8s pod memory limits.' under Kubernetes);
  gcs_node_manager.cc: 'The node with node id: X and address: Y and node name: Z has been marked dead because the
  detector has missed too many heartbeats from it.'
- Ray's guides: doc/source/ray-core/scheduling/ray-oom-prevention.rst (how an OOM-killed worker reads), the logs'
  place /tmp/ray/session_latest/logs (worker-<worker id>-<job id>-<pid>.err / .out, python-core-worker-*.log,
  raylet.out) and `ray logs`.
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

RAY = "https://github.com/ray-project/ray/blob/master/"
RAY_LOGS = "https://docs.ray.io/en/latest/ray-observability/user-guides/configure-logging.html"

# Where a worker's own output is kept: on the node that ran it, under the session's logs folder
WORKER_LOGS = (
    "the worker's own output is on the node that ran it, in /tmp/ray/session_latest/logs/ "
    "(worker-*-{pid|PID}.err and worker-*-{pid|PID}.out, python-core-worker-*_{pid|PID}.log; raylet.out for the "
    "node), or from anywhere with ray logs (ray logs worker --pid {pid|PID} --node-ip {ip|IP})"
)
# The worker's exit detail, as Ray words it, and what it means
_SIGKILL_DETAIL = r"connection error code \d+|killed by SIGKILL|SIGKILL"
_K8S_DETAIL = r"exceeded K8s pod memory limits"
_EXIT_CODE_DETAIL = r"Worker exits with an exit code (?!None)-?\d+"

WORKER_DIED = (
    "Ray reports that the worker process (pid {pid|PID} on {ip|its node}) died, and its own error is not in "
    "this output: " + WORKER_LOGS + ". Worker exit detail: {exit_detail|not shown}."
)
WORKER_KILLED = (
    "The worker process (pid {pid|PID} on {ip|its node}) vanished without a Python error (Ray lost its "
    "connection): it was killed by SIGKILL (the kernel's OOM killer: dmesg -T | grep -i -e oom -e 'killed "
    "process' on that node; a container's memory limit), by ray stop --force, or crashed in native code (SIGSEGV: "
    "the end of its worker-*.err log, a core dump). Lower host memory per worker (fewer workers per node, smaller "
    "batches / object store use) if it was the OOM killer; " + WORKER_LOGS + "."
)
WORKER_K8S_MEMORY = (
    "The worker process (pid {pid|PID}) ended with no exit code in a Kubernetes pod: the pod's memory limit most "
    "likely (kubectl describe pod shows 'OOMKilled' and the limit): raise the pod's memory limit (the Ray "
    "cluster's workerGroupSpecs resources) or lower host memory per worker; " + WORKER_LOGS + "."
)
WORKER_EXIT_CODE = (
    "The worker process (pid {pid|PID} on {ip|its node}) exited with code {exit_code|N}: a Python error or "
    "sys.exit in it, whose traceback is in its own output on that node, /tmp/ray/session_latest/logs/"
    "worker-*-{pid|PID}.err (ray logs worker --pid {pid|PID} --node-ip {ip|IP}); fix that error."
)
NODE_DIED = (
    "Ray lost the node {node_address|(its address is on the line)}: its raylet stopped answering (the node ran out "
    "of memory and the raylet was killed, the machine was preempted or rebooted, or its network dropped). Its "
    "raylet.out and the kernel log on it (dmesg -T: OOM killer, Xid, a reboot) say which; in the cloud, the "
    "instance's preemption / spot events. The work that ran there is lost: Ray Train / Tune restart it only "
    "with FailureConfig(max_failures > 0) and a checkpoint."
)

# Rows of Ray's summaries and death reports: the root only where no error of the program's own is in the output
# (reasoning/setting_refused.WENT_PAST_CODES makes them clues beside one)
RAY_SUMMARY_CODES = (
    "ray_task_error_raised",
    "ray_tune_trials_failed",
    "ray_train_run_failed",
    "ray_worker_died",
)

# A node Ray lost: no failure where the run trained on past it (the autoscaler replaced a preempted node, Train or
# Tune restored from a checkpoint: FailureConfig), and the root of what failed on the other nodes after it (their
# collectives' errors, an ActorDiedError) where it did not (reasoning/setting_refused.WENT_PAST_CODES)
RAY_NODE_LOST_CODES = ("ray_node_died",)

RAY_FAILURE_SIGNATURES: tuple[Signature, ...] = (
    # ---- a task's or actor's exception, re-raised in the caller: its traceback and message follow this line ------
    row(
        "ray_task_error_raised",
        ("RayTaskError", "raised in its creation task"),
        (
            r"\bRayTaskError(?:\(\w+\))?: ray::[\w.<>]+\(\)",
            # an actor whose __init__ raised: RayActorError's 'died because of an error raised in its creation task'
            r"died because of an error raised in its creation task, ray::[\w.<>]+\(\)",
        ),
        era="Ray Core (ray.exceptions.RayTaskError, the exception of a remote task or actor method), all releases",
        cause="application",
        kind="crash",
        meaning="A Ray task or actor method raised an exception in its worker process, and ray.get re-raised it "
        "here; the worker's traceback and the exception's own message come after this line.",
        remedy=(
            "The {exception|exception} was raised inside {task|the task} in worker pid {pid|PID} on {ip|its "
            "node}: its message and traceback follow this line in the full output (the excerpt stops before "
            "them), and the worker's own output is on that node in /tmp/ray/session_latest/logs/ "
            "(worker-*-{pid|PID}.err; ray logs worker --pid {pid|PID} --node-ip {ip|IP}). Read that exception and "
            "fix it; the driver's traceback above shows only where ray.get received it."
        ),
        reference=RAY + "python/ray/exceptions.py (RayTaskError); " + RAY_LOGS,
        fields_re=(
            r"RayTaskError\((?P<exception>\w+)\): |ray::(?P<task>[\w.<>]+\(\))|\(pid=(?P<pid>\d+)|, ip=(?P<ip>[\w.:-]+)"
        ),
        confidence="medium",
    ),
    # ---- Ray Tune's end-of-run summary: the error is in the trial's error file -----------------------------------
    row(
        "ray_tune_trials_failed",
        ("Trials did not complete", "Number of errored trials"),
        (r"Trials did not complete", r"Number of errored trials: [1-9]"),
        era="Ray Tune, and Ray Train (AIR) trainers run through it: TorchTrainer.fit() (Ray 1.x-2.x)",
        cause="application",
        kind="crash",
        meaning="Ray Tune ended with trials that failed; its summary names them and the file that holds each "
        "trial's error, but not the error itself.",
        remedy=(
            "Tune's summary only names the failed trial{trials| }; its exception is in the trial's error file "
            "({error_file|error.txt in the trial's folder under ~/ray_results/<experiment>/}): read it (cat it "
            "on the node that ran the driver, or ResultGrid.errors) and fix that error; scope diagnose on that "
            "file reads it. Where the error file only says a worker died, the worker's own output is on the "
            "node that ran it, in /tmp/ray/session_latest/logs/ (worker-*.err and worker-*.out; ray logs)."
        ),
        reference=RAY + "python/ray/tune/tune.py; " + RAY + "python/ray/tune/experimental/output.py; "
        "https://github.com/ray-project/ray/issues/30333",
        fields_re=(
            r"(?P<error_file>(?:[A-Za-z]:)?[^\s|'\"]*[/\\]error\.txt)|"
            r"Trials did not complete:? \(?(?:'Trials did not complete', )?\[(?P<trials>[^\]]{1,200})\]"
        ),
        # the summary's table and 'Error file:' line come after its heading
        fields_after=12,
        context_re=r"(?P<error_file>(?:[A-Za-z]:)?[^\s|'\"]*[/\\]error\.txt)",
        confidence="medium",
    ),
    # ---- Ray Train's summary: the worker's exception is printed above it ------------------------------------
    row(
        "ray_train_run_failed",
        ("TrainingFailedError", "The Ray Train run failed", "Training failed due to worker errors"),
        (
            r"The Ray Train run failed\b",
            r"\bTrainingFailedError: ",
            r"Training failed due to worker errors",
        ),
        era="Ray Train (base_trainer.TrainingFailedError since Ray 2.3; Train v2 WorkerGroupError / "
        "TrainingFailedError since 2.43)",
        cause="application",
        kind="crash",
        meaning="Ray Train stopped because a training worker failed; this is its summary, and the worker's own "
        "exception is printed above it or kept in the worker's log.",
        remedy=(
            "Ray Train's summary is not the cause: the worker's exception is the traceback printed before it (a "
            "RayTaskError(...) from the RayTrainWorker, or the '[Rank N Error Snippet]' lines) or, where that is "
            "cut, the worker's log on its node in /tmp/ray/session_latest/logs/ (worker-*.err; ray logs). Fix that "
            "error; then restart from the last checkpoint ({trainer|TorchTrainer}.restore(path)) or give "
            "RunConfig(failure_config=FailureConfig(max_failures=N)) so Train retries."
        ),
        reference=RAY + "python/ray/train/base_trainer.py; " + RAY + "python/ray/train/v2/api/exceptions.py",
        fields_re=r"trainer = (?P<trainer>\w+)\.restore",
        fields_after=6,
        confidence="medium",
    ),
    # ---- Ray Core: a worker process died; its exit detail says how ------------------------------------------
    row(
        "ray_worker_died",
        (
            "because its worker process has died",
            "A worker died or was killed",
            "The worker died unexpectedly",
            "The actor died unexpectedly",
        ),
        (
            r"The actor is dead because its worker process has died",
            r"A worker died or was killed while executing a task by an unexpected system error",
            r"The worker died unexpectedly while executing this task",
            r"(?:RayActorError|ActorDiedError): The actor died unexpectedly before finishing this task",
        ),
        era="Ray Core >= 2.0 (exit type and detail since 2.0; the raylet's report to the driver)",
        cause="application",
        kind="crash",
        meaning="A Ray worker process (a task's or an actor's) died outside Python's error handling, so the task "
        "or actor failed without an exception of its own in this output.",
        remedy=WORKER_DIED,
        remedy_when=(
            (_SIGKILL_DETAIL, WORKER_KILLED),
            (_K8S_DETAIL, WORKER_K8S_MEMORY),
            (_EXIT_CODE_DETAIL, WORKER_EXIT_CODE),
        ),
        reference=RAY + "python/ray/exceptions.py; " + RAY + "src/ray/raylet/node_manager.cc; "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html; " + RAY_LOGS,
        fields_re=(
            r"(?:Worker PID: |^\s*pid: |\(pid=)(?P<pid>\d+)|(?:Worker IP address: |^\s*ip: |, ip=)(?P<ip>[\w.:-]+)|"
            r"Worker exit type: (?P<exit_type>[A-Z_]+)|Worker exit detail: (?P<exit_detail>[^.]+)|"
            r"exit code (?P<exit_code>-?\d+)"
        ),
        # the actor error's own lines below its first (class_name, actor_id, pid, ip, then the death cause)
        fields_after=8,
        confidence="medium",
    ),
    # ---- Ray Core: a node's raylet stopped answering -------------------------------------------------------
    row(
        "ray_node_died",
        ("has been marked dead because", "because its node has died"),
        (
            r"has been marked dead because the (?:detector|monitor) has missed too many heartbeats",
            r"The actor (?:is dead|died) because its node has died",
        ),
        era="Ray Core (GCS node manager), all releases",
        cause="application",
        kind="missing_rank",
        meaning="Ray's control store stopped hearing from a node's raylet and marked the node dead, with every "
        "task and actor on it.",
        remedy=NODE_DIED,
        reference=RAY + "src/ray/gcs/gcs_server/gcs_node_manager.cc; " + RAY_LOGS,
        fields_re=r"and address: (?P<node_address>[\w.:-]+)",
        confidence="medium",
    ),
)
