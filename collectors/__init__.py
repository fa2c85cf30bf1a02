"""Everything that runs beside or inside a training job: launcher, in-process hook, sidecar, workloads."""
