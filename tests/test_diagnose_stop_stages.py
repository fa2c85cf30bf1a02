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
    assert 'sidecar.istio.io/inject: "false"' in top.suggestion  # the pods' names show Kubernetes
    assert "no firewall refused it" in top.suggestion
    assert top.suggestion.index("ranks that never started") < top.suggestion.index("sidecar")


def test_a_store_connect_stop_outside_kubernetes_leads_with_the_common_causes(tmp_path: Path) -> None:
    # review log S: a Slurm job, no pods and no mesh: nothing of Istio, the ranks and the world size first
    log = (
        "srun: job 123 queued and waiting for resources\n"
        "[I1203 10:00:00.000 socket.cpp:840] [c10d] The client socket will attempt to connect to an IPv6 address "
        "of (10.1.2.3, 29500).\n"
        "[I1203 10:00:00.001 socket.cpp:925] [c10d] The client socket has connected to [gpu-node-17.cluster]:29500 "
        "on [gpu-node-18.cluster]:51234.\n"
    )
    top = diagnose_failures(tmp_path, log)[0]
    assert top.metrics["code"] == "stopped_in_rendezvous"
    assert "istio" not in top.suggestion.lower() and "world size larger than the ranks launched" in top.suggestion
    assert top.suggestion.index("ranks that never started") < top.suggestion.index("Known causes")


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
    # a cut above the run's own lines (its banner, NCCL's init) is not where the header was: still a stop
    head_cut = "[... cut ...]\n" + log
    top = diagnose_failures(tmp_path, head_cut)[0]
    assert top.kind == "hang" and "up to 2048 bytes" in top.summary


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
    # behind a prompt, every variable in front of mpirun passed by -x in the launch the fix writes out
    launch = "$ NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO mpirun -H node1,node2 -np 2 ./build/all_reduce_perf -b 8 -g 4\n"
    top = diagnose_failures(tmp_path, launch)[0]
    assert "`mpirun -x NCCL_IB_DISABLE=1 -x NCCL_DEBUG=INFO -H node1,node2 -np 2 ./build/all_reduce_perf" in (
        top.suggestion
    )


def test_an_exported_setting_above_mpirun_is_not_forwarded_either() -> None:
    log = "export NCCL_IB_DISABLE=1\n$ mpirun -H node1,node2 -np 2 --allow-run-as-root python train.py\n"
    found = unexported_settings(log, "job.log")
    assert found is not None and found.details["variables"] == ["NCCL_IB_DISABLE"] and found.line == 2


def test_a_hostfile_alone_makes_the_command_open_mpis() -> None:
    # '--hostfile' with two dashes is Open MPI's spelling (Hydra's is -f / -hostfile): no other option needed
    found = unexported_settings("NCCL_IB_DISABLE=1 mpirun --hostfile h -np 2 ./a\n", "job.log")
    assert found is not None and found.details["variables"] == ["NCCL_IB_DISABLE"]


@pytest.mark.parametrize(
    "command",
    [
        FORWARDED,  # forwarded with -x
        "NCCL_P2P_DISABLE=1 mpirun -np 8 --allow-run-as-root ./build/all_reduce_perf -g 1",  # one host
        # ranks per node say nothing of the number of hosts: one host, 8 ranks (review log A)
        "NCCL_P2P_DISABLE=1 mpirun -np 8 --map-by ppr:8:node --allow-run-as-root ./build/all_reduce_perf -g 1",
        "NCCL_P2P_DISABLE=1 mpirun -np 8 -npernode 8 --allow-run-as-root ./build/all_reduce_perf -g 1",
        # a real setting over a real host list, under launchers that forward the environment
        "NCCL_IB_DISABLE=1 mpiexec -hosts node1,node2 -genvall -n 2 ./build/all_reduce_perf",  # Hydra
        "NCCL_IB_DISABLE=1 srun -N 2 --nodelist node1,node2 ./build/all_reduce_perf",  # srun copies it
        # commented-out lines of a printed run script are no command (review log L)
        "# NCCL_IB_DISABLE=1 mpirun -H node1,node2 -np 16 python train.py",
        "# export NCCL_IB_DISABLE=1\nmpirun -x NCCL_DEBUG=INFO -H node1,node2 -np 16 python train.py",
    ],
)
def test_settings_that_reach_every_rank_are_no_finding(command: str) -> None:
    assert unexported_settings(command + "\n", "job.log") is None


def test_the_same_settings_on_open_mpi_over_the_same_hosts_are_a_finding() -> None:
    # the counterpart of the cases above: each would fire under Open MPI, so their silence is Hydra's and srun's
    for command in (
        "NCCL_IB_DISABLE=1 mpirun -H node1,node2 -n 2 ./build/all_reduce_perf",
        "NCCL_IB_DISABLE=1 mpirun -H node1,node2 -np 16 python train.py",
        "export NCCL_IB_DISABLE=1\nmpirun -x NCCL_DEBUG=INFO -H node1,node2 -np 16 python train.py",
    ):
        assert unexported_settings(command + "\n", "job.log") is not None, command


# The end of an nccl-tests run (its summary lines): a run that completed.
_COMPLETED = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 90.3\n"


def test_a_run_that_completed_is_no_finding_whatever_its_launch(tmp_path: Path) -> None:
    # review log B: a two-node nccl-tests run over a hostfile, its interface exported in the shell, that finished
    launch = (
        "export NCCL_SOCKET_IFNAME=eth0\n"
        "$ mpirun -np 16 --hostfile hosts -npernode 8 --allow-run-as-root ./build/all_reduce_perf -b 8 -e 128M\n"
        "#       size         count      type   redop     time   algbw   busbw  error\n"
        "   134217728      33554432     float     sum   1300.1  103.23  180.66  0e+00\n"
    )
    assert unexported_settings(launch, "job.log") is not None  # cut before its end: the launch alone is read
    assert not [
        f
        for f in diagnose_failures(tmp_path, launch + _COMPLETED)
        if f.metrics.get("code") == "launcher_env_not_forwarded"
    ]


def test_a_commented_out_launch_does_not_replace_the_real_stop(tmp_path: Path) -> None:
    # review log L: a printed run script whose commented-out lines set variables, then a two-host init that stops
    log = (
        "+ cat run.sh\n#!/bin/bash\n# export NCCL_P2P_DISABLE=1\n"
        "# NCCL_IB_DISABLE=1 mpirun -H node1,node2 -np 16 python train.py\n"
        "mpirun -x NCCL_DEBUG=INFO -H node1,node2 -np 16 python train.py\n"
        "node1:100:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "node2:100:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        "node1:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "node1:100:200 [0] NCCL INFO Channel 00/02 :    0   1\n"
        "node2:100:200 [0] NCCL INFO Channel 00/02 :    0   1\n"
    )
    found = diagnose_failures(tmp_path, log)
    assert not [f for f in found if f.metrics.get("code") == "launcher_env_not_forwarded"]
    assert found[0].kind == "hang" and found[0].metrics["code"] == "init_stalled"


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


def test_a_disable_switch_at_its_default_forces_nothing() -> None:
    # review log L2: NCCL_P2P_DISABLE=0 is NCCL's default; nothing to remove
    found = _stop()
    name_forced_paths(found, "export NCCL_P2P_DISABLE=0\nNCCL_SHM_DISABLE=0 mpirun -x NCCL_P2P_DISABLE=0 ./a\n")
    assert found.details["remedy"] == "Known causes of a stop here: ..."
    # the same switches set to 1, from each place the log can show them, are named
    found = _stop()
    name_forced_paths(found, "export NCCL_P2P_DISABLE=1\n$ NCCL_DEBUG=INFO NCCL_SHM_DISABLE=1 torchrun train.py\n")
    assert str(found.details["remedy"]).startswith("The log shows NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1 set")
    found = _stop()
    name_forced_paths(found, "mpirun -x NCCL_NET_GDR_LEVEL=PHB -H a,b ./a\n")
    assert "NCCL_NET_GDR_LEVEL=PHB" in str(found.details["remedy"])


def test_a_commented_out_setting_is_not_a_setting() -> None:
    found = _stop()
    name_forced_paths(found, "# export NCCL_P2P_DISABLE=1\n# NCCL_SHM_DISABLE=1 mpirun ./a\n")
    assert found.details["remedy"] == "Known causes of a stop here: ..."


def test_a_sentence_naming_a_setting_is_not_a_setting() -> None:
    found = _stop()
    name_forced_paths(found, "simpleP2P runs fine; NCCL_SHM_DISABLE=1 made no difference\n")
    assert found.details["remedy"] == "Known causes of a stop here: ..."


# ---- an excerpt marker above a stop in NCCL init hides nothing after it ----------------------------------

# Two processes of one host: rank 0 completes init, rank 1 stops in its channel set-up (review log G's lines).
_ONE_STOPS_IN_INIT = (
    "node1:100:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "node1:101:201 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "node1:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "node1:100:200 [0] NCCL INFO Channel 00/02 :    0   1\n"
    "node1:101:201 [1] NCCL INFO Channel 00/02 :    0   1\n"
    "node1:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    "node1:100:200 [0] NCCL INFO Connected all rings\n"
    "node1:100:200 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 7000 commId 0x1 - Init COMPLETE\n"
    "node1:101:201 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n"
)


def test_a_cut_above_a_stop_in_init_still_stops_there(tmp_path: Path) -> None:
    # the lines left out come before the stop: rank 1's completion cannot be among them
    for log in (_ONE_STOPS_IN_INIT, "[... cut ...]\n" + _ONE_STOPS_IN_INIT):
        top = diagnose_failures(tmp_path, log)[0]
        assert top.kind == "hang" and top.metrics["code"] == "stopped_in_comm_init", log[:20]
    # a cut among the processes' init lines (NVIDIA/nccl#226's 64 ranks, cut four times): the poster chose which
    # lines to show, and rank 1's completion may be among those left out
    lines = _ONE_STOPS_IN_INIT.split("\n")
    chosen = "\n".join([*lines[:5], "[... cut ...]", *lines[5:]])
    assert not [f for f in diagnose_failures(tmp_path, chosen) if f.kind == "hang"]
    # a cut after the stop: the rest of the run, rank 1's completion with it, may be among the lines left out
    cut_after_stop = _ONE_STOPS_IN_INIT + "[... cut ...]\nnode1:100:200 [0] NCCL INFO Destroyed comm 0x55\n"
    assert not [f for f in diagnose_failures(tmp_path, cut_after_stop) if f.kind == "hang"]


def test_a_stage_line_keeps_its_columns_unless_it_is_a_progress_bar() -> None:
    # nccl-tests' header (NVIDIA-nccl_104 quotes it) keeps its alignment; a tqdm bar's padding is squeezed
    header = "#       size         count      type   redop     time   algbw   busbw  error"
    stop = where_it_stopped("$ ./build/all_reduce_perf -b 8 -e 128M -g 2\n# nThread 1 nGpus 2\n" + header + "\n")
    assert stop is not None and header.strip() in stop.text
    bar = "Epoch 0:   5%|▌         | 3/60 [00:05<01:40,  1.7s/it]"
    stop = where_it_stopped("GPU available: True (cuda), used: True\n" + bar + "\n")
    assert stop is not None and "5%|▌ | 3/60" in stop.text


def test_a_stop_names_the_forced_setting_nccl_echoed_but_not_a_default_one(tmp_path: Path) -> None:
    # the scan's reading of NCCL's echo (FileScan.env) reaches the stop's fix; =0 of a *_DISABLE switch is NCCL's
    # default and forces nothing (review log L2)
    echo = "node1:100:200 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL\n"
    top = diagnose_failures(tmp_path, echo + _ONE_STOPS_IN_INIT)[0]
    assert top.metrics["code"] == "stopped_in_comm_init" and "The log shows NCCL_P2P_LEVEL=NVL set" in top.suggestion
    default = echo.replace("NCCL_P2P_LEVEL set by environment to NVL", "NCCL_P2P_DISABLE set by environment to 0")
    top = diagnose_failures(tmp_path, default + _ONE_STOPS_IN_INIT)[0]
    assert top.metrics["code"] == "stopped_in_comm_init" and "The log shows" not in top.suggestion
