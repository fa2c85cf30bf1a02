"""Read the run: find its files, read each in bounded memory, peel line prefixes, and turn the lines of every
format (c10d, gloo, torchrun, NCCL, kernel, stacks, RAS, Flight Recorder error files) into Anomaly records."""
