"""One model server process per test session, started the way `make up` starts it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from stacgis_common.testing import RunningService, free_port, run_service


@pytest.fixture(scope="session")
def server() -> Iterator[RunningService]:
    port = free_port()
    with run_service("stacgis_model_server", {"MODEL_SERVER_PORT": str(port)}, port) as service:
        yield service


@pytest_asyncio.fixture
async def client(server: RunningService) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        # Every test starts from the shipped rules and an empty request log.
        (await http.delete("/_scripted/rules")).raise_for_status()
        (await http.delete("/_scripted/requests")).raise_for_status()
        yield http
