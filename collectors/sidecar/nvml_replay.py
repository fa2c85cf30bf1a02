"""Record NVML's answers, and replay them where there is no GPU: the `NvmlApi` of tests and demos.

Recording format (JSON, `"format": "scope-nvml-replay/1"`):

    {"format": ..., "provenance": "where these answers came from",
     "answers": {"<call key>": [answer, answer, ...]}}

A call key is the NVML function and its arguments, GPU index first: `nvmlDeviceGetPowerUsage(0)`,
`nvmlDeviceGetClockInfo(1,1)`, `nvmlEventSetWait_v2(0)`. `nvmlDeviceGetFieldValues` is stored per
field, `nvmlDeviceGetFieldValues(<gpu>,<fieldId>,<scopeId>)`, so any subset of fields replays.
Answers are in NVML's own form and units (see `scope.collectors.sidecar.nvml`); a failed call is
`{"nvmlError": <nvmlReturn_t code>}`. The n-th call of a key gets the n-th answer; past the end
the last answer repeats, so counters hold still and an event set keeps timing out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scope.collectors.sidecar.nvml_api import NVML_ERROR_NOT_SUPPORTED, NvmlApi, NvmlError

from scope.errors import ScopeError

FORMAT = "scope-nvml-replay/1"
FIELD_VALUES = "nvmlDeviceGetFieldValues"
ERROR_NAMES = {
    3: "NVML_ERROR_NOT_SUPPORTED",
    4: "NVML_ERROR_NO_PERMISSION",
    10: "NVML_ERROR_TIMEOUT",
    13: "NVML_ERROR_FUNCTION_NOT_FOUND",
    15: "NVML_ERROR_GPU_IS_LOST",
}


def call_key(function: str, gpu: int | None = None, *args: Any) -> str:
    parts = [] if gpu is None else [str(gpu)]
    parts += [json.dumps(a, separators=(",", ":")) for a in args]
    return f"{function}({','.join(parts)})"


def field_key(gpu: int, field_id: int, scope_id: int) -> str:
    return f"{FIELD_VALUES}({gpu},{field_id},{scope_id})"


def _raise_if_error(answer: Any, key: str) -> Any:
    if isinstance(answer, dict) and "nvmlError" in answer:
        code = int(answer["nvmlError"])
        raise NvmlError(code, f"{ERROR_NAMES.get(code, f'NVML error {code}')} (replayed {key})")
    return answer


class ReplayNvml:
    """Answers NVML calls from a recording, in the order they were recorded."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            raise ScopeError(f"{self.path}: NVML replay file not found") from None
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ScopeError(f"{self.path}: not a readable NVML replay ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("answers"), dict):
            raise ScopeError(f"{self.path}: not an NVML replay (expected a JSON object with format {FORMAT!r})")
        self.provenance = str(data.get("provenance", ""))
        self.answers: dict[str, list[Any]] = data["answers"]
        self._next: dict[str, int] = {}
        self.closed = False

    def _answer(self, key: str) -> Any:
        answers = self.answers.get(key)
        if not answers:
            raise NvmlError(NVML_ERROR_NOT_SUPPORTED, f"{key} is not in the recording {self.path.name}")
        index = self._next.get(key, 0)
        self._next[key] = index + 1
        return answers[min(index, len(answers) - 1)]

    def call(self, function: str, gpu: int | None = None, *args: Any) -> Any:
        if function == FIELD_VALUES:
            return [self._field(gpu or 0, int(fid), int(scope)) for fid, scope in args[0]]
        key = call_key(function, gpu, *args)
        return _raise_if_error(self._answer(key), key)

    def _field(self, gpu: int, field_id: int, scope_id: int) -> dict[str, Any]:
        key = field_key(gpu, field_id, scope_id)
        if key not in self.answers:  # what NVML does for a field it does not know: per-field failure
            return {
                "fieldId": field_id,
                "scopeId": scope_id,
                "timestamp": 0,
                "latencyUsec": 0,
                "valueType": 0,
                "nvmlReturn": NVML_ERROR_NOT_SUPPORTED,
                "value": None,
            }
        return dict(self._answer(key))

    def close(self) -> None:
        self.closed = True


class RecordingNvml:
    """Wraps a real `NvmlApi` and keeps every answer, to be saved as a replay."""

    def __init__(self, inner: NvmlApi) -> None:
        self.inner = inner
        self.answers: dict[str, list[Any]] = {}

    def _keep(self, key: str, answer: Any) -> None:
        self.answers.setdefault(key, []).append(answer)

    def call(self, function: str, gpu: int | None = None, *args: Any) -> Any:
        key = call_key(function, gpu, *args)
        try:
            answer = self.inner.call(function, gpu, *args)
        except NvmlError as exc:
            if function == FIELD_VALUES:
                for fid, scope in args[0]:
                    self._keep(field_key(gpu or 0, fid, scope), {"nvmlError": exc.code})
            else:
                self._keep(key, {"nvmlError": exc.code})
            raise
        if function == FIELD_VALUES:
            for value in answer:
                self._keep(field_key(gpu or 0, value["fieldId"], value["scopeId"]), value)
        else:
            self._keep(key, answer)
        return answer

    def close(self) -> None:
        self.inner.close()

    def save(self, path: Path | str, provenance: str) -> None:
        doc = {"format": FORMAT, "provenance": provenance, "answers": self.answers}
        Path(path).write_text(json.dumps(doc, indent=1) + "\n")
