"""Lines a launch prints as it starts, whatever the framework's progress lines look like (rows of LineFormat,
kind init_begin): a launcher's banner or a runtime's first device line. Each launch prints its own, so the
same row seen again after the launch it opened went on to something else (a checkpoint load, a failure, an
interrupt), or from another process after a silence no rendezvous waits out, is another launch, though the one
before never reached a step (a crash at start-up, a launch killed while it loaded): it counts as an attempt of
its own (attempts.split_attempts, launches.Launch)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import LineFormat

_TORCHRUN = (
    "https://github.com/pytorch/pytorch/blob/main/torch/distributed/run.py (config_from_args: the warning when "
    "--nproc-per-node > 1 and OMP_NUM_THREADS is unset; one per torchrun, before any worker starts)"
)
_PADDLE = (
    "https://github.com/PaddlePaddle/Paddle/blob/release/2.1/paddle/fluid/platform/device_context.cc "
    "(CUDADeviceContext: `Please NOTE: device: N, GPU Compute Capability ...`, once per process as its GPU "
    "context is created; phi/backends/gpu/gpu_resources.cc in Paddle >= 2.3)"
)

_LSF = (
    "https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=information-job-output-file (the job report LSF "
    "appends to the job's -o file or mail: `Started at`, `Terminated at`, then `Successfully completed.` or "
    "`Exited with exit code N.`)"
)
_LSF_TERM = (
    "https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=management-termination-reasons (the TERM_* line LSF's "
    "job report prints before `Exited with exit code N.`: why LSF ended the job)"
)

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "torchrun_omp_banner",
        "torchrun",
        ("init_begin",),
        r"torch/distributed/run\.py:\d+\] Setting OMP_NUM_THREADS environment variable for each process",
        "Setting OMP_NUM_THREADS environment variable",
        _TORCHRUN,
    ),
    # the data-parallel NCCL context each rank creates as it starts (glog, before the device note): the launch's
    # first timestamped line, so a relaunch's down time ends here, not at the note after it
    LineFormat(
        "paddle_nccl_init",
        "PaddlePaddle",
        ("init_begin",),
        r"nccl_context\.cc:\d+\] init nccl context nranks: \d+",
        "init nccl context",
        "https://github.com/PaddlePaddle/Paddle/blob/release/2.4/paddle/fluid/imperative/nccl_context.cc "
        "(NCCLParallelContext::Init)",
    ),
    LineFormat(
        "paddle_device_note",
        "PaddlePaddle",
        ("init_begin",),
        r"\.cc:\d+\] Please NOTE: device: \d+, GPU Compute Capability",
        "Please NOTE: device:",
        _PADDLE,
    ),
    # LSF's job report, printed after the job's own output (mark_passes.job_reports_first puts its start
    # before that output): when the job started, and how it ended
    LineFormat(
        "lsf_started",
        "LSF",
        ("init_begin",),
        r"^Started at \w{3} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}",
        "Started at ",
        _LSF,
    ),
    LineFormat("lsf_done", "LSF", ("job_end",), r"^Successfully completed\.", "Successfully completed", _LSF),
    # its resource summary: the run time and the turnaround (from submission): the difference is the queue
    LineFormat("lsf_run_time", "LSF", ("sched_time",), r"^\s*Run time :\s+(?P<dur_s>\d+) sec\.", "Run time :", _LSF),
    LineFormat(
        "lsf_turnaround",
        "LSF",
        ("sched_time",),
        r"^\s*Turnaround time :\s+(?P<dur_s>\d+) sec\.",
        "Turnaround time :",
        _LSF,
    ),
    # LSF's reason, before its exit line, where LSF itself ended the job: a limit the job reached (run time,
    # CPU time, deadline, run window), a kill by its owner or an administrator, a preemption or a requeue:
    # stopped from outside, no failure of the job's own; the first ending decides (endings.ending)
    LineFormat(
        "lsf_term_stop",
        "LSF",
        ("stop",),
        r"^TERM_(?:RUNLIMIT|CPULIMIT|DEADLINE|WINDOW|OWNER|FORCE_OWNER|ADMIN|FORCE_ADMIN|PREEMPT|REQUEUE_OWNER|"
        r"REQUEUE_ADMIN):",
        "TERM_",
        _LSF_TERM,
    ),
    # a limit the job's own use broke (memory, swap, processes, threads): the job failed
    LineFormat(
        "lsf_term_failure",
        "LSF",
        ("failure",),
        r"^TERM_(?:MEMLIMIT|SWAP|PROCESSLIMIT|THREADLIMIT):",
        "TERM_",
        _LSF_TERM,
    ),
    LineFormat(
        "lsf_exited", "LSF", ("failure",), r"^Exited with exit code (?P<code>\d+)\.", "Exited with exit code", _LSF
    ),
)
# The rows of a job report printed after the job's output: its start, and its ends (the next job's output
# follows the end line)
JOB_REPORT_START = frozenset({"lsf_started"})
JOB_REPORT_END = frozenset({"lsf_done", "lsf_exited"})
