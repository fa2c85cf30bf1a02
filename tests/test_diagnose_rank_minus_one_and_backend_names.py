"""Three classes: processes of a distributed launch that report rank -1 / world size -1 (never one process group;
knowledge/no_group_rank.py), a backend name this torch does not know or cannot create (torch's
distributed_c10d.py wordings across releases; knowledge/backend_names.py), and the evaluation stage markers read
only in the programs' own formats (Lightning's progress bars, scripts' 'Evaluating ...'; knowledge/stages.py).
Every log is written in the emitting program's own format (torch's exceptions, Open MPI / torchrun / srun command
lines, Lightning's tqdm bars, HF / DeepSpeed / argparse prints), never a thread's text."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped

from tests.helpers import diagnose_failures


def _code(finding: object) -> str:
    metrics = getattr(finding, "metrics", {})
    return str(metrics.get("signature") or metrics.get("code") or "")


def _codes(tmp_path: Path, log: str) -> list[str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return [_code(f) for f in diagnose_failures(tmp_path, log)]


def _top(tmp_path: Path, log: str) -> object:
    found = diagnose_failures(tmp_path, log)
    assert found, "no failure finding"
    return found[0]


# ---- 1. rank -1 / world size -1 under a distributed launch ---------------------------------------------------


def test_mpirun_processes_all_reporting_rank_minus_one_are_outside_one_group(tmp_path: Path) -> None:
    log = (
        "$ mpirun -np 4 --hostfile hosts.txt python probe_ranks.py --backend mpi\n"
        "[probe] backend=mpi RANK: -1 WORLD_SIZE: -1\n"
        "[probe] backend=mpi RANK: -1 WORLD_SIZE: -1\n"
        "[probe] backend=mpi RANK: -1 WORLD_SIZE: -1\n"
        "[probe] backend=mpi RANK: -1 WORLD_SIZE: -1\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "config_error" and _code(top) == "rank_outside_process_group"  # not a hang best guess
    assert "[probe] backend=mpi RANK: -1 WORLD_SIZE: -1" in top.suggestion  # the line, quoted
    assert "is_mpi_available()" in top.suggestion and "which mpirun" in top.suggestion
    assert "OMPI_COMM_WORLD_RANK" in top.suggestion and "#97507" in top.suggestion


def test_torchrun_workers_with_rank_minus_one_get_the_environment_fix(tmp_path: Path) -> None:
    log = (
        "+ torchrun --nnodes=1 --nproc-per-node=2 finetune.py --lr 3e-5\n"
        "setup: rank=-1 world_size=-1 using cuda:0\n"
        "step 10 loss 3.112\n"
    )
    top = _top(tmp_path, log)
    assert top.kind == "config_error" and _code(top) == "rank_outside_process_group"
    assert "torchrun --nnodes=1 --nproc-per-node=2" in top.suggestion  # the launch, as the log shows it
    assert "os.environ['RANK']" in top.suggestion and "is_mpi_available" not in top.suggestion


def test_srun_tasks_with_rank_minus_one_get_the_slurm_variables(tmp_path: Path) -> None:
    log = (
        "srun --nodes 2 --ntasks-per-node 4 python pretrain.py\n"
        "3: global rank -1 of world size -1\n"
        "0: global rank -1 of world size -1\n"
    )
    top = _top(tmp_path, log)
    assert _code(top) == "rank_outside_process_group"
    assert "SLURM_PROCID" in top.suggestion and "'global rank -1 of world size -1'" in top.suggestion


def test_the_same_report_from_several_processes_is_enough_without_a_command(tmp_path: Path) -> None:
    log = "worker up: rank is -1, world size is -1\n" * 3
    top = _top(tmp_path, log)
    assert top.kind == "config_error" and _code(top) == "rank_outside_process_group"
    assert "(3 processes)" in top.summary


def test_a_run_that_completed_as_lone_processes_is_a_warning(tmp_path: Path) -> None:
    log = "mpirun -np 2 python train.py\nrank -1, world size -1\nrank -1, world size -1\nTraining completed.\n"
    found = [f for f in diagnose_failures(tmp_path, log) if _code(f) == "rank_outside_process_group"]
    assert found and found[0].severity == "warning"


@pytest.mark.parametrize(
    "log",
    [
        # HF examples' log line and TrainingArguments' dump in a plain single-GPU run: the local rank's default
        "Process rank: -1, device: cuda:0, n_gpu: 1distributed training: False, 16-bits training: True\n"
        "local_rank=-1,\n{'loss': 0.913, 'learning_rate': 4.9e-05, 'epoch': 0.5}\n",
        # the same under torchrun: a local rank never counts
        "torchrun --nproc_per_node 2 run_glue.py\nProcess rank: -1, device: cuda:0, n_gpu: 1\n"
        "Process rank: -1, device: cuda:1, n_gpu: 1\n",
        # DeepSpeed's log_dist prefix before its group exists, from every process
        "deepspeed --num_gpus 8 train.py\n"
        "[2024-06-01 09:12:44,101] [INFO] [logging.py:96:log_dist] [Rank -1] DeepSpeed info: version=0.14.2\n"
        "[2024-06-01 09:12:44,102] [INFO] [logging.py:96:log_dist] [Rank -1] DeepSpeed info: version=0.14.2\n",
        # an argparse dump of the defaults, printed by each worker before it reads the environment
        "torchrun --nproc_per_node 4 main.py\n"
        "Namespace(arch='resnet18', rank=-1, world_size=-1, dist_url='env://', gpu=None)\n" * 2,
        # a single process printing its not-distributed default
        "python train.py --epochs 1\nrank -1, world size -1: running without torch.distributed\n",
        "mpirun -np 1 python probe.py\nrank -1 world size -1\n",
        # the -1 was read before init: the ranks are there after it
        "mpirun -np 2 python x.py\nbefore init: rank -1\nbefore init: rank -1\nafter init: rank 0 of 2\n"
        "after init: rank 1 of 2\n",
    ],
)
def test_not_distributed_defaults_and_dumps_stay_quiet_where_a_launchs_report_is_one(tmp_path: Path, log: str) -> None:
    assert "rank_outside_process_group" not in _codes(tmp_path / "lookalike", log)
    real = "mpiexec -n 2 python probe.py\nhello from rank -1 of -1\nhello from rank -1 of -1\n"
    assert "rank_outside_process_group" in _codes(tmp_path / "real", real)


# ---- 2. a backend name this torch does not know or cannot create ------------------------------------------------

_C10D = "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py"


def _raised(exception: str, frame: str = "_new_process_group_helper") -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 41, in <module>\n'
        "    dist.init_process_group(backend=args.dist_backend)\n"
        f'  File "{_C10D}", line 1520, in {frame}\n'
        "    raise_or_assert()\n"
        f"{exception}\n"
    )


@pytest.mark.parametrize(
    ("exception", "code", "says"),
    [
        # torch 2.0 nightly's plugin check before the built-in MPI branch
        ("AssertionError: Unknown c10d backend type MPI", "c10d_backend_not_registered", "#92847"),
        # torch_npu / Habana not imported before init_process_group
        ("AssertionError: Unknown c10d backend type HCCL", "c10d_backend_not_registered", "import torch_npu"),
        ("AssertionError: unknown c10d backend type CCL", "c10d_backend_not_registered", "oneccl_bindings_for_pytorch"),
        # a split from a 'device:backend' parent
        ("AssertionError: Unknown c10d backend type CUDA:NCCL", "c10d_backend_not_registered", "'CUDA:NCCL'"),
        # a name no one registered: the name is quoted
        (
            "AssertionError: Unknown c10d backend type FLAGCX",
            "c10d_backend_not_registered",
            "register_backend('FLAGCX'",
        ),
        # torch <= 1.12's Backend.__new__
        ("ValueError: Invalid backend: 'ncll'", "c10d_backend_name_invalid", "'ncll' is neither"),
        ("ValueError: Invalid backend: 'hccl'", "c10d_backend_name_invalid", "import torch_npu"),
        (
            "ValueError: TCP backend has been deprecated. Please use Gloo or MPI backend for collective operations "
            "on CPU tensors.",
            "c10d_backend_name_invalid",
            "backend='gloo'",
        ),
        ("ValueError: Backend name must be a string, but got: None", "c10d_backend_name_invalid", "as a string"),
        # torch >= 2.10's _parse_backend_string, 2.x's backend_type_map assertion
        (
            "ValueError: Unknown backend 'gloos'. Specify a 'device:backend' string or use one of: ['gloo', 'nccl']",
            "c10d_backend_name_invalid",
            "'gloos' is neither",
        ),
        ("AssertionError: Unknown backend type mccl", "c10d_backend_name_invalid", "torch_musa"),
        # BackendConfig's device:backend strings
        (
            "ValueError: Invalid device:backend pairing:                                      cuda=nccl. The "
            "custom backend string argument is invalid: cpu:gloo,cuda=nccl.",
            "c10d_backend_string_malformed",
            "'cpu:gloo,cuda=nccl'",
        ),
        (
            "ValueError: Duplicate device type cpu                                      in backend string: mpi. The "
            "custom backend string argument is invalid: cpu:gloo,cpu:mpi.",
            "c10d_backend_string_malformed",
            "backend='cpu:gloo,cuda:nccl'",
        ),
        (
            "ValueError: We detected accelerator xpu on your machine. But we don't know which communication backend "
            "to use for this accelerator. Please specify the `backend` argument in the `init_process_group` call.",
            "c10d_no_backend_for_accelerator",
            "for the xpu",
        ),
        (
            "ValueError: The rendezvous backend 'etcd3' is not registered. Did you forget to call `register`?",
            "rendezvous_backend_not_registered",
            "'etcd3'",
        ),
    ],
)
def test_each_wording_of_a_backend_name_is_the_backend_string(
    tmp_path: Path, exception: str, code: str, says: str
) -> None:
    top = _top(tmp_path, _raised(exception))
    assert top.kind == "config_error" and _code(top) == code  # not a bare crash
    assert says in top.suggestion


def test_a_cpu_tensor_in_an_nccl_only_group_names_the_device_string(tmp_path: Path) -> None:
    top = _top(tmp_path, _raised("RuntimeError: No backend type associated with device type cpu", "all_reduce"))
    assert top.kind == "config_error"
    assert "A collective got a CPU tensor" in top.suggestion and "tensor.cuda()" in top.suggestion
    assert "backend='cpu:gloo,cuda:nccl'" in top.suggestion


@pytest.mark.parametrize(
    "log",
    [
        # the assertion's source line quoted in a traceback is no error of its own
        '  File "x.py", line 3, in f\n    assert b in Backend._plugins, f"Unknown c10d backend type {b.upper()}"\n'
        "step 100 loss 1.23\n",
        # another library's 'Invalid backend' (joblib), a fallback warning that went on
        "ValueError: Invalid backend: loky2, expected one of ['loky', 'threading']\n",
        "WARNING 06-01 10:00:00 Distributed backend nccl is not available; falling back to gloo.\nstep 1 loss 2.0\n",
    ],
)
def test_backend_lookalikes_are_not_a_backend_name_error_where_torchs_own_line_is(tmp_path: Path, log: str) -> None:
    codes = _codes(tmp_path / "lookalike", log)
    assert not {"c10d_backend_not_registered", "c10d_backend_name_invalid"} & set(codes)
    real = _raised("AssertionError: Unknown c10d backend type XCCL")
    assert _codes(tmp_path / "real", real)[0] == "c10d_backend_not_registered"


# ---- 3. evaluation markers only in the programs' own formats ---------------------------------------------------


@pytest.mark.parametrize(
    ("own", "program"),
    [
        # a script's own print that begins with Lightning's words, beside Lightning's bar of the same word
        ("Testing mpi backend: hello from rank 0, world size 2", "Testing: |          | 0/? [00:00<?, ?it/s]"),
        ("Testing connection to the parameter server...", "Testing DataLoader 0: 100%|██████████| 20/20 [00:03<00:00]"),
        ("Testing NCCL all_reduce on 8 GPUs", "Testing:  37%|###7      | 116/313 [00:41<01:10,  2.80it/s]"),
        ("Validation of the config passed", "Validation DataLoader 0:  40%|████      | 4/10 [00:01<00:01,  3.91it/s]"),
        ("Validating input arguments", "Validating: 0it [00:00, ?it/s]"),
        ("Predicting the optimal batch size", "Predicting DataLoader 0 ━━━━━━━━━━━━━━━━ 3/8 0:00:02 • 0:00:04"),
        # 'Evaluating' for something else, beside scripts' and HF's evaluation lines
        ("Evaluating options for the optimizer", "Evaluating: 100%|##########| 64/64 [00:09<00:00]"),
        ("Evaluating expression: lr * warmup", "Evaluating the results..."),
        ("Evaluating options", "Evaluating iter 3/12"),
        ("Evaluating options", "***** Running Evaluation *****"),
    ],
)
def test_only_the_programs_own_evaluation_lines_are_the_evaluation_stage(own: str, program: str) -> None:
    launch = "torchrun --nproc_per_node 2 train.py\n"
    stop = where_it_stopped(launch + own + "\n")
    assert stop is None or stop.stage != "evaluation"
    stop = where_it_stopped(launch + program + "\n")
    assert stop is not None and stop.stage == "evaluation"
