"""Lines printed after a run's own end that are no failure of the run.

A run that printed its own end (training finished, a server's shutdown complete, the user's Ctrl-C) goes on
printing while it tears down: an experiment tracker flushing its last metrics, worker processes the parent
stopped with SIGTERM. Those lines carry error words, but the run had already ended; a best guess built on one
calls a healthy run failed. Two classes, each read only after such an end:
- a tracker's own line (its prefix: 'wandb: ERROR Failed to sample metric: Not Supported', printed by wandb's
  system monitor when NVML lacks a counter; swanlab, mlflow, comet, neptune, clearml, aim print theirs alike);
- a worker reported dead by SIGTERM or SIGINT (vLLM's multiproc_worker_utils 'Worker VllmWorkerProcess pid N
  died, exit code: -15' after uvicorn's 'Application shutdown complete'): the parent's own stop of its workers.
A segfault or a traceback at exit is neither: it is still read (words/endings.explain_exit_crash).
"""

from __future__ import annotations

import re

# The run's own end, beyond the stage markers' clean ends (knowledge/stages.py: 'Training finished', torchrun's
# 'Local worker group finished', nccl-tests' summary): a stop the user or the server asked for.
# uvicorn/main.py and uvicorn/lifespan/on.py ('Shutting down', 'Waiting for application shutdown.',
# 'Application shutdown complete.', 'Finished server process [N]'); Python's KeyboardInterrupt and the
# terminal's echo of Ctrl-C ('^C' at a line's start).
REQUESTED_STOP = re.compile(
    r"^\s*(?:INFO:\s+)?(?:Shutting down\b|Waiting for application shutdown|Application shutdown complete|"
    r"Finished server process)|^\s*\^C|^\s*KeyboardInterrupt\b"
)

# An experiment tracker's own prefix (each library's console logger: wandb/sdk/lib/printer.py 'wandb: ',
# swanlab's 'swanlab: ', mlflow's logging prefix, comet_ml's 'COMET ERROR:', neptune's, clearml's, aim's).
TRACKER_LINE = re.compile(r"(?i)^\s*(?:wandb|swanlab|mlflow|neptune|clearml|aim)\s*:|^\s*COMET (?:ERROR|WARNING)\b")

# A worker stopped by SIGTERM (15) or SIGINT (2): a negative exit code as Python's multiprocessing reports a
# signal, or 128+N as a shell does.
STOPPED_WORKER = re.compile(r"(?i)\b(?:died|exited|terminated|killed)\b.*\bexit ?code\W{0,3}(?:-15|-2|143|130)\b")

# A tracker starting up (wandb's 'Run initialization has timed out', 'api_key not configured ... wandb.login()'):
# no teardown starts a tracker, so such a line after an earlier end is a new run's (a pipeline's next stage).
TRACKER_START = re.compile(r"(?i)initiali[sz]|\binit\b|\blog ?in\b|\bapi[_ ]?key\b")

# Stages whose marker after an end is a new run starting (a requeued job appending to the same file, a pipeline's
# next stage): its set-up. An evaluation or a save after the end is the same run's post-training work.
NEW_RUN_STAGES = frozenset(("launch", "rendezvous", "comm_init", "first_collective", "data_prep"))

# Lines, other than teardown's own, looked back from a candidate for the run's end: a teardown follows its end
# closely, however many lines of its own it prints.
LOOK_BACK_LINES = 200


def teardown_noise(line: str) -> bool:
    """A line that, printed after the run's own end, is its teardown rather than a failure."""
    if STOPPED_WORKER.search(line):
        return True
    return bool(TRACKER_LINE.search(line)) and not TRACKER_START.search(line)
