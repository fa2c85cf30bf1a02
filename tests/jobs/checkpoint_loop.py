"""A one-process job that checkpoints: torch.save to a file and to a buffer, torch.load, DCP save and load.

Run with the hook's sitecustomize on PYTHONPATH (as `scope run` starts ranks), twice in the same run
directory: the second run resumes from the first one's last file checkpoint.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import torch

out = Path(sys.argv[1])
steps = int(sys.argv[2])
model = torch.nn.Linear(256, 256)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
start = 0
if (out / "latest.pt").is_file():
    start = int(torch.load(out / "latest.pt", weights_only=False)["step"])
for step in range(start + 1, start + steps + 1):
    model(torch.randn(8, 256)).sum().backward()
    opt.step()
    opt.zero_grad()
    if step % 3 == 0:
        torch.save({"step": step, "model": model.state_dict()}, out / "latest.pt")
torch.save(model.state_dict(), io.BytesIO())  # a buffer, not a checkpoint
import torch.distributed.checkpoint as dcp  # noqa: E402

dcp.save({"model": model.state_dict()}, checkpoint_id=str(out / "dcp"))
dcp.load({"model": model.state_dict()}, checkpoint_id=str(out / "dcp"))
print("done", start)
