#!/usr/bin/env bash
# Builds every container image and starts each one against the local Postgres and Redis (tests/images):
# `make test-images`, and the "images" job of `make test` (scripts/test.sh). Postgres and Redis must be
# up (scripts/local_infra.py up --no-model-server). docs/images.md.
# Without podman or mmdebstrap it installs them when it can (root with apt-get: what `make
# images-setup` installs), else it fails naming what is missing: the images are never skipped.
# The bases, the wheel image and podman's layer cache are kept between runs (scripts/images.py), so
# a second run rebuilds only what changed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
say() { printf '[test-images] %s\n' "$*"; }

if ! $PY scripts/images.py check; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "FAILED: the image engine is missing and this is not root with apt-get, so it cannot be installed here"
    exit 1
  fi
  say "installing the image engine with apt-get (STACGIS_SETUP_IMAGES=1 scripts/setup.sh --apt-only, as make images-setup)"
  STACGIS_SETUP_IMAGES=1 bash scripts/setup.sh --apt-only || exit 1
  if ! $PY scripts/images.py check; then
    say "FAILED: the apt install did not provide the image engine"
    exit 1
  fi
fi
$PY scripts/images.py build || exit 1
HF_HUB_OFFLINE=1 STACGIS_ALLOW_DEV_SECRETS=1 .venv/bin/pytest -p no:cacheprovider -q tests/images
