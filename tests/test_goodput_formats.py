# ruff: noqa: E501  (example lines are kept whole, as the programs print them)
"""One example line per row of the goodput line-format table (written here in each program's format): the
row matches it and yields the mark kinds and numbers it declares, and no other row claims the line."""

from __future__ import annotations

import time

import pytest
from scope.analyzers.goodput.formats import CLOCKS, LINE_FORMATS, MARK_KINDS
from scope.analyzers.goodput.line_marks import parse_clock, scan_line

# row name -> (a line, the step it carries or None, seconds it carries (step_s or dur_s) or None)
EXAMPLES: dict[str, tuple[str, int | None, float | None]] = {
    # (modded-nanoGPT's train_time is cumulative: the row's field is the clock, made per-step in training_clock.py)
    "modded_nanogpt_step": ("step:12/1750 train_time:2811ms step_avg:234.25ms", 12, 2.811),
    "modded_nanogpt_val": ("step:125/1750 val_loss:4.2231 train_time:29003ms step_avg:232.02ms", 125, None),
    "modded_nanogpt_save": ("Saved checkpoint to runs/0611_gpt/state_step000500.pt", 500, None),
    "nanotron_iteration": (
        "03/02/2025 09:12:40 [INFO|DP=0|PP=0|TP=0]: iteration: 7 / 200 | consumed_tokens: 3.67M | "
        "elapsed_time_per_iteration_ms: 1.25K | tokens_per_sec: 2.94M | global_batch_size: 256 | lm_loss: 8.1",
        7,
        1.25,
    ),
    "nanotron_start_training": (
        "03/02/2025 09:12:30 [INFO|DP=0|PP=0|TP=0]: [Start training] datetime: 2025-03-02 09:12:30.1 | mbs: 4 | "
        "grad_accum: 8 | global_batch_size: 256 | sequence_length: 2048 | train_steps: 200 | "
        "start_iteration_step: 0 | consumed_train_samples: 0",
        0,
        None,
    ),
    "nanotron_save": ("03/02/2025 09:20:01 [WARNING|DP=0|PP=0|TP=0]: Saving checkpoint at /ckpt/run7/100", 100, None),
    "megatron_iteration": (
        " [2024-03-05 10:01:00] iteration       10/     100 | consumed samples:         5120 | elapsed time per "
        "iteration (ms): 1523.4 | learning rate: 1.000000E-04 | global batch size:   512 | lm loss: 7.1E+00 |",
        10,
        1.5234,
    ),
    "megatron_init_time": ("time to initialize megatron (seconds): 30.125", None, 30.125),
    "megatron_after_init": ("[after megatron is initialized] datetime: 2024-03-05 10:00:30 ", None, None),
    "megatron_setup_mark": ("[after dataloaders are built] datetime: 2024-03-05 10:00:45 ", None, None),
    "megatron_train_begin": ("[before the start of training step] datetime: 2024-03-05 10:00:50 ", None, None),
    "megatron_train_end": ("[after training is done] datetime: 2024-03-05 10:07:20 ", None, None),
    "megatron_save_begin": ("saving checkpoint at iteration      20 to /ckpt in torch_dist format", 20, None),
    "megatron_save_end": ("  successfully saved checkpoint from iteration      20 to /ckpt [ t 1/8, p 1/1 ]", 20, None),
    "megatron_load_begin": (" loading checkpoint from /ckpt at iteration 20", 20, None),
    "megatron_load_end": ("  successfully loaded checkpoint from /ckpt [ t 1/8, p 1/1 ] at iteration 20", 20, None),
    "megatron_save_timer": ("    save-checkpoint ................................: (19950.12, 20000.00)", None, 20.0),
    "megatron_old_save_timer": (
        "time (ms) | forward-compute: 120.11 | backward-compute: 240.52 | save-checkpoint: 18402.77",
        None,
        18.40277,
    ),
    "megatron_data_timer": ("    batch-generator ................................: (1.82, 250.44)", None, 0.25044),
    "megatron_load_timer": ("    load-checkpoint ................................: (9950.00, 10000.00)", None, 10.0),
    "megatron_eval_begin": ("Evaluating iter 1/10", None, None),
    "megatron_eval_end": (
        " validation loss at iteration 1000 | lm loss value: 3.2E+00 | lm loss PPL: 2.4E+01 |",
        1000,
        None,
    ),
    "dschat_eval_begin": ("***** Evaluating perplexity, Epoch 0/5 *****", None, None),
    "dschat_final_save": ("saving the final model ...", None, None),
    "deepspeed_engine_ready": (
        "[2025-01-02 15:46:55,967] [INFO] [logging.py:128:log_dist] [Rank 0] step=0, skipped=0, lr=[5e-05, 5e-05], mom=[(0.9, 0.95), (0.9, 0.95)]",
        None,
        None,
    ),
    "deepspeed_step": (
        "[2024-01-02 03:04:05,678] [INFO] [logging.py:96:log_dist] [Rank 0] step=40, skipped=0, lr=[1e-4]",
        40,
        None,
    ),
    "deepspeed_throughput": ("steps: 40 loss: 2.1345 iter time (s): 0.812 samples/sec: 39.4", 40, 0.812),
    # https://github.com/deepspeedai/DeepSpeed/issues/5779 (DeepSpeed >= 0.8: a rate in samples, no step time)
    "deepspeed_tput_global_step": (
        "[2024-07-17 19:53:24,981] [INFO] [timer.py:258:stop] epoch=0/micro_step=4500/global_step=4500, RunningAvgSamplesPerSec=16.124955167964504, CurrSamplesPerSec=16.807402094161112, MemAllocated=0.02GB, MaxMemAllocated=0.97GB",
        4500,
        None,
    ),
    # https://github.com/deepspeedai/DeepSpeed/issues/2629 (DeepSpeed 0.7.7)
    "deepspeed_tput_local_step": (
        "stdout: [2022-12-20 08:26:26,101] [INFO] [timer.py:197:stop] 0/17, RunningAvgSamplesPerSec=158.31157878546472, CurrSamplesPerSec=159.628891629629, MemAllocated=1.75GB, MaxMemAllocated=2.6GB",
        17,
        None,
    ),
    "deepspeed_config_batch": (
        "[2022-12-20 08:26:20,000] [INFO] [config.py:1021:print]   train_batch_size ............. 32",
        None,
        None,
    ),
    "deepspeed_save_begin": ("[Rank 0] [Torch] Checkpoint global_step40 is about to be saved!", 40, None),
    "deepspeed_save_file": ("[Torch] Saved ./ckpt/global_step40/mp_rank_00_model_states.pt.", 40, None),
    "deepspeed_load_file": (
        "[Torch] Loading checkpoint from ./ckpt/global_step40/mp_rank_00_model_states.pt...",
        40,
        None,
    ),
    "fairseq_train_inner": (
        "2024-01-01 00:01:00 | INFO | train_inner | epoch 001:    100 / 512 loss=9.1, ppl=549.3, wps=12000, "
        "ups=2.1, wpb=5700, bsz=180, num_updates=100, lr=1e-4, gnorm=1.2, train_wall=47, wall=48",
        100,
        None,
    ),
    "fairseq_train_epoch": (
        "2024-01-01 00:05:00 | INFO | train | epoch 001 | loss 8.7 | ppl 416 | num_updates 512 | lr 1e-4",
        512,
        None,
    ),
    "fairseq_tqdm_bar": (
        "epoch 001:   3%|▎         | 21/782 [00:06<03:07,  4.05it/s, loss=14.38, nll_loss=14.2, ppl=21302.1, wps=9120, ups=3.2, wpb=2850, bsz=110, num_updates=20, lr=2.5e-06, gnorm=3.1, train_wall=6, wall=7]",
        20,
        None,
    ),
    "fairseq09_progress": (
        "| epoch 001:    100 / 1234 loss=9.106, nll_loss=9.01, ppl=515.6, wps=12044, ups=2, wpb=5712.1, bsz=180.3, num_updates=100, lr=1.25e-05, gnorm=1.6, clip=0.000, oom=0.000, wall=51, train_wall=47",
        100,
        None,
    ),
    "fairseq09_eval_end": (
        "| epoch 001 | valid on 'valid' subset | loss 8.502 | nll_loss 8.3 | ppl 315.2 | num_updates 1234",
        1234,
        None,
    ),
    "fairseq_json_progress": (
        '2021-03-01 10:00:00 | INFO | train_inner | {"epoch": 1, "update": 0.25, "loss": "9.1", "ppl": "549.3", "num_updates": "100", "lr": "0.0001", "wall": "48"}',
        100,
        None,
    ),
    "fairseq_epoch_begin": ("2024-01-01 00:00:10 | INFO | fairseq.trainer | begin training epoch 1", None, None),
    "fairseq_eval_begin": (
        '2024-01-01 00:05:00 | INFO | fairseq_cli.train | begin validation on "valid" subset',
        None,
        None,
    ),
    "fairseq_eval_end": (
        "2024-01-01 00:05:05 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 8.5 | num_updates 512",
        512,
        None,
    ),
    "fairseq_save_begin": ("2024-01-01 00:05:05 | INFO | fairseq_cli.train | begin save checkpoint", None, None),
    "fairseq_save_end": (
        "2024-01-01 00:05:15 | INFO | fairseq.checkpoint_utils | Saved checkpoint ckpt/checkpoint1.pt (epoch 1 @ 512 "
        "updates, score 8.5) (writing took 9.87 seconds)",
        512,
        9.87,
    ),
    "fairseq_load_begin": (
        "2024-01-01 00:00:05 | INFO | fairseq.trainer | Preparing to load checkpoint ckpt/checkpoint_last.pt",
        None,
        None,
    ),
    "fairseq_load_end": (
        "2024-01-01 00:00:08 | INFO | fairseq.trainer | Loaded checkpoint ckpt/checkpoint_last.pt (epoch 3 @ 1536 updates)",
        1536,
        None,
    ),
    "fairseq_init": (
        "2024-01-01 00:00:00 | INFO | fairseq.distributed.utils | distributed init (rank 0): env://",
        None,
        None,
    ),
    "fairseq_done": ("2024-01-01 01:00:00 | INFO | fairseq_cli.train | done training in 3590.1 seconds", None, 3590.1),
    "lightning_train_bar": (
        "Epoch 2:  40%|████      | 40/100 [00:20<00:30,  2.00it/s, v_num=1, train_loss=0.5]",
        240,
        None,
    ),
    "nemo_step_timing": (
        "Epoch 0: :   1%|  | 5/500 [00:14<23:10, reduced_train_loss=6.5, train_step_timing in s=2.710]",
        None,
        2.71,
    ),
    "lightning_rich_train_bar": (
        "Epoch 3/9  ━━━━━━━━━╸━━━━━━━━━━━━━━━━━ 120/500 0:00:41 • 0:02:10 2.90it/s v_num: 0 train_loss: 1.23",
        1620,
        1 / 2.90,
    ),
    "lightning_rich_val_bar": ("Validation ━━━━━━━━━━━━━━╸━━━━━━━━━━━━ 12/25 0:00:03 • 0:00:04 3.95it/s", None, None),
    "lightning_val_bar": ("Validation DataLoader 0:  40%|████      | 4/10 [00:01<00:01,  3.10it/s]", None, None),
    "lightning_ckpt_best": (
        "Epoch 1, global step 200: 'val_loss' reached 1.05000 (best 1.05000), saving model to '/ckpt/e1.ckpt' as top 1",
        200,
        None,
    ),
    "lightning_ckpt_not_top": ("Epoch 2, global step 300: 'val_loss' was not in top 1", 300, None),
    "lightning_restore_begin": ("Restoring states from the checkpoint path at /ckpt/epoch=0-step=100.ckpt", 100, None),
    "lightning_restore_end": ("Restored all states from the checkpoint at /ckpt/epoch=0-step=100.ckpt", 100, None),
    "lightning_fit_limit": ("`Trainer.fit` stopped: `max_steps=1000` reached.", None, None),
    "lightning_fit_end": ("`Trainer.fit` stopped: `trainer.should_stop` was set.", None, None),
    "lerobot_step": (
        "INFO 2026-06-12 11:04:21 ot_train.py:357 step:2K smpl:51K ep:162 epch:4.05 loss:0.715 grdn:28.278 "
        "lr:1.0e-05 updt_s:0.499 data_s:0.084",
        2000,
        None,
    ),
    "lerobot_save": ("INFO 2026-06-12 11:35:18 ot_train.py:367 Checkpoint policy after step 5000", 5000, None),
    "lerobot_end": ("INFO 2026-06-12 18:27:59 ot_train.py:438 End of training", None, None),
    "fairseq_hydra_json_progress": (
        '[2022-04-08 18:48:05,372][train_inner][INFO] - {"epoch": 1, "update": 0.416, "loss": "9.276", '
        '"num_updates": "200", "lr": "3.125e-06", "wall": "425"}',
        200,
        None,
    ),
    "d2_setup": ("[08/30 23:00:05] detectron2 INFO: Rank of current process: 0. World size: 1", None, None),
    "d2_train_begin": ("[08/30 23:00:26] d2.engine.train_loop INFO: Starting training from iteration 0", None, None),
    "d2_eval_begin": ("[08/30 23:15:00] d2.evaluation.evaluator INFO: Start inference on 6 batches", None, None),
    "d2_eval_end": (
        "[08/30 23:15:03] d2.evaluation.evaluator INFO: Total inference time: 0:00:00.390778 (0.390778 s / iter "
        "per device, on 1 devices)",
        None,
        None,
    ),
    # print_csv_format's result lines (the last line of an evaluation, after COCOeval)
    "d2_eval_result": (
        "[04/12 17:28:11] d2.evaluation.testing INFO: copypaste: 6.2236,17.1123,2.6713,1.9080,8.4628,10.0626",
        None,
        None,
    ),
    # the config dump's line (https://github.com/BUAAZhangHaonan/mgm_mask2former/blob/
    # 747ef0209b5d17003208d61fce185fcd0bf267d4/output/log.txt line 2256, under `SOLVER:`)
    "d2_max_iter_plan": ("  MAX_ITER: 10000", None, None),
    "d2_save": (
        "[08/30 23:15:00] fvcore.common.checkpoint INFO: Saving checkpoint to ./output/model_final.pth",
        None,
        None,
    ),
    # https://github.com/intflow/PaddleDetection_oad/blob/e2b4c2494f4a15ec441ce621fab9ac068492de15/log/workerlog.0
    "paddle_hybrid_parallel_info": (
        "[2023-05-12 10:00:00,000] [    INFO] topology.py:215 - HybridParallelInfo: rank_id: 0, mp_degree: 1, "
        "sharding_degree: 1, pp_degree: 1, dp_degree: 2, mp_group: [0],  sharding_group: [0], pp_group: [0], "
        "dp_group: [0, 1], check/clip group: [0]",
        None,
        None,
    ),
    "ppdet_step": (
        "[05/12 10:28:02] ppdet.engine INFO: Epoch: [0] [200/660] learning_rate: 0.000010 loss: 23.6 eta: "
        "1 day, 2:07:40 batch_cost: 0.7212 data_cost: 0.0004 ips: 2.7733 images/s",
        200,
        0.7212,
    ),
    "ppdet_eval_begin": ("[05/12 10:33:36] ppdet.engine INFO: Eval iter: 0", None, None),
    "ppdet_eval_end": (
        "[05/12 10:34:06] ppdet.engine INFO: Total sample number: 733, average FPS: 35.702378255745735",
        None,
        None,
    ),
    "ppdet_save": (
        "[05/12 10:33:35] ppdet.utils.checkpoint INFO: Save checkpoint: output/rtdetr_r50vd_6x_oad_kpts",
        None,
        None,
    ),
    "paddlevideo_val_step": (
        "[12/28 17:31:32] epoch:[ 80/80 ] val step:0    loss: 0.20538 top1: 0.88281 top5: 0.99219 elapse: 1.589",
        None,
        None,
    ),
    "paddlevideo_val_end": ("[12/28 17:31:38] END epoch:80  val loss_avg: 0.52208 top1_avg: 0.84398", None, None),
    "paddlevideo_train_end": ("[10/05 20:55:41] training AGCN finished", None, None),
    "paddlevideo_test_end": ("[10/05 20:59:49] [TEST] finished, avg_acc1= 0.86, avg_acc5= 0.97", None, None),
    "paddlevideo_results_saved": ("[10/05 20:59:49] Results saved in submission.csv !", None, None),
    "colossalai_dreambooth_step": (
        "                    INFO     colossalai - colossalai - INFO: max GPU_mem cost is 3812.8251953125 MB   ",
        None,
        None,
    ),
    "colossalai_plan": (
        "                    INFO     colossalai - colossalai - INFO:   Total optimization steps = 1000        ",
        None,
        None,
    ),
    "colossalai_save": (
        "                    INFO     colossalai - colossalai - INFO: Saving model checkpoint to               ",
        None,
        None,
    ),
    "nemo2_progress": (
        "Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106",
        121,  # global_step counts the steps before this one: 121 samples of 1 consumed
        0.03146,
    ),
    "nemo2_eval_begin": ("Validation: iteration 1/10", None, None),
    "nemo2_ckpt_saved": (
        "[NeMo I 2025-04-11 14:48:45 nemo_logging:393] Global Checkpoint Save : Rank: 0 : Iteration: 50 : Start time: 1744408121.151s : Save duration: 4.389s",
        50,
        4.389,
    ),
    "nemo_save_begin": (
        "[NeMo I 2024-08-01 05:47:24 dist_ckpt_io:95] Using ('zarr', 1) dist-ckpt save strategy.",
        None,
        None,
    ),
    "nemo2_async_scheduled": (
        "[NeMo I 2025-05-22 20:08:53 model_checkpoint:497] Scheduled async checkpoint save for /ckpt/m-step=18-last.ckpt",
        None,
        None,
    ),
    "async_save_final_flush": (
        "[NeMo I 2025-05-15 23:42:47 nemo_logging:393] Pending async checkpoint saves. Finalizing them synchronously now",
        None,
        None,
    ),
    "nemo_move_old": (
        "[NeMo I 2024-08-01 05:47:24 nemo_model_checkpoint:299] /r/m.nemo already exists, moving existing checkpoint to /r/m-v1.nemo",
        None,
        None,
    ),
    "nemo_save_end": (
        "[NeMo I 2024-08-01 05:48:15 nemo_model_checkpoint:226] New .nemo model saved to: /r/m.nemo",
        None,
        None,
    ),
    "nemo_remove_backup": (
        "[NeMo I 2024-08-01 05:48:15 nemo_model_checkpoint:228] Removing old .nemo backup /r/m-v1.nemo",
        None,
        None,
    ),
    "nemo_resume": (
        "[NeMo I 2024-08-01 05:00:00 exp_manager:396] Resuming training from checkpoint: /r/step=100.ckpt",
        100,
        None,
    ),
    "hf_train_bar": (" 33%|███▎      | 100/300 [01:40<03:20,  1.00s/it]", 100, None),
    "tqdm_train_bar": ("Training:  45%|████▌     | 90/200 [01:02<01:15,  1.45it/s, loss=2.31]", 90, 1 / 1.45),
    "hf_log_line": (
        "{'loss': 0.3818, 'grad_norm': 0.1455, 'learning_rate': 0.0, 'epoch': 1.0, 'step': 10000}",
        10000,
        None,
    ),
    "hf_train_summary": (
        "{'train_runtime': 116.1914, 'train_samples_per_second': 6.885, 'train_steps_per_second': 1.721, 'train_loss': 2.8197, 'epoch': 0.15}",
        None,
        116.1914,
    ),
    "hf_train_output": (
        "TrainOutput(global_step=200, training_loss=2.8197, metrics={'train_runtime': 116.1914})",
        200,
        None,
    ),
    "nanogpt_iter": ("iter 1640: loss 3.6782, time 562.18ms, mfu 31.20%", 1640, 0.56218),
    "nanogpt_eval": ("step 3000: train loss 4.0390, val loss 4.0427", 3000, None),
    "nanogpt_save": ("saving checkpoint to out-shakespeare-char", None, None),
    # mmcv 1.4 / mmdet 2.18 (yvr1037/fenghuo-project-of-mmdet mm.md, a real run's log): epochs count from 1
    "mmcv_epoch_iter": (
        "2021-12-21 21:56:39,033 - mmdet - INFO - Epoch [2][50/930]      lr: 2.000e-02, eta: 0:41:46, time: 0.296, data_time: 0.052, memory: 3050, loss_rpn_cls: 0.0272",
        980,
        0.296,
    ),
    "mmcv_iter": (
        "2022-05-01 10:00:00,000 - mmseg - INFO - Iter [50/80000]\tlr: 9.997e-03, eta: 8:01:12, time: 0.361, data_time: 0.012, memory: 7021, loss: 2.10",
        50,
        0.361,
    ),
    "mmcv_plan": ("2021-12-21 21:51:15,623 - mmdet - INFO - workflow: [('train', 1)], max: 12 epochs", None, None),
    "blendcorpus_plan": ("   [INFO][2025-09-11 14:09:18.390498] Training iterations: 1000", None, None),
    "torchtune_bar": (
        "[trainer0|0]:1|27|Loss: 1.1958776712417603:  28%|██▊       | 28/101 [07:20<19:16, 15.84s/it]",
        28,
        15.84,
    ),
    "mmcv_save_begin": ("2021-12-21 21:55:09,711 - mmdet - INFO - Saving checkpoint at 1 epochs", None, None),
    "mmengine_best_removed": (
        "2024/11/08 09:22:24 - mmengine - INFO - The previous best checkpoint /w/best_acc_top1_epoch_1.pth is removed",
        None,
        None,
    ),
    "mmengine_best_saved": (
        "2024/11/08 09:22:25 - mmengine - INFO - The best checkpoint with 0.8776 acc/top1 at 2 epoch is saved to "
        "best_acc_top1_epoch_2.pth.",
        None,
        None,
    ),
    "mmcv_eval_bar": (
        "[>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>] 764/764, 10.9 task/s, elapsed: 70s, ETA:     0s",
        None,
        70.0,
    ),
    "mmcv_eval_end": (
        "2021-12-21 21:56:24,156 - mmdet - INFO - Epoch(val) [1][764]\tbbox_mAP: 0.0110, bbox_mAP_50: 0.0170, segm_mAP: 0.0110",
        None,
        None,
    ),
    # MMEngine 0.x (open-mmlab/mmdetection issues' posted logs): the validation loop's progress, then its metrics
    "mmengine_val_progress": (
        "2023/03/01 10:12:00 - mmengine - INFO - Epoch(val)  [1][ 50/625]    eta: 0:00:41  time: 0.0703  data_time: 0.0016  memory: 1166",
        None,
        None,
    ),
    "wandb_finish_success": ("wandb: Waiting for W&B process to finish... (success).", None, None),
    # torchrun's agent killed by SIGTERM (AntonioLopardo/OLMo training.log: the run's last lines)
    "torchrun_sigterm": (
        "W1212 12:11:26.083000 9724 torch/distributed/elastic/agent/server/api.py:725] Received 15 death signal, shutting down workers",
        None,
        None,
    ),
    # AI2 OLMo (AntonioLopardo/OLMo training.log, a real 8-GPU run): tab-separated, metrics on indented lines
    "olmo_step": (
        "2025-12-12 11:05:02.009\tquick-rain-shines-fin-03:0\tolmo.train:979\tINFO\t[step=1/15000,epoch=0]",
        1,
        None,
    ),
    "olmo_train_begin": (
        "2025-12-12 11:04:38.501\tquick-rain-shines-fin-03:0\ttrain:335\tINFO\tStarting training...",
        None,
        None,
    ),
    "olmo_save_begin": (
        "2025-12-12 11:37:18.641\tquick-rain-shines-fin-03:0\tolmo.train:1304\tINFO\tSaving unsharded checkpoint...",
        None,
        None,
    ),
    "olmo_save_end": (
        "2025-12-12 11:37:55.024\tquick-rain-shines-fin-03:0\tolmo.train:1306\tINFO\tUnsharded checkpoint saved to /ckpt/step500-unsharded",
        500,
        None,
    ),
    "olmo_load_begin": (
        "2025-12-12 11:03:43.396\tquick-rain-shines-fin-03:0\ttrain:300\tINFO\tLoading checkpoint from /ckpt/latest-unsharded...",
        None,
        None,
    ),
    "olmo_load_end": (
        "2025-12-12 11:04:38.501\tquick-rain-shines-fin-03:0\ttrain:310\tINFO\tCheckpoint successfully loaded",
        None,
        None,
    ),
    # scepter (modelscope/scepter#48, "Training details"): the batch time, then its mean in brackets
    "scepter_iter": (
        "scepter [INFO] 2024-10-06 20:20:18,492 [File: log.py Function: _print_iter_log at line 71]  Stage [train] iter: [60/500], data_time: 0.2386(0.3800), time: 0.5300(0.6889), loss: 0.1802(0.1262), [1mins 2secs 12.00%(7mins 38secs)]",
        60,
        0.53,
    ),
    # wordplay (kharelb/ai-science-training-series homework_6.md, a real Polaris run): dt is milliseconds
    "wordplay_step": (
        "[2024-04-02 01:59:46][INFO][trainer:837] - step=10 loss=3.2386 dt=85.2848 dtf=4.6529 dtb=77.9241 sps=93.8033 mtps=1.5369 mfu=4.3692 train_loss=4.2922 val_loss=4.2905",
        10,
        0.0852848,
    ),
    "hf_total_batch": ("  Total train batch size (w. parallel, distributed & accumulation) = 1,024", None, None),
    "hf_train_begin": ("03/01/2024 12:00:30 - INFO - transformers.trainer - ***** Running training *****", None, None),
    "hf_eval_begin": ("03/01/2024 12:10:00 - INFO - transformers.trainer - ***** Running Evaluation *****", None, None),
    # the lightning-hydra-template's job log (Hydra's `[%(asctime)s][%(name)s][%(levelname)s] - %(message)s`,
    # RankedLogger's `[rank: N]` prefix since v2.0; earlier versions print none)
    "lht_extras_missing": (
        "[2024-05-02 08:00:01,002][src.utils.utils][WARNING] - Extras config not found! <cfg.extras=null>",
        None,
        None,
    ),
    "lht_ignore_warnings": (
        "[2024-05-02 08:00:01,003][src.utils.utils][INFO] - [rank: 0] Disabling python warnings! <cfg.extras.ignore_warnings=True>",
        None,
        None,
    ),
    "lht_enforce_tags": (
        "[2024-05-02 08:00:01,004][src.utils.utils][INFO] - [rank: 0] Enforcing tags! <cfg.extras.enforce_tags=True>",
        None,
        None,
    ),
    "lht_print_config": (
        "[2024-05-02 08:00:01,005][src.utils.utils][INFO] - [rank: 0] Printing config tree with Rich! <cfg.extras.print_config=True>",
        None,
        None,
    ),
    "lht_datamodule": (
        "[2024-05-02 08:00:02,100][__main__][INFO] - [rank: 0] Instantiating datamodule <src.data.mnist_datamodule.MNISTDataModule>",
        None,
        None,
    ),
    "lht_setup": (
        "[2024-05-02 08:00:02,400][__main__][INFO] - [rank: 1] Instantiating trainer <lightning.pytorch.trainer.Trainer>",
        None,
        None,
    ),
    "lht_train_begin": ("[2024-05-02 08:00:03,000][__main__][INFO] - [rank: 0] Starting training!", None, None),
    "lht_test_begin": ("[2024-05-02 09:00:03,000][__main__][INFO] - Starting testing!", None, None),
    "lht_test_end": (
        "[2024-05-02 09:01:03,000][__main__][INFO] - [rank: 0] Best ckpt path: logs/train/runs/2024-05-02_08-00-00/checkpoints/epoch_009.ckpt",
        None,
        None,
    ),
    "lht_output_dir": (
        "[2024-05-02 09:01:04,000][src.utils.utils][INFO] - [rank: 0] Output dir: logs/train/runs/2024-05-02_08-00-00",
        None,
        None,
    ),
    "hf_eval_end": ("{'eval_loss': 1.91, 'eval_runtime': 12.1, 'epoch': 1.0}", None, None),
    "hf_eval_metrics": ("***** eval metrics *****", None, None),
    "hf_save_begin": (
        "03/01/2024 12:02:10 - INFO - transformers.trainer - Saving model checkpoint to out/checkpoint-100",
        100,
        None,
    ),
    "hf_save_file": (
        "03/01/2024 12:02:30 - INFO - transformers.modeling_utils - Model weights saved in out/checkpoint-100/model.safetensors",
        100,
        None,
    ),
    "hf_load_begin": (
        "03/01/2024 12:00:20 - INFO - transformers.trainer - Loading model from out/checkpoint-100.",
        100,
        None,
    ),
    "hf_resume": (
        "03/01/2024 12:00:25 - INFO - transformers.trainer -   Continuing training from global step 100",
        100,
        None,
    ),
    "hf_train_end": ("Training completed. Do not forget to share your model on huggingface.co/models =)", None, None),
    "accelerate_save_begin": (
        "03/01/2024 12:02:10 - INFO - accelerate.accelerator - Saving current state to out/step_100",
        100,
        None,
    ),
    "accelerate_save_file": (
        "03/01/2024 12:02:11 - INFO - accelerate.checkpointing - Optimizer state saved in out/step_100/optimizer.bin",
        100,
        None,
    ),
    "accelerate_load_begin": (
        "03/01/2024 12:00:10 - INFO - accelerate.accelerator - Loading states from out/step_100",
        100,
        None,
    ),
    "accelerate_load_end": (
        "03/01/2024 12:00:12 - INFO - accelerate.checkpointing - All model weights loaded successfully",
        None,
        None,
    ),
    "torchtitan_step": (
        "[titan] 2025-03-01 10:00:50,000 - root - INFO - step:  1  loss:  8.1234  memory:  1.20GiB(1.52%)  tps: 1,638",
        1,
        None,
    ),
    "torchtitan_train_begin": (
        "[titan] 2025-03-01 10:07:15,000 - root - INFO - Training starts at step 21, with local batch size 8",
        20,
        None,
    ),
    "torchtitan_save_begin": (
        "[titan] 2025-03-01 10:02:20,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).",
        None,
        None,
    ),
    "torchtitan_save_end": (
        "[titan] 2025-03-01 10:02:50,000 - root - INFO - Finished saving the checkpoint (or staging if async is enabled)in 30.00 seconds.",
        None,
        30.0,
    ),
    "torchtitan_load_begin": (
        "[titan] 2025-03-01 10:06:55,000 - root - INFO - Loading the checkpoint from ./outputs/checkpoint/step-20.",
        20,
        None,
    ),
    "torchtitan_load_end": (
        "[titan] 2025-03-01 10:07:10,000 - root - INFO - Finished loading the checkpoint in 15.00 seconds.",
        None,
        15.0,
    ),
    "torchtitan_done": ("[titan] 2025-03-01 11:00:00,000 - root - INFO - Training completed", None, None),
    "torchrun_omp_banner": (
        "W0511 05:45:09.282000 1861510 torch/distributed/run.py:803] Setting OMP_NUM_THREADS environment variable for"
        " each process to be 1 in default, to avoid your system being overloaded",
        None,
        None,
    ),
    "paddle_nccl_init": (
        "I0804 09:15:02.118200 40211 nccl_context.cc:83] init nccl context nranks: 4 local rank: 0 gpu id: 0 ring id: 0",
        None,
        None,
    ),
    "paddle_device_note": (
        "W0519 13:59:30.552155  1264 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 7.0,"
        " Driver API Version: 10.1, Runtime API Version: 10.1",
        None,
        None,
    ),
    "lsf_started": ("Started at Thu Nov 30 13:23:37 2023", None, None),
    "lsf_done": ("Successfully completed.", None, None),
    "lsf_run_time": ("    Run time :                                   159 sec.", None, 159.0),
    "lsf_turnaround": ("    Turnaround time :                            6698 sec.", None, 6698.0),
    "lsf_exited": ("Exited with exit code 1.", None, None),
    "lsf_term_stop": ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", None, None),
    "lsf_term_failure": ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", None, None),
    "torchtitan_start": (
        "[titan] 2025-03-01 10:00:00,000 - root - INFO - Starting job: Llama 3 8B training",
        None,
        None,
    ),
    "torchrun_restart": (
        "I0301 10:06:15.000000 4021 torch/distributed/elastic/agent/server/api.py:720] [default] Worker group FAILED. "
        "2/3 attempts left; will restart worker group",
        None,
        None,
    ),
    "torchrun_rendezvous": (
        "I0301 10:06:20.000000 4021 torch/distributed/elastic/agent/server/api.py:688] [default] Rendezvous'ing worker group",
        None,
        None,
    ),
    "torchrun_new_nodes": (
        "I0301 10:02:35.000000 4021 torch/distributed/elastic/agent/server/api.py:963] [default] Detected 1 new nodes from group_rank=0; will restart worker group",
        None,
        None,
    ),
    "torchrun_world_sizes": ("  global_world_sizes=[8, 8, 8, 8]", None, None),
    "torchrun_group_world_size": ("  group_world_size=2", None, None),
    "torchrun_rdzv_joined": (
        "I0301 10:02:45.000000 4021 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1187] The node 'node0_4021' has joined round 2 of the rendezvous 'job7' as rank 0 in a world of size 2.",
        None,
        None,
    ),
    "torchrun_child_failed": (
        "E0301 10:06:15.000000 4021 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 4028) of binary: /usr/bin/python3",
        None,
        None,
    ),
    "torchrun_done": (
        "I0301 11:00:00.000000 4021 torch/distributed/elastic/agent/server/api.py:870] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.",
        None,
        None,
    ),
    "torchrun_group_succeeded": (
        "[2024-03-12 08:22:56,574] torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
        None,
        None,
    ),
    "slurm_node_failure": (
        "slurmstepd: error: *** JOB 91823 ON gpu-a-017 CANCELLED AT 2025-12-01T12:32:00 DUE TO NODE FAILURE, REQUEUED ***",
        None,
        None,
    ),
    "slurm_cancelled": (
        "slurmstepd: error: *** JOB 4242 ON node001 CANCELLED AT 2024-03-05T10:01:55 DUE TO PREEMPTION ***",
        None,
        None,
    ),
    "srun_task_exit": ("srun: error: node003: task 12: Exited with exit code 1", None, None),
    "shell_job_killed": (
        "/root/phase6/launch_8gpu_mm.sh: line 258: 1922528 Killed                  torchrun --nproc_per_node=8",
        None,
        None,
    ),
    "slurm_requeue": ("SLURM_RESTART_COUNT=2", None, None),
    "lightning_slurm_requeue": ("Requeued SLURM job: 4714782", None, None),
    "lightning_sigterm": ("[rank: 3] Received SIGTERM: 15", None, None),
    "hf_plan_steps": ("[INFO|2024-11-26 22:07:15] trainer.py:2321 >>   Total optimization steps = 17,000", None, None),
    "mrb_gpus": ("2019-07-23 05:50:30,136 maskrcnn_benchmark INFO: Using 4 GPUs", None, None),
    "mrb_train_begin": ("2019-07-23 05:50:36,786 maskrcnn_benchmark.trainer INFO: Start training", None, None),
    "mrb_step": (
        "2019-07-23 05:50:58,729 maskrcnn_benchmark.trainer INFO: eta: 9:08:10  iter: 40  loss: 5.4732 (38.3228)  loss_mask: 3.7554 (35.4924)  time: 0.5907 (0.5485)  data: 0.0386 (0.0524)  lr: 0.000039  max mem: 2346",
        40,
        0.5907,
    ),
    "mrb_save": (
        "2019-07-23 06:01:46,388 maskrcnn_benchmark.utils.checkpoint INFO: Saving checkpoint to ./outputs/model_0001000.pth",
        1000,
        None,
    ),
    "mrb_train_end": (
        "2019-07-23 18:48:58,664 maskrcnn_benchmark.trainer INFO: Total training time: 12:58:21.876430 (0.7784 s / it)",
        None,
        None,
    ),
    "mrb_eval_begin": (
        "2019-07-23 18:48:58,910 maskrcnn_benchmark.inference INFO: Start evaluation on coco_2014_minival dataset(5000 images).",
        None,
        None,
    ),
    "yolox_args": (
        "2022-03-01 09:00:00.100 | INFO     | yolox.core.trainer:before_train:129 - args: Namespace(batch_size=16, devices=2, exp_file='exps/yolox_s.py')",
        None,
        None,
    ),
    "yolox_train_begin": (
        "2022-03-01 09:00:09.000 | INFO     | yolox.core.trainer:before_train:183 - Training start...",
        None,
        None,
    ),
    "yolox_epoch_begin": (
        "2022-03-01 09:00:09.010 | INFO     | yolox.core.trainer:before_epoch:191 - ---> start train epoch2",
        None,
        None,
    ),
    "yolox_step": (
        "2022-03-01 09:05:21.929 | INFO     | yolox.core.trainer:after_iter:240 - epoch: 2/300, iter: 10/518, mem: 9272Mb, iter_time: 0.634s, data_time: 0.002s, total_loss: 6.0, iou_loss: 2.0, l1_loss: 0.0, conf_loss: 2.9, cls_loss: 1.1, lr: 1.000e-02, size: 640, ETA: 1 day, 2:03:04",
        528,
        0.634,
    ),
    "hf_load_best": (
        "[INFO|trainer.py:2641] 2024-05-02 11:20:31,052 >> Loading best model from ./out/checkpoint-200 (score: 0.4127).",
        None,
        None,
    ),
    "hf_data_exhausted": (
        "There seems not to be a single sample in your epoch_iterator, stopping training at step 300! This is expected if you're using an IterableDataset and set num_steps (1000) higher than the number of available samples.",
        300,
        None,
    ),
    "yolox_plan": (
        "2022-03-01 09:05:21.929 | INFO     | yolox.core.trainer:after_iter:240 - epoch: 2/300, iter: 10/518, mem: 9272Mb, iter_time: 0.634s, data_time: 0.002s, total_loss: 6.0, lr: 1.000e-02, size: 640, ETA: 1 day, 2:03:04",
        None,
        None,
    ),
    "yolox_eval_summary": (
        "Average forward time: 9.60 ms, Average NMS time: 3.07 ms, Average inference time: 12.67 ms",
        None,
        None,
    ),
    "yolox_save": (
        "2022-03-01 09:05:15.316 | INFO     | yolox.core.trainer:save_ckpt:310 - Save weights to ./YOLOX_outputs/yolox_s",
        None,
        None,
    ),
    "yolox_eval_end": (
        "2022-03-01 09:09:44.243 | INFO     | yolox.core.trainer:evaluate_and_save_model:301 - ",
        None,
        None,
    ),
    "yolox_train_end": (
        "2022-03-01 19:41:06.205 | INFO     | yolox.core.trainer:after_train:186 - Training of experiment is done and the best AP is 41.20",
        None,
        None,
    ),
    "yolox_worker_error": (
        "2022-03-01 10:33:40.635 | ERROR    | yolox.core.launch:_distributed_worker:150 - An error has been caught in function '_distributed_worker', process 'SpawnProcess-1' (9120), thread 'MainThread' (1400):",
        None,
        None,
    ),
    "paddle_launch_abort": (
        "ABORT!!! Out of all 4 trainers, the trainer process with rank=[2] was aborted. Please check its log.",
        None,
        None,
    ),
    "paddle_sigterm": (
        "  [SignalInfo: *** SIGTERM (@0x3e8) received by PID 2201 (TID 0x7f3a11ffe700) from PID 2100 ***]",
        None,
        None,
    ),
    "k8s_backoff": (
        "  Warning  BackOff  2m (x5 over 10m)  kubelet  Back-off restarting failed container trainer in pod job-worker-0",
        None,
        None,
    ),
    "k8s_oomkilled": ("      Reason:       OOMKilled", None, None),
    "python_traceback": ("Traceback (most recent call last):", None, None),
    "python_keyboard_interrupt": ("KeyboardInterrupt", None, None),
    "tty_ctrl_c": ("  ^C", None, None),
    "config_epochs_plan": ("  EPOCHS: 30", None, None),
    "config_epochs_plan_lower": ("  num_train_epochs: 3", None, None),
    "training_time_total": (
        ">     [2023-01-11 13:28:26,589][mlprof.trainers.pytorch.trainer][INFO] - [0] :: Total training time: 13.143308877944946 seconds",
        None,
        None,
    ),
    "llamafactory_jsonl": (
        '{"current_steps": 10, "total_steps": 6566, "loss": 0.8548, "lr": 9.999953642250429e-06, "epoch": 0.010666666666666666, "percentage": 0.15, "elapsed_time": "0:02:12", "remaining_time": "1 day, 0:08:23"}',
        10,
        None,
    ),
    "llamafactory_jsonl_end": (
        '{"current_steps": 6565, "total_steps": 6566, "epoch": 7.0, "percentage": 99.98, "elapsed_time": "6:36:26", "remaining_time": "0:00:03"}',
        6565,
        None,
    ),
    # an evaluation's record (LogCallback.on_log with evaluate()'s metrics): its own row, no step record
    "llamafactory_jsonl_eval": (
        '{"current_steps": 500, "total_steps": 6750, "eval_loss": 1.6410622596740723, "epoch": 0.2222222222222222, '
        '"percentage": 7.41, "elapsed_time": "0:29:27", "remaining_time": "6:08:08"}',
        500,
        None,
    ),
    "deepspeed_runner_cmd": (
        "[2026-03-24 11:43:01,082] [INFO] [runner.py:630:main] cmd = pdsh -S -f 1024 -w localhost,192.168.205.202 export NCCL_IB_DISABLE=1;",
        None,
        None,
    ),
    "deepspeed_sigterm": (
        "[2026-03-24 13:17:05,699] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'pretrain_gpt.py'] exits with return code = -15",
        None,
        None,
    ),
    "deepspeed_sigkill": (
        "[2026-03-24 13:17:05,699] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--bf16'] exits with return code = -11",
        None,
        None,
    ),
    "deepspeed_process_done": (
        "[2025-01-02 16:15:22,894] [INFO] [launch.py:351:main] Process 106032 exits successfully.",
        None,
        None,
    ),
    "torchrun_sigint": (
        "[2024-05-02 10:11:12,130] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGINT "
        "death signal, shutting down workers",
        None,
        None,
    ),
    "lightning_keyboard_interrupt": (
        "/usr/lib/python3/site-packages/lightning/pytorch/trainer/call.py:54: Detected KeyboardInterrupt, "
        "attempting graceful shutdown...",
        None,
        None,
    ),
    "megatron_exit": ("[exiting program at iteration 1000] datetime: 2024-03-05 10:00:00 ", 1000, None),
    "c10d_watchdog_timeout": (
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=45, OpType=ALLREDUCE) ran for 600044 milliseconds before timing out.",
        None,
        600.044,
    ),
    # https://github.com/open-mmlab/OpenPCDet/issues/1156 (a run logged with --use_logger_to_record)
    "pcdet_step": (
        "2022-10-23 03:52:59,735   INFO  epoch: 18/120, acc_iter=4950, cur_iter=71/271, batch_size=4, loss=5.418487548828125, lr=0.0011548391175393044",
        4950,
        None,
    ),
    # https://github.com/open-mmlab/OpenPCDet/pull/1229 (the timm-style line, its description's sample)
    "pcdet_timm_step": (
        "2023-01-05 16:34:49,377   INFO  Train:    1/3 ( 33%) [  49/323 ( 15%)]  Loss: 36.77 (81.7)  LR: 1.351e-04  Time cost: 00:15/01:25 [00:15/04:48]  Acc_iter 50          Data time: 0.00(0.02)  Forward time: 0.31(0.29)  Batch time: 0.31(0.31)",
        50,
        0.31,
    ),
    "pcdet_save_latest": (
        "2023-01-05 16:39:40,002   INFO  Save latest model to /output/cbgs_voxel0075_res3d_centerpoint/default/ckpt/latest_model",
        None,
        None,
    ),
    # MMF's LogisticsCallback reports (synthetic, in summarize_report's format: a VQA2 run)
    "mmf_train_progress": (
        "2022-02-01T09:12:40 | mmf.trainers.callbacks.logistics: progress: 500/88000, train/vqa2/triple_logit_bce: 6.2341, train/vqa2/triple_logit_bce/avg: 7.0122, train/total_loss: 6.2341, train/total_loss/avg: 7.0122, max mem: 9120.0, experiment: run, epoch: 1, num_updates: 500, iterations: 500, max_updates: 88000, lr: 0.00005, ups: 1.92, time: 52s 101ms, time_since_start: 04m 31s 007ms, eta: 12h 41m 10s 300ms",
        500,
        None,
    ),
    "mmf_val_progress": (
        "2022-02-01T09:40:02 | mmf.trainers.callbacks.logistics: progress: 5000/88000, val/vqa2/triple_logit_bce: 5.1022, val/total_loss: 5.1022, val/vqa2/vqa_accuracy: 0.4410, num_updates: 5000, epoch: 1, iterations: 5000, max_updates: 88000, val_time: 02m 10s 233ms, best_update: 5000, best_iteration: 5000, best_val/vqa2/vqa_accuracy: 0.441000",
        5000,
        None,
    ),
    # https://github.com/facebookresearch/fairseq/blob/main/examples/fully_sharded_data_parallel/README.md
    "fairseq_json_eval_end": (
        '2021-03-08 18:12:45 | INFO | valid | {"epoch": 1, "valid_loss": "16.624", "valid_ppl": "101000", "valid_wps": "10855.9", "valid_wpb": "123202", "valid_bsz": "60.5", "valid_num_updates": "10"}',
        10,
        None,
    ),
}


# Other eras of the same rows (row, line, step, seconds): lines these programs printed in other versions.
VARIANTS = [
    # detectron2's periodic save names its file by the iteration (PeriodicCheckpointer: model_0004999.pth)
    (
        "d2_save",
        "[11/16 04:20:17] fvcore.common.checkpoint INFO: Saving checkpoint to ../../output/supervised/model_0004999.pth",
        4999,
        None,
    ),
    # Ctrl-C under torchrun, as posted in https://github.com/MCG-NJU/RTD-Action/issues/31 and
    # https://github.com/GuHuangAI/ADM-Public/issues/6 (a stuck run stopped by hand)
    (
        "torchrun_sigint",
        "WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers",
        None,
        None,
    ),
    (
        "torchrun_sigint",
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4797 closing signal SIGINT",
        None,
        None,
    ),
    # BigScience Megatron-DeepSpeed prints the iteration time in seconds: https://github.com/bigscience-workshop/
    # bigscience/blob/master/train/tr11-176B-ml/chronicles.md (the 12695 line quoted there)
    (
        "megatron_iteration",
        " [default7]: iteration    12695/  115311 | consumed samples:      9841584 | consumed tokens:  "
        "20155564032 | elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:  "
        "2048 | lm loss: 2.463556E+00 | grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |",
        12695,
        105.22,
    ),
    (
        "torchtitan_step",
        "[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640/644 = 99.3789%  loss:  6.2116  memory: 87.04GiB",
        640,
        None,
    ),
    ("torchtitan_save_begin", "[titan] 2025-01-01 10:00:00,000 - root - INFO - Saving the checkpoint.", None, None),
    (
        "torchtitan_save_begin",
        "[titan] 2025-01-01 10:00:00,000 - root - INFO - Saving a model only checkpoint in torch.bfloat16 at last step, step 10.",
        10,
        None,
    ),
    (
        "torchtitan_save_end",
        "[titan] 2025-01-01 10:00:01,000 - root - INFO - Finished saving the checkpoint in 0.60 seconds.",
        None,
        0.6,
    ),
    (
        "torchtitan_save_end",
        "[titan] 2025-01-01 10:00:01,000 - root - INFO - Last step checkpoint completed in 0.12s",
        None,
        0.12,
    ),
    (
        "torchtitan_load_begin",
        "[titan] 2025-01-01 10:00:01,000 - root - INFO - Loading the checkpoint at step 250",
        250,
        None,
    ),
    ("megatron_save_end", "  successfully saved checkpoint at iteration    2500 to ./tmp", 2500, None),
    (
        "megatron_iteration",
        "[2024-10-13 10:39:13.709465][INFO][training_log.py:661] -  iteration=      22/  105963 | consumed_samples=       14976 | elapsed_time_per_iteration_ms=20723.0 | learning_rate=1.84E-07",
        22,
        20.723,
    ),
    (
        "lightning_rich_train_bar",
        "Epoch 0 ---------------               60/120 0:01:02 • -:--:-- 0.97it/s",
        60,
        1 / 0.97,
    ),
    (
        "lightning_rich_train_bar",
        "Epoch 12/-2 ━━━━━━━━━━━━━━━━━━━━━━━━━━ 7/-- 1 day, 2:00:03 • -:--:-- 0.00it/s v_num: 5",
        7,
        None,
    ),
    ("lightning_rich_val_bar", "Validation DataLoader 1 ━━━━━━━━━━━━━━━━ 4/40 0:00:01 • 0:00:09 4.01it/s", None, None),
    ("lightning_val_bar", "Validating:  50%|█████     | 5/10 [00:02<00:02,  2.50it/s]", None, None),
    ("lightning_val_bar", "Validation: |          | 0/? [00:00<?, ?it/s]", None, None),
    (
        "megatron_data_timer",
        "time (ms) | forward-compute: 120.11 | backward-compute: 240.52 | batch-generator: 35.20 | optimizer: 9.1",
        None,
        0.0352,
    ),
    # DeepSpeed 0.3-0.6 (the running average only)
    (
        "deepspeed_tput_local_step",
        "[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.5, MemAllocated=0.26GB, MaxMemAllocated=9.02GB",
        40,
        None,
    ),
    # Megatron's argument dump
    ("deepspeed_config_batch", "  global_batch_size ............................... 512", None, None),
    # the logs dict without a step (the step is worked out from the epoch), and with its values quoted
    ("hf_log_line", "{'loss': 3.1898, 'learning_rate': 2e-05, 'epoch': 0.02}", None, None),
    ("hf_log_line", "{'loss': '2.205', 'grad_norm': '2.641', 'learning_rate': '0.0001333', 'epoch': '2'}", None, None),
    # maskrcnn-benchmark's eta past a day (str(timedelta))
    (
        "mrb_step",
        "2019-06-02 18:25:29,979 maskrcnn_benchmark.trainer INFO: eta: 1 day, 2:03:04  iter: 20  loss: 1.2 (1.3)  time: 0.6650 (0.7000)  data: 0.0050 (0.0060)  lr: 0.001000  max mem: 3000",
        20,
        0.665,
    ),
    # YOLOX's console sink (`{name}:{line}`, no function, no milliseconds), as nohup and SLURM .out files hold it
    (
        "yolox_step",
        "2021-07-28 10:44:19 | INFO     | yolox.core.trainer:237 - epoch: 2/300, iter: 10/518, mem: 9272Mb, iter_time: 0.812s, data_time: 0.003s, total_loss: 12.0, lr: 7.454e-08, size: 640, ETA: 1 day, 10:45:41",
        528,
        0.812,
    ),
    (
        "yolox_plan",
        "2021-07-28 10:44:19 | INFO     | yolox.core.trainer:237 - epoch: 2/300, iter: 10/518, mem: 9272Mb",
        None,
        None,
    ),
    (
        "yolox_args",
        "2021-07-28 10:43:49 | INFO     | yolox.core.trainer:132 - args: Namespace(batch_size=32, devices=4)",
        None,
        None,
    ),
    ("yolox_train_begin", "2021-07-28 10:44:11 | INFO     | yolox.core.trainer:196 - Training start...", None, None),
    (
        "yolox_epoch_begin",
        "2021-07-28 10:44:11 | INFO     | yolox.core.trainer:218 - ---> start train epoch1",
        None,
        None,
    ),
    (
        "yolox_save",
        "2021-07-28 11:37:44 | INFO     | yolox.core.trainer:402 - Save weights to ./YOLOX_outputs/yolox_voc_s",
        None,
        None,
    ),
    (
        "yolox_train_end",
        "2021-07-28 21:41:06 | INFO     | yolox.core.trainer:200 - Training of experiment is done and the best AP is 54.09",
        None,
        None,
    ),
    # YOLOX since its launcher stopped wrapping the worker: tools/train.py's main is the function caught
    (
        "yolox_worker_error",
        "2023-05-15 09:03:40 | ERROR    | __main__:134 - An error has been caught in function 'main', process 'MainProcess' (6120), thread 'MainThread' (1397):",
        None,
        None,
    ),
    # keys after the epoch: LLaMA-Factory's throughput (its Web UI, since 2025), an RL trainer's reward
    (
        "hf_log_line",
        "[INFO|2024-11-26 22:09:01] logging.py:157 >> {'loss': 2.2818, 'learning_rate': 2.5000e-06, 'epoch': 0.29, 'throughput': 1523.44}",
        None,
        None,
    ),
    (
        "hf_log_line",
        "{'loss': 0.41, 'learning_rate': 1e-05, 'epoch': 1.5, 'step': 300, 'reward': -0.25, 'accuracy': '0.8'}",
        300,
        None,
    ),
    (
        "hf_train_summary",
        "{'train_runtime': '36.27', 'train_samples_per_second': '0.414', 'train_loss': '2.46', 'epoch': '3'}",
        None,
        36.27,
    ),
    # a loop's own bar numbering its epochs from 1 (the count restarts each epoch), in seconds per step
    ("tqdm_train_bar", "Epoch 2/10:  30%|███       | 30/100 [01:14<02:53,  2.48s/it, loss=0.912]", 130, 2.48),
    ("tqdm_train_bar", "train epoch 0: 100%|██████████| 500/500 [03:20<00:00,  2.50it/s]", 500, 0.4),
    # nanoGPT's first lines (no MFU estimate yet) and a diverged run, with a timestamp added by the user
    ("nanogpt_iter", "iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%", 0, 9.37181),
    ("nanogpt_iter", "2023-03-22 09:32:52 iter 3010: loss nan, time 1019.95ms, mfu 14.12%", 3010, 1.01995),
    ("hf_train_begin", "[INFO|trainer.py:1682] 2023-06-16 13:12:23,136 >> ***** Running training *****", None, None),
    # the epoch summary: every key prefixed by its tag (the FSDP example output in
    # https://github.com/facebookresearch/fairseq/blob/main/examples/fully_sharded_data_parallel/README.md)
    (
        "fairseq_json_progress",
        '2021-03-08 18:12:45 | INFO | train | {"epoch": 1, "train_loss": "18.114", "train_ppl": "283776", "train_wps": "2567.8", "train_ups": "0.02", "train_wpb": "131072", "train_bsz": "64", "train_num_updates": "10", "train_lr": "0", "train_gnorm": "29.562", "train_loss_scale": "1", "train_train_wall": "480", "train_gb_free": "9.3", "train_wall": "516"}',
        10,
        None,
    ),
    # a --valid-subset test pass (synthetic, in the format of the line above)
    (
        "fairseq_json_eval_end",
        '2020-01-01 10:00:02 | INFO | test | {"epoch": 3, "test_loss": "1.574", "test_accuracy": 36.4, "test_wps": "15229", "test_num_updates": "156"}',
        156,
        None,
    ),
    # OpenPCDet's key=value line with its timers (val(avg): the epoch's mean is read) (synthetic, in train_utils.py's format)
    (
        "pcdet_step",
        "2023-01-01 10:00:00,000   INFO  epoch: 3/20, acc_iter=1500, cur_iter=120/690, batch_size=4, time_cost(epoch): 01:40/08:05, time_cost(all): 36:10/3:01:10, loss=2.31, d_time=0.01(0.02), f_time=0.70(0.71), b_time=0.71(0.73), norm=12.5, lr=0.001",
        1500,
        0.73,
    ),
    # an old torch's watchdog line with no timestamp and a 30-minute timeout
    (
        "c10d_watchdog_timeout",
        "[E ProcessGroupNCCL.cpp:587] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800452 milliseconds before timing out.",
        None,
        1800.452,
    ),
    (
        "fairseq_save_end",
        "2023-06-13 17:40:26 | INFO | fairseq.checkpoint_utils | saved checkpoint /c/checkpoint146.pt (epoch 146 @ 41142 updates, score 29.37) (writing took 12.29176290333271 seconds)",
        41142,
        12.2918,
    ),
]


@pytest.mark.parametrize(
    ("row", "line", "step", "seconds"), VARIANTS, ids=[f"{v[0]}-{i}" for i, v in enumerate(VARIANTS)]
)
def test_row_reads_other_eras(row: str, line: str, step: int | None, seconds: float | None) -> None:
    marks, _ = scan_line(line, 1, "example.log")
    mine = [m for m in marks if m.row == row]
    assert mine, [(m.row, m.kind) for m in marks]
    if step is not None:
        assert mine[0].step == step
    if seconds is not None:
        got = mine[0].step_s if mine[0].step_s is not None else mine[0].dur_s
        assert got == pytest.approx(seconds, abs=1e-3)


def test_every_row_has_an_example_and_a_source() -> None:
    names = {f.name for f in LINE_FORMATS}
    assert names == set(EXAMPLES), f"rows without an example: {names - set(EXAMPLES)}; stale: {set(EXAMPLES) - names}"
    assert len(names) == len(LINE_FORMATS), "row names must be unique"
    for f in LINE_FORMATS:
        assert f.source.startswith("https://"), f.name
        assert set(f.kinds) <= set(MARK_KINDS)


def test_every_clock_names_the_program_that_prints_it() -> None:
    assert len({c.name for c in CLOCKS}) == len(CLOCKS)
    for clock in CLOCKS:
        assert clock.source.startswith("https://"), clock.name


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=lambda f: f.name)
def test_row_reads_its_example(fmt) -> None:  # type: ignore[no-untyped-def]
    line, step, seconds = EXAMPLES[fmt.name]
    marks, _ = scan_line(line, 1, "example.log")
    mine = [m for m in marks if m.row == fmt.name]
    assert [m.kind for m in mine] == list(fmt.kinds), (fmt.name, [(m.row, m.kind) for m in marks])
    if step is not None:
        assert mine[0].step == step
    if seconds is not None:
        got = mine[0].step_s if mine[0].step_s is not None else mine[0].dur_s
        assert got == pytest.approx(seconds)


def test_no_row_takes_an_ordinary_line() -> None:
    for line in (
        "2024-01-01 00:00:00 | INFO | fairseq_cli.train | model transformer, criterion CrossEntropyCriterion",
        "Map: 100%|██████████| 1000/1000 [00:01<00:00, 900.1 examples/s]",
        "Validation epoch 1:  50%|█████     | 5/10 [00:02<00:02,  2.50it/s]",
        "Evaluating after training: 100%|██████████| 40/40 [00:10<00:00,  3.91it/s]",
        "loss: 2.31 at epoch 3",
        "steps: 1 loss: nan",
    ):
        marks, _ = scan_line(line, 1, "x.log")
        assert not [m for m in marks if m.kind == "step"], line


def test_clocks() -> None:
    assert parse_clock("[2023-08-15 06:31:42,452] [INFO]") == (1692081102.452, 1)
    assert parse_clock("03/01/2024 12:00:30 - INFO - x")[0] == 1709294430.0  # type: ignore[index]
    assert parse_clock("2024-03-05T10:01:55+02:00 x")[0] == 1709625715.0  # type: ignore[index]
    assert parse_clock("W0301 10:06:00.500000 1234 torch/api.py:1] x", 2025)[0] == 1740823560.5  # type: ignore[index]
    assert parse_clock("no time here 12:00") is None
    # rich's handler (colossalai: hpcaitech/FastFold#138), a two-digit year, only at the line's start
    assert (
        parse_clock("[01/15/23 18:11:55] INFO     colossalai - colossalai - INFO: train.py:230 main")[0] == 1673806315.0
    )  # type: ignore[index]
    assert parse_clock("loss 0.5 at 01/15/23 18:11:55") is None


def test_lsf_job_report_clock() -> None:
    # LSF's job report (MrCogito/Deep_learning_2023 WorkingSetup_0.md): ctime with a month name, day space-padded
    assert parse_clock("Started at Thu Nov 30 13:23:37 2023") == (1701350617.0, 0)
    assert parse_clock("Terminated at Fri Dec  1 04:27:09 2023") == (1701404829.0, 0)
    assert parse_clock("Job was executed on host(s) <4*n-62-18-9> at Thu Nov 30 13:23:37 2023") is None


def test_yolox_and_maskrcnn_step_rows_read_a_long_line_in_linear_time() -> None:
    """The optional field group after a step line's prefix is bounded (300 characters): one 100,000-character
    line repeating the prefix took 2.2 s (mrb_step) and 1.8 s (yolox_step), quadratic in its length."""
    rows = {f.name: f for f in LINE_FORMATS}
    lines = {
        "mrb_step": "maskrcnn_benchmark.trainer INFO: eta: 1:00  iter: 5 " * 2000 + "time: 1 (",
        "yolox_step": ":after_iter:1 - epoch: 1/2, iter: 1/2, " * 2000 + " iter_time: 1",
    }
    t0 = time.process_time()
    for name, line in lines.items():
        assert sum(1 for _ in rows[name].regex.finditer(line)) == 2000, name
    assert time.process_time() - t0 < 0.5
