"""vector-tools under test: the loader run once into the session's database (as its owner, which
migrates), then the server as a real process connected as the application role, as deployed, called
over the real MCP transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from vector_helpers import CACHE, run_loader

from stacgis_common.testing import RunningService, run_service


@pytest.fixture(scope="session")
def vector_env(tool_server_env: Callable[[str], dict[str, str]]) -> dict[str, str]:
    env = tool_server_env("VECTOR_")
    loaded = run_loader(env)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    return env


@pytest.fixture(scope="session")
def vector_server(vector_env: dict[str, str], app_dsn: str) -> Iterator[RunningService]:
    env = {**vector_env, "VECTOR_DATABASE_URL": app_dsn}
    with run_service("stacgis_vector", env, int(vector_env["VECTOR_PORT"])) as service:
        yield service


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    return CACHE
