"""Classes that the fourteenth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (ld.so's and dlerror()'s, NIXL's glog lines, NVSHMEM's error macros, mosaicml-streaming's
and CPython's shared-memory errors, torch's c10d socket and elastic launcher), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.remedy_fit import judge
from tests.helpers import diagnose_failures, top_failure

# 1. A library or plugin the job loads is not where the loader looks: ld.so for a binary, dlopen() under Python's
# ctypes / an extension import, NIXL's plugin manager (nixl_agent.cpp getPluginParams / createBackend), and NIXL's
# UCX plugin finding no CUDA transport in UCX (ucx_utils.cpp).
BINARY_LIBRARY_MISSING = (
    "./bench: error while loading shared libraries: libucp.so.0: cannot open shared object file: "
    "No such file or directory\n"
)
PYTHON_LIBRARY_MISSING = """\
Traceback (most recent call last):
  File "/opt/app/run.py", line 3, in <module>
    import fused_ops
ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory
"""
NIXL_BACKEND_MISSING = """\
E0102 10:00:00.000001  4242 nixl_agent.cpp:279] getPluginParams: backend 'UCX' not found
E0102 10:00:00.000002  4242 nixl_agent.cpp:357] createBackend: unsupported backend 'UCX'
"""
UCX_WITHOUT_CUDA = """\
E ucx_utils.cpp:661 [agent0]: VRAM memory is detected as host by UCX. UCX is likely not configured with CUDA support.
E nixl_agent.cpp:470 registerMem: registration failed for the specified or all potential backends
"""
# NCCL's own word that no external net / tuner plugin is installed, NVSHMEM's that an optional transport's library is
# missing: a healthy single-node start
NCCL_NO_PLUGIN = """\
node1:100:100 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
node1:100:100 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or \
directory No plugin found (libnccl-net.so), using internal implementation
node1:100:100 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v2 symbol, using internal tuner instead.
node1:100:100 [0] transport.cpp:181 NVSHMEM WARN Unable to open the nvshmem_transport_ibrc.so.3 transport. \
libibverbs.so.1: cannot open shared object file: No such file or directory
node1:100:100 [0] NCCL INFO comm 0x5600 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE
step 10 loss 2.31
step 20 loss 2.10
"""


def test_a_library_or_plugin_not_found_is_a_config_error_naming_it_and_where_the_loader_looks(tmp_path: Path) -> None:
    top = top_failure(tmp_path, BINARY_LIBRARY_MISSING)
    assert top.kind == "config_error"
    assert "libucp.so.0" in top.suggestion and "LD_LIBRARY_PATH" in top.suggestion and "ldd" in top.suggestion
    assert "UCX" in top.suggestion
    (tmp_path / "py").mkdir()
    top = top_failure(tmp_path / "py", PYTHON_LIBRARY_MISSING)
    assert top.kind == "config_error" and "libcudnn.so.9" in top.suggestion and "LD_LIBRARY_PATH" in top.suggestion
    (tmp_path / "nixl").mkdir()
    top = top_failure(tmp_path / "nixl", NIXL_BACKEND_MISSING)
    assert top.kind == "config_error"
    assert "NIXL_PLUGIN_DIR" in top.suggestion and "libplugin_UCX.so" in top.suggestion
    (tmp_path / "ucx").mkdir()
    top = top_failure(tmp_path / "ucx", UCX_WITHOUT_CUDA)
    assert top.kind == "config_error"
    assert "UCX_MODULE_DIR" in top.suggestion and "UCX_TLS" in top.suggestion and "cuda_copy" in top.suggestion
    (tmp_path / "nccl").mkdir()
    assert not diagnose_failures(tmp_path / "nccl", NCCL_NO_PLUGIN)


# 2. NVSHMEM's error macros (include/non_abi/nvshmemx_error.h: '__FILE__:__LINE__: non-zero status: N msg', 'NULL
# value msg'), innermost first: IBGDA could not create an address handle, then the transport's connect fails.
NVSHMEM_IBGDA_AH = """\
/build/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1761: NULL value Unable to create ah.
/build/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2966: non-zero status: 7 create DCT share err.
/build/nvshmem/src/host/transport/transport.cpp:434: non-zero status: 7 connect EPS failed
"""
NVSHMEM_CONNECT_ONLY = "/sw/nvshmem_src/src/host/transport/transport.cpp:434: non-zero status: 7 connect EPS failed\n"


def test_an_nvshmem_transport_failure_names_the_nvshmem_settings_of_its_transport(tmp_path: Path) -> None:
    top = top_failure(tmp_path, NVSHMEM_IBGDA_AH)
    assert top.kind == "config_error"
    assert "IBGDA" in top.suggestion and "NVSHMEM_IB_GID_INDEX" in top.suggestion
    assert "NVSHMEM_IB_ENABLE_IBGDA" in top.suggestion and "NVSHMEM_HCA_LIST" in top.suggestion
    (tmp_path / "eps").mkdir()
    top = top_failure(tmp_path / "eps", NVSHMEM_CONNECT_ONLY)
    assert top.kind == "config_error"
    assert "NVSHMEM_DEBUG=INFO" in top.suggestion and "nvidia_peermem" in top.suggestion


# 3. Shared memory an earlier, killed run left behind: mosaicml-streaming's prefix registry (shared/prefix.py
# _check_and_find) and CPython's SharedMemory(create=True) (multiprocessing/shared_memory.py) on a name that exists.
STREAMING_REUSED = (
    "ValueError: Reused local directory: ['/data/c4/train'] vs ['/data/c4/train']. Provide a different one. If using "
    "a unique local directory, try deleting the local directory and call "
    "`streaming.base.util.clean_stale_shared_memory()` only once in your script to clean up the stale shared memory "
    "before instantiation of `StreamingDataset`.\n"
)
SHM_NAME_EXISTS = """\
Traceback (most recent call last):
  File "/opt/app/loader.py", line 12, in make
    shm = SharedMemory(name, create=True, size=size)
  File "/usr/lib/python3.11/multiprocessing/shared_memory.py", line 104, in __init__
    self._fd = _posixshmem.shm_open(
FileExistsError: [Errno 17] File exists: '/000000_barrier'
"""


def test_shared_memory_left_by_an_earlier_run_names_the_clean_up(tmp_path: Path) -> None:
    top = top_failure(tmp_path, STREAMING_REUSED)
    assert top.kind == "config_error"
    assert "clean_stale_shared_memory()" in top.suggestion and "/dev/shm" in top.suggestion
    (tmp_path / "shm").mkdir()
    top = top_failure(tmp_path / "shm", SHM_NAME_EXISTS)
    assert top.kind == "config_error"
    assert "/dev/shm/000000_barrier" in top.suggestion and "earlier run" in top.suggestion


# 4. torchrun's c10d rendezvous: the store is hosted only where the endpoint's host is this machine
# (c10d_rendezvous_backend.py _create_tcp_store); the launcher's config print, then TCPStore's client (socket.cpp).
C10D_NOBODY_HOSTS = """\
INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:
  rdzv_backend     : c10d
  rdzv_endpoint    : trainer-svc:29400
[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to connect to (trainer-svc, 29400).
"""
C10D_OTHER_NAME = """\
+ torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint 10.1.2.3:29400 train.py
[W socket.cpp:558] [c10d] The client socket has failed to connect to [gpu-x]:29400 (errno: 113 - No route to host).
"""
# a static rendezvous (--master_addr) keeps the MASTER_ADDR advice
STATIC_STORE_TIMEOUT = """\
  rdzv_backend     : static
[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to connect to (10.0.0.5, 29500).
"""


def test_a_c10d_rendezvous_that_no_node_hosts_names_the_endpoint_and_is_host(tmp_path: Path) -> None:
    top = top_failure(tmp_path, C10D_NOBODY_HOSTS)
    assert top.kind == "config_error"
    assert "--rdzv_endpoint" in top.suggestion and "hostname -f" in top.suggestion
    assert "is_host" in top.suggestion and "trainer-svc" in top.suggestion
    (tmp_path / "name").mkdir()
    top = top_failure(tmp_path / "name", C10D_OTHER_NAME)
    assert top.kind == "config_error"
    assert "getent hosts gpu-x" in top.suggestion and "/etc/hosts" in top.suggestion
    (tmp_path / "static").mkdir()
    top = top_failure(tmp_path / "static", STATIC_STORE_TIMEOUT)
    assert top.kind == "config_error" and "is_host" not in top.suggestion


# 5. The remedy scorer: a flag printed with its dashes ('--rdzv_endpoint') meets a REMEDY naming the bare setting,
# while a setting inside a longer name (NCCL_IB_HCA's 'ib_hca') still does not.
def test_the_remedy_scorer_meets_a_bare_setting_by_its_flag() -> None:
    assert judge("use an rdzv_endpoint host that node0 knows", "Set --rdzv_endpoint to node 0's name.").verdict == "fit"
    assert judge("set find_unused_parameters", "use --find-unused-parameters=True").verdict == "fit"
    assert judge("set ib_hca", "set NCCL_IB_HCA=mlx5_0").verdict == "miss"
