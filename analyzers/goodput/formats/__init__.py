"""Training-progress line formats, as data: one row per line a framework or launcher prints, one module
per framework family (megatron, fairseq, lightning, hf, trainers, launchers).

Each row names the program that prints the line (`source`: the file that formats it), what the line
means for the job's time (`kinds`, see MARK_KINDS) and a regex whose named groups carry the numbers:
`step`, `total`, `epoch`, `step_ms` / `step_s` (seconds per step from an elapsed-time field), `dur_s` /
`dur_ms` (what the line says an operation took), `elapsed` (a progress bar's relative clock h:mm:ss),
`bytes`, `ts` (a timestamp inside the message). `needle` is a literal every matching line contains: it
keeps the scan cheap (most rows never run their regex on most lines). Adding a framework is adding rows
and a test excerpt (tests/test_goodput_formats.py).

Wall-clock timestamps at a line's start are read by CLOCKS (below), separately from the rows.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from scope.analyzers.goodput.formats import (
    colossalai,
    detectron2,
    dschat,
    fairseq,
    hf,
    hydra_template,
    launchers,
    lerobot,
    lightning,
    maskrcnn,
    megatron,
    mmf,
    modded_nanogpt,
    nanotron,
    openpcdet,
    paddledet,
    paddlevideo,
    startup,
    trainers,
    yolox,
)
from scope.analyzers.goodput.formats.rows import MARK_KINDS, LineFormat

__all__ = [
    "ANSI",
    "BAR_ROWS",
    "CLOCKS",
    "COUNTED_ROWS",
    "DATA_FIELD_ROWS",
    "EPOCH_END_ROWS",
    "EPOCH_ROWS",
    "JSONL_ROWS",
    "LAST_STEP_TIME_ROWS",
    "LINE_FORMATS",
    "MARK_KINDS",
    "MEMBERSHIP_ROWS",
    "ONCE_PER_LAUNCH_ROWS",
    "SHARED_BARS",
    "TRAINING_CLOCK_ROWS",
    "UNITLESS_MS_ROWS",
    "Clock",
    "LineFormat",
    "by_name",
]

# The order breaks ties between rows matching at the same place in a line.
LINE_FORMATS: tuple[LineFormat, ...] = (
    *megatron.ROWS,
    *fairseq.ROWS,
    *lightning.ROWS,
    *hf.ROWS,
    *hydra_template.ROWS,
    *trainers.ROWS,
    *modded_nanogpt.ROWS,
    *nanotron.ROWS,
    *lerobot.ROWS,
    *colossalai.ROWS,
    *detectron2.ROWS,
    *maskrcnn.ROWS,
    *dschat.ROWS,
    *paddledet.ROWS,
    *paddlevideo.ROWS,
    *openpcdet.ROWS,
    *mmf.ROWS,
    *yolox.ROWS,
    *launchers.ROWS,
    *startup.ROWS,
)


class Clock(NamedTuple):
    """A timestamp format: where it is found in a line, and the program (file) that prints it."""

    name: str
    regex: re.Pattern[str]
    source: str


_PY_LOGGING = "https://github.com/python/cpython/blob/main/Lib/logging/__init__.py"

# A timestamp in a line: the leftmost one is the line's time (its logger's prefix, not a time its message quotes:
# nanotron's `05/14/2024 10:21:09 [INFO|...]: [Start training] datetime: 2024-05-14 ...`); on a tie, this order.
CLOCKS: tuple[Clock, ...] = (
    # Python logging's default asctime (`2023-06-13 17:29:37,123`: Formatter.default_time_format and
    # default_msec_format), which DeepSpeed / torchtitan (`[... ,mmm]`), NeMo (`[NeMo I 2024-08-01 05:47:24`),
    # Megatron (`datetime: ...`, `[2024-03-05 10:00:00] iteration`) keep; and ISO 8601 with T and a zone
    # (SLURM's time strings, `kubectl logs --timestamps` RFC 3339, scope's own hook)
    Clock(
        "iso",
        re.compile(
            r"(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<frac>\d{1,9}))?"
            r"(?P<tz>Z|[+-]\d\d:?\d\d)?"
        ),
        f"{_PY_LOGGING} (Formatter.default_time_format); "
        "https://github.com/SchedMD/slurm/blob/master/src/common/parse_time.c (slurm_make_time_str, ISO 8601); "
        "https://kubernetes.io/docs/reference/kubectl/generated/kubectl_logs/ (--timestamps: RFC 3339)",
    ),
    Clock(
        "ymd_slash",
        re.compile(
            r"(?P<y>\d{4})/(?P<mo>\d\d)/(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?:[.,](?P<frac>\d{1,9}))?"
        ),
        "https://github.com/open-mmlab/mmengine/blob/main/mmengine/logging/logger.py (datefmt '%Y/%m/%d %H:%M:%S')",
    ),
    Clock(
        "us_date",
        re.compile(r"(?P<mo>\d\d)/(?P<d>\d\d)/(?P<y>\d{4}) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"),
        "https://github.com/huggingface/transformers/tree/main/examples/pytorch (the run_*.py scripts' "
        "logging.basicConfig datefmt '%m/%d/%Y %H:%M:%S')",
    ),
    # rich's logging handler (colossalai, many training scripts): %x in the C / en_US locale prints a two-digit
    # year; rich leaves the time out of a line logged in the same second (the line's time is then the one
    # before's). At the line's start only: a bare dd/dd/dd elsewhere is no clock.
    Clock(
        "rich",
        re.compile(r"^\[(?P<mo>\d\d)/(?P<d>\d\d)/(?P<yy>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)\]"),
        "https://github.com/Textualize/rich/blob/master/rich/logging.py (RichHandler log_time_format '[%x %X]')",
    ),
    # glog's prefix `Lmmdd hh:mm:ss.uuuuuu threadid file:line]`: torch.distributed.elastic since 2.3
    # (`W0301 10:06:00.123456 1234 file.py:12]`) and c10's C++ lines (`[rank1]:[E1201 12:31:50.123456789
    # ProcessGroupNCCL.cpp:616]`; torch 2.x builds print the month unpadded, `[W911 14:08:52.571468379
    # OperatorEntry.cpp:218]`, `[W324 11:43:27.225160784 socket.cpp:209]`). No year: taken from the log's other
    # timestamps (else 1970: the times still order and subtract).
    Clock(
        "glog",
        re.compile(
            r"^\s*(?:\[rank\d+\]:)?\[?[IWEF](?P<mo>\d\d?)(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
            r"(?:\.(?P<frac>\d{1,9}))?(?= +\d+ | +[\w./-]+:\d+\])"
        ),
        "https://github.com/google/glog/blob/master/src/logging.cc (the log line prefix); "
        "https://github.com/pytorch/pytorch/blob/main/c10/util/Logging.cpp",
    ),
    # LSF's job report (the mail or the -o file's trailer): ctime, printed after the job's own output
    Clock(
        "lsf_ctime",
        re.compile(
            r"^(?:Started|Terminated|Results reported) at \w{3} (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) "
            r"(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d) (?P<y>\d{4})\b"
        ),
        "https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=information-job-output-file (the job report)",
    ),
    # MMEngine's first logger format (2022) and detectron2's (`[11/01 11:20:11 d2.utils.events]:`; its file
    # log's `[08/30 23:00:36] d2.utils.events INFO:`): no year, at the line's start
    Clock(
        "md_slash",
        re.compile(r"^\[?(?P<mo>\d\d)/(?P<d>\d\d) (?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)(?=\]? )"),
        "https://github.com/facebookresearch/detectron2/blob/main/detectron2/utils/logger.py "
        "(datefmt '%m/%d %H:%M:%S')",
    ),
)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# Rows whose step time field is the run's cumulative training time, no wall clock (rows.training_clock)
TRAINING_CLOCK_ROWS = frozenset(f.name for f in LINE_FORMATS if f.training_clock)
LAST_STEP_TIME_ROWS = frozenset(f.name for f in LINE_FORMATS if f.last_step_time)
# Rows whose step timer stops for a save or an evaluation ("saves"), or restarts at each epoch ("epoch")
TIMER_EXCLUDES_ROWS = {f.name: f.timer_excludes for f in LINE_FORMATS if f.timer_excludes}
# Rows whose step time carries no unit and is printed in ms by one program, in s by another of the same shape
# (`step=N loss=X dt=Y`: saforem2's wordplay trainer prints ms, ezpz's examples seconds): the clock decides.
UNITLESS_MS_ROWS = frozenset({"wordplay_step"})
# Progress bars (their redraws show a counter's position, not a step's own record)
BAR_ROWS = frozenset(f.name for f in LINE_FORMATS if f.clock)
SHARED_BARS = frozenset(f.name for f in LINE_FORMATS if f.shared_bar)
# Rows whose `total` is an epoch's steps, not the run's
EPOCH_ROWS = frozenset(f.name for f in LINE_FORMATS if f.epoch_from is not None)
MEMBERSHIP_ROWS = frozenset(f.name for f in LINE_FORMATS if f.membership)
ONCE_PER_LAUNCH_ROWS = frozenset(f.name for f in LINE_FORMATS if f.once_per_launch)
EPOCH_END_ROWS = frozenset(f.name for f in LINE_FORMATS if f.at_epoch_end)
JSONL_ROWS = frozenset(f.name for f in LINE_FORMATS if f.records)
COUNTED_ROWS = frozenset(f.name for f in LINE_FORMATS if f.counted)
# Rows whose step line states its own data-wait field (`data_s`): only its wait above the steady one is a stall
DATA_FIELD_ROWS = frozenset(f.name for f in LINE_FORMATS if "data_s" in f.regex.groupindex)


def by_name() -> dict[str, LineFormat]:
    return {f.name: f for f in LINE_FORMATS}
