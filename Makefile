# stacgis: `make up` starts the whole product locally, `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := .local/stamps
# Local development uses the public development secrets, which services refuse without this switch
# (docs/security.md); a cluster never sets it.
export STACGIS_ALLOW_DEV_SECRETS ?= 1

.PHONY: help setup up down status infra-up infra-down data test lint lint-only fmt bench dashboards

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install everything from nothing: apt packages (as root), the venv, npm packages
	@bash scripts/setup.sh

up: setup ## start the whole product on http://localhost:8080
	@$(PY) scripts/stack.py up

down: ## stop everything `make up` started
	@$(PY) scripts/stack.py down

status: ## show each component and its port
	@$(PY) scripts/stack.py status

infra-up: setup ## start Postgres + pgvector, Redis and the local model server
	@$(PY) scripts/local_infra.py up

infra-down: ## stop the local infrastructure (data is kept)
	@$(PY) scripts/local_infra.py down

data: setup ## build the raster demo data (COGs + STAC catalog) under .local/data
	@$(PY) -m stacgis_raster.demo_data --cache .local/cache --out .local/data

test: setup ## run every test suite
	@bash scripts/test.sh

lint: setup lint-only ## ruff and mypy (strict) over the Python code, tsc and eslint over the frontend

lint-only:
	@$(VENV)/bin/ruff check services dev scripts tests observability
	@$(VENV)/bin/ruff format --check services dev scripts tests observability
	@bash scripts/mypy.sh
	@cd frontend && npm run --silent lint

fmt: setup ## format the Python code
	@$(VENV)/bin/ruff format services dev scripts tests observability
	@$(VENV)/bin/ruff check --fix services dev scripts tests observability

.PHONY: constraints
constraints: ## rewrite constraints.txt (every installed version, transitive too) from .venv after changing a pin
	@$(PY) scripts/constraints.py write

.PHONY: images images-setup test-images
images: setup ## build every container image with podman (docs/images.md); IMAGES_ARGS="--only vector-tools"
	@$(PY) scripts/images.py build $(IMAGES_ARGS)

images-setup: ## as root: install podman, mmdebstrap and the rest `make images` needs (apt), then setup
	@STACGIS_SETUP_IMAGES=1 bash scripts/setup.sh

test-images: setup ## build every image, start each against the local Postgres and Redis and check it (tests/images; part of `make test`)
	@$(PY) scripts/local_infra.py up --no-model-server
	@bash scripts/test-images.sh

.PHONY: eval
eval: setup ## measure the agent on the task suite (docs/eval.md); starts the stack if none answers; EVAL_ARGS="--tasks smoke"
	@curl -sf -o /dev/null --max-time 5 http://127.0.0.1:8080/api/v1/info || $(PY) scripts/stack.py up
	@$(PY) -m tests.eval $(EVAL_ARGS)

bench: setup ## run the benchmarks and print their figures
	@bash scripts/bench.sh

dashboards: setup ## regenerate the chart's Grafana dashboards and alert rules
	@$(PY) -m stacgis_observability
