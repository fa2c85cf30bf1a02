"""Classes that the eleventh held-out set of real threads exposed (issue 40), each on short lines written in the
emitting program's format (gdb's, NCCL's), never a thread's own text.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import top_failure

# gdb's 'thread apply all bt' of a live process, pasted from its first thread header on (no '(gdb)' prompt): the
# one thread shown polls for the GPU completion of a collective Horovod queued.
GDB_THREADS_WITHOUT_PROMPT = """\
Thread 3 (Thread 0x7f00aa5e7700 (LWP 2201)):
#0  0x00007f00b975c8e7 in sched_yield () at ../sysdeps/unix/syscall-template.S:84
#1  0x00007f00a1a3554d in std::this_thread::yield () at /usr/include/c++/7/thread:270
#2  horovod::common::GPUContext::impl::WaitForEvents(std::queue<CUevent_st*>&) (q=...) at ops/cuda_operations.cc:106
#3  0x00007f00a1a3601a in horovod::common::GPUOpContext::FinalizeGPUQueue() at horovod/common/ops/gpu_operations.cc:61
"""


def test_a_gdb_thread_dump_pasted_without_its_prompt_is_a_hang_in_the_collectives_completion(tmp_path: Path) -> None:
    top = top_failure(tmp_path, GDB_THREADS_WITHOUT_PROMPT)
    assert top.kind == "hang"
    assert "WaitForEvents" in top.summary and "(std::queue" not in top.summary
    assert "newer NCCL release" in top.suggestion
