"""Classes that the fifteenth held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (c10d's C++ logging, ProcessGroupNCCL's watchdog, c10 logging's '[rankN]:' prefix), never a
thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

# c10d's informational lines (TORCH_CPP_LOG_LEVEL=INFO) of a store coming up and its clients connecting, all within
# a few tens of milliseconds: socket.cpp's connect, TCPStore.cpp's server start, the libuv backend's loop.
CONNECT = "[c10d - debug] The client socket will attempt to connect to an IPv6 address of (10.1.2.3, 29400)."


def c10d_info(at: str, where: str, message: str) -> str:
    """One c10d line as torch >= 2.4 prints it: glog's letter and date, the time to the nanosecond, file:line."""
    return f"[I0312 {at} {where}] {message}"


STORE_COMING_UP = (
    "\n".join(
        [
            c10d_info("08:15:02.100200300", "socket.cpp:720", CONNECT),
            c10d_info(
                "08:15:02.110000000", "TCPStore.cpp:312", "[c10d - debug] The server has started on port = 29400."
            ),
            c10d_info("08:15:02.110100000", "TCPStoreLibUvBackend.cpp:1067", "[c10d - debug] Uv main loop running"),
            c10d_info("08:15:02.121000000", "socket.cpp:720", CONNECT),
            c10d_info("08:15:02.134000000", "socket.cpp:720", CONNECT),
            c10d_info("08:15:02.150000000", "socket.cpp:720", CONNECT),
        ]
    )
    + "\n"
)


def test_an_excerpt_that_stops_in_rendezvous_says_so_however_short(tmp_path: Path) -> None:
    # A store coming up and clients connecting, then nothing: a log cut by its poster and a job hung there read the
    # same line for line (the stall comes after the last line), so the stage model names the stop, as a guess.
    top = top_failure(tmp_path, STORE_COMING_UP)
    assert top.kind == "hang" and "rendezvous" in top.summary


def test_the_same_lines_over_a_long_silence_still_stop_in_rendezvous(tmp_path: Path) -> None:
    # the last client connects and nothing follows for minutes
    stalled = STORE_COMING_UP + c10d_info("08:19:40.000000000", "socket.cpp:720", CONNECT) + "\n"
    top = top_failure(tmp_path, stalled)
    assert top.kind == "hang" and "rendezvous" in top.summary


def test_lines_without_times_still_stop_in_rendezvous(tmp_path: Path) -> None:
    # torch < 2.4's prefix carries no time: how long the log sat after its last line is not shown
    untimed = "\n".join("[I socket.cpp:580] " + ln.split("] ", 1)[1] for ln in STORE_COMING_UP.strip().split("\n"))
    top = top_failure(tmp_path, untimed + "\n")
    assert top.kind == "hang" and "rendezvous" in top.summary


# Two processes of a job with several process groups, each timing out in a group of its own: c10 logging's '[rankN]:'
# is the global rank, the watchdog's '[Rank R]' and '[PG ID I PG GUID G Rank R]' the rank within the group, and
# the status line after each timeout names that timeout's group (torch 2.4/2.5 wording).
def watchdog(rank: int, group_rank: int, seq: int, op: str, numel: int) -> str:
    return (
        f"[rank{rank}]:[E0412 10:00:01.000000100 ProcessGroupNCCL.cpp:616] [Rank {group_rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
    )


def status(rank: int, pg: int, guid: int, group_rank: int, seq: int, enqueued: int) -> str:
    return (
        f"[rank{rank}]:[E0412 10:00:01.000000200 ProcessGroupNCCL.cpp:1795] [PG ID {pg} PG GUID {guid} Rank "
        f"{group_rank}] Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued "
        f"NCCL work: {enqueued}, last completed NCCL work: {seq - 1}."
    )


TIMEOUTS_OF_TWO_GROUPS = (
    "\n".join(
        [
            watchdog(21, 1, 310, "ALLTOALL_BASE", 4096),
            status(21, 7, 71, 1, 310, 313),
            watchdog(22, 0, 44, "ALLREDUCE", 16),
            status(22, 7, 64, 0, 44, 44),
        ]
    )
    + "\n"
)


def test_timeouts_of_two_groups_name_the_global_ranks_and_pair_nothing_across_groups(tmp_path: Path) -> None:
    top = top_failure(tmp_path, TIMEOUTS_OF_TWO_GROUPS)
    assert top.kind == "timeout"
    assert sorted(top.ranks) == [21, 22]
    assert "GUID 71" in top.summary and "GUID 64" in top.summary and "never joined" not in top.summary
    assert "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in top.suggestion


def test_one_group_with_two_ops_at_one_seqnum_is_still_a_mismatch(tmp_path: Path) -> None:
    # the same group (one GUID), the same SeqNum, different ops: the ranks are out of step
    one_group = "\n".join(
        [
            watchdog(2, 0, 9, "ALLREDUCE", 8),
            status(2, 2, 30, 0, 9, 9),
            watchdog(3, 1, 9, "BROADCAST", 8),
            status(3, 2, 30, 1, 9, 9),
        ]
    )
    top = top_failure(tmp_path, one_group + "\n")
    assert top.kind == "collective_mismatch"


def test_a_timeout_whose_group_is_not_shown_is_read_with_the_one_group_the_log_names(tmp_path: Path) -> None:
    # rank 3's status line is not in the excerpt: its timeout may be of the one group the log names
    one_group = "\n".join(
        [watchdog(2, 0, 9, "ALLREDUCE", 8), status(2, 2, 30, 0, 9, 9), watchdog(3, 1, 9, "BROADCAST", 8)]
    )
    top = top_failure(tmp_path, one_group + "\n")
    assert top.kind == "collective_mismatch"


def test_a_viewers_minute_timestamps_before_torchruns_prefix_keep_the_global_ranks(tmp_path: Path) -> None:
    # a log viewer's export: ' 2025-04-12 10:00 ' (to the minute, set off by a space) before every line
    exported = "".join(f" 2025-04-12 10:00 {ln}\n" for ln in TIMEOUTS_OF_TWO_GROUPS.strip().split("\n"))
    top = top_failure(tmp_path, exported)
    assert top.kind == "timeout" and sorted(top.ranks) == [21, 22]


# The review of the reading above (issue 40): an 8-GPU node's watchdogs fire together, torch 2.4/2.5 say each
# timeout twice, per-rank files carry no '[rankN]:', and torch 2.3's '[PG N Rank R]' numbers groups per process.
def terminated(rank: int, pg: int, guid: int, desc: str, group_rank: int, seq: int, op: str) -> str:
    """torch 2.4/2.5's second report of the same timeout, as the watchdog thread dies."""
    return (
        f"[rank{rank}]:[E0412 10:00:01.000000300 ProcessGroupNCCL.cpp:1595] [PG ID {pg} PG GUID {guid}({desc}) Rank "
        f"{group_rank}] Process group watchdog thread terminated with exception: [Rank {group_rank}] Watchdog caught "
        f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=16, NumelOut=16, "
        "Timeout(ms)=600000) ran for 600043 milliseconds before timing out."
    )


def described_status(rank: int, pg: int, guid: int, desc: str, group_rank: int, seq: int) -> str:
    return status(rank, pg, guid, group_rank, seq, seq).replace(f"PG GUID {guid} Rank", f"PG GUID {guid}({desc}) Rank")


# ranks 0-3 wait in group GUID 9 (tp) at _ALLGATHER_BASE #900, ranks 4-7 in GUID 12 (dp) at ALLREDUCE #57
NODE = [(r, 1, 9, "tp", r, 900, "_ALLGATHER_BASE") for r in range(4)] + [
    (r, 2, 12, "dp", r - 4, 57, "ALLREDUCE") for r in range(4, 8)
]


def test_eight_watchdogs_firing_together_keep_each_timeout_in_its_group(tmp_path: Path) -> None:
    # every timeout first, then every status line: a status line is eight lines or more after its own timeout
    lines = [watchdog(r, gr, seq, op, 16) for r, _, _, _, gr, seq, op in NODE]
    lines += [described_status(r, pg, guid, desc, gr, seq) for r, pg, guid, desc, gr, seq, _ in NODE]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout", top.summary
    assert "GUID 9" in top.summary and "GUID 12" in top.summary


def test_a_timeout_said_twice_is_one_rank_and_every_group_is_named(tmp_path: Path) -> None:
    lines = []
    for r, pg, guid, desc, gr, seq, op in NODE:
        lines += [
            watchdog(r, gr, seq, op, 16),
            described_status(r, pg, guid, desc, gr, seq),
            terminated(r, pg, guid, desc, gr, seq, op),
        ]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout"
    assert "GUID 9 (tp)" in top.summary and "GUID 12 (dp)" in top.summary
    assert top.summary.count("rank 0 in") == 1


def test_per_rank_files_without_the_prefix_name_the_files_ranks(tmp_path: Path) -> None:
    from scope.analyzers.diagnose import diagnose

    from scope.finding import FAILURE_KINDS

    # the same two processes as TIMEOUTS_OF_TWO_GROUPS, each in its own file and without '[rankN]:'
    for rank, (timeout, group_status) in ((21, (0, 1)), (22, (2, 3))):
        lines = TIMEOUTS_OF_TWO_GROUPS.strip().split("\n")
        text = "\n".join(lines[i].split("]:", 1)[1] for i in (timeout, group_status)) + "\n"
        (tmp_path / f"rank{rank}.log").write_text(text)
    found = [f for f in diagnose(tmp_path).findings if f.kind in FAILURE_KINDS and f.severity != "info"]
    assert found and found[0].kind == "timeout"
    assert sorted(found[0].ranks) == [21, 22]


def test_without_any_global_rank_the_rank_is_worded_as_the_groups(tmp_path: Path) -> None:
    lines = [ln.split("]:", 1)[1] for ln in TIMEOUTS_OF_TWO_GROUPS.strip().split("\n")]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout"
    assert "on its rank 1 there" in top.summary and "rank 1 in" not in top.summary


def status_23(rank: int, pg: int, group_rank: int, seq: int) -> str:
    """torch 2.3's status line (ProcessGroupNCCL.cpp's watchdog: 'Timeout at NCCL work'), its '[PG N Rank R]' the
    group's per-process number uid_."""
    return (
        f"[rank{rank}]:[E0412 10:00:01.000000200 ProcessGroupNCCL.cpp:1537] [PG {pg} Rank {group_rank}] Timeout at "
        f"NCCL work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}."
    )


def test_torch_23s_per_process_group_number_pairs_no_parallel_groups(tmp_path: Path) -> None:
    # torch 2.3's '[PG 1 Rank R]': uid_, the first group each process made after the default one; ranks 0-1 and
    # 2-3 are two tensor-parallel groups, both 'PG 1', waiting at SeqNums of their own, close together: global
    # ranks 0 and 2 both print 'Rank 0', so the four are not one group (reasoning/c10d_grouping.py)
    lines = []
    for rank, seq, op in (
        (0, 1500, "_ALLGATHER_BASE"),
        (1, 1500, "_ALLGATHER_BASE"),
        (2, 1480, "ALLREDUCE"),
        (3, 1480, "ALLREDUCE"),
    ):
        lines += [watchdog(rank, rank % 2, seq, op, 16), status_23(rank, 1, rank % 2, seq)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout", top.summary
    assert "2 process groups" in top.summary and "#1500 of process group PG 1" in top.summary
    assert "#1480 of process group PG 1" in top.summary


def test_torch_23s_pg_1_is_never_the_default_groups(tmp_path: Path) -> None:
    # the default group 'PG 0' (ranks 0-1 at SeqNum 216) beside a 'PG 1' group (ranks 2-3 at 220): two groups
    lines = []
    for rank, pg, seq, op in ((0, 0, 216, "ALLREDUCE"), (1, 0, 216, "ALLREDUCE"), (2, 1, 220, "_ALLGATHER_BASE")):
        lines += [watchdog(rank, rank if pg == 0 else rank - 2, seq, op, 16), status_23(rank, pg, rank % 2, seq)]
    lines += [watchdog(3, 1, 220, "_ALLGATHER_BASE", 16), status_23(3, 1, 1, 220)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout", top.summary
    assert "process group PG 0" in top.summary and "process group PG 1" in top.summary


# One process in two groups that time out at the same SeqNum (tensor and context parallel in step): each status line
# names one timeout, the one of its own group rank.
def test_two_groups_of_one_process_at_one_seqnum_keep_their_own_groups(tmp_path: Path) -> None:
    # ranks 0 and 1 in tp GUID 9 (ranks 0 and 1 there); rank 0 alone in cp GUID 20, rank 1 in cp GUID 21
    lines = [
        watchdog(0, 0, 57, "_ALLGATHER_BASE", 16),
        watchdog(0, 0, 57, "ALLREDUCE", 16),
        watchdog(1, 1, 57, "_ALLGATHER_BASE", 16),
        watchdog(1, 0, 57, "ALLREDUCE", 16),
        status(0, 1, 9, 0, 57, 57),
        status(0, 2, 20, 0, 57, 57),
        status(1, 1, 9, 1, 57, 57),
        status(1, 2, 21, 0, 57, 57),
    ]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout", top.summary
    assert "3 process groups" in top.summary and "ALLREDUCE #57 of process group GUID 20" in top.summary


def test_without_global_ranks_a_status_line_names_the_timeout_of_its_group_rank(tmp_path: Path) -> None:
    # torch 2.4 without '[rankN]:' in one file: two tp groups, each ranks 0 and 1, all at SeqNum 100
    def bare(line: str) -> str:
        return line.split("]:", 1)[1]

    lines = [bare(watchdog(r, r % 2, 100, "ALLREDUCE", 16)) for r in range(4)]
    lines += [bare(described_status(r, 3 + r // 2, 3 + r // 2, "tp", r % 2, 100)) for r in range(4)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert "GUID 3 (tp)" in top.summary and "GUID 4 (tp)" in top.summary


def test_a_never_enqueued_collective_is_named_from_its_own_group(tmp_path: Path) -> None:
    # ranks 0-3 wait in dp GUID 12 at ALLREDUCE #57; ranks 4-7 in tp GUID 9 at _ALLGATHER_BASE #900, which rank 6
    # never enqueued
    lines = []
    for r in range(8):
        pg, guid, gr, seq, op = (2, 12, r, 57, "ALLREDUCE") if r < 4 else (1, 9, r - 4, 900, "_ALLGATHER_BASE")
        lines += [watchdog(r, gr, seq, op, 16), status(r, pg, guid, gr, seq, seq - 1 if r == 6 else seq)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "hang" and top.ranks == [6]
    assert "all_gather #900 of process group GUID 9" in top.summary and "ranks 4, 5, 7 timed out" in top.summary


def test_two_ranks_that_never_enqueued_are_not_among_those_that_waited(tmp_path: Path) -> None:
    # ranks 0-3 in tp GUID 9 at _ALLGATHER_BASE #900, which ranks 2 and 3 never enqueued
    lines = []
    for r in range(4):
        lines += [watchdog(r, r, 900, "_ALLGATHER_BASE", 16), status(r, 1, 9, r, 900, 899 if r > 1 else 900)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "hang" and sorted(top.ranks) == [2, 3]
    assert "which ranks 0, 1 timed out" in top.summary, top.summary


def test_a_status_line_before_its_timeout_still_names_its_group(tmp_path: Path) -> None:
    # a newest-first export: each process's status line comes before its timeout
    lines = []
    for r, pg, guid, desc, gr, seq, op in NODE:
        lines += [described_status(r, pg, guid, desc, gr, seq), watchdog(r, gr, seq, op, 16)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout", top.summary
    assert "GUID 9 (tp)" in top.summary and "GUID 12 (dp)" in top.summary


def test_the_summary_of_many_groups_names_a_few_and_counts_the_rest(tmp_path: Path) -> None:
    # 64 ranks, each in a tp group (8 of them) and a dp group (8 more), all timed out
    lines = []
    for r in range(64):
        lines += [watchdog(r, r % 8, 5000, "ALLREDUCE", 16), status(r, 1, 1 + r // 8, r % 8, 5000, 5000)]
        lines += [watchdog(r, r // 8, 300, "ALLREDUCE", 16), status(r, 2, 9 + r % 8, r // 8, 300, 300)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout"
    assert "16 process groups" in top.summary and "(12 more groups)" in top.summary
    assert len(top.summary) < 600, len(top.summary)


def test_an_srun_label_is_the_global_rank(tmp_path: Path) -> None:
    # srun --label's '5: ' (SLURM_PROCID) before c10d's lines, no '[rankN]:': 8 ranks in 4 dp groups of two
    lines = []
    for r in range(8):
        for line in (watchdog(r, r // 4, 57, "ALLREDUCE", 16), status(r, 2, 12 + r % 4, r // 4, 57, 57)):
            lines.append(f"{r}: " + line.split("]:", 1)[1])
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout"
    assert sorted(top.ranks) == list(range(8))


def test_group_key_trusts_a_bare_pg_number_only_where_it_is_the_same_on_every_rank() -> None:
    from scope.analyzers.diagnose.knowledge.c10d_groups import group_key

    assert group_key({"pg": "1"}) is None  # torch 2.3's per-process counter (or 2.4's name: not told apart)
    assert group_key({"pg": "1", "pg_desc": "tp"}) == "pg 1"  # torch 2.4: the group's name
    assert group_key({"pg": "0"}) == "pg 0"  # the default group
    assert group_key({"pg": "3", "pg_guid": "9"}) == "guid 9"


def test_group_label_names_the_group_as_printed() -> None:
    from scope.analyzers.diagnose.knowledge.c10d_groups import group_label

    assert group_label({"pg": "3", "pg_guid": "9", "pg_desc": "tp"}) == "GUID 9 (tp)"
    assert group_label({"pg": "1"}) == "PG 1"
    assert group_label({}) is None


def test_a_viewers_minute_stamp_is_stripped_once_and_the_programs_date_kept() -> None:
    from scope.analyzers.diagnose.readers.collector_prefix import strip_collector_prefix

    text = "".join(f"2025-02-18 12:5{i} 2025-02-18 13:10 job 1 step {i}\n" for i in range(3))
    assert strip_collector_prefix(text).split("\n")[0] == "2025-02-18 13:10 job 1 step 0"


def test_a_status_line_of_another_group_rank_still_names_its_processs_one_timeout(tmp_path: Path) -> None:
    # as printed in a real torch 2.5 log: the timeout says 'Rank 1', its status line 'Rank 0'; nothing else of the
    # process waits at that SeqNum, so the status line names it
    lines = [
        watchdog(21, 1, 310, "ALLTOALL_BASE", 4096),
        status(21, 7, 71, 1, 310, 313),
        watchdog(22, 1, 44, "ALLREDUCE", 16),
        status(22, 7, 64, 0, 44, 44),
    ]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert "ALLREDUCE #44 of process group GUID 64" in top.summary


def dump_teardown(rank: int, reason: str) -> str:
    """The heartbeat monitor's last line of a process (ProcessGroupNCCL.cpp), with the reason it ends it."""
    return (
        f"[rank{rank}]:[F0412 10:00:31.000000000 ProcessGroupNCCL.cpp:1575] [PG ID 2 PG GUID 2(dp) Rank {rank}] "
        f"[PG ID 2 PG GUID 2(dp) Rank {rank}] Terminating the process after attempting to dump debug info, due to "
        f"{reason}."
    )


def test_the_dump_teardown_after_an_ordinary_timeout_is_no_stuck_watchdog(tmp_path: Path) -> None:
    # every rank times out in one all_reduce, then each process ends "due to collective timeout or exception":
    # the timeout is the finding, not a heartbeat-monitor hang
    lines = [watchdog(r, r, 1234, "ALLREDUCE", 1048576) for r in range(4)]
    lines += [dump_teardown(r, "collective timeout or exception") for r in range(4)]
    top = top_failure(tmp_path, "\n".join(lines) + "\n")
    assert top.kind == "timeout" and "heartbeat" not in top.summary.lower(), top.summary


def test_the_dump_teardown_of_a_stuck_watchdog_is_still_a_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, dump_teardown(3, "ProcessGroupNCCL watchdog hang") + "\n")
    assert top.kind == "hang" and "heartbeat" in top.summary.lower(), top.summary
