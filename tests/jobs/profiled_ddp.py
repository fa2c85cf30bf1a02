"""A small real DDP job (gloo, CPU) that profiles itself; the ingest tests run it under torchrun.

Usage: torchrun --standalone --nproc-per-node 4 tests/jobs/profiled_ddp.py OUT_DIR
"""

import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule


def main(out_dir: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = schedule(wait=1, warmup=1, active=3)

    def export(prof: profile) -> None:
        prof.export_chrome_trace(f"{out_dir}/rank{rank}.pt.trace.json")

    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True, on_trace_ready=export) as prof:
        for _ in range(6):
            loss = model(torch.randn(64, 256)).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
