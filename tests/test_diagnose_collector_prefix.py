"""A log collector's prefix on every line (kubectl --timestamps, Ray's worker tag, srun --label) must not change
what the readings across lines conclude: where the log stopped, a stack dump's hang. Real excerpts of public
threads (tests/data/diagnose_threads/README.md: URL and confirmed cause) under each prefix.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose.readers.collector_prefix import strip_collector_prefix

from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"
PREFIXES = {
    "kubectl": "2024-05-01T10:00:00.123456789Z ",
    "ray": "(RayWorkerWrapper pid=4242) ",
    "srun": "3: ",
    "compose": "trainer-1  | ",
    "journald": "Dec 06 10:00:00 gpu-node-3 python[4242]: ",
    "markdown quote": "> ",
    "bare timestamps": "2024-05-01 10:00:00.123 ",
    "bracketed timestamps": "[2024-05-01 10:00:00,123] ",
    "markdown code block": "    ",  # every line indented: the paste's own indentation, not a traceback's
}


def _under(prefix: str, log: str) -> str:
    return "".join(prefix + ln if ln.strip() else ln for ln in log.splitlines(keepends=True))


@pytest.mark.parametrize("collector", sorted(PREFIXES))
@pytest.mark.parametrize(
    "name",
    [
        "lightning_9641_ddp_registered_then_silence.log",  # Lightning#9641: a set-up banner, then nothing
        "nccl_417_init_without_host_prefix.log",  # NVIDIA/nccl#417: NCCL init narrated, cut in a channel
        "allennlp_5088_dumpstacks_cut.log",  # allenai/allennlp#5088: a stack dump of the hung ranks
    ],
)
def test_a_collectors_prefix_does_not_change_the_finding(tmp_path: Path, collector: str, name: str) -> None:
    log = (THREADS / name).read_text()
    for folder in ("plain", "under"):
        (tmp_path / folder).mkdir()
    plain = top_failure(tmp_path / "plain", log)
    under = top_failure(tmp_path / "under", _under(PREFIXES[collector], log))
    assert plain.kind == "hang"
    assert (under.kind, under.metrics["code"]) == (plain.kind, plain.metrics["code"])


def test_only_a_prefix_on_nearly_every_line_is_a_collectors() -> None:
    lines = ["3: step 1 loss 2.0", "3: step 2 loss 1.9", "3: step 3 loss 1.8", "3: step 4 loss 1.7", "done"]
    assert strip_collector_prefix("\n".join(lines)) == "step 1 loss 2.0\nstep 2 loss 1.9\nstep 3 loss 1.8\n" + (
        "step 4 loss 1.7\ndone"
    )
    own = "epoch 1\n2: a numbered note\nepoch 2\nepoch 3\n"  # a program's own '2: ' on one line of four
    assert strip_collector_prefix(own) is own
    levels = "INFO     | start\nINFO     | step 1\nERROR    | RuntimeError: boom\n"  # a logger's level column
    assert strip_collector_prefix(levels) is levels


def test_a_healthy_excerpt_under_a_prefix_stays_healthy(tmp_path: Path) -> None:
    # NVIDIA/nccl-tests#82: a healthy 2-node run over sockets (its libibverbs WARNs are informational)
    log = (THREADS / "nccl-tests_82_healthy_sockets.log").read_text()
    assert diagnose_failures(tmp_path, _under(PREFIXES["kubectl"], log)) == []
