"""The printed remedy, by class (issue 40): the fix the failing message names itself leads, quoted; a timeout's
remedy names the timeout setting of the framework the log shows; a mismatch names the operations torch's
fingerprints name; a peer that died first makes the others' lost connections its symptom (missing_rank)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose.knowledge.own_advice import own_advice
from scope.analyzers.diagnose.knowledge.timeout_knobs import TORCH_KNOB, TRAINER_KNOB, frameworks_in, knobs_for
from scope.analyzers.diagnose.model import Anomaly
from scope.analyzers.diagnose.reasoning.rootcause import Incident
from scope.analyzers.diagnose.words.advice import signature_remedies

from tests.helpers import corpus_log, top_failure

# ---- the message names its own fix (knowledge/own_advice.py) --------------------------------------------


@pytest.mark.parametrize(
    ("line", "quoted"),
    [
        # torch/csrc/distributed/c10d/reducer.cpp
        (
            "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
            "This error indicates that your module has parameters that were not used in producing loss. You can "
            "enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
            "participate in calculating loss.",
            "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`",
        ),
        # TransformerEngine pytorch/module/base.py initialize_ub
        (
            "AssertionError: CUDA device, driver and/or toolkit version does not support comm+GEMM overlap with "
            "CUDA Multicast. Launch app with UB_SKIPMC=1 to try CUDA IPC instead.",
            "Launch app with UB_SKIPMC=1 to try CUDA IPC instead",
        ),
        # NCCL mnnvl.cc
        (
            "host:1:2 [0] NCCL WARN MNNVL (cliqueSize 4) is available but not working on this system. Check the "
            "IMEX configuration (nvidia-imex-ctl -N). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.",
            "Set NCCL_MNNVL_ENABLE=0 to ignore this issue",
        ),
        # c10/cuda/CUDACachingAllocator.cpp: the condition is quoted with the instruction
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. If reserved but unallocated "
            "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management",
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        ),
    ],
)
def test_message_own_instruction_is_quoted(line: str, quoted: str) -> None:
    assert quoted in (own_advice(line) or "")


@pytest.mark.parametrize(
    "line",
    [
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, "
        "internal error - please report this issue to the NCCL developers, NCCL version 2.19.3",
        "RuntimeError: CUDA error: an illegal memory access was encountered\nFor debugging consider passing "
        "CUDA_LAUNCH_BLOCKING=1.",
        "[rank0]:[E ProcessGroupNCCL.cpp:577] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid data "
        "inconsistency, we are taking the entire process down.",
        # a warning's own instructions: huggingface/tokenizers' fork warning, torch.distributed.launch's
        # deprecation, torch.cuda.amp's FutureWarning, NCCL's debugging aid
        "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
        "Disabling parallelism to avoid deadlocks...\nTo disable this warning, you can either:\n\t- Avoid using "
        "`tokenizers` before the fork if possible\n\t- Explicitly set the environment variable "
        "TOKENIZERS_PARALLELISM=(true | false)",
        "WARNING: please use torchrun instead of torch.distributed.launch",
        "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use "
        "`torch.amp.autocast('cuda', args...)` instead.",
        "RuntimeError: NCCL error: unhandled system error. You can set NCCL_DEBUG=INFO for more details.",
    ],
)
def test_wordings_that_are_no_fix_are_not_quoted(line: str) -> None:
    assert own_advice(line) is None


def test_remedy_leads_with_the_messages_own_advice(tmp_path: Path) -> None:
    # NVIDIA/nccl#296: 'Mismatched collective detected, please check your collective calls ... You can use
    # NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs'
    f = top_failure(tmp_path, corpus_log("NVIDIA-nccl_296"))
    assert f.suggestion.startswith("The error message's own advice: \"please check your collective calls")
    assert "Then: " in f.suggestion  # scope's own checklist follows
    # its second instruction, NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL, is the checklist's own step: said once
    assert "to see the collective logs" not in f.suggestion and f.suggestion.count("NCCL_DEBUG_SUBSYS=COLL") == 1


def test_advice_the_checklist_gives_already_is_not_said_twice(tmp_path: Path) -> None:
    # DDP's reducer error names find_unused_parameters=True, the checklist's first step: not quoted ahead of it
    ddp = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This "
        "error indicates that your module has parameters that were not used in producing loss. You can enable unused "
        "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate "
        "in calculating loss.\n"
    )
    f = top_failure(tmp_path, ddp)
    assert f.suggestion.startswith("Some parameters of the DDP-wrapped module") and "own advice" not in f.suggestion
    assert f.suggestion.count("find_unused_parameters=True to DistributedDataParallel") == 1
    # torch's allocator message: the checklist names PYTORCH_CUDA_ALLOC_CONF=expandable_segments after lowering
    # the batch; the message's conditional advice does not lead ahead of it
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.00 GiB is free. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
        "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    )
    f = top_failure(tmp_path, oom)
    assert f.suggestion.startswith("Lower the micro-batch size") and "own advice" not in f.suggestion
    assert f.suggestion.count("expandable_segments") == 1


def test_oom_remedy_quotes_the_allocators_advice(tmp_path: Path) -> None:
    f = top_failure(tmp_path, corpus_log("Instruction-Tuning-with-GPT-4-GPT-4-LLM_16"))
    assert f.kind == "oom"
    # the older allocator's max_split_size_mb, which the checklist does not name: quoted after its first step
    assert f.suggestion.startswith("Lower the micro-batch size")
    assert 'own advice: "If reserved memory is >> allocated memory try setting max_split_size_mb' in f.suggestion


def test_scopes_own_lines_are_never_quoted(tmp_path: Path) -> None:
    # a line scope's launcher wrote ('scope: ...', knowledge/own_words.py) right under the failing line, in an
    # advice's wording: lower-case, it would be read as the message's continuation and quoted
    lines = corpus_log("pytorch-pytorch_pr100214").splitlines()
    at = next(i for i, line in enumerate(lines) if "Detected mismatch" in line) + 1
    own = "scope: try setting SCOPE_TRACE_DIR=/scratch to keep the traces on a larger disk"
    f = top_failure(tmp_path, "\n".join([*lines[:at], own, *lines[at:]]) + "\n")
    assert f.kind == "collective_mismatch"
    assert "own advice" not in f.suggestion and "SCOPE_TRACE_DIR" not in f.suggestion


# ---- the timeout knob of the log's framework (knowledge/timeout_knobs.py) ------------------------------


def test_frameworks_read_from_traceback_paths() -> None:
    trainer = '  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 1859, in train\n'
    accel = '  File "/opt/conda/lib/python3.10/site-packages/accelerate/accelerator.py", line 2013, in backward\n'
    assert frameworks_in(trainer + accel) == ("transformers", "accelerate")
    # the Trainer sets accelerate's and DeepSpeed's timeout itself: its ddp_timeout is the one knob
    assert knobs_for(("transformers", "accelerate")).startswith("HF Trainer --ddp_timeout")
    assert "InitProcessGroupKwargs" not in knobs_for(("transformers", "accelerate"))
    assert knobs_for(()) == TORCH_KNOB


def test_the_tokenizer_bar_alone_does_not_cover_accelerates_timeout() -> None:
    # transformers' *_no_trainer.py examples print the same 'Running tokenizer on dataset' bar and run on accelerate
    bar = "Running tokenizer on dataset: 100%|##########| 1000/1000 [00:01<00:00, 900.00 examples/s]\n"
    accel = '  File "/usr/lib/python3/site-packages/accelerate/accelerator.py", line 2100, in backward\n'
    knobs = knobs_for(frameworks_in(bar + accel))
    assert "InitProcessGroupKwargs" in knobs and "ddp_timeout" in knobs
    # with the Trainer's own file the Trainer sets accelerate's timeout: its knob alone, once
    trainer = '  File "/opt/conda/lib/python3.10/site-packages/transformers/trainer.py", line 1859, in train\n'
    assert knobs_for(frameworks_in(bar + trainer + accel)) == TRAINER_KNOB


def test_timeout_remedy_names_the_logs_framework(tmp_path: Path) -> None:
    f = top_failure(tmp_path, corpus_log("NVIDIA-Megatron-LM_1050"))
    assert "--distributed-timeout-minutes" in f.suggestion
    assert "ddp_timeout" not in f.suggestion and "DDPStrategy" not in f.suggestion


def test_timeout_remedy_without_framework_names_torchs_own(tmp_path: Path) -> None:
    f = top_failure(tmp_path, corpus_log("IGNF-myria3d_123"))
    assert f.kind == "timeout"
    assert TORCH_KNOB in f.suggestion
    assert "ddp_timeout" not in f.suggestion and "--distributed-timeout-minutes" not in f.suggestion


# ---- a mismatch names the operations (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp) -------------


def test_mismatch_names_each_ranks_operation(tmp_path: Path) -> None:
    # torch 2.x's form, terminal-wrapped ('collecti     ve'): ALLREDUCE on rank 0, REDUCE on rank 1
    f = top_failure(tmp_path, corpus_log("pytorch-pytorch_pr100214"))
    assert f.suggestion.startswith("Rank 0 called all_reduce(20, 10) where rank 1 called reduce(20, 10).")
    assert "different collectives (all_reduce vs reduce)" in f.suggestion


def test_mismatch_names_the_sizes_of_one_operation(tmp_path: Path) -> None:
    f = top_failure(tmp_path, corpus_log("modelscope-ms-swift_pr9443"))
    assert "called all_reduce(195812480) where rank 0 called all_reduce(51123456)" in f.suggestion


def test_current_torch_form_without_tensors() -> None:
    from scope.analyzers.diagnose.readers.logs import fingerprint_ops

    # ProcessGroupWrapper.cpp's operator<< with no tensors: 'SequenceNumber=N' then 'OpType=' with no ', '
    text = (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=7, OpType=ALLREDUCE, TensorShape=[4], TensorDtypes=Float, "
        "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=7OpType=BARRIER).Collectives differ in the following aspects:   "
        "Op type: ALLREDUCEvs BARRIER"
    )
    assert fingerprint_ops(text)["rank_ops"] == [[0, "ALLREDUCE", "[4]"], [1, "BARRIER", ""]]


# ---- a peer killed first: the others' lost connections are its symptom -----------------------------------

_GLOO_CLOSED = (
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.1.2.3]:51234\n"
)
_KILLED = (
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 4242) of "
    "binary: /usr/bin/python3\n"
)


def test_connection_closed_after_a_peer_was_killed_is_missing_rank(tmp_path: Path) -> None:
    f = top_failure(tmp_path, _GLOO_CLOSED + _KILLED)
    assert f.kind == "missing_rank"


def test_connection_closed_with_no_dead_peer_stays_network_fault(tmp_path: Path) -> None:
    f = top_failure(tmp_path, _GLOO_CLOSED)
    assert f.kind == "network_fault"


def test_two_lines_of_one_message_print_its_remedy_once_with_the_fields_the_second_states(tmp_path: Path) -> None:
    """DDP's reducer prints its error, then (TORCH_DISTRIBUTED_DEBUG=INFO/DETAIL) the parameter indices: both lines
    fire the one signature; the fix is said once, naming the parameters (it was said twice, the second time
    with them). Message texts from torch/csrc/distributed/c10d/reducer.cpp."""
    log = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing loss.\n"
        "Parameter indices which did not receive grad for rank 0: 437 438 439\n"
    )
    fix = top_failure(tmp_path, log).suggestion
    assert fix.count("pass find_unused_parameters=True") == 1, fix
    assert "(parameter indices 437 438 439 in model.parameters() order)" in fix, fix


def _reading(line: int, signature: str, remedy: str, slots: dict[str, str] | None = None, **details: str) -> Anomaly:
    if slots is not None:
        details["_remedy_slots"] = slots  # type: ignore[assignment]
    return Anomaly(
        code=signature,
        kind="nccl_error",
        level="library",
        message=f"line {line}",
        file="job.log",
        line=line,
        severity="error",
        details={"signature": signature, "remedy": remedy, **details},
    )


def test_the_remedys_working_stays_out_of_the_findings_metrics(tmp_path: Path) -> None:
    # the filled slots and the quoted advice are the diagnosis' own working, not a metric of the failure
    log = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. You can "
        "enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
        "`torch.nn.parallel.DistributedDataParallel`.\n"
        "Parameter indices which did not receive grad for rank 0: 437 438 439\n"
    )
    details = top_failure(tmp_path, log).metrics["details"]
    assert details["signature"] == "ddp_unused_parameters"
    assert not {"remedy_fields", "_remedy_slots", "own_advice", "_own_advice"} & set(details), details


def test_readings_of_one_row_that_state_different_things_are_each_said() -> None:
    # an NCCL chain's two codes (2 on one host, 3 on another): each code's clause, as main printed them
    chains = [_reading(1, "nccl_error_return", "the codes' table", nccl_result="2")]
    chains.append(_reading(2, "nccl_error_return", "the codes' table", nccl_result="3"))
    said = signature_remedies(Incident(key=("x",), anomalies=chains, kind="nccl_error", code="nccl_error_return"))
    assert [r.split("Code ")[1][:1] for r in said] == ["2", "3"]
    # one template filled with two peers: both said; the same peer twice, or once without it: the fuller once
    peers = [
        _reading(1, "nccl_socket_connect", "name the host (getent hosts 10.0.0.2)", {"peer": "10.0.0.2"}),
        _reading(2, "nccl_socket_connect", "name the host (getent hosts 10.0.0.3)", {"peer": "10.0.0.3"}),
        _reading(3, "nccl_socket_connect", "name the host", {}),
        _reading(4, "nccl_socket_connect", "name the host (getent hosts 10.0.0.2)", {"peer": "10.0.0.2"}),
    ]
    said = signature_remedies(Incident(key=("x",), anomalies=peers, kind="network_fault", code="nccl_socket_connect"))
    assert said == ["name the host (getent hosts 10.0.0.2)", "name the host (getent hosts 10.0.0.3)"]
    # the fewer-filled reading first: the fuller one takes its place
    said = signature_remedies(Incident(key=("x",), anomalies=peers[2:3] + peers[1:2], kind="network_fault"))
    assert said == ["name the host (getent hosts 10.0.0.3)"]
