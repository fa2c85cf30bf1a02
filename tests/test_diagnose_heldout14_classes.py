"""Classes that the fourteenth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (ld.so's and dlerror()'s, NIXL's glog lines, NVSHMEM's error macros, mosaicml-streaming's
and CPython's shared-memory errors, torch's c10d socket and elastic launcher), never a thread's own text.
"""

from __future__ import annotations

from benchmarks.remedy_fit import judge


# 5. The remedy scorer: a flag printed with its dashes ('--rdzv_endpoint') meets a REMEDY naming the bare setting,
# while a setting inside a longer name (NCCL_IB_HCA's 'ib_hca') still does not.
def test_the_remedy_scorer_meets_a_bare_setting_by_its_flag() -> None:
    assert judge("use an rdzv_endpoint host that node0 knows", "Set --rdzv_endpoint to node 0's name.").verdict == "fit"
    assert judge("set find_unused_parameters", "use --find-unused-parameters=True").verdict == "fit"
    assert judge("set ib_hca", "set NCCL_IB_HCA=mlx5_0").verdict == "miss"
