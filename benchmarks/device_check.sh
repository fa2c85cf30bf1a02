#!/usr/bin/env bash
# Exercise the sidecar's real NVML path on a GPU machine and print what it read (about 1 minute).
#
#   bash benchmarks/device_check.sh            # from the repository root
#
# Writes into $OUT (a temporary folder when unset): nvml_recording.json (a real NVML replay, see
# tests/data/nvml_replay/README.md), run/ (a `scope sample` run directory), sample_status.json,
# derived.txt and overhead.json. Exits non-zero when NVML is unusable or a step fails.
set -u -o pipefail

cd "$(dirname "$0")/.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT=${OUT:-$(mktemp -d -t scope-device-check-XXXXXX)}
mkdir -p "$OUT"
status=0
step() { echo; echo "=== $*"; }

step "machine"
nvidia-smi -L 2>&1 | head -16 || echo "(no nvidia-smi)"
nvidia-smi nvlink -s 2>&1 | head -20 || true
"$PY" -c "import pynvml, sys; print('nvidia-ml-py', getattr(pynvml, '__version__', '?'), 'python', sys.version.split()[0])" \
    || { echo "nvidia-ml-py missing: pip install nvidia-ml-py"; exit 3; }

step "probe: real NVML calls, 3 samples 1 s apart (recording every answer)"
timeout 120 "$PY" -m scope.collectors.sidecar.nvml --probe --ticks 3 --seconds 1 --record "$OUT/nvml_recording.json" \
    || { echo "probe failed"; status=1; }

step "optional GPU load while sampling (only when this python has CUDA torch)"
LOAD_PID=""
if "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    "$PY" -c "
import time, torch
a = torch.randn(8192, 8192, device='cuda'); end = time.time() + 8
while time.time() < end: a = (a @ a).clamp_(-1, 1)
torch.cuda.synchronize()" &
    LOAD_PID=$!
    echo "matmul load started (pid $LOAD_PID)"
else
    echo "no CUDA torch here: GPU idle while sampling"
fi

step "scope sample: 6 s at 2 Hz through every source"
timeout 60 "$PY" -m scope sample --out "$OUT/run" --seconds 6 --hz 2 --chunk-seconds 2 --json "$OUT/sample_status.json" \
    || { echo "scope sample failed"; status=1; }
[ -n "$LOAD_PID" ] && wait "$LOAD_PID"
cat "$OUT/run/hosts/"*/sidecar.log 2>/dev/null

step "what was written, and the derived signals"
timeout 120 "$PY" - "$OUT/run" <<'EOF' 2>&1 | tee "$OUT/derived.txt" || status=1
import sys
import pandas as pd
from scope import counter_signals

pd.set_option("display.width", 200)
pd.set_option("display.max_columns", 40)
run = sys.argv[1]
for table in counter_signals.TABLES:
    df = counter_signals.read_counters(run, table)
    print(f"{table}: {len(df)} rows, columns {list(df.columns)}")
gpu = counter_signals.read_counters(run, "gpu")
if len(gpu):
    print(gpu.drop(columns=["uuid"]).tail(4).to_string())
for name, df in counter_signals.derive_tables(run).items():
    print(f"\n{name}: {len(df)} rows")
    if len(df):
        print(df.head(8).to_string())
EOF

step "overhead with the real NVML (20 s subprocess at 1 Hz)"
timeout 180 "$PY" benchmarks/sidecar_overhead.py --ticks 100 --seconds 20 --json "$OUT/overhead.json" || status=1

step "done: outputs in $OUT (status $status)"
ls -la "$OUT"
exit $status
