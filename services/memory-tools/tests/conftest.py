"""memory-tools under test: the session's database migrated by its owner, then the server as a real
process connected as the application role, as deployed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from stacgis_common.testing import RunningService, run_migrations, run_service


@pytest.fixture(scope="session")
def memory_env(tool_server_env: Callable[[str], dict[str, str]]) -> dict[str, str]:
    return tool_server_env("MEMORY_")


@pytest.fixture(scope="session")
def memory_server(memory_env: dict[str, str], app_dsn: str) -> Iterator[RunningService]:
    run_migrations("stacgis_memory", memory_env)
    env = {**memory_env, "MEMORY_DATABASE_URL": app_dsn}
    with run_service("stacgis_memory", env, int(memory_env["MEMORY_PORT"])) as service:
        yield service
