"""Stage rows of the serving engines that start distributed workers: vLLM and sglang (knowledge/stages.py
splices them into its MARKERS, and their needles into NEEDLES at the same place).

vLLM's workers join the process group, load NCCL through ctypes for pynccl, test GPU peer-to-peer for the
custom all-reduce, then load the weights and start the API server; sglang brackets its process-group set-up
with a begin and an end line. The last line before a call that never returned is a stop even alone
(one_line); the lines of a start that went on close the set-up (ends).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.stage_marker import Marker

SGLANG = "sglang/srt/model_executor/model_runner.py (init_torch_distributed)"
SGLANG_PYNCCL = "sglang/srt/distributed/device_communicators/pynccl.py (PyNcclCommunicator.__init__)"
VLLM_P2P = "vllm/distributed/device_communicators/custom_all_reduce_utils.py, custom_all_reduce.py"
VLLM_SETUP_DONE = (
    "vllm/distributed/device_communicators/custom_all_reduce_utils.py (reading the cache), "
    "worker/gpu_model_runner.py (load_model), entrypoints/openai/api_server.py (run_server)"
)
VLLM = "vllm/distributed/parallel_state.py (init_distributed_environment), device_communicators/pynccl.py, utils.py"

# Each row with its needles: lower-case substrings one of which a line must hold before the row's regex is tried.
UVICORN = "https://github.com/encode/uvicorn (uvicorn/server.py, uvicorn/lifespan/on.py)"

SERVING_ROWS: tuple[tuple[Marker, tuple[str, ...]], ...] = (
    # vLLM's workers join the process group ('world_size=4 rank=1 local_rank=1 distributed_init_method=tcp://...
    # backend=nccl'), then load NCCL through ctypes for pynccl and name its version: the next call is
    # ncclCommInitRank, and a healthy start goes on to the custom all-reduce's P2P check and the weights
    (
        Marker("rendezvous", "vllm", r"world_size=\d+ rank=\d+ local_rank=\d+ distributed_init_method=", VLLM),
        ("distributed_init_method",),
    ),
    (
        Marker(
            "comm_init",
            "vllm",
            r"vLLM is using nccl==|Found nccl from (?:library|environment variable)",
            VLLM,
            one_line=True,
            why="this is the last line vLLM's pynccl prints before ncclCommInitRank: a log that ends on it is a "
            "communicator init that never returned (NCCL_DEBUG=INFO shows how far it got; something intercepting "
            "CUDA in the container, such as a vGPU / GPU-sharing library preloaded with LD_PRELOAD, GPU peer-to-peer "
            "(NCCL_P2P_DISABLE=1 tells it apart) and NCCL_CUMEM_ENABLE=0 are the usual suspects)",
        ),
        ("vllm is using nccl", "found nccl from"),
    ),
    # sglang's copy of vLLM's pynccl names the NCCL version on rank 0 just before ncclCommInitRank, as vLLM's
    (
        Marker(
            "comm_init",
            "sglang",
            r"sglang is using nccl==",
            SGLANG_PYNCCL,
            one_line=True,
            why="this is the last line sglang's pynccl prints before its NCCL communicator init (and a warm-up "
            "all-reduce): a log that ends on it is a communicator init that never returned (across nodes: the "
            "ports between them - the --dist-init-addr port and NCCL's own - open both ways in the firewall, and "
            "the interface NCCL picked, NCCL_SOCKET_IFNAME; on one node GPU peer-to-peer: NCCL_P2P_DISABLE=1 "
            "tells it apart)",
        ),
        ("sglang is using nccl",),
    ),
    # sglang's model runner brackets init_process_group and the NCCL set-up with these two lines
    (
        Marker(
            "comm_init",
            "sglang",
            r"Init torch distributed begin\.",
            SGLANG,
            one_line=True,
            why="this line opens sglang's init_process_group and NCCL set-up, and no 'Init torch distributed ends' "
            "follows: a rank or node that never joined (every node started, the same --dist-init-addr and --nnodes "
            "on each, its port reachable) or an NCCL init that never returned",
        ),
        ("init torch distributed begin",),
    ),
    (
        Marker("first_collective", "sglang", r"Init torch distributed ends\.", SGLANG, ends=True),
        ("init torch distributed ends",),
    ),
    # vLLM's custom all-reduce first tests GPU peer-to-peer between every pair of GPUs (local rank 0, in a
    # subprocess) while the other ranks wait in a barrier; a failed test is a warning and the start goes on
    (
        Marker(
            "first_collective",
            "vllm",
            r"generating GPU P2P access cache in",
            VLLM_P2P,
            one_line=True,
            why="this line starts vLLM's GPU peer-to-peer test between every pair of GPUs, and it never finished: "
            "peer-to-peer copies that hang (PCIe ACS or the IOMMU redirecting them, a driver that reports P2P it "
            "cannot do); --disable-custom-all-reduce skips the test, NCCL_P2P_DISABLE=1 keeps NCCL off P2P too",
        ),
        ("p2p access cache",),
    ),
    # Printed on every healthy start on GPUs without peer-to-peer (consumer cards): the start goes on to load
    # the weights. Only a log whose last lines stop on it (and not on one of the rows closing vLLM's set-up
    # below) is a stop after it, as after any set-up line.
    (
        Marker(
            "first_collective",
            "vllm",
            r"lacks GPU P2P capability or P2P test failed",
            VLLM_P2P,
            why="vLLM's custom all-reduce is off (its GPU peer-to-peer test failed or the platform lacks P2P, which "
            "is normal on GPUs without it) and the start printed nothing after it: the next steps are NCCL's own "
            "set-up and the weights' loading; NCCL_DEBUG=INFO shows whether NCCL got that far",
        ),
        ("p2p test failed",),
    ),
    # vLLM's set-up finished: the P2P test's result was already cached, the weights are loaded, the server is up
    (
        Marker(
            "first_collective",
            "vllm",
            r"reading GPU P2P access cache from|Starting to load model|Model loading took|Loading model weights took|"
            r"Starting vLLM API server",
            VLLM_SETUP_DONE,
            ends=True,
        ),
        ("p2p access cache from", "starting to load model", "model loading took", "model weights took", "vllm api"),
    ),
    # The HTTP server in front of the engine (vLLM's and sglang's API servers run uvicorn): up and serving, then
    # its own orderly stop (uvicorn/lifespan/on.py 'Application startup complete.' / 'Application shutdown
    # complete.', uvicorn/server.py 'Uvicorn running on ...', 'Finished server process [N]'). Serving is the
    # server's 'steps': a log that ends while serving is no stop; its shutdown's end is a clean end.
    (
        Marker("steps", "uvicorn", r"Application startup complete|Uvicorn running on", UVICORN),
        ("application startup complete", "uvicorn running on"),
    ),
    (
        Marker("exit", "uvicorn", r"Application shutdown complete|Finished server process \[\d+\]", UVICORN),
        ("application shutdown complete", "finished server process"),
    ),
)
SERVING_MARKERS = tuple(marker for marker, _ in SERVING_ROWS)
SERVING_NEEDLES = tuple(needles for _, needles in SERVING_ROWS)
