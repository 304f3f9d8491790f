"""Test helpers shared by every service's suite (loaded as a pytest plugin).

Postgres and Redis come from testcontainers when a Docker engine answers, else from the local
servers started by `make infra-up`. Each test session gets its own fresh database and Redis db.
The tool servers that embed text get a real embedding server: the local model server
(all-MiniLM-L6-v2 behind Ollama's /api/embed), started once per session on a free port.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from .auth import mint_internal_token
from .settings import DEV_TOKEN_SECRET, ServiceSettings

LOCAL_PG_ADMIN_DSN = os.environ.get("STACGIS_TEST_PG_DSN", "postgresql://stacgis:stacgis@127.0.0.1:55432/stacgis")
LOCAL_REDIS = os.environ.get("STACGIS_TEST_REDIS_URL", "redis://127.0.0.1:56379")
REPO_ROOT = Path(__file__).resolve().parents[4]
# Set to the URL of an already running model server (e.g. the one `make up` starts) to reuse it.
EMBEDDING_URL_ENV = "STACGIS_TEST_EMBEDDING_URL"
# Each service's settings class ("module:Class"), for tests that load a deployment's settings.
SERVICE_SETTINGS = {
    "chat-gateway": "stacgis_gateway.config:GatewaySettings",
    "agent-orchestrator": "stacgis_orchestrator.settings:OrchestratorSettings",
    "raster-tools": "stacgis_raster.settings:RasterSettings",
    "vector-tools": "stacgis_vector.settings:VectorSettings",
    "knowledge-tools": "stacgis_knowledge.settings:KnowledgeSettings",
    "memory-tools": "stacgis_memory.settings:MemorySettings",
}


def settings_class(path: str) -> type[ServiceSettings]:
    """The settings class a "module:Class" path of SERVICE_SETTINGS names."""
    module, _, name = path.partition(":")
    cls: type[ServiceSettings] = getattr(importlib.import_module(module), name)
    return cls


def error_of(response: httpx.Response, status: int, field: str | None = None) -> dict[str, Any]:
    """The body of an error answer, checked against the one error body (`stacgis_common.http_errors`):
    `status`, `{"field", "message", "code"}`, and `field` named both as the field and in the message."""
    assert response.status_code == status, (response.status_code, response.text)
    return checked_error_body(response.json(), field)


def checked_error_body(body: Any, field: str | None = None) -> dict[str, Any]:
    """`body` checked as the one error body naming `field` (see `error_of`)."""
    assert isinstance(body, dict), body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert isinstance(body.get("code"), str) and body["code"], body
    assert "detail" not in body, body
    assert body.get("field") == field, body
    if field is not None:
        assert body["message"].startswith(f"{field}: "), body
    return body


def run_module(module: str, *args: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`python -m module args` (a loader, an ingest, a data build) from the repository root, with this
    process's environment and `env` over it; its output captured, its exit status left to the caller."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def token_for(user_id: str, session_id: str | None = None, ttl_seconds: int = 900) -> str:
    """An internal token signed with the development secret the test services run with."""
    return mint_internal_token(DEV_TOKEN_SECRET, user_id, session_id, ttl_seconds)


class RunningService:
    def __init__(self, process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
        self.process = process
        self.url = url
        self.log_path = log_path

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@contextlib.contextmanager
def run_service(
    module: str,
    env: dict[str, str],
    port: int,
    ready_path: str = "/healthz",
    timeout: float = 90.0,
) -> Iterator[RunningService]:
    """Start `python -m module` as a real process and wait until `ready_path` answers 200."""
    log_file = tempfile.NamedTemporaryFile(prefix=f"{module}-", suffix=".log", delete=False)
    # Test services use the development secrets: the switch that allows them is on unless `env` says otherwise.
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "STACGIS_ALLOW_DEV_SECRETS": "1", **env}
    process = subprocess.Popen(
        [sys.executable, "-m", module], env=full_env, stdout=log_file, stderr=subprocess.STDOUT, cwd=REPO_ROOT
    )
    url = f"http://127.0.0.1:{port}"
    service = RunningService(process, url, Path(log_file.name))
    deadline = time.monotonic() + timeout
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{module} exited with {process.returncode}:\n{service.logs()[-4000:]}")
            try:
                if httpx.get(url + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{module} not ready after {timeout}s:\n{service.logs()[-4000:]}")
            time.sleep(0.2)
        yield service
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        log_file.close()


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str | None) -> AsyncIterator[Any]:
    """A connected MCP ClientSession to `url` (the server's /mcp endpoint) with a bearer token."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(60.0, read=120.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call_tool(url: str, tool: str, arguments: dict[str, Any], user: str = "tester") -> tuple[bool, Any]:
    """(is_error, parsed JSON result or error text) of one tool call over MCP to the server at `url`,
    as `user`. The result is read from the text content, which is what reaches the model."""
    async with mcp_client(url + "/mcp", token_for(user)) as session:
        result = await session.call_tool(tool, arguments)
    if result.is_error:
        return True, result.content[0].text
    return False, json.loads(result.content[0].text)


def _docker_available() -> bool:
    if os.environ.get("STACGIS_TEST_NO_DOCKER"):
        return False
    try:
        import docker

        docker.from_env(timeout=2).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine here"
        return False


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """DSN of a fresh, empty database (pgvector available) for this test session."""
    if _docker_available():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("pgvector/pgvector:pg16", driver=None) as container:
            yield container.get_connection_url()
        return
    import asyncio

    import asyncpg

    name = f"test_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        connection = await asyncpg.connect(LOCAL_PG_ADMIN_DSN)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    try:
        asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    except OSError as error:
        pytest.fail(f"no Postgres at {LOCAL_PG_ADMIN_DSN} ({error}); run `make infra-up`")
    base = LOCAL_PG_ADMIN_DSN.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _local_infra() -> Any:
    """scripts/local_infra.py, where the application role and its grants are defined once."""
    scripts = str(REPO_ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.append(scripts)
    import local_infra

    return local_infra


def app_role_url(owner_dsn: str) -> str:
    """`owner_dsn`'s database as the application role (see grant_app_role)."""
    parts = urlsplit(owner_dsn)
    infra = _local_infra()
    return urlunsplit(parts._replace(netloc=f"{infra.APP_USER}:{infra.APP_PASSWORD}@{parts.hostname}:{parts.port}"))


def grant_app_role(owner_dsn: str) -> str:
    """Give the application role the services connect as when deployed (no superuser, no DDL: rows only)
    the schemas the owner of `owner_dsn` has and will create in its database, as `make up` and the chart
    do; returns the role's URL. Migrations and data loads keep the owner's URL."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import asyncpg

    parts = urlsplit(owner_dsn)
    sql = _local_infra().app_role_sql(parts.path.lstrip("/"), owner=parts.username)

    async def run() -> None:
        connection = await asyncpg.connect(owner_dsn)
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    # On a thread's own event loop: callers inside a running loop (a benchmark's rig) can use it too.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result()
    return app_role_url(owner_dsn)


@pytest.fixture(scope="session")
def app_dsn(pg_dsn: str) -> str:
    """The session database as the application role; a service started with it needs its migrations
    applied first with `pg_dsn` (run_migrations, or a loader that migrates)."""
    return grant_app_role(pg_dsn)


def run_migrations(package: str, env: dict[str, str]) -> None:
    """`python -m <package>.migrate` with `env` (its database URL the owner's), as the chart's Job runs it."""
    done = subprocess.run(
        [sys.executable, "-m", f"{package}.migrate"],
        env={**os.environ, "HF_HUB_OFFLINE": "1", "STACGIS_ALLOW_DEV_SECRETS": "1", **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{package} migrations failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of an empty Redis database reserved for this test session."""
    if _docker_available():
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:7.4-alpine") as container:
            yield f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"
        return
    import redis

    # Redis has 16 numbered databases: lock one (1..15) so parallel test sessions never share it.
    for index in range(1, 16):
        handle = open(os.path.join(tempfile.gettempdir(), f"stacgis-test-redis-{index}.lock"), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        url = f"{LOCAL_REDIS}/{index}"
        try:
            redis.Redis.from_url(url).flushdb()
        except redis.ConnectionError as error:
            handle.close()
            pytest.fail(f"no Redis at {LOCAL_REDIS} ({error}); run `make infra-up`")
        try:
            yield url
        finally:
            handle.close()
        return
    pytest.fail("all 15 test Redis databases are in use")


@pytest.fixture(scope="session")
def embedding_server() -> Iterator[str]:
    """Base URL of a model server answering /api/embed with model `all-minilm` (384 dimensions)."""
    reuse = os.environ.get(EMBEDDING_URL_ENV)
    if reuse:
        yield reuse.rstrip("/")
        return
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted", "HF_HUB_OFFLINE": "1"}
    with run_service("stacgis_model_server", env, port) as service:
        yield service.url


ToolEnv = Callable[[str], dict[str, str]]


@pytest.fixture(scope="session")
def tool_server_env(pg_dsn: str, embedding_server: str) -> ToolEnv:
    """Makes the environment of a pgvector tool server under test, on a fresh free port:
    `tool_server_env("VECTOR_")` -> {"VECTOR_PORT": ..., "VECTOR_DATABASE_URL": ..., ...}."""

    def make(prefix: str) -> dict[str, str]:
        return {
            f"{prefix}PORT": str(free_port()),
            f"{prefix}DATABASE_URL": pg_dsn,
            f"{prefix}EMBEDDING_PROVIDER": "ollama",
            f"{prefix}EMBEDDING_BASE_URL": embedding_server,
            f"{prefix}EMBEDDING_MODEL": "all-minilm",
            f"{prefix}EMBEDDING_DIMENSION": "384",
        }

    return make


def assert_import_is_inert(package: str, env_prefix: str) -> None:
    """Importing `package`.server and `package`.__main__ reads no settings and builds nothing (the app
    comes from create_app(settings)): checked in a fresh interpreter whose settings cannot load (no
    development-secret allowance, a limit that is not a number)."""
    probe = (
        f"import {package}.__main__\n"
        f"import {package}.server as server\n"
        "assert callable(server.create_app)\n"
        "assert not any(hasattr(server, name) for name in ('app', 'settings', 'server'))\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith((env_prefix, "STACGIS_"))}
    env[f"{env_prefix}MAX_LIMIT"] = "not-a-number"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
