"""Logs that stop mid-stream, read from their last stage (heldout9's stop classes, diag54b), and the launcher or
environment settings a log shows as the cause of a stop.

Corpus logs are read in place from ../shared/data/failure_corpus (cut or extended in the test where it says so);
the public threads the corpus lacks are short excerpts in tests/data/diagnose_threads/ (README.md there gives
each one's URL and cause).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.diagnose.model import STALL, Anomaly
from scope.analyzers.diagnose.reasoning.launcher_env import unexported_settings
from scope.analyzers.diagnose.reasoning.stages import where_it_stopped
from scope.analyzers.diagnose.reasoning.stop_causes import name_forced_paths

from tests.helpers import corpus_log, diagnose_failures

THREADS = Path(__file__).parent / "data" / "diagnose_threads"


# ---- a stop in Lightning's sanity check: the first validation step -------------------------------------


def test_a_lightning_run_that_ends_as_its_sanity_check_begins_hangs_in_the_first_validation_step(
    tmp_path: Path,
) -> None:
    log = (THREADS / "lightning_13585_sanity_check_stuck.log").read_text()
    assert where_it_stopped(log).stage == "evaluation"
    top = diagnose_failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["confidence"] == "low"
    assert top.metrics["code"] == "stopped_in_evaluation"
    assert "The log may be cut" in top.summary  # what tells it from a healthy excerpt is named
    assert "sanity check" in top.suggestion and "num_workers=0" in top.suggestion
    assert "NCCL_P2P_LEVEL" in top.suggestion  # the transport settings to try removing, for a validation collective


def test_a_sanity_check_followed_by_training_steps_is_no_stop(tmp_path: Path) -> None:
    # the same run going on: the sanity check's bar at its end, then the first epoch's bar moving
    log = (THREADS / "lightning_13585_sanity_check_stuck.log").read_text() + (
        "Epoch 0:  5%| | 3225/60082 [1:20:11<23:33:44,  1.49s/it, loss=0.722, v_num=u5g0]\n"
    )
    assert where_it_stopped(log).stage == "steps"
    assert not diagnose_failures(tmp_path, log)


# ---- a stop right after c10d's client connected to the store ----------------------------------------------


def test_a_log_ending_on_the_c10d_store_connect_stopped_in_rendezvous_with_the_sidecar_named(tmp_path: Path) -> None:
    log = (THREADS / "kubeflow_trainer_1636_store_connect_then_silence.log").read_text()
    stop = where_it_stopped(log)
    assert stop.stage == "rendezvous" and stop.emitter == "c10d"
    top = diagnose_failures(tmp_path, log)[0]
    assert top.kind == "hang" and top.metrics["code"] == "stopped_in_rendezvous"
    assert top.metrics["confidence"] == "low"
    assert 'sidecar.istio.io/inject: "false"' in top.suggestion
    assert "no firewall refused it" in top.suggestion


def test_a_store_connect_followed_by_training_is_no_stop(tmp_path: Path) -> None:
    # the mnist example's own progress line after the connect: the process group came up
    log = (THREADS / "kubeflow_trainer_1636_store_connect_then_silence.log").read_text() + (
        "Train Epoch: 1 [0/60000 (0%)]\tloss=2.3000\n"
    )
    assert where_it_stopped(log).stage == "steps"
    assert not diagnose_failures(tmp_path, log)


# ---- what a healthy excerpt looks like: no stop ------------------------------------------------------------


@pytest.mark.shared_data
def test_one_process_bootstrap_lines_under_a_benchmark_banner_are_no_stop(tmp_path: Path) -> None:
    # nccl-tests_287's command, banner and its one process's first three NCCL lines (bootstrap interface, driver,
    # version): every run prints them first; the whole log is a failure read elsewhere, the head alone is no hang
    lines = corpus_log("NVIDIA-nccl-tests_287").split("\n")
    head = "\n".join(lines[: next(i for i, ln in enumerate(lines) if "NCCL version" in ln) + 1]) + "\n"
    assert head.count("NCCL INFO") == 3 and "# nThread 1 nGpus 2" in head
    assert not [f for f in diagnose_failures(tmp_path, head) if f.kind == "hang"]


@pytest.mark.shared_data
def test_one_process_past_bootstrap_in_a_benchmark_still_stops_in_init(tmp_path: Path) -> None:
    # nccl_257: one process driving 4 GPUs got to topology and stopped: a stop, not the head of a healthy run
    top = diagnose_failures(tmp_path, corpus_log("NVIDIA-nccl_257"))[0]
    assert top.kind == "hang" and "after topology" in top.summary


@pytest.mark.shared_data
def test_result_rows_quoted_with_lines_left_out_and_no_header_are_no_stop(tmp_path: Path) -> None:
    log = corpus_log("tinygrad-open-gpu-kernel-modules_45")  # rows up to 2048 B, no header, then nothing: a hang
    top = diagnose_failures(tmp_path, log)[0]
    assert top.kind == "hang" and "up to 2048 bytes" in top.summary
    # the same rows with a poster's excerpt marker above them: a quote of the table, ending where the quote ends
    lines = log.split("\n")
    first_row = next(i for i, ln in enumerate(lines) if ln.strip().startswith("8 "))
    quoted = "\n".join([*lines[:first_row], "[... cut ...]", *lines[first_row:]])
    assert not [f for f in diagnose_failures(tmp_path, quoted) if f.kind == "hang"]


@pytest.mark.shared_data
def test_rows_under_their_header_still_stop_short_of_max_bytes_even_in_an_excerpt(tmp_path: Path) -> None:
    # nccl_340: an excerpt (a cut above the banner) whose table header and first row are shown: a stop
    top = diagnose_failures(tmp_path, corpus_log("NVIDIA-nccl_340"))[0]
    assert top.kind == "hang" and "up to 8 bytes" in top.summary


# ---- settings the launching shell made, which mpirun does not carry to other hosts ----------------------


# The command of NVIDIA/nccl-tests#15 (https://github.com/NVIDIA/nccl-tests/issues/15), which forwards its
# setting with -x; and the same command with the setting made in the shell instead, the shape NVIDIA/nccl#626
# describes (ranks on other hosts do not get it).
FORWARDED = (
    "mpirun -x NCCL_DEBUG=WARN -np 2 -npernode 1 --hostfile hostfile "
    "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1 -c 0"
)
SHELL_ONLY = (
    "NCCL_IB_DISABLE=1 mpirun -np 2 -npernode 1 --hostfile hostfile ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1 -c 0"
)


def test_a_setting_made_before_mpirun_on_several_hosts_is_not_forwarded(tmp_path: Path) -> None:
    found = unexported_settings(SHELL_ONLY + "\n", "job.log")
    assert found is not None and found.kind == "config_error" and found.details["variables"] == ["NCCL_IB_DISABLE"]
    assert "-x NCCL_IB_DISABLE" in found.details["remedy"] and "/etc/nccl.conf" in found.details["remedy"]
    # the fix written out from the log's own launch line
    assert found.details["remedy"].startswith("Launch with `mpirun -x NCCL_IB_DISABLE=1 -np 2 -npernode 1 --hostfile")
    # NCCL_DEBUG only changes what is printed: set in the shell alone it is nothing to report
    assert unexported_settings(SHELL_ONLY.replace("NCCL_IB_DISABLE=1", "NCCL_DEBUG=WARN") + "\n", "job.log") is None
    top = diagnose_failures(tmp_path, SHELL_ONLY + "\n")[0]
    assert top.kind == "config_error" and top.metrics["code"] == "launcher_env_not_forwarded"


def test_an_exported_setting_above_mpirun_is_not_forwarded_either() -> None:
    log = "export NCCL_IB_DISABLE=1\n$ mpirun -H node1,node2 -np 2 --allow-run-as-root python train.py\n"
    found = unexported_settings(log, "job.log")
    assert found is not None and found.details["variables"] == ["NCCL_IB_DISABLE"] and found.line == 2


@pytest.mark.parametrize(
    "command",
    [
        FORWARDED,  # forwarded with -x
        "NCCL_P2P_DISABLE=1 mpirun -np 8 --allow-run-as-root ./build/all_reduce_perf -g 1",  # one host
        "NCCL_DEBUG=INFO mpiexec -f hosts -genvall -n 2 ./build/all_reduce_perf",  # Hydra forwards everything
        "NCCL_DEBUG=INFO srun -N 2 ./build/all_reduce_perf",  # srun copies the environment
    ],
)
def test_settings_that_reach_every_rank_are_no_finding(command: str) -> None:
    assert unexported_settings(command + "\n", "job.log") is None


def test_a_setting_nccl_echoes_on_one_host_only_is_a_host_mismatch() -> None:
    # NCCL's own lines (src/misc/param.cc echo; init.cc channel set-up) from two hosts: one echoes the setting,
    # the other goes past the point where it is read without it
    log = (
        "hostA:101:201 [0] NCCL INFO NCCL_SHM_DISABLE set by environment to 1.\n"
        "hostA:101:201 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via NET/Socket/0\n"
        "hostB:301:401 [0] NCCL INFO Channel 00 : 1[1] -> 0[0] via NET/Socket/0\n"
    )
    found = unexported_settings(log, "job.log")
    assert found is not None and found.details["variables"] == ["NCCL_SHM_DISABLE"]
    assert "hostB" in found.message and found.line == 1
    # lines left out: the other host's echo may be among them
    assert unexported_settings(log + "[... cut ...]\nhostB:301:401 [0] NCCL INFO Init COMPLETE\n", "j") is None


# ---- a transport setting shown before a stop is the first thing to try removing --------------------------


def _stop() -> Anomaly:
    return Anomaly(
        code="stopped_in_comm_init",
        kind="hang",
        level=STALL,
        message="stop",
        file="job.log",
        line=1,
        details={"remedy": "Known causes of a stop here: ..."},
    )


@pytest.mark.shared_data
def test_a_transport_setting_nccl_echoed_comes_first_in_a_stops_fix() -> None:
    # pytorch_152077's own echo of NCCL_P2P_LEVEL (a real line), before a stop
    echo = next(ln for ln in corpus_log("pytorch-pytorch_152077").split("\n") if "NCCL_P2P_LEVEL set by" in ln)
    found = _stop()
    name_forced_paths(found, echo + "\n")
    remedy = str(found.details["remedy"])
    assert remedy.startswith("The log shows NCCL_P2P_LEVEL=LOC set") and "rerun without NCCL_P2P_LEVEL" in remedy
    assert remedy.endswith("Known causes of a stop here: ...")


def test_a_sentence_naming_a_setting_is_not_a_setting() -> None:
    found = _stop()
    name_forced_paths(found, "simpleP2P runs fine; NCCL_SHM_DISABLE=1 made no difference\n")
    assert found.details["remedy"] == "Known causes of a stop here: ..."
