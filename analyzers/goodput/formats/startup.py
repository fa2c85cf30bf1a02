"""Lines a launch prints as it starts, whatever the framework's progress lines look like (rows of LineFormat,
kind init_begin): a launcher's banner or a runtime's first device line. Each launch prints its own, so the
same row seen again after the launch it opened went on to something else (a checkpoint load, a failure, an
interrupt) or after a silence is another launch, though the one before never reached a step (a crash at
start-up, a launch killed while it loaded): it counts as an attempt of its own (attempts.split_attempts)."""

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

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "torchrun_omp_banner",
        "torchrun",
        ("init_begin",),
        r"torch/distributed/run\.py:\d+\] Setting OMP_NUM_THREADS environment variable for each process",
        "Setting OMP_NUM_THREADS environment variable",
        _TORCHRUN,
    ),
    LineFormat(
        "paddle_device_note",
        "PaddlePaddle",
        ("init_begin",),
        r"\.cc:\d+\] Please NOTE: device: \d+, GPU Compute Capability",
        "Please NOTE: device:",
        _PADDLE,
    ),
)
