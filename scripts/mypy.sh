#!/usr/bin/env bash
# Run mypy (config: pyproject.toml [tool.mypy]) under the module names the code imports.
#
# collectors/, analyzers/ and app/ sit at the top of the repository but install as scope.collectors,
# scope.analyzers and scope.app (setup.py package_dir); the editable install maps them with an import
# finder that mypy cannot follow. Run on the folders as they lie, mypy would call app/server.py
# `app.server` while the code imports `scope.app.server`: every such import would be unresolved and,
# with ignore_missing_imports, silently Any. So this builds build/mypy/scope/ the way the package
# installs (scope's own files, plus analyzers, app and collectors) out of symlinks, checks that tree,
# and prints the paths of the repository's files.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
NAMESPACED=(collectors analyzers app)  # as in setup.py

tree=build/mypy/scope
rm -rf "$tree"
mkdir -p "$tree"
for entry in scope/* scope/.[!.]*; do
  [ -e "$entry" ] || continue
  name=$(basename "$entry")
  [ "$name" = __pycache__ ] && continue
  ln -s "../../../scope/$name" "$tree/$name"
done
for folder in "${NAMESPACED[@]}"; do
  if [ -e "scope/$folder" ]; then
    echo "mypy.sh: scope/$folder exists and would clash with the top-level $folder/" >&2
    exit 2
  fi
  ln -s "../../../$folder" "$tree/$folder"
done

# Paths in mypy's report: build/mypy/scope/app/server.py -> app/server.py, build/mypy/scope/x -> scope/x.
set +e
"$PYTHON" -m mypy "$@" 2>&1 | sed -E \
  -e "s#(^|[^[:alnum:]_/])build/mypy/scope/(collectors|analyzers|app)/#\1\2/#g" \
  -e "s#(^|[^[:alnum:]_/])build/mypy/scope/#\1scope/#g"
status=${PIPESTATUS[0]}
exit "$status"
