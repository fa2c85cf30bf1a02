"""Lines of rdma-core's libibverbs that look like failures and are none: the verbs library tries every provider
(the per-vendor user-space driver) listed in /etc/libibverbs.d and warns for each one whose library is not
installed, then goes on with the providers it did load. A node has one kind of NIC, so most of the listed
providers (mlx4, mlx5, efa, bnxt_re, hns, i40iw / irdma, rxe, siw, vmw_pvrdma, qedr, cxgb4, ocrdma, ipathverbs,
hfi1verbs, mthca, mana, erdma, ionic, ...) are absent on a healthy node, and NCCL uses the device whose provider did
load, or its socket transport where none did (its own 'NET/IB : No device found' and the failure after it are read
by their own rows).

Only the warning whose dlerror() says the provider's own file is absent is benign here: a provider that is there and
does not load (an undefined symbol, or a library it links that is absent: two rdma-core installs mixed, a slim
image; 'failed to map segment ... Cannot allocate memory': the locked-memory limit) is read by the loader's and the
memory rows. libibverbs itself missing ('libibverbs.so.1: cannot open shared object file', no verbs at all) is
knowledge/runtime_loading.py's.

Each row: the regex on the line, the program that prints it, why it is benign, and its source.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BenignLine:
    id: str
    pattern: str
    emitter: str
    why: str
    source: str


# the provider as the warning names it: rdma-core's library 'lib<name>-rdmav<ABI>.so' (any ABI: rdmav2 ...
# rdmav34, rdmav57), libibverbs 1.1's provider name in quotes ('mlx4') or the library's full path
_PROVIDER = r"(?:'[^'\n]+'|\S+)"
# the file dlerror() says it cannot open, which must be the provider's own library (VERBS_PROVIDER_SUFFIX
# '-rdmav<ABI>.so', libibverbs 1.1's '-rdmav2.so'): a provider that is there and links a library that is not
# ('libnl-route-3.so.200: cannot open ...', 'libmlx5.so.1: ...') is a broken install, the loader's row's
_PROVIDER_LIBRARY = r"(?:\S*/)?lib[^\s/:]+-rdmav\d+\.so"

RDMA_CORE_BENIGN: tuple[BenignLine, ...] = (
    BenignLine(
        "ibverbs_provider_absent",
        rf"libibverbs: Warning: couldn't load driver {_PROVIDER}: {_PROVIDER_LIBRARY}: cannot open shared object file",
        "rdma-core libibverbs (every release; libibverbs 1.1 before it)",
        "A provider listed in /etc/libibverbs.d is not installed on this node: libibverbs skips it and uses the "
        "providers it loaded; NCCL uses the device it finds, or sockets.",
        "https://github.com/linux-rdma/rdma-core/blob/master/libibverbs/dynamic_driver.c (load_driver: "
        "fprintf(stderr, PFX \"Warning: couldn't load driver '%s': %s\\n\", so_name, dlerror())); libibverbs 1.1 "
        "src/init.c",
    ),
)

# one regex of them all, for the loader's rows to skip (runtime_loading._NOT_OPTIONAL)
RDMA_CORE_BENIGN_RE = "|".join(f"(?:{b.pattern})" for b in RDMA_CORE_BENIGN)
