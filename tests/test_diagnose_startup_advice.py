"""The advice for a rank that never joined start-up (reasoning/startup.py): its local rank from the ranks a node
runs as the log states them, else from the usual eight-GPU node."""

from __future__ import annotations

from scope.analyzers.diagnose.reasoning.startup import missing_advice, missing_ranks, ranks_per_node


def test_the_ranks_a_node_runs_are_read_from_the_launch_or_the_environment() -> None:
    assert ranks_per_node("torchrun --nnodes=2 --nproc_per_node=4 train.py") == 4
    assert ranks_per_node("srun --nodes=4 --ntasks-per-node 2 python train.py") == 2
    assert ranks_per_node("mpirun -np 16 -npernode 4 python x.py") == 4
    assert ranks_per_node("mpirun -np 16 --map-by ppr:2:node python x.py") == 2
    assert ranks_per_node("LOCAL_WORLD_SIZE=6 RANK=3") == 6
    assert ranks_per_node("a healthy log with no launch line") is None
    assert ranks_per_node("torchrun --nproc_per_node=0 train.py") is None


def test_a_lone_missing_rank_is_placed_on_its_node() -> None:
    assert "(local rank 1 of its node when each node runs 4)" in missing_advice(16, [13], per_node=4)
    assert "(local rank 5 of its node when each node runs 8)" in missing_advice(16, [13])
    assert "local rank" not in missing_advice(8, [5])  # one node of 8: the local rank is the rank


def test_the_stated_count_reaches_the_finding() -> None:
    lines = [f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8" for r in range(8) if r != 5]
    log = "srun --nodes=4 --ntasks-per-node=2 python train.py\n" + "\n".join(lines) + "\n"
    found = missing_ranks(log, "job.log")
    assert found is not None and found.details["ranks"] == [5]
    assert "(local rank 1 of its node when each node runs 2)" in str(found.details["remedy"])
