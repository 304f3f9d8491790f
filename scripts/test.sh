#!/usr/bin/env bash
# Every test suite, against real servers started here. Used by `make test` and CI.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PYTEST=(.venv/bin/pytest -p no:cacheprovider)
export HF_HUB_OFFLINE=1
failed=()
run() { # run NAME COMMAND...: run one suite, remember failures, keep going
  local name=$1; shift
  printf '\n===== %s =====\n' "$name"
  local start=$SECONDS
  if "$@"; then
    printf '===== %s: passed (%ss)\n' "$name" $((SECONDS - start))
  else
    printf '===== %s: FAILED (%ss)\n' "$name" $((SECONDS - start))
    failed+=("$name")
  fi
}
existing() { for path in "$@"; do [ -e "$path" ] && printf '%s\n' "$path"; done; }

$PY scripts/local_infra.py up --no-model-server || exit 1

mapfile -t service_suites < <(existing services/common/tests dev/model-server/tests services/raster-tools/tests \
  services/vector-tools/tests services/knowledge-tools/tests services/memory-tools/tests \
  services/agent-orchestrator/tests services/chat-gateway/tests proto/tests tests/infra tests/chart)
for suite in "${service_suites[@]}"; do
  run "$suite" "${PYTEST[@]}" -q "$suite"
done

if [ -f frontend/package.json ]; then
  run "frontend unit tests" bash -c "cd frontend && npm test --silent"
fi

if [ -d tests/e2e ] || [ -d frontend/e2e ]; then
  $PY scripts/stack.py down >/dev/null 2>&1
  if ORCHESTRATOR_LLM_MODEL=scripted $PY scripts/stack.py up; then
    [ -d tests/e2e ] && run "tests/e2e" "${PYTEST[@]}" -q -s tests/e2e
    [ -d tests/observability ] && run "tests/observability" "${PYTEST[@]}" -q tests/observability
    [ -d frontend/e2e ] && run "frontend e2e (browser)" bash -c "cd frontend && npx playwright test"
  else
    failed+=("make up")
  fi
  $PY scripts/stack.py down
fi

# Reliability suites start their own private services on free ports (and their own Redis/Postgres
# where they break them), so they run after the shared stack is down.
for suite in tests/hostile tests/load tests/fault; do
  [ -d "$suite" ] && run "$suite" "${PYTEST[@]}" -q -s "$suite"
done

run "lint (ruff, mypy --strict, tsc + eslint)" bash -c "make --no-print-directory lint-only"

echo
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAILED suites: %s\n' "${failed[*]}"
  exit 1
fi
echo "all suites passed"
