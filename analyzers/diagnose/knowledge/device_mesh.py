"""A DeviceMesh dimension asked for that the mesh does not have: the program names a parallelism dimension
('tp', 'cp', 'ep', ...) that this run's configuration left disabled (degree 1, so no mesh dimension was built),
or a name the mesh was never built with.

Wordings, each raised before any step:
- torchtitan torchtitan/distributed/parallel_dims.py, ParallelDims.get_mesh: "Mesh '{dims}' is not available.
  Ensure the corresponding parallelism dimension is enabled (size > 1)." ('all enabled' for a list of dims);
  get_optional_mesh returns None instead (pytorch/torchtitan#2184, fixed by PR 2185: llama4's and qwen3's
  parallelize asked get_mesh("tp") whenever EP was on, so EP with tensor_parallel_degree=1 failed).
- PyTorch torch/distributed/device_mesh.py, DeviceMesh.__getitem__ / _get_slice_mesh_layout: KeyError "Invalid
  mesh_dim_names {names} specified. Valid mesh_dim_names are {valid}." (older: "Invalid mesh_dim_name {names}
  specified. Valid mesh_dim_names should be a contiguous subsequence of {names}."), and get_mesh_dim_by_name /
  _get_mesh_dim_by_name: KeyError("Mesh dimension '{name}' does not exist.", "Available mesh dimensions are:
  mesh_dim_names={names}").

The remedy names the dimension and, for torchtitan's names, the degree that enables it (one row of
TORCHTITAN_DEGREES a dimension, from torchtitan/config/job_config.py Parallelism and ParallelDims.build_mesh).
"""

from __future__ import annotations

from scope.analyzers.diagnose.knowledge.signature_row import Signature, row

TITAN_DIMS = "https://github.com/pytorch/torchtitan/blob/main/torchtitan/distributed/parallel_dims.py"
TITAN_ISSUE = "https://github.com/pytorch/torchtitan/issues/2184"
TORCH_MESH = "https://github.com/pytorch/pytorch/blob/main/torch/distributed/device_mesh.py"

# torchtitan's mesh dimension -> the --parallelism.* degree that makes it exist (size > 1)
TORCHTITAN_DEGREES: dict[str, str] = {
    "tp": "tensor_parallel_degree",
    "cp": "context_parallel_degree",
    "pp": "pipeline_parallel_degree",
    "ep": "expert_parallel_degree",
    "etp": "expert_tensor_parallel_degree",
    "dp_replicate": "data_parallel_replicate_degree",
    "dp_shard": "data_parallel_shard_degree",
    "fsdp": "data_parallel_shard_degree",
    "efsdp": "data_parallel_shard_degree (with expert_parallel_degree)",
    "batch": "data_parallel_replicate_degree or data_parallel_shard_degree",
    "loss": "data_parallel_* or context_parallel_degree",
}

_TITAN_REMEDY = (
    "The program asked ParallelDims.get_mesh for mesh '{dim}', which this run does not build: its parallelism is "
    "disabled (degree 1).{caller? The call is @.} Either enable it ({degree}, e.g. --parallelism.{flag} > 1, "
    "the product of the degrees still equal to the GPU count) or, where the code should also run without it, "
    "ask with parallel_dims.get_optional_mesh('{dim}') and skip what it is for when it is None (torchtitan "
    "PR 2185 did so for llama4 / qwen3 expert parallelism without tensor parallelism: update torchtitan)"
)
_TORCH_REMEDY = (
    "The program sliced a DeviceMesh by a dimension name it was not built with: asked {dim}, the mesh has "
    "{valid|other names}. Build the mesh with that name (init_device_mesh(..., mesh_dim_names=(...)), or "
    "_flatten() the dims it combines), or ask for a name it has; where the dimension exists only when its "
    "parallelism is on (degree > 1), ask for it only then (a framework version whose names match the code: a "
    "renamed dim such as dp_shard_cp -> fsdp fails so)"
)


def _titan_rows() -> tuple[tuple[str, str], ...]:
    """One remedy a torchtitan dimension, naming the degree that enables it."""
    rows = []
    for dim, degree in TORCHTITAN_DEGREES.items():
        flag = degree.split(" ", 1)[0]
        text = _TITAN_REMEDY.replace("{degree}", degree).replace("{flag}", flag)
        rows.append((rf"Mesh '{dim}' is not available", text))
    return tuple(rows)


DEVICE_MESH_SIGNATURES: tuple[Signature, ...] = (
    row(
        "torchtitan_mesh_dim_not_enabled",
        "is not available. Ensure the corresponding parallelism dimension",
        r"Mesh '(?P<dim>[^\n]+?)' is not available\. Ensure the corresponding parallelism dimension is",
        era="torchtitan with ParallelDims.get_mesh (2025-11 onwards)",
        cause="configuration",
        meaning="The program asked for a parallelism's device mesh that this run's configuration disabled (degree 1).",
        remedy=_TITAN_REMEDY.replace("{degree}", "its degree").replace("{flag}", "<dim>_degree"),
        remedy_when=_titan_rows(),
        reference=f"{TITAN_DIMS} (get_mesh, get_optional_mesh); {TITAN_ISSUE}",
        fields_re=r"Mesh '(?P<dim>[^\n]+?)' is not available",
        traceback_re=r"(?P<caller>\S*\bget_mesh\([^)\n]*\))",
    ),
    row(
        "device_mesh_dim_name_missing",
        ("Invalid mesh_dim_name", "' does not exist"),
        (
            r"Invalid mesh_dim_names? (?P<dim>\(.*?\)|\[.*?\]|'[^']*') specified",
            r"Mesh dimension '(?P<dim>[^']+)' does not exist",
        ),
        era="PyTorch 2.2 onwards (DeviceMesh slicing by mesh_dim_names)",
        cause="configuration",
        meaning="The program asked a DeviceMesh for a dimension name it was not built with.",
        remedy=_TORCH_REMEDY,
        reference=f"{TORCH_MESH} (DeviceMesh.__getitem__, _get_slice_mesh_layout, get_mesh_dim_by_name)",
        fields_re=(
            r"(?:Invalid mesh_dim_names? |Mesh dimension )(?P<dim>\(.*?\)|\[.*?\]|'[^']*')(?: specified| does not "
            r"exist)(?:.*?(?:Valid mesh_dim_names (?:are|should be a contiguous subsequence of) |Available mesh "
            r"dimensions are: (?:mesh_dim_names=)?)(?P<valid>\(.*?\)|\[.*?\]))?"
        ),
        confidence="medium",
    ),
)
