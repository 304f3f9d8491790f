#!/usr/bin/env bash
# `make bench`: every benchmark in tests/bench in one go, then docs/benchmarks.md assembled from their
# fresh outputs, the explanations in docs/benchmarks/*.md, the load and fault figures of the last
# reliability run, and a description of the machine. Benchmarks report; they never fail the build.
#
#   bash scripts/bench.sh                 # all of them
#   BENCH_ONLY="stack raster" bash scripts/bench.sh
#   BENCH_ARGS_stack="--runs 80" bash scripts/bench.sh   # extra arguments for one benchmark
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=.local/bench
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1
export PYTHONUNBUFFERED=1
# The benchmarks start services with the public development secrets (docs/security.md).
export STACGIS_ALLOW_DEV_SECRETS=1

# bench_vector_index and bench_raster use the local Postgres/Redis; bench_stack starts its own.
$PY scripts/local_infra.py up --no-model-server >/dev/null || echo "[bench] local infrastructure did not start"

# The stack benchmark profiles what it measures (py-spy), so a poor figure comes with its cause.
: "${BENCH_ARGS_stack=--profile}"

date -u +%Y-%m-%dT%H:%M:%SZ >"$OUT/started"
cat /proc/loadavg >"$OUT/loadavg-start"
for bench in tests/bench/bench_*.py; do
  name=$(basename "$bench" .py)
  name=${name#bench_}
  if [ -n "${BENCH_ONLY:-}" ] && [[ " $BENCH_ONLY " != *" $name "* ]]; then
    continue
  fi
  args_var="BENCH_ARGS_${name}"
  printf '\n===== %s =====\n' "$bench"
  start=$SECONDS
  # shellcheck disable=SC2086  # extra arguments are meant to split
  $PY "$bench" ${!args_var:-} 2>"$OUT/$name.err" | tee "$OUT/$name.txt"
  status=${PIPESTATUS[0]}
  echo "$status $((SECONDS - start))" >"$OUT/$name.status"
  if [ "$status" -ne 0 ]; then
    printf '===== %s: exited %s after %ss (see %s)\n' "$bench" "$status" $((SECONDS - start)) "$OUT/$name.err"
    tail -n 20 "$OUT/$name.err"
  else
    printf '===== %s: %ss\n' "$bench" $((SECONDS - start))
  fi
done
cat /proc/loadavg >"$OUT/loadavg-end"

$PY tests/bench/benchmark_report.py --out docs/benchmarks.md --runs "$OUT" \
  && echo "[bench] wrote docs/benchmarks.md"
exit 0
