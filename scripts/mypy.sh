#!/usr/bin/env bash
# mypy --strict over each Python package's source, the scripts in scripts/ and the generators
# (one run per package or folder: separate import roots).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for src in services/*/src dev/*/src observability/src; do
  [ -d "$src" ] || continue
  .venv/bin/mypy --config-file mypy.ini "$src" || status=1
done
for target in scripts charts/stacgis/hack/gen_schema.py proto/python/generate.py; do
  .venv/bin/mypy --config-file mypy.ini "$target" || status=1
done
exit $status
