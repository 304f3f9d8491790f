"""Real processes for the orchestrator tests: the local model server (scripted back end speaking the
Ollama protocol), small MCP tool servers built with the shared bootstrap, and orchestrators."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from stacgis_common.testing import RunningService, free_port, run_service

HERE = Path(__file__).parent
SERVERS = HERE / "servers"
sys.path.insert(0, str(HERE))

MEMORIES = {"alice": ["Alice reports elevations in feet", "Alice works on the Luxembourg flood study"]}


@dataclass
class ToolServer:
    service: RunningService
    port: int
    notes: Path
    env: dict[str, str]

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def mcp(self) -> str:
        return self.service.url + "/mcp"

    def notes_text(self) -> str:
        return self.notes.read_text() if self.notes.exists() else ""


@contextlib.contextmanager
def tool_server(variant: str, folder: Path, port: int | None = None, **settings: str) -> Iterator[ToolServer]:
    """A stand-in tool server (servers/geo_tools.py) of `variant`; `settings` are its GEOTOOLS_* extras."""
    port = port or free_port()
    notes = folder / f"{variant}-{port}-notes.txt"
    env = {
        "GEOTOOLS_PORT": str(port),
        "GEOTOOLS_VARIANT": variant,
        "GEOTOOLS_NOTES_FILE": str(notes),
        "GEOTOOLS_MEMORIES": json.dumps(MEMORIES),
        "PYTHONPATH": str(SERVERS),
        **{f"GEOTOOLS_{key.upper()}": value for key, value in settings.items()},
    }
    with run_service("geo_tools", env, port) as service:
        yield ToolServer(service, port, notes, env)


@pytest.fixture(scope="session")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    rules = tmp_path_factory.mktemp("rules") / "rules.json"
    rules.write_text('{"rules": []}')
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_RULES_PATH": str(rules)}
    with run_service("stacgis_model_server", env, port) as service:
        # Load the embedding model now (about 5-15 s here), so no test measures a cold start.
        warm = httpx.post(service.url + "/api/embed", json={"model": "all-minilm", "input": ["warm up"]}, timeout=120)
        assert warm.status_code == 200, warm.text
        yield service


@pytest.fixture(scope="session")
def tool_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tools")


@pytest.fixture(scope="session")
def raster(tool_folder: Path) -> Iterator[ToolServer]:
    with tool_server("raster", tool_folder) as server:
        yield server


@pytest.fixture(scope="session")
def vector(tool_folder: Path) -> Iterator[ToolServer]:
    with tool_server("vector", tool_folder) as server:
        yield server


@pytest.fixture(scope="session")
def memory(tool_folder: Path) -> Iterator[ToolServer]:
    with tool_server("memory", tool_folder) as server:
        yield server


def orchestrator_env(
    model_url: str, redis_url: str, servers: dict[str, str], trace_file: Path | None = None, **overrides: str
) -> dict[str, str]:
    env = {
        "ORCHESTRATOR_REDIS_URL": redis_url,
        "ORCHESTRATOR_LLM_BASE_URL": model_url,
        "ORCHESTRATOR_LLM_MODEL": "scripted",
        "ORCHESTRATOR_EMBEDDING_BASE_URL": model_url,
        "ORCHESTRATOR_MCP_SERVERS": json.dumps(servers),
        "ORCHESTRATOR_APPROVAL_TOOLS": '["save_note"]',
        "ORCHESTRATOR_APPROVAL_TIMEOUT_SECONDS": "5",
        "ORCHESTRATOR_TOOL_TIMEOUT_SECONDS": "10",
        "ORCHESTRATOR_LLM_TIMEOUT_SECONDS": "4",
        "ORCHESTRATOR_TOOL_RETRY_BACKOFF_SECONDS": "0.05",
        "ORCHESTRATOR_BREAKER_FAILURE_THRESHOLD": "3",
        "ORCHESTRATOR_BREAKER_RESET_SECONDS": "2",
        "ORCHESTRATOR_RESOURCE_CACHE_SECONDS": "0",
    }
    if trace_file is not None:
        env["ORCHESTRATOR_TRACE_FILE"] = str(trace_file)
    env.update({f"ORCHESTRATOR_{key.upper()}": value for key, value in overrides.items()})
    return env


@contextlib.contextmanager
def orchestrator(env: dict[str, str]) -> Iterator[RunningService]:
    port = free_port()
    with run_service("stacgis_orchestrator", {**env, "ORCHESTRATOR_PORT": str(port)}, port) as service:
        yield service


@pytest.fixture(scope="session")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traces") / "orchestrator-spans.jsonl"


@pytest.fixture(scope="session")
def stack_env(
    model_server: RunningService,
    redis_url: str,
    raster: ToolServer,
    vector: ToolServer,
    memory: ToolServer,
    trace_file: Path,
) -> dict[str, str]:
    servers = {"raster": raster.mcp, "vector": vector.mcp, "memory": memory.mcp}
    return orchestrator_env(model_server.url, redis_url, servers, trace_file)


@pytest.fixture(scope="session")
def orch(stack_env: dict[str, str]) -> Iterator[RunningService]:
    """Orchestrator A."""
    with orchestrator(stack_env) as service:
        yield service


@pytest.fixture(scope="session")
def orch_b(stack_env: dict[str, str]) -> Iterator[RunningService]:
    """Orchestrator B: a second replica on the same Redis."""
    with orchestrator(stack_env) as service:
        yield service


@pytest.fixture
def model_url(model_server: RunningService) -> str:
    return model_server.url
