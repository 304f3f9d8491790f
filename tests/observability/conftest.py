"""Fixtures of the observability tests that need the running local product (`make up`)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from stacgis_common.testing import free_port

from .live import MODEL_SERVER, ROOT, Prometheus, ScriptedModel, not_ready
from .traffic import TrafficReport, run_traffic

READY_WAIT_SECONDS = 60
START_HINT = (
    "start it with `ORCHESTRATOR_LLM_MODEL=scripted .venv/bin/python scripts/stack.py up` (what `make test` does)"
)


@pytest.fixture(scope="session")
def stack() -> None:
    # A service the stack's supervisor is restarting gets a minute to come back.
    deadline = time.monotonic() + READY_WAIT_SECONDS
    down = not_ready()
    while down and time.monotonic() < deadline:
        time.sleep(1)
        down = not_ready()
    if down:
        pytest.fail(f"the local product is not running ({', '.join(down)} not ready): {START_HINT}", pytrace=False)
    try:
        scripted = httpx.get(f"{MODEL_SERVER}/_scripted/rules", timeout=5).status_code == 200
    except httpx.HTTPError:
        scripted = False
    if not scripted:
        pytest.fail(
            f"the model server at {MODEL_SERVER} does not run the scripted back end: {START_HINT}", pytrace=False
        )


@pytest.fixture(scope="session")
def prometheus(stack: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    rules = sorted((ROOT / "charts" / "stacgis" / "rules").glob("*.yaml"))
    server = Prometheus(tmp_path_factory.mktemp("prometheus"), free_port(), rules)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def traffic(prometheus: Prometheus) -> TrafficReport:
    """The scripted traffic run, made while the test's Prometheus scrapes every service."""
    return run_traffic(ScriptedModel())
