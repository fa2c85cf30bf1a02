"""Line formats of OpenPCDet's trainer (tools/train_utils/train_utils.py) and the 3D detectors built on
it: the logger-recorded step line (`--use_logger_to_record`), in its key=value form and in the
timm-style form that replaced it, and the time-interval save of the latest model."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_PCDET = "https://github.com/open-mmlab/OpenPCDet/blob/028ed72eb5df413cf33ca7091b1a977495cc700c/tools/train_utils/train_utils.py"
# The key=value line: `epoch: {cur_epoch}/{total_epochs}, acc_iter={accumulated_iter}, cur_iter={cur_it}/{total}`,
# acc_iter counted after the step (the global iteration just completed); b_time is `val(avg)`, the last
# batch's seconds (averaged over the ranks) and the mean over the epoch so far: the mean is the step time
# read (one batch's own time swings; the lines come every 50 iterations). Seen in
# https://github.com/open-mmlab/OpenPCDet/issues/1156.
_PCDET_KV = _PCDET + " (train_one_epoch: logger.info(f'epoch: ..., acc_iter=..., cur_iter=...'))"
# The timm-style line (https://github.com/open-mmlab/OpenPCDet/pull/1229): `Train: {epoch}/{total} (..%)
# [{cur_it}/{total_it} (..%)] ... Acc_iter {accumulated_iter} ... Batch time: val(avg)`
_PCDET_TIMM = (
    "https://github.com/open-mmlab/OpenPCDet/blob/master/tools/train_utils/train_utils.py (train_one_epoch, timm style)"
)

ROWS: tuple[LineFormat, ...] = (
    LineFormat(
        "pcdet_step",
        "OpenPCDet",
        ("step",),
        r"\bepoch: (?P<epoch>\d+)/\d+, acc_iter=(?P<step>\d+), cur_iter=\d+/\d+"
        r"(?:.*?\bb_time=" + NUM + r"\((?P<step_s>" + NUM + r")\))?",
        "acc_iter=",
        _PCDET_KV,
    ),
    LineFormat(
        "pcdet_timm_step",
        "OpenPCDet",
        ("step",),
        r"\bTrain:\s+(?P<epoch>\d+)/\d+ \(\s*\d+%\) \[\s*\d+/\d+ \(\s*\d+%\)\].*?\bAcc_iter (?P<step>\d+)"
        r"(?:.*?\bBatch time: " + NUM + r"\((?P<step_s>" + NUM + r")\))?",
        "Acc_iter ",
        _PCDET_TIMM,
    ),
    # printed after torch.save of `latest_model` returned (every ckpt_save_time_interval seconds of an epoch)
    LineFormat(
        "pcdet_save_latest",
        "OpenPCDet",
        ("save_end",),
        r"Save latest model to \S+",
        "Save latest model to",
        _PCDET + " (train_one_epoch)",
    ),
)
