"""Sample torch.distributed workloads with fault injection, for the demo, the tests and sample_traces/.

Each workload is a real multi-rank job on CPU with gloo (4 ranks by default) and runs under a plain
torchrun as well as under `scope run`; nothing here imports scope:

    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.ddp --steps 8 \
        --fault straggler --fault-rank 2 --factor 3
    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.pipeline --schedule 1f1b \
        --microbatches 4 --fault pipeline-imbalance --fault-rank 1
    torchrun --standalone --nproc-per-node 4 -m scope.collectors.workloads.fsdp --steps 6

Every step ends with `optimizer.step()`, so a global optimizer step hook (the in-process hook) sees
each step. Faults (see `faults.FAULTS`) hit the rank given by `--fault-rank`:

    straggler           that rank's compute runs `--factor` times (extra forward/backward passes)
    slow-link           that rank waits `--delay-ms` before each gradient all-reduce (DDP comm hook)
    comm-bound          every rank: a tiny batch through a wide layer (little compute, big gradients)
    pipeline-imbalance  the pipeline stage on that rank has `--factor` times the layers
    hang                that rank skips the gradient all-reduce of `--fault-step` and then stalls,
                        so its peers block until the process-group timeout (`--pg-timeout-s`)
    crash               that rank raises RuntimeError at `--fault-step`
    desync              that rank all-reduces a tensor of another size at `--fault-step`

Steps are counted from 0 (`--fault-step 2` strikes in the third optimizer step); a one-shot fault
without `--fault-step` strikes at step `--steps // 2`. Each rank ends with one
`scope-workload-steps: {"rank", "median_step_ms", "step_ms", "end_ns"}` line on stdout.

The injected ground truth goes to `$SCOPE_RUN_DIR/ground_truth.json` (rank 0, at start, when the
variable is set) and to one `scope-workload: {...}` line on rank 0's stdout.

With `--profile-dir DIR` a workload runs torch.profiler itself (CPU activity, schedule wait=1,
warmup=1, active=3) and writes `DIR/rank{R}.pt.trace.json`; under `scope run` the in-process hook
profiles instead.

Pipeline annotations: each micro-batch's stage forward and backward run inside
`record_function("PP:{stage}F{mb}")` / `record_function("PP:{stage}B{mb}")`, the names torch's
runtime schedules use, for GPipe and 1F1B alike (plain Schedule1F1B records none of its own).
"""
