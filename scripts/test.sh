#!/usr/bin/env bash
# Every test suite, against real servers started here. Used by `make test` and CI.
#   scripts/test.sh           everything
#   scripts/test.sh --quick   only the suites that need no shared stack: the service suites, the
#                             frontend unit tests, lint and the container images (no fixed ports, no
#                             reliability suites)
# TEST_JOBS (default 2: the CPU-heavy suites time out beside more on 2 cores) bounds how many of those run at once.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PYTEST=(.venv/bin/pytest -p no:cacheprovider)
export HF_HUB_OFFLINE=1
# Services refuse the public development secrets unless this is set (docs/security.md).
export STACGIS_ALLOW_DEV_SECRETS=1
QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
JOBS=${TEST_JOBS:-2}
failed=()
result() { # result NAME STATUS START: the line CI greps, and the failure remembered
  if [ "$2" = 0 ]; then
    printf '===== %s: passed (%ss)\n' "$1" $((SECONDS - $3))
  else
    printf '===== %s: FAILED (%ss)\n' "$1" $((SECONDS - $3))
    failed+=("$1")
  fi
}
run() { # run NAME COMMAND...: run one suite in the foreground, remember failures, keep going
  local name=$1; shift
  printf '\n===== %s =====\n' "$name"
  local start=$SECONDS
  "$@"
  result "$name" $? $start
}

# Suites that share nothing (each pytest session has its own database, Redis db, free ports and
# temporary folders; the shared download caches and .local/data are built under file locks) run
# side by side, at most $JOBS at once. Each one's output goes to a file, printed whole when it ends.
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/stacgis-test.XXXXXX")
trap 'rm -rf "$LOGS"' EXIT
declare -A job_name=() job_start=() job_log=()
start() { # start NAME COMMAND...: run one suite in the background once a slot is free
  while [ ${#job_name[@]} -ge "$JOBS" ]; do reap; done
  local name=$1; shift
  local log="$LOGS/${#job_log[@]}-${name//[^A-Za-z0-9]/_}.log"
  "$@" >"$log" 2>&1 </dev/null &
  job_name[$!]=$name job_start[$!]=$SECONDS job_log[$!]=$log
}
reap() { # wait for the next suite to end, then print its output and result
  local pid status
  wait -n -p pid
  status=$?
  printf '\n===== %s =====\n' "${job_name[$pid]}"
  cat "${job_log[$pid]}"
  # A suite killed mid-line leaves no final newline: the result line must start a line of its own.
  [ -n "$(tail -c 1 "${job_log[$pid]}")" ] && echo
  result "${job_name[$pid]}" $status "${job_start[$pid]}"
  unset "job_name[$pid]" "job_start[$pid]"
}
reap_all() { while [ ${#job_name[@]} -gt 0 ]; do reap; done; }
# Job control gives each background suite its own process group with SIGINT left on (without it a
# background job ignores SIGINT): Ctrl-C or a kill of this script interrupts every running suite,
# so that pytest tears its fixtures down, and 20 s later ends what is left of each group.
interrupt() {
  local pids=("${!job_name[@]}") pid left
  for pid in "${pids[@]}"; do kill -INT -- "-$pid" 2>/dev/null; done
  for _ in {1..40}; do
    left=0
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && left=1; done
    [ $left = 0 ] && break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  exit 130
}
existing() { for path in "$@"; do [ -e "$path" ] && printf '%s\n' "$path"; done; }
summary() { # the failed-suite list CI greps, and the exit status
  echo
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED suites: %s\n' "${failed[*]}"
    exit 1
  fi
  echo "all suites passed"
  exit 0
}

$PY scripts/local_infra.py up --no-model-server || exit 1

# Slowest first, so that the short ones fill the gaps at the end rather than a long one starting last.
mapfile -t service_suites < <(existing services/agent-orchestrator/tests services/chat-gateway/tests \
  services/raster-tools/tests dev/model-server/tests services/vector-tools/tests services/knowledge-tools/tests \
  tests/infra services/common/tests services/memory-tools/tests tests/chart proto/tests tests/eval tests/bench)
set -m
trap interrupt INT TERM
start "lint (ruff, mypy --strict, tsc + eslint)" bash -c "make --no-print-directory lint-only"
# The slowest job (8-10 min, about 15 on a fresh machine): build every image, then start and check
# each against the local Postgres and Redis (tests/images: free ports, its own database, Redis db and
# container names). It installs podman when it can, else fails naming what is missing.
start "images (make images + tests/images)" bash scripts/test-images.sh
for suite in "${service_suites[@]}"; do
  start "$suite" "${PYTEST[@]}" -q "$suite"
done
if [ -f frontend/package.json ]; then
  start "frontend unit tests" bash -c "cd frontend && npm test --silent"
fi
reap_all
trap - INT TERM
set +m

[ $QUICK = 1 ] && summary

if [ -d tests/e2e ] || [ -d frontend/e2e ]; then
  $PY scripts/stack.py down >/dev/null 2>&1
  if ORCHESTRATOR_LLM_MODEL=scripted $PY scripts/stack.py up; then
    # The browser specs against the stand-in gateway (each its own Vite and fake gateway on free
    # ports) run in the background beside the suites against the stack; the stack's own specs share
    # the scripted model's global rules, so they run one at a time after those. Not beside the first
    # phase: Chromium's GPU process runs at a raised priority and would starve the real-model suites.
    set -m
    trap interrupt INT TERM
    [ -d frontend/e2e ] && start "frontend e2e (stand-in, browser)" \
      bash -c "cd frontend && npx playwright test --project stand-in --output test-results/stand-in"
    [ -d tests/e2e ] && run "tests/e2e" "${PYTEST[@]}" -q -s tests/e2e
    [ -d tests/observability ] && run "tests/observability" "${PYTEST[@]}" -q tests/observability
    # The eval harness against the scripted model, which plays each task's right calls and answer:
    # anything short of 100 % is a broken harness, oracle or stack.
    [ -d tests/eval ] && run "eval harness (scripted model)" $PY -m tests.eval --scripted on --timeout 60 \
      --min-solvable 100 --min-refusals 100 --results .local/eval/scripted.json --report .local/eval/scripted.md
    [ -d frontend/e2e ] && run "frontend e2e (stack, browser)" \
      bash -c "cd frontend && npx playwright test --project stack --output test-results/stack"
    reap_all
    trap - INT TERM
    set +m
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

summary
