"""A traceback pasted from among its frames (no 'Traceback (most recent call last):' header) and cut before its
exception line is still a process that raised (reasoning/traceback_end.py); where the innermost frame's source
line is the message it raises and reads as a configuration check, the cut traceback is the framework refusing its
settings. Short tracebacks written in Python's format.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_failures, top_failure

FRAMES = (
    '  File "/env/lib/python3.10/site-packages/framework/trainer.py", line 120, in fit\n'
    "    self._check_devices()\n"
    '  File "/env/lib/python3.10/site-packages/framework/trainer.py", line 88, in _check_devices\n'
)


def test_a_traceback_pasted_from_its_frames_and_cut_is_a_crash(tmp_path: Path) -> None:
    top = top_failure(tmp_path, FRAMES + "    n = self._count_gpus(world)\n")
    assert top.kind == "crash" and "_check_devices" in top.summary


def test_a_cut_traceback_raising_a_check_message_is_a_config_error_quoting_it(tmp_path: Path) -> None:
    top = top_failure(tmp_path, FRAMES + '    "Model parallel size must be divisible by the number of GPUs per node"\n')
    assert top.kind == "config_error"
    assert "must be divisible by the number of GPUs per node" in top.summary and "_check_devices" in top.suggestion


def test_frames_after_other_output_with_no_header_are_no_cut_traceback(tmp_path: Path) -> None:
    found = diagnose_failures(tmp_path, "epoch 3 done, loss 0.12\n" + FRAMES + "    n = self._count_gpus(world)\n")
    assert not any("inside a Python traceback" in f.summary for f in found)


LAUNCHER_WAIT = (
    "Traceback (most recent call last):\n"
    '  File "/env/lib/python3.8/site-packages/torch/distributed/launch.py", line 246, in <module>\n'
    "    main()\n"
    '  File "/env/lib/python3.8/site-packages/torch/distributed/launch.py", line 239, in main\n'
    "    process.wait()\n"
    '  File "/usr/lib/python3.8/subprocess.py", line 1083, in wait\n'
    "    return self._wait(timeout=timeout)\n"
)


def test_a_cut_traceback_standing_in_the_launchers_wait_is_its_workers_hang(tmp_path: Path) -> None:
    top = top_failure(tmp_path, LAUNCHER_WAIT)
    assert top.kind == "hang" and "waits for its worker processes" in top.summary
    assert "py-spy dump" in top.suggestion and "lower the batch size" in top.suggestion


def test_a_cut_traceback_raising_in_the_launcher_stays_a_crash(tmp_path: Path) -> None:
    raising = LAUNCHER_WAIT.split('  File "/usr/lib')[0].replace(
        "    process.wait()\n", "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
    )
    top = top_failure(tmp_path, raising)
    assert top.kind == "crash"
