"""A one-process job whose input is slow: each batch takes WAIT_S to produce (in the training thread,
num_workers=0), each step COMPUTE_S of work. It prints the time it spent in next(loader) itself, the
ground truth for the data-stall bucket.

    python slow_loader.py STEPS WAIT_S COMPUTE_S
"""

from __future__ import annotations

import json
import sys
import time

import torch

steps, wait_s, compute_s = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])


class SlowData(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return steps * 4

    def __getitem__(self, i: int) -> torch.Tensor:
        if i % 4 == 0:  # one slow item per batch of 4
            time.sleep(wait_s)
        return torch.randn(16)


model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = iter(torch.utils.data.DataLoader(SlowData(), batch_size=4))
waited = 0.0
for _ in range(steps):
    t0 = time.perf_counter()
    batch = next(loader)
    waited += time.perf_counter() - t0
    time.sleep(compute_s)
    model(batch).sum().backward()
    opt.step()
    opt.zero_grad()
print("waited " + json.dumps({"waited_s": waited}))
