#!/usr/bin/env bash
# Lay out the public memory snapshots the Mosaic parity test reads (tests/test_memory_mosaic_parity.py),
# from git checkouts or bare mirrors of their repositories, into DEST (outside the project: never commit
# them; kkaitlyn111/cs336-a2-systems has no licence, its files are read in place as a check).
#
#   scripts/public_snapshots.sh DEST MOSAIC_GIT FLEXGEN_GIT [CS336_GIT]
#   SCOPE_PUBLIC_SNAPSHOTS=DEST SCOPE_MOSAIC_SRC=... SCOPE_MOSAIC_PYTHON=... pytest tests/test_memory_mosaic_parity.py
#
# A file the mirror lacks (Git LFS, or left out of the snapshot for its size) is named and skipped.
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 DEST MOSAIC_GIT FLEXGEN_GIT [CS336_GIT]" >&2
  exit 2
fi
dest=$1 mosaic=$2 flexgen=$3 cs336=${4:-}
mkdir -p "$dest/cs336-a2-systems"

take() {  # take GIT_DIR PATH_IN_REPO DEST_FILE
  if git --git-dir="$1" cat-file -e "HEAD:$2" 2>/dev/null && git --git-dir="$1" show "HEAD:$2" >"$3.part"; then
    mv "$3.part" "$3" && echo "ok      $3 ($(stat -c %s "$3") bytes)"
  else
    rm -f "$3.part" && echo "absent  $2 (not in $1: LFS or too large for the mirror)"
  fi
}

gitdir() { if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi; }
mosaic=$(gitdir "$mosaic") flexgen=$(gitdir "$flexgen")
take "$mosaic" test/snapshots/output.pickle "$dest/mosaic_output.pickle"
take "$flexgen" oom_snapshot.pickle "$dest/oom_snapshot.pickle"
take "$flexgen" 1.3b_snapshot.pickle "$dest/1.3b_snapshot.pickle"
take "$flexgen" log1/1.3b_snapshot.pickle "$dest/log1_1.3b_snapshot.pickle"
if [ -n "$cs336" ]; then
  cs336=$(gitdir "$cs336")
  git --git-dir="$cs336" ls-tree -r --name-only HEAD | grep '\.pickle$' | while read -r path; do
    take "$cs336" "$path" "$dest/cs336-a2-systems/${path//\//__}"
  done
fi
