"""Line formats of Hugging Face Trainer, accelerate and tqdm bars."""

from __future__ import annotations

import re

from scope.analyzers.goodput.formats.rows import NUM, LineFormat

_HF = "https://github.com/huggingface/transformers/blob/main/src/transformers/trainer.py"
_HF_MODEL = "https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_utils.py"
_TORCHTUNE = (
    "https://github.com/pytorch/torchtune/blob/main/recipes/lora_finetune_distributed.py (pbar.set_description)"
)
_TQDM = "https://github.com/tqdm/tqdm/blob/master/tqdm/std.py (format_meter: n/total [elapsed<remaining, rate])"
_ACC = "https://github.com/huggingface/accelerate/blob/main/src/accelerate/accelerator.py (save_state, load_state)"
_LLAMAFACTORY = (
    "https://github.com/hiyouga/LLaMA-Factory/blob/main/src/llamafactory/train/callbacks.py (LogCallback.on_log: "
    "trainer_log.jsonl)"
)
# An evaluation metric's value in a LLaMA-Factory record: a number, or what json.dumps writes for a float that is
# none (NaN, Infinity, -Infinity: a diverged eval_loss); `"eval_loss": null` (older versions, every record) is no
# evaluation. One pattern for the step row (none of these) and the eval row (one).
_EVAL_VALUE = r'"eval_\w+": (?:-?(?:\d|Infinity)|NaN)'
_ACC_CKPT = "https://github.com/huggingface/accelerate/blob/main/src/accelerate/checkpointing.py"

# tqdm draws each state of a bar as a frame: `\r`, the bar, and spaces over a longer frame before it
# (https://github.com/tqdm/tqdm/blob/master/tqdm/std.py, status_printer's print_status). A log that kept the
# frames but lost the carriage returns (a capture or a copy that drops `\r`) shows them glued on one line, tens of
# states a line between two newlines (HF Trainer's logs dict, printed every `logging_steps`), and two processes'
# bars interleaved frame by frame (`Loading checkpoint shards` of each rank): `...  9/4854 [00:14<2:13:35,
# 1.65s/it]  0%|   | 10/4854 [00:16<...`. A frame's end (`| n/total [elapsed<left, rate]`) with the next frame's
# `NN%|` after it (its description first, if any) is where the lost `\r` was: it is put back, so that each frame
# is read as a line's own (the bar rows read a frame at a line's start or after `\r`). The frame's brackets open
# with its elapsed clock (`[00:14<` or, total unknown, `[00:14,`: format_meter) and close within a bounded
# postfix (Lightning's metrics): no other `| n/m [` is a frame end, and no `[` unclosed scans the line's rest.
GLUED_BAR_FRAME = re.compile(
    r"(\|\s*(?:\d+|\?)/(?:\d+|\?)\s*\[(?:\d+:)?\d+:\d\d[<,][^\]\n\r]{0,600}\])(?=[^|\n\r]{0,80}?\d{1,3}%\|)"
)

ROWS: tuple[LineFormat, ...] = (
    # --- Hugging Face Trainer and accelerate ---------------------------------------------------------------
    LineFormat(
        "hf_train_bar",
        "HF Trainer",
        ("step",),
        r"(?:^|\r)\s*(?P<pct>\d+)%\|[^|\n]*\|\s*(?P<step>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)",
        "%|",
        _TQDM,
        clock=True,
        shared_bar=True,
    ),
    # A tqdm bar a training loop draws with its own description ("Training", "train", "Epoch 3/10"): the
    # count is the step (offset by the epoch where the description numbers it and the bar restarts each
    # epoch), the rate after the clock (1.45it/s, 2.48s/it) a step's time. Lightning's "Epoch N:" bar and
    # the bare bar have rows of their own.
    LineFormat(
        "tqdm_train_bar",
        "tqdm (a training loop's own bar)",
        ("step",),
        r"(?:^|\r)\s*(?!Epoch \d+:)(?![^|\n\r]{0,70}?(?i:eval|valid|test|predict|infer|generat|sampl))"
        r"(?P<desc>[^|\n\r]{0,40}?(?i:\btrain(?:ing)?\b|\bepoch\b)"
        r"(?:\s*\[?(?P<epoch>\d+)(?P<of>/\d+)?\]?)?[^|\n\r%]{0,30}?)\s*\d+%\|[^|\n]*\|\s*(?P<step>\d+)/"
        r"(?P<total>\d+)\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)<[^,\]\n]*,\s*"
        r"(?P<bar_rate>" + NUM + r")(?P<bar_unit>it/s|s/it)",
        "%|",
        _TQDM,
        clock=True,
        epoch_from=0,
    ),
    # torchtune's recipes: the bar described `{epoch + 1}|{global_step}|Loss: {loss}` (its `|` keeps the
    # training-bar row off it), behind a launcher's `[trainer0|0]:` prefix (torchx) when run multi-node
    LineFormat(
        "torchtune_bar",
        "torchtune",
        ("step",),
        r"(?:^|\r|\]:)\s*(?P<epoch>\d+)\|\d+\|Loss: " + NUM + r":\s*\d+%\|[^|\n]*\|\s*(?P<step>\d+)/"
        r"(?P<total>\d+)\s*\[(?P<elapsed>(?:\d+:)?\d+:\d\d)<[^,\]\n]*,\s*"
        r"(?P<bar_rate>" + NUM + r")(?P<bar_unit>it/s|s/it)",
        "|Loss: ",
        _TORCHTUNE,
        clock=True,
        epoch_from=1,
    ),
    LineFormat(
        "hf_total_batch",
        "HF Trainer",
        ("batch_size",),
        r"Total train batch size \(w\. parallel, distributed & accumulation\) = (?P<batch>[\d,]+)",
        "Total train batch size",
        _HF + " (_inner_training_loop)",
    ),
    # the run's planned optimizer steps (max_steps, or the epochs' worth): a loop that ends short of it with
    # `Training completed.` was stopped (a callback's should_training_stop: LLaMA-Factory's Web UI abort)
    LineFormat(
        "hf_plan_steps",
        "HF Trainer",
        ("plan",),
        r"Total optimization steps = (?P<total>[\d,]+)",
        "Total optimization steps",
        _HF + " (_inner_training_loop)",
    ),
    LineFormat(
        "hf_train_begin", "HF Trainer", ("train_begin",), r"\*{5} Running training \*{5}", "***** Running training", _HF
    ),
    LineFormat(
        "hf_eval_begin",
        "HF Trainer",
        ("eval_begin",),
        r"\*{5} Running (?:Evaluation|Prediction) \*{5}",  # (evaluation_loop's description: predict() too)
        "***** Running ",
        _HF,
    ),
    LineFormat("hf_eval_end", "HF Trainer", ("eval_end",), r"\{'eval_loss': ", "{'eval_loss'", _HF),
    # the example scripts' trainer.log_metrics("eval", metrics) after trainer.evaluate(): the result block
    LineFormat(
        "hf_eval_metrics",
        "HF Trainer",
        ("eval_end",),
        r"^\*{5} eval metrics \*{5}",
        "***** eval metrics",
        "https://github.com/huggingface/transformers/blob/main/src/transformers/trainer_pt_utils.py (log_metrics)",
    ),
    LineFormat(
        "hf_save_begin",
        "HF Trainer",
        ("save_begin",),
        r"Saving model checkpoint to \S+",
        "Saving model checkpoint to",
        _HF,
    ),
    LineFormat(
        "hf_save_file",
        "HF Trainer",
        ("save_progress",),
        r"(?:Model weights saved in|Configuration saved in|tokenizer config file saved in"
        r"|Special tokens file saved in) \S+",
        " saved in ",
        _HF_MODEL,
    ),
    # (not jieba's `Loading model from cache /tmp/jieba.cache`: its dictionary, jieba/__init__.py initialize)
    LineFormat(
        "hf_load_begin", "HF Trainer", ("load_begin",), r"Loading model from (?!cache )\S+", "Loading model from", _HF
    ),
    LineFormat(
        "hf_resume",
        "HF Trainer",
        ("resume",),
        r"Continuing training from global step (?P<step>\d+)",
        "Continuing training from global step",
        _HF,
    ),
    LineFormat(
        "hf_train_end", "HF Trainer", ("train_end",), r"Training completed\. Do not forget", "Training completed.", _HF
    ),
    # Ends by design short of the plan: the trainer reloads its best checkpoint after the loop
    # (load_best_model_at_end, printed after `Training completed.`, with EarlyStoppingCallback's stop), and an
    # IterableDataset that runs out before max_steps stops the loop with a warning. endings.EARLY_STOP_ROWS.
    LineFormat(
        "hf_load_best",
        "HF Trainer",
        ("train_end",),
        r"Loading best model from \S+ \(score: ",
        "Loading best model from",
        _HF + " (_load_best_model: `Loading best model from {best_model_checkpoint} (score: {best_metric}).`)",
    ),
    LineFormat(
        "hf_data_exhausted",
        "HF Trainer",
        ("train_end",),
        r"There seems (?:to be not|not to be) a single sample in your epoch_iterator, stopping training at step "
        r"(?P<step>\d+)!",
        "stopping training at step",
        _HF + " (_inner_training_loop: `if step < 0: logger.warning(...)`)",
    ),
    # The console callback prints the logs dict each `logging_steps`: a step counter only in some versions
    # ('step': N, or its value quoted); the step is then worked out from the epoch (hf_trainer.py). Bare, after
    # a `[...]` prefix, or after LLaMA-Factory's logger prefix `[INFO|2024-11-26 22:09:01] logging.py:157 >> `
    # (llamafactory/extras/logging.py: "[%(levelname)s|%(asctime)s] %(name)s:%(lineno)s >> %(message)s"); keys after
    # the epoch are the callbacks' own (LLaMA-Factory's `'throughput'`, on in its Web UI since 2025; `'reward'`,
    # `'accuracy'`), each a quoted key and a value with no comma or brace, so the tail is read in one pass.
    LineFormat(
        "hf_log_line",
        "HF Trainer",
        ("step",),
        r"(?:^|(?<=\])|(?<=>>))\s*\{'loss': '?" + NUM + r"'?,.*?'epoch': '?(?P<epoch_f>" + NUM + r")'?"
        r"(?:, 'step': '?(?P<step>\d+)'?)?(?:, '[^',}]+': '?[^',}]*'?)*\s*\}",
        "{'loss'",
        _HF + " (_maybe_log_save_evaluate -> log; trainer_callback.py PrinterCallback / ProgressCallback.on_log)",
    ),
    # LLaMA-Factory's trainer_log.jsonl (its LogCallback.on_log, one JSON record per logging step): the step,
    # the planned steps, and the time since the launch's start as `elapsed_time` (str(timedelta): H:MM:SS,
    # "1 day, 2:03:04")
    LineFormat(
        "llamafactory_jsonl",
        "LLaMA-Factory",
        ("step",),
        r"^\s*\{(?!.*" + _EVAL_VALUE + r')(?=.*"current_steps": (?P<step>\d+))'
        r'(?:(?=.*"total_steps": (?P<total>\d+)))?'
        r'(?=.*"elapsed_time": "(?P<elapsed>(?:\d+ days?, )?\d+:\d\d:\d\d)")',
        '"current_steps"',
        _LLAMAFACTORY,
        clock=True,
        records=True,
    ),
    # an evaluation's record (on_log with the evaluate() metrics: an `eval_loss` value; older versions write
    # `"eval_loss": null` in every training record: https://github.com/suzushi-tw/luojiu-7b-base's): the same
    # step as the training record before it, its `elapsed_time` later by the whole evaluation (13 evaluations of
    # 218-228 s each in a QLoRA run evaluated every 500 steps); read as a step record, it hid that time in
    # the training's
    LineFormat(
        "llamafactory_jsonl_eval",
        "LLaMA-Factory",
        ("eval_end",),
        r'^\s*\{(?=.*"current_steps": (?P<step>\d+))(?=.*' + _EVAL_VALUE + r")"
        r'(?=.*"elapsed_time": "(?P<elapsed>(?:\d+ days?, )?\d+:\d\d:\d\d)")',
        '"eval_',
        _LLAMAFACTORY,
        clock=True,
    ),
    # its last record, written by the trainer's closing on_log (the train summary: no loss, no learning rate
    # and no eval loss, which on_log drops when None): training finished
    LineFormat(
        "llamafactory_jsonl_end",
        "LLaMA-Factory",
        ("train_end",),
        r'^\s*\{"current_steps": (?P<step>\d+), "total_steps": \d+, "epoch": ',
        '"current_steps"',
        _LLAMAFACTORY,
    ),
    # train()'s speed metrics: the training loop's own runtime and rate, printed once at its end
    LineFormat(
        "hf_train_summary",
        "HF Trainer",
        ("train_end",),
        r"(?:^|(?<=\]))\s*\{'train_runtime': '?(?P<dur_s>" + NUM + r")'?"
        r"(?:.*?'train_steps_per_second': '?(?P<rate>" + NUM + r")'?)?"
        r".*?'epoch': '?(?P<epoch_f>" + NUM + r")'?(?:, 'step': '?(?P<step>\d+)'?)?",
        "{'train_runtime'",
        _HF + " (train: speed_metrics('train', start_time, num_samples, num_steps))",
    ),
    LineFormat(
        "hf_train_output",
        "HF Trainer",
        ("train_end",),
        r"TrainOutput\(global_step=(?P<step>\d+)",
        "TrainOutput(global_step=",
        "https://github.com/huggingface/transformers/blob/main/src/transformers/trainer_utils.py (TrainOutput)",
    ),
    LineFormat(
        "accelerate_save_begin",
        "accelerate",
        ("save_begin",),
        r"Saving current state to \S+",
        "Saving current state to",
        _ACC,
    ),
    LineFormat(
        "accelerate_save_file",
        "accelerate",
        ("save_progress",),
        r"(?:Model weights|Optimizer state|Scheduler state|Random states) saved in \S+",
        " saved in ",
        _ACC_CKPT,
    ),
    LineFormat(
        "accelerate_load_begin", "accelerate", ("load_begin",), r"Loading states from \S+", "Loading states from", _ACC
    ),
    LineFormat(
        "accelerate_load_end",
        "accelerate",
        ("load_end",),
        r"All (?:model weights|random states) loaded successfully",
        "loaded successfully",
        _ACC_CKPT,
    ),
)
