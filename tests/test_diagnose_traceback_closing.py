"""A traceback's last line names its exception whatever the class is called (readers/logs.py _TB_CLOSING):
torch.compile's exceptions end in neither 'Error' nor 'Exception' (torch/_dynamo/exc.py: BackendCompilerFailed,
Unsupported, InvalidBackend), and a log ending on one read as 'No failure found'. Lines written in CPython's
traceback format."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_failures, top_failure

FRAMES = """\
Traceback (most recent call last):
  File "/opt/job/pretrain.py", line 212, in <module>
    main(cfg)
  File "/opt/job/pretrain.py", line 170, in main
    loss = compiled(batch)
  File "/usr/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 655, in _fn
    return fn(*args, **kwargs)
"""


@pytest.mark.parametrize(
    "closing",
    [
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
        "torch._dynamo.exc.Unsupported: generator",
        "torch._dynamo.exc.InvalidBackend: Invalid backend: 'indcutor', see `torch._dynamo.list_backends()` for "
        "available backends.",
        "BackendCompilerFailed: backend='aot_eager' raised:",
    ],
)
def test_a_traceback_closed_by_any_exception_class_is_a_failure(tmp_path: Path, closing: str) -> None:
    top = top_failure(tmp_path, FRAMES + closing + "\n")
    assert top.kind == "crash" and closing.split(":")[0] in top.summary


@pytest.mark.parametrize("closing", ["SystemExit: 0", "WARNING: the other rank's logger line", "INFO"])
def test_an_exit_or_a_loggers_line_after_the_frames_is_no_exception(tmp_path: Path, closing: str) -> None:
    assert diagnose_failures(tmp_path, FRAMES + closing + "\n") == []
