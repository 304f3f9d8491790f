#!/usr/bin/env bash
# mypy --strict over each Python package's source (one run per package: separate import roots).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
for src in services/*/src dev/*/src observability/src; do
  [ -d "$src" ] || continue
  .venv/bin/mypy --config-file mypy.ini "$src" || status=1
done
exit $status
