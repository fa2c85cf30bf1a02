"""Line formats of PaddleDetection's trainer (ppdet; its logger prints `[%m/%d %H:%M:%S] name LEVEL: ..`)."""

from __future__ import annotations

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_PPDET_LOG = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/callbacks.py (LogPrinter: "
    "`Epoch: [{}] [{:>4d}/{}] .. batch_cost: .. data_cost: ..`)"
)
_PPDET_SSOD_LOG = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/trainer_ssod.py (the "
    "semi-supervised trainer's log line: `{}/{} iters ` before `Epoch: [{}] [{:>4d}/{}]`)"
)
_PPDET_EVAL_ITER = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/trainer.py (_eval_with_loader: "
    "`Eval iter: {}` every 100 batches, from 0)"
)
_PPDET_EVAL = (
    "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/trainer.py (_eval_with_loader: "
    "`Total sample number: {}, average FPS: {}` after the pass)"
)
_PADDLE_TOPO = (
    "https://github.com/PaddlePaddle/Paddle/blob/release/2.4/python/paddle/distributed/fleet/base/topology.py "
    "(HybridCommunicateGroup: `HybridParallelInfo: rank_id: .., mp_degree: .., sharding_degree: .., pp_degree: .., "
    "dp_degree: ..`)"
)
# LogPrinter's logger: `ppdet.engine` in release/2.6, `ppdet.engine.callbacks` on develop since #9080 (2024-08-07,
# https://github.com/PaddlePaddle/PaddleDetection/blob/develop/ppdet/engine/callbacks.py: setup_logger(__name__));
# the semi-supervised trainer's SemiLogPrinter and trainer.py keep `ppdet.engine`
_ENGINE = r"ppdet\.engine(?:\.callbacks)? INFO: "
_PPDET_CKPT = "https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/utils/checkpoint.py (save_model)"

ROWS: tuple[LineFormat, ...] = (
    # Paddle's hybrid-parallel topology, printed as fleet.init sets up a launch's groups (its start): with no
    # model, pipeline or sharding split the data-parallel degree is the world size (the ranks an epoch's
    # batches are split over: another degree, another steps per epoch)
    LineFormat(
        "paddle_hybrid_parallel_info",
        "PaddleDetection",
        ("init_begin", "world"),
        r"HybridParallelInfo: rank_id: \d+, mp_degree: 1, sharding_degree: 1, pp_degree: 1, dp_degree: (?P<world>\d+)",
        "HybridParallelInfo:",
        _PADDLE_TOPO,
    ),
    # the semi-supervised trainer (trainer_ssod.py) prefixes the run's finished iterations, `  51/65340 iters `,
    # before the same epoch and in-epoch counter
    LineFormat(
        "ppdet_step",
        "PaddleDetection",
        ("step",),
        _ENGINE + r"(?:\s*\d+/\d+ iters )?Epoch: \[(?P<epoch>\d+)\] \[\s*(?P<step>\d+)/(?P<total>\d+)\].*?"
        r"batch_cost: (?P<step_s>" + NUM + ")",
        "Epoch: [",
        _PPDET_LOG + "; " + _PPDET_SSOD_LOG,
        epoch_from=0,  # the iteration counts within the epoch, epochs from 0
    ),
    # the evaluation's first batch (its loop logs every 100th, from 0): where the pass starts, after the epoch's
    # end and its save, so a pass whose end line the log lacks (the semi-supervised trainer's student pass goes
    # from it to its save) is no save
    LineFormat(
        "ppdet_eval_begin",
        "PaddleDetection",
        ("eval_begin",),
        _ENGINE + r"Eval iter: 0$",
        "Eval iter: 0",
        _PPDET_EVAL_ITER,
    ),
    LineFormat(
        "ppdet_eval_end",
        "PaddleDetection",
        ("eval_end",),
        _ENGINE + r"Total sample number: \d+, average FPS: ",
        "Total sample number:",
        _PPDET_EVAL,
    ),
    # printed once the save is written (save_model: paddle.save of the .pdparams, then the .pdopt, then this
    # line): its end; a save a SIGTERM cut short prints none
    LineFormat(
        "ppdet_save",
        "PaddleDetection",
        ("save_end",),
        r"ppdet\.utils\.checkpoint INFO: Save checkpoint: \S+",
        "Save checkpoint:",
        _PPDET_CKPT + "; https://github.com/PaddlePaddle/PaddleDetection/blob/release/2.6/ppdet/engine/callbacks.py "
        "(Checkpointer.on_epoch_end)",
        at_epoch_end=True,
    ),
)
