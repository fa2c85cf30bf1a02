"""Reading the hook's and the launcher's record files for goodput (records.py): guarded and bounded through
scope.recordio, progress thinned as it streams, and only the torch.load calls that were checkpoints kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scope.recordio import PROGRESS as PROGRESS_SCHEMA
from scope.recordio import Check, RecordFile, read_records

# Progress marks kept in memory: a longer record is thinned as it is read (consecutive lines merged, their
# DataLoader waits summed), so 10^7 lines cost what 10^5 do. 100,000 marks still place each step to within
# a thousandth of the run.
MAX_PROGRESS_MARKS = 100_000
# The smallest file a torch.load before the first step counts as a checkpoint by its size alone
# (collectors/hook/checkpoints.py decides the same for the records it writes; older hooks recorded every load).
CHECKPOINT_MIN_BYTES = 1 << 20


def jsonl(path: Path, warnings: list[str], schema: dict[str, Check]) -> list[dict[str, Any]]:
    """A record file's valid records, read guarded and bounded (scope.recordio): a FIFO, a device or a huge
    file is named in WARNINGS, and so are lines cut by a crash and values no record can hold."""
    return read_records(path, schema, warnings)


def progress(path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    """The voice's progress records, streamed and thinned to MAX_PROGRESS_MARKS: when the kept marks
    overflow, each pair becomes one (the later step and time, both lines' data waits), and every later
    group of as many lines one mark."""
    reader = RecordFile(path, PROGRESS_SCHEMA)
    kept: list[dict[str, Any]] = []
    stride, pending, waited = 1, 0, 0
    for rec in reader:
        waited += rec.get("data_ns") or 0
        pending += 1
        if pending < stride:
            continue
        kept.append({**rec, "data_ns": waited} if waited else rec)
        pending, waited = 0, 0
        if len(kept) >= MAX_PROGRESS_MARKS:
            kept = [_merged(kept[i], kept[i + 1]) for i in range(0, len(kept) - 1, 2)] + kept[len(kept) & ~1 :]
            stride *= 2
    said = reader.warning()
    if said:
        warnings.append(said)
    if stride > 1:
        warnings.append(f"{path}: {reader.read:,} progress records; read as {len(kept):,} marks of up to {stride} "
                        "lines each (their data waits summed)")  # fmt: skip
    return kept


def _merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    waited = (a.get("data_ns") or 0) + (b.get("data_ns") or 0)
    return {**b, "data_ns": waited} if waited else b


def checkpoint_calls(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that are checkpoints: an older hook recorded every torch.load, data shards included. A
    torch.load counts when it read a file the job saved, or came before the first step and read at least
    CHECKPOINT_MIN_BYTES (the rule collectors/hook/checkpoints.py applies as it records)."""
    saved = {rec.get("path") for rec in records if rec.get("op") == "save"}
    return [
        rec
        for rec in records
        if rec.get("api") != "torch.load"
        or rec.get("checkpoint") is True
        or rec.get("path") in saved
        or (rec.get("step") == 0 and (rec.get("bytes") or 0) >= CHECKPOINT_MIN_BYTES)
    ]
