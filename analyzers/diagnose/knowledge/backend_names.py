"""Signature rows for a backend name this torch does not know or cannot create a group with: a name no package
registered, a name misspelled, a 'device:backend' string written wrong, an accelerator with no default backend, a
rendezvous backend torchrun does not have. Each is a configuration error of the backend string or of the install
(build_backends.py holds the backends a build lacks: 'Distributed package doesn't have MPI built in'), and the
remedy quotes the name the log states. signatures.py splices them in beside build_backends.py's rows, before the
generic traceback reading, which would call them a bare crash.

Sources (torch/distributed/distributed_c10d.py across releases):
- _new_process_group_helper: a name that is none of the built-in backends must be a plugin,
  `assert backend_str.upper() in Backend._plugins, f"Unknown c10d backend type {backend_str.upper()}"` (torch 1.13
  onward; 1.8-1.12 worded it 'unknown c10d backend type'); split_group / new_group from a parent group say the same
  of the parent's backend string ('Unknown c10d backend type CUDA:NCCL' for a 'cuda:nccl' parent,
  pytorch/pytorch#159200). Plugins register through Backend.register_backend, called by the device's extension on
  import: torch_npu ('hccl'), habana_frameworks.torch.distributed.hccl ('hccl'), oneccl_bindings_for_pytorch
  ('ccl'), torch.testing._internal.distributed.fake_pg ('fake'), torch_musa ('mccl'). On the torch 2.0 development
  branch (nightlies of January 2023) the check ran before the built-in MPI branch, so a torch built with MPI
  rejected backend='mpi' with 'Unknown c10d backend type MPI' (pytorch/pytorch#92573, fixed by #92847 before the 2.0
  release). Since 2.x the same function also asserts `Unknown backend type {backend}` for a name missing from
  Backend.backend_type_map.
- Backend.__new__ (torch <= 1.12): "Invalid backend: '{name}'" for a name that is no attribute of Backend (a
  registered plugin is one), "TCP backend has been deprecated. Please use Gloo or MPI backend for collective
  operations on CPU tensors.", "Backend name must be a string, but got: ..." (2.x: "Backend constructor parameter
  must be string-ish").
- BackendConfig.__init__ (torch >= 2.0): "Invalid device:backend pairing: ...", "Duplicate device type X in backend
  string: ...", both after "The custom backend string argument is invalid: ..."; with no backend given, "We
  detected accelerator X on your machine. But we don't know which communication backend to use for this
  accelerator." _parse_backend_string (torch >= 2.10): "Unknown backend 'x'. Specify a 'device:backend' string or
  use one of: [...]". _get_default_backend_for_device: "Default backend not registered for device : X".
- torch/distributed/elastic/rendezvous/api.py (RendezvousHandlerRegistry.create_handler): "The rendezvous backend
  'x' is not registered. Did you forget to call `register`?" for torchrun's --rdzv-backend (c10d, static, etcd,
  etcd-v2 are registered).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

C10D = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/distributed_c10d.py"

# The backends a device's extension registers when it is imported, as the name the log states says: the fix is the
# import (in every process, before the group is made), whatever words said the name is unknown.
_EXTENSION_BACKENDS: tuple[tuple[str, str], ...] = (
    (
        r"(?i)(?:backend type |backend:? '|\bBackend )HCCL\b",
        "'hccl' is registered by the device's extension, not by torch: import torch_npu (Ascend NPUs) or "
        "habana_frameworks.torch.distributed.hccl (Gaudi) in every process before init_process_group / "
        "init_device_mesh (the import calls torch.distributed.Backend.register_backend('hccl', ...)), and use the "
        "extension release built for this torch version.",
    ),
    (
        r"(?i)(?:backend type |backend:? '|\bBackend )X?CCL\b",
        "'ccl' is registered by Intel's oneccl_bindings_for_pytorch (import oneccl_bindings_for_pytorch in every "
        "process before init_process_group, its release matching this torch); 'xccl' is built into torch's XPU "
        "builds of 2.7 and later (torch.distributed.is_xccl_available()): install one, or use backend='gloo' on CPU.",
    ),
    (
        r"(?i)(?:backend type |backend:? '|\bBackend )FAKE\b",
        "'fake' is registered by torch.testing._internal.distributed.fake_pg: import it (and pass "
        "store=FakeStore()) before init_process_group('fake', ...), or build the mesh inside the program that "
        "already made the fake group.",
    ),
    (
        r"(?i)(?:backend type |backend:? '|\bBackend )MCCL\b",
        "'mccl' is registered by torch_musa (Moore Threads GPUs): import torch_musa in every process before "
        "init_process_group, with the torch_musa release built for this torch, or use backend='gloo'.",
    ),
)
_MPI_REGRESSION = (
    "This torch refused backend='mpi' before looking at its build: the torch 2.0 development builds (nightlies of "
    "January 2023) looked the built-in MPI up among the plugins (pytorch/pytorch#92573, fixed by #92847 before the "
    "2.0 release): use the 2.0 release or later, built from source with USE_MPI=1 (no wheel has MPI; "
    "torch.distributed.is_mpi_available() says whether this one does); backend='gloo' / 'nccl' are unaffected "
    "meanwhile."
)
# A 'device:backend' string where one backend name is taken (split_group / new_group from such a parent)
_DEVICE_STRING_WHERE_NAME = (
    "The group was made from the 'device:backend' string '{backend|cuda:nccl}', which this torch's split_group / "
    "device-mesh path does not take as a backend (pytorch/pytorch#159200): create the process group with one "
    "backend name (init_process_group(backend='nccl')), or update torch."
)
_NAME_UNKNOWN = (
    "'{backend|The backend}' is neither a backend built into this torch (nccl, gloo, mpi, ucc, xccl) nor one a "
    "package registered: check the backend string's spelling (init_process_group(backend=...), a config's "
    "dist_backend / distributed_backend / --backend), or import the package that registers it (its "
    "torch.distributed.Backend.register_backend('{backend|name}', ...)) in every process before the group is "
    "created; torch.distributed.Backend.backend_list lists the names this process knows."
)
_STRING_FORMAT = (
    "Write the backend string as one name ('nccl', 'gloo') or as device:backend pairs, each device once, separated "
    "by commas: backend='cpu:gloo,cuda:nccl' (the string this torch read: '{backend|its value}')."
)
_TCP_GONE = (
    "The 'tcp' backend was removed with the c10d rewrite (torch 1.0): use backend='gloo' for CPU tensors (or "
    "'nccl' for GPUs); init_method='tcp://HOST:PORT' still selects the TCP rendezvous."
)
_NOT_A_STRING = (
    "Pass the backend as a string ('nccl', 'gloo', 'cpu:gloo,cuda:nccl'): the value given was not one (a config "
    "entry left None or a list); print the value handed to init_process_group."
)

BACKEND_NAME_SIGNATURES: tuple[Signature, ...] = (
    row(
        "c10d_backend_not_registered",
        "c10d backend type",
        # the exception's own line (a traceback's source line 'assert ... f"Unknown c10d backend type {...}"'
        # is none): at the line's start or after the exception's name
        r"(?i)(?:^|(?:Error|Exception):[^\S\n]*)unknown c10d backend type \S+",
        era="torch >= 1.8 (_new_process_group_helper's plugin check; split_group / new_group since 2.x)",
        cause="configuration",
        meaning="The process group was asked for a backend that is neither built into this torch nor registered "
        "by a package: the device's extension that registers it was not imported, the name is misspelled, or "
        "(torch 2.0 nightlies) a built-in backend was looked up among the plugins.",
        remedy=_NAME_UNKNOWN,
        remedy_when=(
            (r"(?i)backend type MPI\b", _MPI_REGRESSION),
            (r"(?i)backend type \S*:", _DEVICE_STRING_WHERE_NAME),
            *_EXTENSION_BACKENDS,
        ),
        reference=C10D + " (_new_process_group_helper); https://github.com/pytorch/pytorch/issues/92573; "
        "https://github.com/pytorch/pytorch/issues/159200",
        fields_re=r"(?i)c10d backend type (?P<backend>[\w:,-]+)",
    ),
    row(
        "c10d_backend_name_invalid",
        (
            "invalid backend",
            "unknown backend",
            "tcp backend has been deprecated",
            "backend name must be",
            "backend constructor parameter",
        ),
        (
            r"\bInvalid backend: '[^'\n]*'[^\S\n]*$",
            r"Unknown backend '[^'\n]*'\. Specify a 'device:backend' string",
            # torch raises it as an assertion (`raise AssertionError(f"Unknown backend type {backend}")`); other
            # libraries' registries say the same words in a ValueError ('ValueError: Unknown backend type
            # WandbVisBackend'), which is no c10d backend
            r"AssertionError:[^\S\n]*Unknown backend type \S+",
            r"TCP backend has been deprecated\. Please use Gloo or MPI backend",
            r"Backend name must be a string, but got: |Backend constructor parameter must be string-ish",
        ),
        era="torch <= 1.12 ('Invalid backend', Backend.__new__); torch 2.x ('Unknown backend type', "
        "_new_process_group_helper); torch >= 2.10 ('Unknown backend ... device:backend')",
        cause="configuration",
        meaning="init_process_group was given a backend name this torch does not know: misspelled, removed (the "
        "old 'tcp'), not a string, or registered by a device extension that was not imported.",
        remedy=_NAME_UNKNOWN,
        remedy_when=(
            (r"TCP backend has been deprecated", _TCP_GONE),
            (r"must be a string|string-ish", _NOT_A_STRING),
            *_EXTENSION_BACKENDS,
        ),
        reference=C10D + " (Backend.__new__, _new_process_group_helper, _parse_backend_string)",
        fields_re=r"(?:Invalid backend: '|Unknown backend '|Unknown backend type |Backend )(?P<backend>[\w:,-]+)",
    ),
    # torch/distributed/_dist2.py (torch >= 2.9) new_group: `raise ValueError(f"Backend {backend} not registered")`.
    # Other registries raise the same words (a model server's, a vector store's): only with torch/distributed's
    # frame just above it is this the process group's backend.
    row(
        "c10d_dist2_backend_not_registered",
        "not registered",
        r"(?:^|Error:[^\S\n]*)Backend \S+ not registered\b",
        era="torch >= 2.9 (torch.distributed._dist2.new_group)",
        cause="configuration",
        meaning="torch.distributed._dist2.new_group was given a backend name none of its registered backends has: "
        "misspelled, or registered by a package that was not imported.",
        remedy=_NAME_UNKNOWN,
        remedy_when=_EXTENSION_BACKENDS,
        reference="https://github.com/pytorch/pytorch/blob/main/torch/distributed/_dist2.py (new_group, "
        "register_backend)",
        before_re=r"torch/distributed/",
        fields_re=r"Backend (?P<backend>[\w:,-]+) not registered",
    ),
    row(
        "c10d_backend_string_malformed",
        ("device:backend pairing", "in backend string", "custom backend string argument is invalid"),
        (
            r"Invalid device:backend pairing",
            r"Duplicate device type '?\w+'? +in backend string",
            r"The custom backend string argument is invalid",
        ),
        era="torch >= 2.0 (BackendConfig's 'device:backend' strings)",
        cause="configuration",
        meaning="The backend string names devices and backends ('cpu:gloo,cuda:nccl') in a form torch cannot "
        "read: a pair without its colon, or one device twice.",
        remedy=_STRING_FORMAT,
        reference=C10D + " (BackendConfig.__init__, _parse_backend_string)",
        # the string as given ('argument is invalid: cpu:gloo,cuda-nccl.'; torch's 'in backend string: X' names the
        # pair's backend, not the string, before 2.10)
        fields_re=r"(?:argument is invalid: |in backend string ')(?P<backend>[^\s']+?)\.?(?=[\s']|$)",
    ),
    row(
        "c10d_no_backend_for_accelerator",
        ("don't know which communication backend", "default backend not registered"),
        (
            r"We detected accelerator \w+ on your machine\. But we don't know which communication backend",
            r"Default backend not registered for device : ?\S+",
        ),
        era="torch >= 2.3 (BackendConfig with no backend given; _get_default_backend_for_device)",
        cause="configuration",
        meaning="No backend was named and torch has no default one for this machine's accelerator: the extension "
        "that would register it was not imported, or the device needs a backend named explicitly.",
        remedy=(
            "Name the backend in init_process_group(backend=...) for the {device|accelerator}: 'hccl' after "
            "import torch_npu (npu) or habana_frameworks.torch.distributed.hccl (hpu), 'xccl' on xpu, 'nccl' on "
            "cuda, 'gloo' on cpu; or import the device's extension before init_process_group so it registers its "
            "default backend."
        ),
        reference=C10D + " (BackendConfig.__init__, _get_default_backend_for_device)",
        fields_re=r"(?:detected accelerator |for device : ?)(?P<device>\w+)",
    ),
    row(
        "rendezvous_backend_not_registered",
        "rendezvous backend",
        r"The rendezvous backend '[^'\n]*' is not registered",
        era="torch >= 1.9 (torch.distributed.elastic rendezvous registry; torchrun --rdzv-backend)",
        cause="configuration",
        meaning="torchrun (or the elastic agent) was given a rendezvous backend it does not have: --rdzv-backend "
        "takes c10d, static, etcd or etcd-v2.",
        remedy=(
            "Give torchrun a rendezvous backend it has: --rdzv-backend=c10d (with --rdzv-endpoint=HOST:PORT) for "
            "most jobs, static for a fixed world (--master-addr / --master-port), etcd / etcd-v2 with an etcd "
            "server and python-etcd installed; the value given was '{rdzv|as the log shows}'. This is the "
            "rendezvous backend, not the process group's (nccl / gloo go to init_process_group)."
        ),
        reference="https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/rendezvous/api.py "
        "(RendezvousHandlerRegistry.create_handler); https://pytorch.org/docs/stable/elastic/run.html",
        fields_re=r"rendezvous backend '(?P<rdzv>[^'\n]*)'",
    ),
)
