"""The built images started as containers against the local Postgres and Redis: `make test-images`.

`make images` builds them first (scripts/images.py records what it built in .local/images/built.json).
Each test session gets its own database and Redis db (stacgis_common.testing), free ports, and a
model server on the host (scripted chat + real embeddings) that the containers reach over loopback.
As in the chart, migrations and data loads run as the database's owner and the service containers
connect as the application role (no superuser, no DDL).
Without a working podman, or without the images, every test fails saying so: nothing is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from stacgis_common.testing import ToolEnv, free_port

from .containers import REPO, Container, built_images, container, engine_problem, expected_images, image_exists

# testcontainers would start Postgres and Redis through a Docker API; the containers here reach
# the local servers over the host network instead.
os.environ["STACGIS_TEST_NO_DOCKER"] = "1"

CACHE = Path(os.environ.get("STACGIS_TEST_CACHE", REPO / ".local" / "cache"))
DATA = REPO / ".local" / "data"
# Cities of a million or more: about 600 embeddings, loaded in seconds.
MIN_POPULATION = 1_000_000
DEV = {"STACGIS_ALLOW_DEV_SECRETS": "1"}
LOOPBACK_HOSTS = '["127.0.0.1:*","localhost:*"]'


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """name -> reference of every built image; fails (never skips) when podman or an image is missing."""
    problem = engine_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    built = built_images()
    missing = [name for name in expected_images() if name not in built or not image_exists(built[name])]
    if missing:
        pytest.fail(f"images not built: {', '.join(missing)}; run `make images` first", pytrace=False)
    return built


def migrate(image: str, module: str, prefix: str, dsn: str) -> None:
    """Apply a service's migrations from its image, as the chart's migration Job does."""
    from .containers import run_once

    done = run_once(image, ["python", "-m", module], {**DEV, f"{prefix}DATABASE_URL": dsn})
    assert done.returncode == 0, f"{module} in {image} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def demo_catalog() -> Path:
    """The raster demo catalog in .local/data (built once, as the raster suite does)."""
    command = [sys.executable, "-m", "stacgis_raster.demo_data", "--cache", str(CACHE), "--out", str(DATA)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"demo data build failed:\n{done.stdout}\n{done.stderr}"
    return DATA / "stac" / "catalog.json"


@pytest.fixture(scope="session")
def raster(images: dict[str, str], demo_catalog: Path) -> Iterator[Container]:
    port = free_port()
    env = {
        **DEV,
        "RASTER_HOST": "127.0.0.1",
        "RASTER_PORT": str(port),
        "RASTER_ALLOWED_HOSTS": LOOPBACK_HOSTS,
        "RASTER_STAC_URL": str(demo_catalog),
        "RASTER_ALLOWED_LOCAL_ROOTS": json.dumps([str(DATA)]),
    }
    url = f"http://127.0.0.1:{port}"
    with container(images["raster-tools"], "raster-tools", env, url, volumes=[DATA]) as handle:
        yield handle


@pytest.fixture(scope="session")
def vector(images: dict[str, str], tool_server_env: ToolEnv, app_dsn: str) -> Iterator[Container]:
    env = {**DEV, **tool_server_env("VECTOR_"), "VECTOR_HOST": "127.0.0.1", "VECTOR_ALLOWED_HOSTS": LOOPBACK_HOSTS}
    migrate(images["vector-tools"], "stacgis_vector.migrate", "VECTOR_", env["VECTOR_DATABASE_URL"])
    # The data load runs from the checkout (it reads the package cache the other suites share).
    load = [sys.executable, "-m", "stacgis_vector.load", "--cache", str(CACHE), "--min-population", str(MIN_POPULATION)]
    done = subprocess.run(
        load, env={**os.environ, **env}, cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, f"vector data load failed:\n{done.stdout}\n{done.stderr}"
    url = f"http://127.0.0.1:{env['VECTOR_PORT']}"
    with container(images["vector-tools"], "vector-tools", {**env, "VECTOR_DATABASE_URL": app_dsn}, url) as handle:
        yield handle


def _pgvector_tool_server(
    images: dict[str, str], tool_server_env: ToolEnv, app_dsn: str, name: str, package: str, prefix: str
) -> Iterator[Container]:
    env = {**DEV, **tool_server_env(prefix), f"{prefix}HOST": "127.0.0.1", f"{prefix}ALLOWED_HOSTS": LOOPBACK_HOSTS}
    migrate(images[name], f"{package}.migrate", prefix, env[f"{prefix}DATABASE_URL"])
    url = f"http://127.0.0.1:{env[f'{prefix}PORT']}"
    with container(images[name], name, {**env, f"{prefix}DATABASE_URL": app_dsn}, url) as handle:
        yield handle


@pytest.fixture(scope="session")
def knowledge(images: dict[str, str], tool_server_env: ToolEnv, app_dsn: str) -> Iterator[Container]:
    yield from _pgvector_tool_server(
        images, tool_server_env, app_dsn, "knowledge-tools", "stacgis_knowledge", "KNOWLEDGE_"
    )


@pytest.fixture(scope="session")
def memory(images: dict[str, str], tool_server_env: ToolEnv, app_dsn: str) -> Iterator[Container]:
    yield from _pgvector_tool_server(images, tool_server_env, app_dsn, "memory-tools", "stacgis_memory", "MEMORY_")


@pytest.fixture(scope="session")
def tool_servers(raster: Container, vector: Container, knowledge: Container, memory: Container) -> dict[str, Container]:
    return {"raster": raster, "vector": vector, "knowledge": knowledge, "memory": memory}


@dataclass
class ChatPath:
    gateway: Container
    orchestrator: Container
    model_url: str


@pytest.fixture(scope="session")
def chat_path(
    images: dict[str, str],
    pg_dsn: str,
    app_dsn: str,
    redis_url: str,
    embedding_server: str,
    tool_servers: dict[str, Container],
) -> Iterator[ChatPath]:
    """The orchestrator and gateway containers, the gateway calling the orchestrator container, the
    orchestrator calling the scripted model on the host and the tool server containers."""
    mcp = json.dumps({name: f"{server.url}/mcp" for name, server in tool_servers.items()})
    orchestrator_port, gateway_port = free_port(), free_port()
    orchestrator_env = {
        **DEV,
        "ORCHESTRATOR_HOST": "127.0.0.1",
        "ORCHESTRATOR_PORT": str(orchestrator_port),
        "ORCHESTRATOR_ALLOWED_HOSTS": '["*"]',
        "ORCHESTRATOR_REDIS_URL": redis_url,
        "ORCHESTRATOR_LLM_PROVIDER": "ollama",
        "ORCHESTRATOR_LLM_BASE_URL": embedding_server,
        "ORCHESTRATOR_LLM_MODEL": "scripted",
        "ORCHESTRATOR_EMBEDDING_BASE_URL": embedding_server,
        "ORCHESTRATOR_MCP_SERVERS": mcp,
    }
    orchestrator_url = f"http://127.0.0.1:{orchestrator_port}"
    gateway_env = {
        **DEV,
        "GATEWAY_HOST": "127.0.0.1",
        "GATEWAY_PORT": str(gateway_port),
        "GATEWAY_ALLOWED_HOSTS": '["*"]',
        "GATEWAY_DATABASE_URL": app_dsn,
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_ORCHESTRATOR_URL": orchestrator_url,
        "GATEWAY_VECTOR_TOOLS_URL": tool_servers["vector"].url,
        "GATEWAY_MCP_SERVERS": mcp,
        "GATEWAY_AUTH_MODE": "anonymous",
        "GATEWAY_MODEL_LABEL": "scripted",
        "GATEWAY_PROVIDER_LABEL": "ollama",
    }
    migrate(images["chat-gateway"], "stacgis_gateway.migrate", "GATEWAY_", pg_dsn)
    with (
        container(images["agent-orchestrator"], "agent-orchestrator", orchestrator_env, orchestrator_url) as orch,
        container(images["chat-gateway"], "chat-gateway", gateway_env, f"http://127.0.0.1:{gateway_port}") as gateway,
    ):
        yield ChatPath(gateway, orch, embedding_server)
