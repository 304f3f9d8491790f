"""memory-tools under test: the server as a real process on the session's database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from stacgis_common.testing import RunningService, run_service


@pytest.fixture(scope="session")
def memory_env(tool_server_env: Callable[[str], dict[str, str]]) -> dict[str, str]:
    return tool_server_env("MEMORY_")


@pytest.fixture(scope="session")
def memory_server(memory_env: dict[str, str]) -> Iterator[RunningService]:
    with run_service("stacgis_memory", memory_env, int(memory_env["MEMORY_PORT"])) as service:
        yield service
