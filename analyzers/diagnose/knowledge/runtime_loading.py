"""Signature rows for a library or plugin the job needs that the loader does not find at run time: the dynamic
loader's own words (ld.so for a program, dlerror() under Python's import or ctypes), NIXL's backend plugins, UCX
without its CUDA modules, and two builds of one library mixed. Same fields as knowledge/signatures.py.

The loader's words name the file; where it looks is the family's: `LIBRARY_FAMILIES` is one row a family (the
package that installs it and the variable its plugin directory is read from), each a signature row of its own, the
generic row after them. NCCL's own plugins (libnccl-net.so, libnccl-tuner.so, libnccl-profiler.so) are optional:
NCCL says it uses its internal implementation when none is installed, a healthy start (signatures.BENIGN, and
net_plugin_load_failed for one that is there and does not load), so no row here reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from scope.analyzers.diagnose.knowledge.build_backends import NCCL_SYMBOL_REFERENCE, NCCL_SYMBOL_REMEDY
from scope.analyzers.diagnose.knowledge.rdma_core import RDMA_CORE_BENIGN_RE
from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

LD_SO = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
# A compiled extension (flash-attn, apex, TransformerEngine, deepspeed ops, a custom op) built against another torch
# or CUDA version than the one installed
EXTENSION_REBUILD = (
    "A compiled extension ({lib|its library}) was built against another torch or CUDA version than the one "
    "installed: rebuild or reinstall it against the installed torch (pip install --no-build-isolation "
    "--force-reinstall --no-cache-dir PACKAGE, or a wheel built for this torch and CUDA version), or install the "
    "torch version it was built for; clear stale build caches (~/.cache/torch_extensions). torch's companion "
    "packages (torchaudio, torchvision, torch-tensorrt) are released for one torch each: install the release made "
    "for the installed torch, from the same index (pip install torchaudio==<the matching version> --index-url "
    "<torch's index>)."
)

# dlerror()'s / ld.so's words for a file it did not find (glibc elf/dl-load.c: 'cannot open shared object file'),
# after 'error while loading shared libraries: ' for a program (elf/rtld.c) or after the exception's name under
# Python. Not NCCL's optional plugins nor a TensorFlow import's warning ('Could not load dynamic library ...;
# dlerror: ...', dso_loader.cc: TF goes on without the GPU library), nor NCCL's or NVSHMEM's own INFO / WARN lines:
# each tries optional pieces and goes on without them (NCCL's plugin search; NVSHMEM's transport.cpp 'NVSHMEM WARN
# Unable to open the nvshmem_transport_ibrc.so.3 transport. libibverbs.so.1: cannot open shared object file' on a
# node without RDMA libraries, where its P2P transport serves one node), nor libibverbs' warning for a provider
# that is not installed (knowledge/rdma_core.py: it goes on with the providers it loaded).
_NOT_OPTIONAL = (
    r"^(?!.*(?:(?:NCCL|NVSHMEM) (?:INFO|WARN)|/Plugin\b|Could not load dynamic library|\bdlerror: |"
    r"Unable to open the \S+ transport|" + RDMA_CORE_BENIGN_RE + "))"
)


@dataclass(frozen=True)
class LibraryFamily:
    id: str
    names: str  # the file names of the family (a regex on the library's name)
    owner: str
    where: str  # where that family is searched for and how to put it there
    source: str


LIBRARY_FAMILIES: tuple[LibraryFamily, ...] = (
    LibraryFamily(
        "ucx",
        r"libuc[pstm]",
        "UCX",
        "UCX's libraries (libucp, libucs, libuct) are found through LD_LIBRARY_PATH or the system's ldconfig "
        "cache: add UCX's lib folder (ucx_info -v prints the build; the UCX that NIXL / MPI was built against), "
        "and its transport modules (libuct_cuda, libuct_ib) through UCX_MODULE_DIR (ucx_info -d lists the "
        "transports it found)",
        "openucx/ucx src/ucs/sys/module.c (UCX_MODULE_DIR); ai-dynamo/nixl#1561 (libucp.so.0 and the UCX plugin "
        "not on the search paths)",
    ),
    LibraryFamily(
        "nixl_plugin",
        r"libplugin_\w+",
        "a NIXL backend plugin",
        "NIXL loads its backend plugins (libplugin_<BACKEND>.so) from NIXL_PLUGIN_DIR, else from the plugins "
        "folder beside libnixl.so: point NIXL_PLUGIN_DIR at the folder that holds them (the NIXL build's "
        "lib/<arch>/plugins, or the wheel's .libs), with the backend's own library (UCX's libucp) on "
        "LD_LIBRARY_PATH",
        "ai-dynamo/nixl src/core/nixl_plugin_manager.cpp getPluginDir (NIXL_PLUGIN_DIR)",
    ),
    LibraryFamily(
        "nvshmem",
        r"libnvshmem\w*|nvshmem_(?:bootstrap|transport)_\w+",  # its modules have no lib prefix
        "NVSHMEM",
        "NVSHMEM's host library and its bootstrap / transport modules (nvshmem_bootstrap_*.so, "
        "nvshmem_transport_*.so) are found through LD_LIBRARY_PATH: add NVSHMEM_HOME/lib (or the nvidia-nvshmem "
        "wheel's lib folder) on every node",
        "NVIDIA/nvshmem src/host/bootstrap and transport loading (dlopen of the module by name)",
    ),
    LibraryFamily(
        "cuda_runtime",
        r"lib(?:cudart|cublas\w*|cudnn\w*|nvrtc\w*|cufft\w*|curand|cusparse\w*|cusolver\w*|nvJitLink|nvToolsExt)",
        "the CUDA toolkit / the nvidia-* wheels",
        "CUDA's libraries come with the toolkit ($CUDA_HOME/lib64) or with the nvidia-*-cu1x wheels "
        "(site-packages/nvidia/*/lib): install the version the framework was built for (its CUDA version: "
        "python -c 'import torch; print(torch.version.cuda)'), or add that folder to LD_LIBRARY_PATH",
        "PyTorch / JAX wheels depend on the nvidia-*-cu12 packages; NVIDIA CUDA installation guide, post-install "
        "LD_LIBRARY_PATH",
    ),
    LibraryFamily(
        "cuda_driver",
        r"libcuda|libnvidia-ml",
        "the NVIDIA driver",
        "the driver's libraries (libcuda.so.1, libnvidia-ml.so.1) come from the host's driver, not from a package "
        "of the job: in a container run it with the GPUs exposed (docker run --gpus all, the NVIDIA container "
        "toolkit; Kubernetes: the NVIDIA device plugin), and check nvidia-smi on the host",
        "NVIDIA container toolkit: the driver's user-space libraries are mounted into the container at start",
    ),
    LibraryFamily(
        "libfabric",
        r"libfabric",
        "libfabric",
        "libfabric is found through LD_LIBRARY_PATH (the EFA installer puts it in /opt/amazon/efa/lib), its "
        "providers through FI_PROVIDER_PATH",
        "ofiwg/libfabric; aws-ofi-nccl's README (LD_LIBRARY_PATH to the EFA installer's libfabric)",
    ),
    LibraryFamily(
        "mpi",
        r"libmpi\w*|libopen-(?:pal|rte)",
        "MPI",
        "MPI's libraries are found through LD_LIBRARY_PATH: add the lib folder of the MPI the program was built "
        "against (mpirun --version; mpirun -x LD_LIBRARY_PATH passes it to the other hosts)",
        "Open MPI FAQ: running (LD_LIBRARY_PATH on remote nodes, mpirun -x)",
    ),
)

_GENERIC_WHERE = (
    "the loader searches LD_LIBRARY_PATH, the program's RPATH and the ldconfig cache: install the package that "
    "provides it, or add the folder that holds it to LD_LIBRARY_PATH (ldconfig -p | grep NAME or find / -name "
    "'NAME*' shows where it is); a plugin loaded from a directory is searched where its own variable points "
    "(NIXL_PLUGIN_DIR, UCX_MODULE_DIR, NCCL_NET_PLUGIN)"
)


def _missing_row(family: LibraryFamily | None) -> Signature:
    # a Python extension module (_C.cpython-310-x86_64-linux-gnu.so) is a library name too
    names = family.names if family else r"lib[\w+-]|\w[\w-]*\.cpython-"
    where = family.where if family else _GENERIC_WHERE
    owner = f" ({family.owner})" if family else ""
    pattern = (
        _NOT_OPTIONAL
        + rf".*\b(?!libnccl)(?P<lib>(?:{names})[\w+.-]*?\.so(?:\.[\d.]*\d)?)"
        + r": cannot open shared object file"
    )
    return row(
        f"shared_library_missing_{family.id}" if family else "shared_library_missing",
        "cannot open shared object file",
        pattern,
        era="glibc's dynamic loader (ld.so, dlopen); all releases",
        cause="configuration",
        meaning=f"A shared library{owner} that the job loads at run time was not found where the dynamic loader "
        "looks: it is not installed there, or its folder is not on the search path.",
        remedy=(
            "The loader could not find {lib|the library}" + owner + ": " + where + ". Then `ldd` on the program or "
            "library that loads it must show no 'not found' line."
        ),
        reference=f"{LD_SO}; {family.source}" if family else LD_SO,
        fields_re=pattern,
    )


# torch's own libraries (libtorch.so, libtorch_cpu.so, libtorch_cuda.so, libtorch_python.so, libc10.so,
# libc10_cuda.so): a symbol they miss is two torch installs mixed. Not the extensions named like them
# (torchaudio's libtorchaudio.so, torch-tensorrt's libtorchtrt.so): those are built against one torch
_TORCH_OWN = r"lib(?:torch|c10)(?:_\w+)?\.so"

LOADING_SIGNATURES: tuple[Signature, ...] = (
    *(_missing_row(f) for f in LIBRARY_FAMILIES),
    _missing_row(None),
    # NIXL's agent (src/core/nixl_agent.cpp): getPluginParams / createBackend for a backend whose plugin the plugin
    # manager did not load (it logs the dlopen failure only at INFO: 'Failed to load plugin from PATH: dlerror')
    row(
        "nixl_backend_plugin_missing",
        ("not found", "unsupported backend"),
        r"(?:getPluginParams: backend|createBackend: unsupported backend) '(?P<backend>\w+)'(?: not found)?",
        era="NIXL >= 0.2 (nixl_agent.cpp; nixlbench, Dynamo, vLLM / SGLang KV transfer)",
        cause="configuration",
        meaning="NIXL has no plugin for the backend the program asked for: the plugin library was not found in "
        "NIXL's plugin directory, or it did not load because a library it needs (UCX's for the UCX backend) is "
        "not on the search path.",
        remedy=(
            "NIXL could not load the plugin of backend {backend|BACKEND} (libplugin_{backend|BACKEND}.so): point "
            "NIXL_PLUGIN_DIR at the folder that holds it (the NIXL build's lib/<arch>/plugins; by default the "
            "plugins folder beside libnixl.so) and put the backend's own libraries on LD_LIBRARY_PATH (UCX: the "
            "libucp.so.0 NIXL was built against); `ldd libplugin_{backend|BACKEND}.so` must show no 'not found', "
            "and NIXL_LOG_LEVEL=INFO prints why each plugin did not load."
        ),
        reference="https://github.com/ai-dynamo/nixl/issues/1561; ai-dynamo/nixl src/core/nixl_plugin_manager.cpp",
        fields_re=r"backend '(?P<backend>\w+)'",
    ),
    # NIXL's UCX plugin (src/plugins/ucx/ucx_utils.cpp registerMem): UCX reported GPU memory as host memory, which it
    # does when it loaded no CUDA memory-type module (libuct_cuda.so in UCX_MODULE_DIR)
    row(
        "ucx_without_cuda",
        ("detected as host by ucx", "not configured with cuda", "is not available"),
        (
            r"VRAM memory is detected as host by UCX",
            r"UCX is likely not configured with CUDA",
            # UCX's own words (src/ucp/core/ucp_context.c) for a UCX_TLS entry it has no module for
            r"UCX\s+(?:WARN|ERROR)\s+transport '(?:cuda_copy|cuda_ipc|gdr_copy)' is not available",
        ),
        era="NIXL's UCX backend with a UCX that has no CUDA support loaded (nixl wheels bundle their own UCX)",
        cause="configuration",
        meaning="UCX treated GPU memory as host memory: it loaded no CUDA transport modules (a UCX built without "
        "CUDA, or its CUDA modules not found), so NIXL cannot register GPU buffers.",
        remedy=(
            "Make UCX load its CUDA modules: point UCX_MODULE_DIR at the UCX module folder that has libuct_cuda.so "
            "(a NIXL wheel bundles one in site-packages/nixl*.libs/ucx; a system UCX in <prefix>/lib/ucx), or use "
            "a UCX built --with-cuda, and let it use the CUDA transports (UCX_TLS including cuda_copy,cuda_ipc, "
            "e.g. UCX_TLS=cuda_copy,cuda_ipc,sm,tcp,self, or unset); ucx_info -d | grep cuda must list them."
        ),
        reference="https://github.com/ai-dynamo/nixl/issues/1628; ai-dynamo/nixl src/plugins/ucx/ucx_utils.cpp",
    ),
    # One reading of 'undefined symbol', in the forms that failed (glibc's loader for a program, a library
    # dlopen()ed under Python as OSError, an extension's import as ImportError; a warning that quotes one and falls
    # back is none of them): its fix by what the line names. An NCCL symbol is two NCCL installs (torch's
    # nvidia-nccl wheel and a system or conda libnccl); an extension's library (not torch's own libtorch* /
    # libc10*) its build against another torch; anything else two builds of the library on the search path.
    row(
        "shared_library_symbol_mismatch",
        ("symbol lookup error", "undefined symbol"),
        (
            r"symbol lookup error: (?P<lib>\S+?): undefined symbol: (?P<symbol>\S+)",
            r"(?:OSError|ImportError): (?P<lib>\S+\.so[\d.]*): undefined symbol: (?P<symbol>\S+)",
            # a C++ symbol of an extension's library, on the line after its traceback's 'ImportError:' was cut
            r"^(?:\S*/)?(?!" + _TORCH_OWN + r")[\w.+-]+\.so: undefined symbol: _ZN",
        ),
        era="glibc's dynamic loader; a mix of installs (two CUDA, NCCL, UCX, MPI or torch builds on the search "
        "path), a compiled extension loaded into a torch it was not built for",
        cause="configuration",
        meaning="A library was found but it is another build than the one its caller was built against: two "
        "installs are mixed on the search path, or a compiled extension was built for another torch.",
        remedy=(
            "{lib|A library} needs {symbol|a symbol} that none of the libraries it was loaded with provides: one "
            "of them is another build than the one {lib|it} was built against, first on the search path. `ldd` on "
            "{lib|the library} shows which copy of each library it loads; put the matching install first in "
            "LD_LIBRARY_PATH or remove the stale one, and rebuild what was compiled against the other. Where it is "
            "torch's own library (libtorch*, libc10*), two torch "
            "installs are mixed (pip's and conda's, or a second site-packages on PYTHONPATH): pip list | grep torch, "
            "and keep one."
        ),
        remedy_when=(
            (r"undefined symbol: nccl\w", NCCL_SYMBOL_REMEDY),
            (
                r"(?:ImportError: |^)(?!\S*/" + _TORCH_OWN + "|" + _TORCH_OWN + r")\S+\.so: undefined symbol: "
                r"|[\s/:](?!" + _TORCH_OWN + r")[\w.+-]+\.so: undefined symbol: _ZN",
                EXTENSION_REBUILD,
            ),
        ),
        reference=LD_SO + "; " + NCCL_SYMBOL_REFERENCE + "; https://pytorch.org/tutorials/advanced/cpp_extension.html",
        fields_re=r"(?:error: |Error: |^)(?P<lib>\S+?): undefined symbol: (?P<symbol>\S+)",
    ),
)

# Rows that are no failure where the run went on past them (an optional library whose import failed, caught):
# reasoning/setting_refused.WENT_PAST_CODES
LOADING_WENT_PAST_CODES = ("shared_library_symbol_mismatch",)
