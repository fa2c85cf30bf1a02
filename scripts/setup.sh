#!/usr/bin/env bash
# Set up scope in ./.venv: the package (editable), torch pinned to the CPU build for the demo and tests.
# With --test also the test tools and, when missing, Chromium for the browser tests (apt, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
quiet=(-q --disable-pip-version-check)

# The native ingest core compiles with gcc against zlib, and ISA-L where it is found (gzip inflated
# several times faster: setup.py's has_isal): fetch the headers when root and missing. ISA-L is optional:
# a system without the package still sets up.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  if [ ! -f /usr/include/zlib.h ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc zlib1g-dev >/dev/null
  fi
  if [ ! -f /usr/include/isa-l/igzip_lib.h ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libisal-dev; } \
      >/dev/null 2>&1 || echo "setup: libisal-dev could not be installed; gzip traces inflate with zlib" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# torch is pinned here only (the package asks for torch>=2.8 so GPU users keep their own build).
.venv/bin/pip install "${quiet[@]}" "torch==2.13.0"
.venv/bin/pip install "${quiet[@]}" -e ".[dask,nvml]"
# The native ingest core is optional (no compiler: the pure-Python reader is used); say which one runs.
if ! .venv/bin/python -c "import scope.ingest._native" 2>/dev/null; then
  echo "setup: the native ingest core was not built (needs gcc, Python headers and zlib1g-dev);" \
    "ingest uses the slower pure-Python reader" >&2
elif ! .venv/bin/python -c "import scope.ingest._native as n, sys; sys.exit(not n.has_fast_inflate())"; then
  echo "setup: the native ingest core was built without ISA-L (libisal-dev): gzip traces inflate with zlib," \
    "about 1.5x slower to ingest" >&2
fi

if [ "${1:-}" = "--test" ]; then
  .venv/bin/pip install "${quiet[@]}" -r requirements-test.txt
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
    else
      echo "setup: chromium not found and not root: browser tests will be skipped" >&2
    fi
  fi
fi
