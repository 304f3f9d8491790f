"""Model server processes shared by the whole test session, started the way `make up` starts them.

`server` is the scripted one (the real model stays unloaded); `real_server` preloads the real model
once for every test that needs it: loading it per module cost a load each, and one process keeps
its prompt cache warm across modules (a request that shares a prompt prefix with the previous
one reads only the rest).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio
from model_server_helpers import real_env, real_model_problem

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


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    problem = real_model_problem()
    if problem is not None:
        pytest.skip(problem)
    port = free_port()
    # A high threshold: these tests do not save states (the warm-restart test runs its own servers).
    env = real_env(port, tmp_path_factory.mktemp("real-states"), state_min_tokens="100000")
    with run_service("stacgis_model_server", env, port) as service:
        yield service


@pytest_asyncio.fixture
async def real(real_server: RunningService) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=real_server.url, timeout=900) as http:
        yield http
