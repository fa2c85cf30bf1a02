#!/usr/bin/env bash
# The whole chain on a GPU machine (a few minutes): `scope run` with CUDA activities and the NVML
# sidecar on (1) a 1-rank NCCL job on CUDA (GEMMs + all-reduce, and a torch symmetric-memory
# all-reduce where the build and the GPU allow it) and (2) the ddp sample workload, then ingest and
# analyze each run, and print a summary: kernels by kind, communication kernels by rule, the
# breakdown, the per-stream overlap and the counters the sidecar wrote; then (3) the memory check: allocator
# history from step 0, the snapshot's replayed peak against torch.cuda.max_memory_allocated() (0.5%).
#
#   bash benchmarks/gpu_check.sh               # from the repository root; OUT=dir to keep outputs
#
# Exits non-zero when a step fails; needs a CUDA build of torch (nvidia-ml-py for the sidecar).
# CPU=1 runs the same chain without a GPU (gloo, CPU tensors) to check the script itself.
# benchmarks/device_check.sh checks the sidecar's NVML path alone.
set -u -o pipefail

cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT=${OUT:-$(mktemp -d -t scope-gpu-check-XXXXXX)}
mkdir -p "$OUT"
status=0
step() { echo; echo "=== $*"; }

step "machine"
nvidia-smi -L 2>&1 | head -8 || echo "(no nvidia-smi)"
"$PY" -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None); \
sys.exit(0 if torch.cuda.is_available() else 1)" || {
    if [ "${CPU:-0}" = 1 ]; then echo "CPU=1: the chain on CPU (gloo)"; else echo "no CUDA torch: nothing to check"; exit 3; fi
}

cat >"$OUT/nccl_job.py" <<'EOF'
"""1-rank NCCL job on CUDA: a small MLP trained with an all-reduce of its gradients per step."""
import os

import torch
import torch.distributed as dist

cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo")
dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(dev)
width = 4096 if cuda else 256
model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, width)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(2048 if cuda else 64, width, device=dev)
symm = None
try:
    if not cuda:
        raise RuntimeError("no CUDA")  # torch symmetric memory (multimem_all_reduce_kernel on NVLS; one-shot elsewhere) when available
    import torch.distributed._symmetric_memory as symm_mem

    symm_mem.enable_symm_mem_for_group(dist.group.WORLD.group_name)
    symm = symm_mem.empty(1 << 20, dtype=torch.bfloat16, device="cuda")
    symm_mem.rendezvous(symm, dist.group.WORLD.group_name)
except Exception as exc:  # older torch, no P2P: the NCCL part still runs
    print(f"symmetric memory unavailable: {type(exc).__name__}: {exc}")
    symm = None
for _ in range(8):
    loss = model(x).float().pow(2).mean()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    if symm is not None:
        try:
            torch.ops.symm_mem.one_shot_all_reduce(symm, "sum", dist.group.WORLD.group_name)
        except Exception as exc:
            print(f"symm_mem op failed: {type(exc).__name__}: {exc}")
            symm = None
    opt.step()
    opt.zero_grad()
if cuda:
    torch.cuda.synchronize()
dist.destroy_process_group()
print("nccl job done")
EOF

step "scope run: 1-rank NCCL job on CUDA (profiled steps 2-4, NVML sidecar at 2 Hz)"
timeout 300 "$PY" -m scope run --out "$OUT/nccl_run" --nproc-per-node 1 --profile-start 2 --profile-active 3 \
    --sidecar-hz 2 --hang-timeout 120 --force -- "$OUT/nccl_job.py" || { echo "nccl job failed"; status=1; }

step "scope run: ddp sample workload (gloo ranks, CUDA activities recorded where present)"
timeout 300 "$PY" -m scope run --out "$OUT/ddp_run" --nproc-per-node 2 --profile-start 2 --profile-active 3 \
    --sidecar-hz 2 --hang-timeout 120 --force -- -m scope.collectors.workloads.ddp --steps 8 \
    || { echo "ddp workload failed"; status=1; }

for run in nccl_run ddp_run; do
    [ -d "$OUT/$run" ] || continue
    step "ingest + analyze $run"
    timeout 300 "$PY" -m scope analyze "$OUT/$run" --json "$OUT/$run.analysis.json" --no-tables -q \
        || { echo "analyze $run exited $?"; status=1; }
done

step "summary"
timeout 120 "$PY" - "$OUT" <<'EOF' 2>&1 | tee "$OUT/summary.txt" || status=1
import json
import sys
from pathlib import Path

import pyarrow.parquet as pq

out = Path(sys.argv[1])
for run in ("nccl_run", "ddp_run"):
    path = out / f"{run}.analysis.json"
    if not path.exists():
        print(f"{run}: no analysis")
        continue
    report = json.loads(path.read_text())
    print(f"\n{run}: ranks {report['run'].get('traced_ranks')}, findings {[f['kind'] for f in report['findings']]}")
    print("  comm kernels by rule:", report["run"].get("comm_kernels"))
    store = out / run / "store"
    for part in sorted((store / "events").glob("rank-*.parquet")):
        df = pq.read_table(part, columns=["cat", "kind", "device"]).to_pandas()
        gpu = df[df["device"] >= 0]
        print(f"  {part.stem}: {len(df)} events, GPU kinds {gpu['kind'].astype(str).value_counts().to_dict()}")
    for table in ("breakdown", "comm_streams", "collective_groups"):
        rows = report.get(table) or []
        print(f"  {table}: {len(rows)} rows")
        for row in rows[:4]:
            print("    ", {k: v for k, v in row.items() if k not in ("start_ns", "end_ns")})
    hosts = sorted((out / run / "hosts").glob("*/*")) if (out / run / "hosts").exists() else []
    print(f"  sidecar files: {[p.name for p in hosts][:10]}")
EOF

step "memory: history from step 0, snapshot peak against torch.cuda.max_memory_allocated() (within 0.5%)"
timeout 300 "$PY" - "$OUT" <<'EOF' 2>&1 | tee "$OUT/memory.txt" || status=1
import sys
from pathlib import Path

import torch

from scope.analyzers.memory.snapshot import peak_sites, replay, reserve
from scope.memory_snapshot import load_snapshot

if not torch.cuda.is_available():
    print("no CUDA device: memory check skipped")
    sys.exit(0)
out = Path(sys.argv[1]) / "memory_snapshot.pickle"
torch.cuda.memory._record_memory_history(max_entries=200_000)  # step 0: nothing allocated before it
model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(6)]).cuda()
opt = torch.optim.Adam(model.parameters())
for _ in range(3):
    x = torch.randn(4096, 2048, device="cuda")
    model(x).float().pow(2).mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
want = torch.cuda.max_memory_allocated()
torch.cuda.memory._dump_snapshot(str(out))
torch.cuda.memory._record_memory_history(enabled=None)
snap = load_snapshot(out)
rep = replay(snap, torch.cuda.current_device())
gap = abs(rep.peak_bytes - want) / want
print(f"peak replayed {rep.peak_bytes:,} B, max_memory_allocated {want:,} B, gap {100 * gap:.3f}% ({snap.entries():,} entries)")
res = reserve(snap, torch.cuda.current_device())
print(f"reserved {res.reserved:,} B, allocated {res.allocated:,} B, external free {res.external_free:,} B")
for site in peak_sites(snap, rep)[:5]:
    print(f"  {site.bytes:>14,} B  {site.phase:<9} {site.site}")
sys.exit(0 if gap <= 0.005 else 1)
EOF

step "memory: the cost of arming snapshot-on-OOM (step time with the hook's recorder armed, as --memory-snapshot-on-oom does)"
timeout 300 "$PY" - <<'EOF' 2>&1 | tee "$OUT/memory_armed_cost.txt" || status=1
import sys
import tempfile
import time
from pathlib import Path

import torch

if not torch.cuda.is_available():
    print("no CUDA device: armed-cost check skipped")
    sys.exit(0)
from scope.collectors.hook.memsnap import DEFAULT_ENTRIES, MemorySnapshots

model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(24)]).cuda()
opt = torch.optim.Adam(model.parameters())


class Log:
    def info(self, text: str) -> None:
        print(text)

    def error(self, what: str, exc: BaseException) -> None:
        print(f"error {what}: {exc}")


def steps(n: int) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        model(torch.randn(256, 1024, device="cuda")).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / n


steps(5)  # warm-up
before = min(steps(20) for _ in range(3))
snaps = MemorySnapshots(Path(tempfile.mkdtemp()), Log(), DEFAULT_ENTRIES)
snaps.arm()  # what the hook does at the first step: the history of the last N events, the OOM observer
if not snaps.armed:
    sys.exit(1)
on = min(steps(20) for _ in range(3))
torch.cuda.memory._record_memory_history(enabled=None)
after = min(steps(20) for _ in range(3))  # off again: the GPU's own drift, for scale
off = (before + after) / 2
print(f"step {1e3 * off:.2f} ms off ({1e3 * before:.2f} before, {1e3 * after:.2f} after), {1e3 * on:.2f} ms armed: "
      f"+{100 * (on / off - 1):.1f}% ({DEFAULT_ENTRIES:,} entries; small allocations, many a step)")
EOF

step "done: outputs in $OUT (status $status)"
exit $status
