#!/usr/bin/env bash
# Build a copy of scope with the native ingest core under AddressSanitizer + UBSan, then fuzz it
# (scripts/fuzz_native.py). Usage: bash scripts/fuzz_native.sh [SECONDS] [SEED] [ITERATIONS]
# With ITERATIONS the inputs are the same on every machine and SECONDS is only a cap.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
seed=${2:-0}
iterations=${3:-0}
copy=${SCOPE_FUZZ_COPY:-$(mktemp -d /tmp/scope-asan.XXXXXX)}
work=${SCOPE_FUZZ_WORK:-$copy/fuzz-work}
rm -rf "$copy" && mkdir -p "$copy"
git ls-files -z | xargs -0 cp --parents -t "$copy"
cp scripts/fuzz_native.py "$copy/scripts/"  # the driver itself may not be committed yet
(
  cd "$copy"
  CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1" \
    LDFLAGS="-fsanitize=address,undefined" \
    "$OLDPWD/.venv/bin/python" setup.py -q build_ext --inplace 2>&1 | grep -v "^warning" || true
)
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
if [ ! -f "$asan" ] || [ ! -f "$ubsan" ]; then
  echo "fuzz: gcc's sanitizer runtimes (libasan, libubsan) are missing: apt-get install gcc" >&2
  exit 1
fi
# Python itself leaks by design at exit: leak reports would drown the real ones.
export SCOPE_SHARED_DATA="$PWD/../shared/data"
has_isal='import scope.ingest._native as n, sys; sys.exit(not n.has_fast_inflate())'
if .venv/bin/python -c "$has_isal" 2>/dev/null; then  # the core here has ISA-L: so must the fuzzed copy
  (cd "$copy" && LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$copy" \
    "$OLDPWD/.venv/bin/python" -c "$has_isal") || { echo "fuzz: the sanitized core was built without ISA-L" >&2; exit 1; }
fi
cd "$copy"
LD_PRELOAD="$asan:$ubsan" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  PYTHONPATH="$copy" "$OLDPWD/.venv/bin/python" scripts/fuzz_native.py --seconds "$seconds" --seed "$seed" \
  --iterations "$iterations" --work "$work"
cd "$OLDPWD"
[ -n "${SCOPE_FUZZ_COPY:-}" ] || rm -rf "$copy"  # kept when the run failed (set -e): the input to replay is in it
