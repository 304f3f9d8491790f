"""Fixtures: the scripted orchestrator and gateway processes on free ports, over the shared test Postgres/Redis."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from stacgis_common.testing import RunningService, free_port, run_migrations, run_service

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from gateway_helpers import Gateways, gateway_env, services  # noqa: E402


@pytest.fixture(scope="session")
def orchestrator() -> Iterator[RunningService]:
    port = free_port()
    with run_service("gateway_test_orchestrator", {"ORCH_PORT": str(port), "PYTHONPATH": str(HERE)}, port) as service:
        yield service


@pytest.fixture(scope="session")
def gateways(pg_dsn: str, app_dsn: str, redis_url: str, orchestrator: RunningService) -> Iterator[Gateways]:
    """Two gateway processes sharing Redis and Postgres (trusted-header auth: tests pick users by header),
    connected as the application role on the schema the owner migrated, as deployed."""
    run_migrations("stacgis_gateway", {"GATEWAY_DATABASE_URL": pg_dsn})
    port_a, port_b = free_port(), free_port()
    common = {"GATEWAY_REDIS_KEY_PREFIX": "main:"}
    with services(
        ("stacgis_gateway", gateway_env(port_a, app_dsn, redis_url, orchestrator.url, **common), port_a),
        ("stacgis_gateway", gateway_env(port_b, app_dsn, redis_url, orchestrator.url, **common), port_b),
    ) as (a, b):
        yield Gateways(a, b, orchestrator, "main:")


@pytest.fixture(scope="session")
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()
