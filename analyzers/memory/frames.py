"""Module and op from a snapshot's frames (innermost first), as torch records them.

- module: the `forward` frames on the stack, outermost to innermost, each as `file:line` (a frame holds
  no class name): `model.py:30/linear.py:125` is torch's Linear.forward called from the model's forward;
- op: the ATen operator of the innermost C++ dispatcher frame (`at::_ops::addmm::call(...)`, recorded
  with `_record_memory_history(stacks="all")`) as `aten::addmm`; without C++ frames, the innermost
  function of torch.nn.functional (`F.linear`); '' where neither is on the stack.
"""

from __future__ import annotations

import re

from scope.memory_snapshot import Frame

ATEN_FRAME = re.compile(r"at::_ops::([A-Za-z0-9_]+)::(?:call|redispatch)\b")
FUNCTIONAL = "/torch/nn/functional.py"


def _place(frame: Frame) -> str:
    filename, line, _name = frame
    return f"{filename.rsplit('/', 1)[-1]}:{line}"


def module_of(stack: tuple[Frame, ...]) -> str:
    forwards = [_place(f) for f in stack if f[2] == "forward"]
    return "/".join(reversed(forwards))


def op_of(stack: tuple[Frame, ...]) -> str:
    for _filename, _line, name in stack:
        found = ATEN_FRAME.search(name)
        if found:
            return f"aten::{found.group(1)}"
    for filename, _line, name in stack:
        if filename.endswith(FUNCTIONAL):
            return f"F.{name}"
    return ""
