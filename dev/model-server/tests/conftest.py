"""One model server process per test session, started the way `make up` starts it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from stacgis_common.testing import RunningService, free_port, run_service


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    port = free_port()
    # Saved prompt states go to a temporary folder, never to the shared .local/models/state.
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_STATE_DIR": str(tmp_path_factory.mktemp("states"))}
    with run_service("stacgis_model_server", env, port) as service:
        yield service


@pytest_asyncio.fixture
async def client(server: RunningService) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        # Every test starts from the shipped rules and an empty request log.
        (await http.delete("/_scripted/rules")).raise_for_status()
        (await http.delete("/_scripted/requests")).raise_for_status()
        yield http
