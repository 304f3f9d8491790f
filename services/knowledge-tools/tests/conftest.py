"""knowledge-tools under test: the repository's knowledge base ingested into the session's database
(as its owner, which migrates), then the server as a real process connected as the application role,
as deployed, called over the real MCP transport."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from knowledge_helpers import KNOWLEDGE_DIR, run_ingest

from stacgis_common.testing import RunningService, run_service


@pytest.fixture(scope="session")
def knowledge_env(tool_server_env: Callable[[str], dict[str, str]]) -> dict[str, str]:
    env = tool_server_env("KNOWLEDGE_")
    ingested = run_ingest(env, KNOWLEDGE_DIR)
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    return env


@pytest.fixture(scope="session")
def knowledge_server(knowledge_env: dict[str, str], app_dsn: str) -> Iterator[RunningService]:
    env = {**knowledge_env, "KNOWLEDGE_DATABASE_URL": app_dsn}
    with run_service("stacgis_knowledge", env, int(knowledge_env["KNOWLEDGE_PORT"])) as service:
        yield service
