"""Issue 40 classes missed on the heldout5 threads (now a tuned set): a gdb backtrace stuck in the rendezvous
store, a poster's hang note as a log's last line, a setting listing read as an error, NCCL's own CUDA call
refused as 'invalid argument', and NCCL's duplicate-GPU words without their head.

Real excerpts are in tests/data/diagnose_threads/ (README.md there gives each one's URL and cause).
"""

from __future__ import annotations

from pathlib import Path

from scope.analyzers.diagnose.readers import stacks

from tests.helpers import diagnose_failures, top_failure

THREADS = Path(__file__).parent / "data" / "diagnose_threads"
GDB_STORE = THREADS / "pytorch_129367_gdb_tcpstore_get.log"
HANGED_NOTE = THREADS / "mosaicml_streaming_145_hanged_note.log"
PG_OPTIONS = THREADS / "pytorch_105695_pg_nccl_options.log"
CUDA_INVALID = THREADS / "trtllm_4238_nccl_cuda_invalid_argument.log"
DUPLICATE_GPU = THREADS / "deepseek_v3_part4_duplicate_gpu.log"


# ---- a gdb backtrace of a process stuck in the rendezvous store -----------------------------------------


def test_a_gdb_backtrace_is_read_as_one_stack_with_native_frames() -> None:
    dumps = stacks.parse_stacks(GDB_STORE.read_text())
    assert len(dumps) == 1
    frames = dumps[0].threads[0].frames
    assert frames[0] == ("__libc_recv", "../sysdeps/unix/sysv/linux/recv.c", 28)
    assert frames[-1][0] == "c10d::TCPStore::doGet(std::string const&)" and frames[-1][2] == 0
    where = stacks.where(dumps[0])
    assert where["state"] == "elsewhere" and "rendezvous store" in str(where["waits_for"])


def test_a_process_stuck_in_tcpstore_get_is_a_hang_on_the_store(tmp_path: Path) -> None:
    top = top_failure(tmp_path, GDB_STORE.read_text())
    assert top.kind == "hang" and "TCPStore::doGet" in top.summary, top.summary
    assert "MASTER_PORT" in top.suggestion and "ss -ltnp" in top.suggestion


def test_a_gdb_backtrace_elsewhere_names_no_store(tmp_path: Path) -> None:
    # the same prompt and frame shapes, stuck in a kernel wait of the program's own: no known wait place
    log = (
        "(gdb) bt\n"
        "#0  0x00007f7 in __futex_abstimed_wait_common64 (futex_word=0x55) at ./nptl/futex-internal.c:57\n"
        "#1  0x00007f8 in my_solver::step(int) () from /opt/app/libsolver.so\n"
    )
    dumps = stacks.parse_stacks(log)
    assert len(dumps) == 1 and "waits_for" not in stacks.where(dumps[0])
    assert not any("rendezvous store" in f.summary for f in diagnose_failures(tmp_path, log))


# ---- the poster's note that the job hung, as the log's last line -----------------------------------------


def test_a_hang_note_as_the_last_line_is_a_low_confidence_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, HANGED_NOTE.read_text())
    assert top.kind == "hang" and top.metrics["confidence"] == "low", top.summary
    assert "<HANGED>" in top.summary and "py-spy dump" in top.suggestion


def test_a_program_sentence_about_a_hang_is_no_note(tmp_path: Path) -> None:
    # a healthy config print that ends on a line of the program's own mentioning hangs is no poster's note
    log = HANGED_NOTE.read_text().replace("<HANGED>", "hang detection enabled: watchdog checks every 60 s")
    assert not any(f.kind == "hang" for f in diagnose_failures(tmp_path, log))


# ---- a setting listing is no error ------------------------------------------------------------------


def test_process_group_options_listing_nccl_debug_warn_is_healthy(tmp_path: Path) -> None:
    assert not diagnose_failures(tmp_path, PG_OPTIONS.read_text())


def test_an_error_after_the_options_listing_is_still_the_guess(tmp_path: Path) -> None:
    log = PG_OPTIONS.read_text() + "Segmentation fault (core dumped)\n"
    top = top_failure(tmp_path, log)
    assert "Segmentation fault" in top.summary and "NCCL_DEBUG" not in top.summary


# ---- NCCL's own CUDA call refused as 'invalid argument' ----------------------------------------------------


def test_nccl_cuda_failure_invalid_argument_is_an_nccl_driver_mismatch(tmp_path: Path) -> None:
    top = top_failure(tmp_path, CUDA_INVALID.read_text())
    assert top.kind == "config_error", top.summary
    assert "upgrade NCCL" in top.suggestion and "set_device" not in top.suggestion


def test_another_cuda_error_quoted_by_nccl_keeps_its_own_reading(tmp_path: Path) -> None:
    log = CUDA_INVALID.read_text().replace("'invalid argument'", "'an illegal memory access was encountered'")
    top = top_failure(tmp_path, log)
    assert top.kind == "crash" and "upgrade NCCL" not in top.suggestion, top.summary


# ---- NCCL's duplicate-GPU words without 'Duplicate GPU detected' --------------------------------------------


def test_two_ranks_both_on_one_cuda_device_is_a_rank_to_gpu_mapping_error(tmp_path: Path) -> None:
    top = top_failure(tmp_path, DUPLICATE_GPU.read_text())
    assert top.kind == "config_error" and "two or more ranks on one GPU" in top.summary, top.summary
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in top.suggestion


# ---- the dumpstacks recipe's shape, cut before the wait ----------------------------------------------------

RECIPE_CUT = THREADS / "allennlp_5088_dumpstacks_cut.log"


def test_the_dumpstacks_recipe_is_read_as_a_process_stack() -> None:
    dumps = stacks.parse_stacks(RECIPE_CUT.read_text())
    assert [d.pid for d in dumps] == [82627]
    where = stacks.where(dumps[0])
    assert where["state"] == "elsewhere" and str(where["frame"]).endswith("train.py:531 in run")


def test_a_pasted_dump_cut_before_its_wait_is_the_weakest_hang_guess(tmp_path: Path) -> None:
    top = top_failure(tmp_path, RECIPE_CUT.read_text())
    assert top.kind == "hang" and top.metrics["confidence"] == "low", top.summary
    assert "82627" in top.summary and "no wait below it" in top.summary
    assert "py-spy dump" in top.suggestion


def test_a_crash_traceback_in_the_recipes_frame_shape_is_no_dump(tmp_path: Path) -> None:
    # the same frame lines with no ThreadID header: no dump to read
    log = "\n".join(ln for ln in RECIPE_CUT.read_text().split("\n") if "ThreadID" not in ln)
    assert stacks.parse_stacks(log) == []


# ---- TRL GRPO's generation-batch check ------------------------------------------------------------------------


def test_grpo_batch_not_divisible_by_num_generations_quotes_its_numbers(tmp_path: Path) -> None:
    top = top_failure(tmp_path, (THREADS / "open_r1_249_grpo_generations.log").read_text())
    assert top.kind == "config_error", top.summary
    assert "(7 x 1)" in top.suggestion and "num_generations (8)" in top.suggestion and "[7]" in top.suggestion


def test_the_later_effective_batch_wording_is_the_same_row(tmp_path: Path) -> None:
    line = (
        "ValueError: The effective train batch size (4 x 2 x 1) must be evenly divisible by the number of "
        "generations per prompt (16)."
    )
    top = top_failure(tmp_path, line + "\n")
    assert top.kind == "config_error" and "(4 x 2 x 1)" in top.suggestion, top.summary


# ---- a native crash whose backtrace stops in a known library -----------------------------------------------

CORE_SIGSEGV = THREADS / "mmpretrain_603_core_sigsegv_libtorch.log"


def test_a_core_dump_stopped_in_libtorch_asks_for_another_pytorch(tmp_path: Path) -> None:
    top = top_failure(tmp_path, CORE_SIGSEGV.read_text())
    assert top.kind == "crash", top.summary
    assert "getCurrentCUDABlasHandle, in PyTorch's library" in top.suggestion and "upgrade PyTorch" in top.suggestion


def test_a_core_dump_stopped_in_the_programs_own_library_names_no_owner(tmp_path: Path) -> None:
    log = CORE_SIGSEGV.read_text().replace("torch/lib/libtorch_cuda_cu.so", "myproj/_ops.cpython-38.so")
    top = top_failure(tmp_path, log)
    assert top.kind == "crash" and "upgrade PyTorch" not in top.suggestion, top.suggestion


# ---- torchrun's rendezvous closed by another node's agent ---------------------------------------------------


def test_rendezvous_closed_is_a_node_that_left(tmp_path: Path) -> None:
    top = top_failure(tmp_path, (THREADS / "pytorch_150916_rendezvous_closed.log").read_text())
    assert top.kind == "missing_rank", top.summary
    assert "pytorch/pytorch#152525" in top.suggestion and "--rdzv_id" in top.suggestion


# ---- a store or peer at a Docker bridge address -------------------------------------------------------------

BRIDGE = THREADS / "openrlhf_265_store_docker_bridge.log"


def test_a_store_at_a_docker_bridge_address_asks_for_host_networking(tmp_path: Path) -> None:
    top = top_failure(tmp_path, BRIDGE.read_text())
    assert top.kind == "config_error", top.summary
    assert "172.17.0.2" in top.suggestion and "--network=host" in top.suggestion
    assert "GLOO_SOCKET_IFNAME" in top.suggestion


def test_a_store_at_a_routable_address_keeps_the_rows_remedy(tmp_path: Path) -> None:
    top = top_failure(tmp_path, BRIDGE.read_text().replace("172.17.0.2", "10.0.1.12"))
    assert top.kind == "config_error" and "--network=host" not in top.suggestion, top.suggestion


# ---- a launcher's ssh to a hostfile host that does not resolve ----------------------------------------------


def test_ssh_could_not_resolve_a_hostfile_host_is_the_hostfile(tmp_path: Path) -> None:
    top = top_failure(tmp_path, (THREADS / "eva_4_deepspeed_ssh_hostfile.log").read_text())
    assert top.kind == "config_error" and "ssh" in top.summary, top.summary
    assert "Host node-0 in the launcher's hostfile" in top.suggestion and "MASTER_ADDR" not in top.suggestion


def test_a_store_host_name_that_does_not_resolve_stays_the_stores(tmp_path: Path) -> None:
    log = "ValueError: host not found: Name or service not known\n"
    top = top_failure(tmp_path, log)
    assert top.kind == "config_error" and "hostfile" not in top.suggestion and "nc -z" in top.suggestion


def test_a_store_host_name_that_times_out_names_master_addr_and_container_networking(tmp_path: Path) -> None:
    top = top_failure(tmp_path, (THREADS / "colossalai_examples_207_store_host_name.log").read_text())
    assert top.kind == "config_error", top.summary
    assert "--master_addr" in top.suggestion and "--net=host" in top.suggestion
