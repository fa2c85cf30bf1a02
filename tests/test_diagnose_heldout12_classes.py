"""Classes that the twelfth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (torch's, NCCL's, aws-ofi-nccl's, py-spy's), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

# torch/distributed/rendezvous.py _env_error: init_process_group(init_method='env://') in a process that no
# launcher started.
ENV_RENDEZVOUS_WITHOUT_LAUNCHER = """\
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    dist.init_process_group(backend="nccl", init_method="env://")
ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable WORLD_SIZE expected, \
but not set
"""


def test_an_env_rendezvous_without_its_variables_is_a_launch_mistake(tmp_path: Path) -> None:
    top = top_failure(tmp_path, ENV_RENDEZVOUS_WITHOUT_LAUNCHER)
    assert top.kind == "config_error"
    assert top.suggestion.startswith("WORLD_SIZE is set for each worker by the launcher")
    assert "torchrun --nproc_per_node=N" in top.suggestion
