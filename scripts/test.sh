#!/usr/bin/env bash
# Every test suite, against real servers started here. Used by `make test` and CI.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PYTEST=(.venv/bin/pytest -p no:cacheprovider)
export HF_HUB_OFFLINE=1
# Services refuse the public development secrets unless this is set (docs/security.md).
export STACGIS_ALLOW_DEV_SECRETS=1
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
  services/agent-orchestrator/tests services/chat-gateway/tests proto/tests tests/infra tests/chart tests/eval)
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
    # The eval harness against the scripted model, which plays each task's right calls and answer:
    # anything short of 100 % is a broken harness, oracle or stack.
    [ -d tests/eval ] && run "eval harness (scripted model)" $PY -m tests.eval --scripted on --timeout 60 \
      --min-solvable 100 --min-refusals 100 --results .local/eval/scripted.json --report .local/eval/scripted.md
    [ -d frontend/e2e ] && run "frontend e2e (browser)" bash -c "cd frontend && npx playwright test"
  else
    failed+=("make up")
  fi
  $PY scripts/stack.py down
fi

# A few eval tasks against the embedded model: scores are printed, not enforced (a low score does not
# fail CI; an unreachable stack, HTTP errors or an expectation that cannot be computed do).
EVAL_MODEL=${EVAL_EMBEDDED_MODEL:-qwen2.5-coder:1.5b}
if [ -d tests/eval ]; then
  if ORCHESTRATOR_LLM_MODEL=$EVAL_MODEL $PY scripts/stack.py up; then
    if curl -sf --max-time 30 -X POST http://127.0.0.1:11434/api/show -d "{\"model\": \"$EVAL_MODEL\"}" >/dev/null; then
      run "eval smoke ($EVAL_MODEL)" $PY -m tests.eval --tasks smoke --scripted off --timeout 420 \
        --results .local/eval/smoke.json --report .local/eval/smoke.md
      [ -d frontend/e2e ] && run "frontend e2e ($EVAL_MODEL, browser)" \
        bash -c "cd frontend && E2E_EMBEDDED=1 npx playwright test e2e/embedded.spec.ts"
    else
      # make setup always installs the embedded model: not serving it is a broken setup, not a skip.
      printf '\n===== eval smoke: FAILED, the local model server does not serve %s\n' "$EVAL_MODEL"
      failed+=("eval smoke: $EVAL_MODEL not served")
    fi
  else
    failed+=("make up ($EVAL_MODEL)")
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
