# ruff: noqa: E501  (log lines are kept whole, as posted)
"""Classes of real training logs the goodput report misread (issue 40, the second held-out set of training logs),
each on a short excerpt of the public log named above it: a step counter that restarts every epoch, a float
counter with a `dt` step time, a Ctrl-C ending short of the stated plan, a cumulative timer reset after warm-up,
JSON-lines trainer logs with a resume, fresh relaunches in one file."""

from __future__ import annotations

from pathlib import Path

import pytest
from scope.analyzers.goodput import goodput

from scope.render.goodput import render_goodput
from tests.helpers import assert_sane_goodput, write_log

# https://github.com/cattidea/VinVL-Paddle/blob/78c15c4bd4832203d8509bfde2390f13b86445bf/log/workerlog.0 (lines
# 121-146: the end of epoch 1 and the start of epoch 2; the step counter restarts at 100 every epoch)
VINVL = [
    "02/13/2022 23:56:14 - INFO - Epoch: [1], step: [4200], lr: 0.000019, batch_loss: 0.0167, avg_loss: 0.0239",
    "02/13/2022 23:57:20 - INFO - Epoch: [1], step: [4300], lr: 0.000019, batch_loss: 0.0043, avg_loss: 0.0239",
    "02/13/2022 23:58:26 - INFO - Epoch: [1], step: [4400], lr: 0.000019, batch_loss: 0.0348, avg_loss: 0.0239",
    "02/13/2022 23:58:43 - INFO - ** ** Epoch [1] done! Training loss: 0.02386 ** **",
    "02/13/2022 23:59:38 - INFO - ** * ** Eval at Epoch [1]! Eval Reults:  ** * **",
    "02/14/2022 00:00:47 - INFO - Epoch: [2], step: [100], lr: 0.000019, batch_loss: 0.0455, avg_loss: 0.0145",
    "02/14/2022 00:01:53 - INFO - Epoch: [2], step: [200], lr: 0.000019, batch_loss: 0.0050, avg_loss: 0.0157",
    "02/14/2022 00:02:59 - INFO - Epoch: [2], step: [300], lr: 0.000019, batch_loss: 0.0074, avg_loss: 0.0151",
]

# the same log's config line (40) and the end of its last epoch (lines 1982-1996)
VINVL_END = [
    "  EPOCHS: 30",
    "02/14/2022 23:57:01 - INFO - Epoch: [30], step: [4200], lr: 0.000000, batch_loss: 0.0012, avg_loss: 0.0067",
    "02/14/2022 23:58:07 - INFO - Epoch: [30], step: [4300], lr: 0.000000, batch_loss: 0.0011, avg_loss: 0.0068",
    "02/14/2022 23:59:14 - INFO - Epoch: [30], step: [4400], lr: 0.000000, batch_loss: 0.0012, avg_loss: 0.0068",
    "02/14/2022 23:59:31 - INFO - ** ** Epoch [30] done! Training loss: 0.00677 ** **",
    "02/15/2022 00:00:26 - INFO - ** * ** Eval at Epoch [30]! Eval Reults:  ** * **",
    "02/15/2022 00:00:30 - INFO - ** * ** Saving trained model to /root/paddlejob/workspace/output/finetune_retrieval_22Y_02M_13D_23H/checkpoint-30. ** * **",
]

# https://github.com/saforem2/vault/blob/d96afcb06ae007719358935729013925a1d52c1a/imported/0007-MeetingNotes/Venkat/logs/mlprof/train-deepspeed-thetaGPU.md
# (lines 477-867 in part: DeepSpeed's `step=0` at its first print, then mlprof's `epoch=E step=S dt=...` with
# float counters, quoted with "> ")
MLPROF = [
    ">     [2023-01-11 13:27:59,212] [INFO] [logging.py:68:log_dist] [Rank 0] step=0, skipped=0, lr=[0.001], mom=[[0.8, 0.999]]",
    ">     [2023-01-11 13:28:13,846][mlprof.trainers.pytorch.trainer][INFO] - [0] [1/10: 0/1875 (0%)] epoch=1.0000 step=1.0000 dt=0.3665 batch_acc=0.1094 batch_loss=0.0090 acc=0.0149 running_loss=0.0012",
    ">     [2023-01-11 13:28:14,036][mlprof.trainers.pytorch.trainer][INFO] - [0] [1/10: 1280/1875 (62%)] epoch=1.0000 step=6.0000 dt=0.0025 batch_acc=0.5469 batch_loss=0.0063 acc=0.2709 running_loss=0.0066",
    ">     [2023-01-11 13:28:15,405][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 0/1875 (0%)] epoch=2.0000 step=9.0000 dt=0.0046 batch_acc=0.6758 batch_loss=0.0050 acc=0.0923 running_loss=0.0007",
    ">     [2023-01-11 13:28:15,583][mlprof.trainers.pytorch.trainer][INFO] - [0] [2/10: 1280/1875 (62%)] epoch=2.0000 step=14.0000 dt=0.0022 batch_acc=0.6992 batch_loss=0.0035 acc=0.5723 running_loss=0.0033",
    ">     [2023-01-11 13:28:16,935][mlprof.trainers.pytorch.trainer][INFO] - [0] [3/10: 0/1875 (0%)] epoch=3.0000 step=17.0000 dt=0.0026 batch_acc=0.8086 batch_loss=0.0026 acc=0.1104 running_loss=0.0004",
    ">     [2023-01-11 13:28:26,589][mlprof.trainers.pytorch.trainer][INFO] - [0] :: Total training time: 13.143308877944946 seconds",
]

# https://github.com/auroraGPT-ANL/torchtitan/blob/24c86d4f9512c8fc59f4eb6e223816481ff768b5/torchtitan/experiments/blendcorpus/docs/aurora.md
# (the output block, lines in part: the plan, the start, the first and last steps, then the terminal's ^C)
TORCHTITAN_CTRL_C = [
    "   [INFO][2025-09-11 14:09:18.390498] Training iterations: 1000",
    "  [2025-09-11 14:09:20,264934][I][blendcorpus/train:556:train] Training starts at step 1.",
    "  [2025-09-11 14:09:46,954794][I][components/metrics:437:log] step:  1  loss: 10.8595  grad_norm:  3.2105  memory:  8.44GiB(13.20%)  tps: 149  tflops: 1.39  mfu: 0.47%",
    "  [2025-09-11 14:09:47,568581][I][components/metrics:437:log] step:  2  loss: 14.4458  grad_norm: 41.7880  memory:  8.44GiB(13.20%)  tps: 6,697  tflops: 62.15  mfu: 20.84%",
    "  [2025-09-11 14:09:48,193890][I][components/metrics:437:log] step:  3  loss: 15.2005  grad_norm: 66.6053  memory:  8.44GiB(13.20%)  tps: 6,562  tflops: 60.90  mfu: 20.42%",
    "  [2025-09-11 14:10:49,973188][I][components/metrics:437:log] step: 103  loss:  5.2459  grad_norm:  1.6686  memory:  8.44GiB(13.20%)  tps: 6,636  tflops: 61.58  mfu: 20.65%",
    "  [2025-09-11 14:10:50,591512][I][components/metrics:437:log] step: 104  loss:  5.3994  grad_norm:  1.9303  memory:  8.44GiB(13.20%)  tps: 6,635  tflops: 61.57  mfu: 20.65%",
    "  [2025-09-11 14:10:51,208789][I][components/metrics:437:log] step: 105  loss:  5.3256  grad_norm:  1.5555  memory:  8.44GiB(13.20%)  tps: 6,647  tflops: 61.68  mfu: 20.69%",
    "  ^C",
]

# https://github.com/KellerJordan/modded-nanogpt/blob/0b373b7a60c1ecc6d1db8cc27b18ddf3e12538e1/records/011825_GPT2Medium/241dd7a7-3d76-4dce-85a4-7df60387f32a.txt
# (steps 0-14: train_time holds the ~16 min of compilation in step 1, then is reset at step 11)
MODDED_NANOGPT = [
    "step:0/7500 val_loss:10.8258 train_time:0ms step_avg:nanms",
    "step:1/7500 train_time:960506ms step_avg:nanms",
    "step:2/7500 train_time:963371ms step_avg:nanms",
    "step:3/7500 train_time:963579ms step_avg:nanms",
    "step:4/7500 train_time:963798ms step_avg:nanms",
    "step:5/7500 train_time:964016ms step_avg:nanms",
    "step:6/7500 train_time:964233ms step_avg:nanms",
    "step:7/7500 train_time:964456ms step_avg:nanms",
    "step:8/7500 train_time:964681ms step_avg:nanms",
    "step:9/7500 train_time:964902ms step_avg:nanms",
    "step:10/7500 train_time:965122ms step_avg:nanms",
    "step:11/7500 train_time:221ms step_avg:nanms",
    "step:12/7500 train_time:442ms step_avg:nanms",
    "step:13/7500 train_time:666ms step_avg:221.89ms",
    "step:14/7500 train_time:887ms step_avg:221.76ms",
]


# https://github.com/stark-sim/megatron-deepspeed-lock-clock/blob/b872e98467445c1c039bef9c5be5fa276f3e882c/.context/dual32_run_v2.log
# (lines in part: a clock sweep launching the same 20-iteration job three times through DeepSpeed's pdsh runner,
# every line prefixed by its host; the third launch dies in start-up)
DUAL32 = [
    "[dual32] freq=1050 port=29700 run_id=dual32_tp4pp1dp8_static1050_20260324_114252_DGX2-1",
    "[2026-03-24 11:43:01,082] [INFO] [runner.py:630:main] cmd = pdsh -S -f 1024 -w localhost,192.168.205.202 export NCCL_RAS_ENABLE=0; export NCCL_SOCKET_IFNAME=tailscale0; export PYTHONPATH=/home/sd/Megatron-DeepSpeed:/home/sd/Megatron-DeepSpeed:/home/sd/.local/lib/python3.10/site-packages:; export NCCL_IB_DISABLE=1;  cd /home/sd/Megatron-DeepSpeed; /usr/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV0sICIxOTIuMTY4LjIwNS4yMDIiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV19 --node_rank=%n --master_addr=192.168.205.201 --master_port=29700 --enable_each_rank_log=None pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 --num-layers 28 --hidden-size 3584 --ffn-hidden-size 18944 --num-attention-heads 28 --num-key-value-heads 4 --micro-batch-size 1 --global-batch-size 32 --seq-length 2048 --max-position-embeddings 2048 --train-iters 20 --data-path /home/sd/Megatron-DeepSpeed/data/chinese_wiki_megatron_text_document --data-impl mmap --tokenizer-type HFTokenizer --tokenizer-model /home/sd/Megatron-DeepSpeed/.context/qwen25_tokenizer_flat --split 98,2,0 --distributed-backend nccl --lr 1e-5 --lr-decay-style cosine --min-lr 1e-6 --weight-decay 0.01 --clip-grad 1.0 --lr-warmup-iters 19 --optimizer adam --adam-beta1 0.9 --adam-beta2 0.95 --adam-eps 1e-8 --log-interval 1 --save-interval 0 --eval-interval 100 --eval-iters 10 --no-query-key-layer-scaling --attention-dropout 0 --hidden-dropout 0 --use-rotary-position-embeddings --untie-embeddings-and-output-weights --swiglu --normalization rmsnorm --disable-bias-linear --no-position-embedding --no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion --recompute-granularity full --recompute-method uniform --deepspeed-activation-checkpointing --zero-stage=1 --deepspeed_config=/home/sd/Megatron-DeepSpeed/.context/dsconfig_dual32_tp4pp1dp8_static1050.json --deepspeed --experiment-run-id dual32_tp4pp1dp8_static1050_20260324_114252_DGX2-1 --experiment-name dual32_tp4pp1dp8_static1050 --experiment-root-dir /home/sd/Megatron-DeepSpeed/experiments --bf16",
    "localhost: [before the start of training step] datetime: 2026-03-24 11:44:58 ",
    "localhost: steps: 1 loss: 12.6476 iter time (s): 141.465 samples/sec: 0.226",
    "192.168.205.202:  iteration        1/      20 | consumed samples:           32 | consumed tokens:        65536 | elapsed time per iteration (ms): 142095.8 | learning rate: 5.263E-07 | global batch size:    32 | lm loss: 1.264762E+01 | loss scale: 1.0 | grad norm: 14.470 | num zeros: 0.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 0.225 | tokens per gpu per second (tgs): 14.413 | TFLOPs: 0.85 |",
    "localhost: steps: 2 loss: 12.6489 iter time (s): 91.753 samples/sec: 0.349",
    "192.168.205.202:  iteration        2/      20 | consumed samples:           64 | consumed tokens:       131072 | elapsed time per iteration (ms): 91767.4 | learning rate: 1.053E-06 | global batch size:    32 | lm loss: 1.264892E+01 | loss scale: 1.0 | grad norm: 14.523 | num zeros: 0.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 0.349 | tokens per gpu per second (tgs): 22.317 | TFLOPs: 1.32 |",
    "localhost: [after training is done] datetime: 2026-03-24 12:25:47 ",
    "[dual32] completed freq=1050 run_id=dual32_tp4pp1dp8_static1050_20260324_114252_DGX2-1",
    "[dual32] freq=1125 port=29701 run_id=dual32_tp4pp1dp8_static1125_20260324_122649_DGX2-1",
    "[2026-03-24 12:26:58,278] [INFO] [runner.py:630:main] cmd = pdsh -S -f 1024 -w localhost,192.168.205.202 export NCCL_RAS_ENABLE=0; export NCCL_SOCKET_IFNAME=tailscale0; export PYTHONPATH=/home/sd/Megatron-DeepSpeed:/home/sd/Megatron-DeepSpeed:/home/sd/.local/lib/python3.10/site-packages:; export NCCL_IB_DISABLE=1;  cd /home/sd/Megatron-DeepSpeed; /usr/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV0sICIxOTIuMTY4LjIwNS4yMDIiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV19 --node_rank=%n --master_addr=192.168.205.201 --master_port=29701 --enable_each_rank_log=None pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 --num-layers 28 --hidden-size 3584 --ffn-hidden-size 18944 --num-attention-heads 28 --num-key-value-heads 4 --micro-batch-size 1 --global-batch-size 32 --seq-length 2048 --max-position-embeddings 2048 --train-iters 20 --data-path /home/sd/Megatron-DeepSpeed/data/chinese_wiki_megatron_text_document --data-impl mmap --tokenizer-type HFTokenizer --tokenizer-model /home/sd/Megatron-DeepSpeed/.context/qwen25_tokenizer_flat --split 98,2,0 --distributed-backend nccl --lr 1e-5 --lr-decay-style cosine --min-lr 1e-6 --weight-decay 0.01 --clip-grad 1.0 --lr-warmup-iters 19 --optimizer adam --adam-beta1 0.9 --adam-beta2 0.95 --adam-eps 1e-8 --log-interval 1 --save-interval 0 --eval-interval 100 --eval-iters 10 --no-query-key-layer-scaling --attention-dropout 0 --hidden-dropout 0 --use-rotary-position-embeddings --untie-embeddings-and-output-weights --swiglu --normalization rmsnorm --disable-bias-linear --no-position-embedding --no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion --recompute-granularity full --recompute-method uniform --deepspeed-activation-checkpointing --zero-stage=1 --deepspeed_config=/home/sd/Megatron-DeepSpeed/.context/dsconfig_dual32_tp4pp1dp8_static1125.json --deepspeed --experiment-run-id dual32_tp4pp1dp8_static1125_20260324_122649_DGX2-1 --experiment-name dual32_tp4pp1dp8_static1125 --experiment-root-dir /home/sd/Megatron-DeepSpeed/experiments --bf16",
    "localhost: [before the start of training step] datetime: 2026-03-24 12:28:57 ",
    "localhost: steps: 1 loss: 12.6476 iter time (s): 134.165 samples/sec: 0.239",
    "192.168.205.202:  iteration        1/      20 | consumed samples:           32 | consumed tokens:        65536 | elapsed time per iteration (ms): 134814.4 | learning rate: 5.263E-07 | global batch size:    32 | lm loss: 1.264762E+01 | loss scale: 1.0 | grad norm: 14.470 | num zeros: 0.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 0.237 | tokens per gpu per second (tgs): 15.191 | TFLOPs: 0.90 |",
    "localhost: steps: 2 loss: 12.6489 iter time (s): 174.462 samples/sec: 0.183",
    "192.168.205.202:  iteration        2/      20 | consumed samples:           64 | consumed tokens:       131072 | elapsed time per iteration (ms): 174835.5 | learning rate: 1.053E-06 | global batch size:    32 | lm loss: 1.264892E+01 | loss scale: 1.0 | grad norm: 14.523 | num zeros: 0.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 0.183 | tokens per gpu per second (tgs): 11.714 | TFLOPs: 0.69 |",
    "localhost: [after training is done] datetime: 2026-03-24 13:14:47 ",
    "[dual32] completed freq=1125 run_id=dual32_tp4pp1dp8_static1125_20260324_122649_DGX2-1",
    "[dual32] freq=1200 port=29702 run_id=dual32_tp4pp1dp8_static1200_20260324_131546_DGX2-1",
    "[2026-03-24 13:15:56,386] [INFO] [runner.py:630:main] cmd = pdsh -S -f 1024 -w localhost,192.168.205.202 export NCCL_RAS_ENABLE=0; export NCCL_SOCKET_IFNAME=tailscale0; export PYTHONPATH=/home/sd/Megatron-DeepSpeed:/home/sd/Megatron-DeepSpeed:/home/sd/.local/lib/python3.10/site-packages:; export NCCL_IB_DISABLE=1;  cd /home/sd/Megatron-DeepSpeed; /usr/bin/python3 -u -m deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV0sICIxOTIuMTY4LjIwNS4yMDIiOiBbMCwgMSwgMiwgMywgNCwgNSwgNiwgNywgOCwgOSwgMTAsIDExLCAxMiwgMTMsIDE0LCAxNV19 --node_rank=%n --master_addr=192.168.205.201 --master_port=29702 --enable_each_rank_log=None pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 1 --num-layers 28 --hidden-size 3584 --ffn-hidden-size 18944 --num-attention-heads 28 --num-key-value-heads 4 --micro-batch-size 1 --global-batch-size 32 --seq-length 2048 --max-position-embeddings 2048 --train-iters 20 --data-path /home/sd/Megatron-DeepSpeed/data/chinese_wiki_megatron_text_document --data-impl mmap --tokenizer-type HFTokenizer --tokenizer-model /home/sd/Megatron-DeepSpeed/.context/qwen25_tokenizer_flat --split 98,2,0 --distributed-backend nccl --lr 1e-5 --lr-decay-style cosine --min-lr 1e-6 --weight-decay 0.01 --clip-grad 1.0 --lr-warmup-iters 19 --optimizer adam --adam-beta1 0.9 --adam-beta2 0.95 --adam-eps 1e-8 --log-interval 1 --save-interval 0 --eval-interval 100 --eval-iters 10 --no-query-key-layer-scaling --attention-dropout 0 --hidden-dropout 0 --use-rotary-position-embeddings --untie-embeddings-and-output-weights --swiglu --normalization rmsnorm --disable-bias-linear --no-position-embedding --no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion --recompute-granularity full --recompute-method uniform --deepspeed-activation-checkpointing --zero-stage=1 --deepspeed_config=/home/sd/Megatron-DeepSpeed/.context/dsconfig_dual32_tp4pp1dp8_static1200.json --deepspeed --experiment-run-id dual32_tp4pp1dp8_static1200_20260324_131546_DGX2-1 --experiment-name dual32_tp4pp1dp8_static1200 --experiment-root-dir /home/sd/Megatron-DeepSpeed/experiments --bf16",
    "localhost: [rank0]: Traceback (most recent call last):",
    "localhost: [rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:230, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.5",
    "localhost: [2026-03-24 13:17:05,699] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank=15', '--tensor-model-parallel-size', '4', '--pipeline-model-parallel-size', '1', '--num-layers', '28', '--hidden-size', '3584', '--ffn-hidden-size', '18944', '--num-attention-heads', '28', '--num-key-value-heads', '4', '--micro-batch-size', '1', '--global-batch-size', '32', '--seq-length', '2048', '--max-position-embeddings', '2048', '--train-iters', '20', '--data-path', '/home/sd/Megatron-DeepSpeed/data/chinese_wiki_megatron_text_document', '--data-impl', 'mmap', '--tokenizer-type', 'HFTokenizer', '--tokenizer-model', '/home/sd/Megatron-DeepSpeed/.context/qwen25_tokenizer_flat', '--split', '98,2,0', '--distributed-backend', 'nccl', '--lr', '1e-5', '--lr-decay-style', 'cosine', '--min-lr', '1e-6', '--weight-decay', '0.01', '--clip-grad', '1.0', '--lr-warmup-iters', '19', '--optimizer', 'adam', '--adam-beta1', '0.9', '--adam-beta2', '0.95', '--adam-eps', '1e-8', '--log-interval', '1', '--save-interval', '0', '--eval-interval', '100', '--eval-iters', '10', '--no-query-key-layer-scaling', '--attention-dropout', '0', '--hidden-dropout', '0', '--use-rotary-position-embeddings', '--untie-embeddings-and-output-weights', '--swiglu', '--normalization', 'rmsnorm', '--disable-bias-linear', '--no-position-embedding', '--no-masked-softmax-fusion', '--no-bias-gelu-fusion', '--no-bias-dropout-fusion', '--recompute-granularity', 'full', '--recompute-method', 'uniform', '--deepspeed-activation-checkpointing', '--zero-stage=1', '--deepspeed_config=/home/sd/Megatron-DeepSpeed/.context/dsconfig_dual32_tp4pp1dp8_static1200.json', '--deepspeed', '--experiment-run-id', 'dual32_tp4pp1dp8_static1200_20260324_131546_DGX2-1', '--experiment-name', 'dual32_tp4pp1dp8_static1200', '--experiment-root-dir', '/home/sd/Megatron-DeepSpeed/experiments', '--bf16'] exits with return code = -11",
]


# https://github.com/rameyjm7/SFT-Training-LLM/blob/dbf63c44f77e9ea16fa8df916c1c3238826c3ec2/trainer_log.jsonl
# (lines 1-6, 1036-1052, 1357-1360: two writers' records of every step, drifting apart, until step 5240; a
# resume from the step-5000 checkpoint whose elapsed clock starts again; the closing record)
LLAMAFACTORY_JSONL = [
    '{"current_steps": 10, "total_steps": 6566, "loss": 0.8548, "lr": 9.999953642250429e-06, "epoch": 0.010666666666666666, "percentage": 0.15, "elapsed_time": "0:02:12", "remaining_time": "1 day, 0:08:23"}',
    '{"current_steps": 10, "total_steps": 6566, "loss": 0.8547, "lr": 9.999953642250429e-06, "epoch": 0.010666666666666666, "percentage": 0.15, "elapsed_time": "0:02:13", "remaining_time": "1 day, 0:19:59"}',
    '{"current_steps": 20, "total_steps": 6566, "loss": 0.7463, "lr": 9.999793394343183e-06, "epoch": 0.021333333333333333, "percentage": 0.3, "elapsed_time": "0:04:43", "remaining_time": "1 day, 1:48:36"}',
    '{"current_steps": 20, "total_steps": 6566, "loss": 0.7463, "lr": 9.999793394343183e-06, "epoch": 0.021333333333333333, "percentage": 0.3, "elapsed_time": "0:04:45", "remaining_time": "1 day, 1:58:08"}',
    '{"current_steps": 30, "total_steps": 6566, "loss": 0.7308, "lr": 9.999518687628002e-06, "epoch": 0.032, "percentage": 0.46, "elapsed_time": "0:07:10", "remaining_time": "1 day, 2:02:47"}',
    '{"current_steps": 30, "total_steps": 6566, "loss": 0.7308, "lr": 9.999518687628002e-06, "epoch": 0.032, "percentage": 0.46, "elapsed_time": "0:07:11", "remaining_time": "1 day, 2:08:01"}',
    '{"current_steps": 5170, "total_steps": 6566, "loss": 0.3916, "lr": 1.0759715282967398e-06, "epoch": 5.5120000000000005, "percentage": 78.74, "elapsed_time": "21:55:52", "remaining_time": "5:55:18"}',
    '{"current_steps": 5200, "total_steps": 6566, "loss": 0.3738, "lr": 1.031898691489545e-06, "epoch": 5.5440000000000005, "percentage": 79.2, "elapsed_time": "21:56:35", "remaining_time": "5:45:51"}',
    '{"current_steps": 5180, "total_steps": 6566, "loss": 0.4026, "lr": 1.0611903005698082e-06, "epoch": 5.522666666666667, "percentage": 78.89, "elapsed_time": "21:58:21", "remaining_time": "5:52:44"}',
    '{"current_steps": 5210, "total_steps": 6566, "loss": 0.399, "lr": 1.0173889807004529e-06, "epoch": 5.554666666666667, "percentage": 79.35, "elapsed_time": "21:59:00", "remaining_time": "5:43:17"}',
    '{"current_steps": 5190, "total_steps": 6566, "loss": 0.3946, "lr": 1.0464992428613807e-06, "epoch": 5.533333333333333, "percentage": 79.04, "elapsed_time": "22:01:00", "remaining_time": "5:50:14"}',
    '{"current_steps": 5220, "total_steps": 6566, "loss": 0.3774, "lr": 1.0029704426606695e-06, "epoch": 5.565333333333333, "percentage": 79.5, "elapsed_time": "22:01:18", "remaining_time": "5:40:42"}',
    '{"current_steps": 5200, "total_steps": 6566, "loss": 0.373, "lr": 1.031898691489545e-06, "epoch": 5.5440000000000005, "percentage": 79.2, "elapsed_time": "22:03:24", "remaining_time": "5:47:38"}',
    '{"current_steps": 5230, "total_steps": 6566, "loss": 0.4019, "lr": 9.8864340744957e-07, "epoch": 5.576, "percentage": 79.65, "elapsed_time": "22:03:53", "remaining_time": "5:38:11"}',
    '{"current_steps": 5210, "total_steps": 6566, "loss": 0.3985, "lr": 1.0173889807004529e-06, "epoch": 5.554666666666667, "percentage": 79.35, "elapsed_time": "22:05:48", "remaining_time": "5:45:04"}',
    '{"current_steps": 5240, "total_steps": 6566, "loss": 0.3956, "lr": 9.744082030517816e-07, "epoch": 5.586666666666667, "percentage": 79.81, "elapsed_time": "22:06:20", "remaining_time": "5:35:38"}',
    '{"current_steps": 5220, "total_steps": 6566, "loss": 0.3767, "lr": 1.0029704426606695e-06, "epoch": 5.565333333333333, "percentage": 79.5, "elapsed_time": "22:08:06", "remaining_time": "5:42:27"}',
    '{"current_steps": 5010, "total_steps": 6566, "loss": 0.394, "lr": 1.3244519492509128e-06, "epoch": 5.341333333333333, "percentage": 76.3, "elapsed_time": "0:02:38", "remaining_time": "0:00:49"}',
    '{"current_steps": 5010, "total_steps": 6566, "loss": 0.394, "lr": 1.3244519492509128e-06, "epoch": 5.341333333333333, "percentage": 76.3, "elapsed_time": "0:02:38", "remaining_time": "0:00:49"}',
    '{"current_steps": 5020, "total_steps": 6566, "loss": 0.3859, "lr": 1.3082754008000192e-06, "epoch": 5.352, "percentage": 76.45, "elapsed_time": "0:05:03", "remaining_time": "0:01:33"}',
    '{"current_steps": 5020, "total_steps": 6566, "loss": 0.3859, "lr": 1.3082754008000192e-06, "epoch": 5.352, "percentage": 76.45, "elapsed_time": "0:05:03", "remaining_time": "0:01:33"}',
    '{"current_steps": 5030, "total_steps": 6566, "loss": 0.3731, "lr": 1.2921833659206928e-06, "epoch": 5.362666666666667, "percentage": 76.61, "elapsed_time": "0:07:21", "remaining_time": "0:02:14"}',
    '{"current_steps": 5030, "total_steps": 6566, "loss": 0.3731, "lr": 1.2921833659206928e-06, "epoch": 5.362666666666667, "percentage": 76.61, "elapsed_time": "0:07:21", "remaining_time": "0:02:14"}',
    '{"current_steps": 6560, "total_steps": 6566, "loss": 0.3716, "lr": 2.8043594020865648e-11, "epoch": 6.9952, "percentage": 99.91, "elapsed_time": "6:35:21", "remaining_time": "0:00:21"}',
    '{"current_steps": 6560, "total_steps": 6566, "loss": 0.3717, "lr": 2.8043594020865648e-11, "epoch": 6.9952, "percentage": 99.91, "elapsed_time": "6:35:21", "remaining_time": "0:00:21"}',
    '{"current_steps": 6565, "total_steps": 6566, "epoch": 7.0, "percentage": 99.98, "elapsed_time": "6:36:26", "remaining_time": "0:00:03"}',
    '{"current_steps": 6565, "total_steps": 6566, "epoch": 7.0, "percentage": 99.98, "elapsed_time": "6:36:26", "remaining_time": "0:00:03"}',
]


def test_a_step_counter_restarting_every_epoch_is_progress_vinvl_paddle(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, VINVL))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1 and r.acc.steps_redone == 0  # not a restart
    # 4200 -> 4400 in epoch 1, then 300 more in epoch 2: cumulative, a bound (the log is cut)
    assert r.acc.steps_completed == 500 and r.acc.completed_is_bound
    assert r.wall_s == pytest.approx(405.0)  # 23:56:14 -> 00:02:59
    # `Eval at Epoch [1]!` ends an evaluation begun at `Epoch [1] done!`: 23:58:43 -> 23:59:38 (the 17 s
    # before it, from the last progress line, are the epoch's last steps)
    assert r.acc.buckets["evaluation"] == pytest.approx(55.0)
    assert r.acc.buckets["productive"] == pytest.approx(405.0 - 55.0)


def test_float_counters_and_a_dt_field_are_steps_beside_a_stray_known_line_mlprof(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MLPROF))
    assert_sane_goodput(r)
    assert r.acc.steps_completed == 17  # step=1.0000 .. step=17.0000, not DeepSpeed's lone `step=0`
    assert r.acc.attempts[0].first_step == 1
    assert r.acc.attempts[0].ended == "completed"  # `:: Total training time: 13.14 seconds` closes the loop
    # the 14.6 s before the first step line is start-up, not training
    assert r.acc.buckets["initialization"] > 10.0
    assert r.acc.buckets["productive"] < 0.2 * r.wall_s


def test_a_bare_ctrl_c_after_the_last_step_is_an_interruption_with_the_plan_unrun_torchtitan(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, TORCHTITAN_CTRL_C))
    assert_sane_goodput(r)
    (a,) = r.acc.attempts
    assert a.ended == "interrupted" and a.last_step == 105
    assert a.planned_steps == 1000
    text = render_goodput(r.result())
    assert "step 105 of 1,000 planned: 895 planned steps not run" in text
    assert r.acc.buckets["warmup"] == pytest.approx(26.1, abs=0.5)  # the first step's 26.7 s, less one step


def test_a_cumulative_timer_reset_after_warmup_is_no_restart_modded_nanogpt(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, MODDED_NANOGPT))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1 and r.acc.steps_completed == 14
    # the 965 s before the reset stay in the wall time, as warm-up; the steps after it at ~0.22 s
    assert r.wall_s == pytest.approx(965.122 + 0.887, abs=0.01)
    assert r.acc.buckets["warmup"] == pytest.approx(960.0, abs=5.0)
    assert "hung" not in {k for k, v in r.acc.buckets.items() if v}


def test_fresh_launches_are_new_runs_and_a_launch_dead_in_start_up_is_a_failed_attempt_dual32(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, DUAL32))
    assert_sane_goodput(r)
    assert [a.ended for a in r.acc.attempts] == ["completed", "completed", "failed"]
    assert r.acc.steps_completed == 4 and r.acc.steps_redone == 0  # iterations 1..2 twice, nothing rolled back
    assert r.acc.buckets.get("redone", 0.0) == 0.0
    third = r.acc.attempts[2]
    assert third.last_step is None and "Traceback" in third.end_evidence
    assert "#2: " in (text := render_goodput(r.result())) and "no step line; failed" in text


def test_json_lines_trainer_log_with_two_writers_and_a_resume_llamafactory(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, LLAMAFACTORY_JSONL, name="trainer_log.jsonl"))
    assert_sane_goodput(r)
    first, second = r.acc.attempts
    assert (first.last_step, second.first_step, second.last_step) == (5240, 5010, 6565)
    assert second.ended == "completed"  # the record with no loss: the trainer's closing on_log
    assert r.acc.steps_completed == 6565  # each step once, not once per writer
    # attempt 1 reached 5240, the resume's first record is 5010 (logged every 10): at least 231 redone
    assert r.acc.steps_redone == 231 and r.acc.redone_is_bound
    # each launch's own elapsed clock, laid end to end: 22:08:06 (the later writer's last) + 6:36:26
    assert r.wall_s == pytest.approx(79686 + 23786)


def test_host_prefixes_of_pdsh_are_read_past_but_progress_words_are_not_hosts() -> None:
    from scope.analyzers.goodput.parse import _HOST_PREFIX

    assert _HOST_PREFIX.sub("", DUAL32[4], count=1).startswith(" iteration        1/      20")
    assert _HOST_PREFIX.sub("", "Step1: loss 2.1", count=1) == "Step1: loss 2.1"
    assert _HOST_PREFIX.sub("", "INFO: step 3", count=1) == "INFO: step 3"


def test_torchtitan_counter_of_the_whole_run_states_the_plan() -> None:
    from scope.analyzers.goodput.line_marks import scan_line

    # torchtitan prints `step: N/M = P%` where the run's length is known (tests/test_goodput_formats.py's line)
    line = "[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640/644 = 99.3789%  loss:  6.2116  memory: 87.04GiB"
    marks, _ = scan_line(line, 1, "train.log")
    assert [(m.row, m.step, m.total) for m in marks if m.kind == "step"] == [("torchtitan_step", 640, 644)]


def test_the_planned_last_epoch_evaluated_is_a_completed_run_vinvl_paddle(tmp_path: Path) -> None:
    r = goodput(write_log(tmp_path, VINVL_END))
    assert_sane_goodput(r)
    (a,) = r.acc.attempts
    assert a.ended == "completed" and "epoch 30 of 30 planned" in a.end_evidence
    # the same lines a plan of 31 epochs would leave running
    r31 = goodput(write_log(tmp_path / "31", ["  EPOCHS: 31", *VINVL_END[1:]]))
    assert r31.acc.attempts[0].ended == "running"


# ---- what the classes above must not catch (the review's counter-examples) -----------------------------


def test_a_per_epoch_training_time_line_is_no_end_of_the_run(tmp_path: Path) -> None:
    lines = []
    for epoch in range(3):
        for step in range(1, 6):
            t = epoch * 120 + step * 20
            lines.append(
                f"2024-05-01 10:{t // 60:02d}:{t % 60:02d} - INFO - epoch {epoch} step {step} loss 2.0 time 20.0s"
            )
        t = epoch * 120 + 110
        lines.append(f"2024-05-01 10:{t // 60:02d}:{t % 60:02d} - INFO - Training time: 100.0s")
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert len(r.acc.attempts) == 1, [(a.first_step, a.ended) for a in r.acc.attempts]


def test_a_crash_before_a_ctrl_c_on_the_hung_peers_is_the_failure(tmp_path: Path) -> None:
    crash = [
        "  [2025-09-11 14:10:52,001000][E][train:600:train] Traceback (most recent call last):",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "E0911 14:10:53.100000 1 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 1234) of binary: /usr/bin/python",
        "^C",
    ]
    r = goodput(write_log(tmp_path, TORCHTITAN_CTRL_C[:-1] + crash))
    assert r.acc.attempts[-1].ended == "failed", r.acc.attempts[-1].end_evidence


def test_an_evaluation_that_begins_is_not_its_end(tmp_path: Path) -> None:
    # 'Evaluating epoch N' is printed as evaluation starts: the 300 s after it are evaluation, not the 300 s before
    lines = []
    t = 0
    for epoch in range(3):
        for step in range(1, 11):
            t += 10
            lines.append(
                f"2024-05-01 {t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d} step {epoch * 10 + step} time 10.0s"
            )
        lines.append(f"2024-05-01 {t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d} Evaluating epoch {epoch}")
        t += 300
    r = goodput(write_log(tmp_path, lines))
    assert_sane_goodput(r)
    assert r.acc.buckets.get("evaluation", 0.0) < 100  # not the training before each line
