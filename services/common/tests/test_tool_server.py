"""The shared MCP bootstrap over its real transport: auth, identity, health, readiness, metrics."""

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError as McpError

from stacgis_common.testing import free_port, mcp_client, run_service, token_for

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def toy(pg_dsn: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    port = free_port()
    trace_file = tmp_path_factory.mktemp("traces") / "spans.jsonl"
    env = {
        "TOY_PORT": str(port),
        "TOY_DATABASE_URL": pg_dsn,
        "TOY_REDIS_URL": redis_url,
        "TOY_TRACE_FILE": str(trace_file),
        "PYTHONPATH": str(HERE),
    }
    with run_service("toy_server", env, port) as service:
        service.trace_file = trace_file  # type: ignore[attr-defined]
        yield service


@pytest.mark.asyncio
async def test_tool_sees_verified_identity(toy) -> None:  # type: ignore[no-untyped-def]
    async with mcp_client(toy.url + "/mcp", token_for("alice", "s-1")) as session:
        result = await session.call_tool("whoami", {})
    assert result.is_error is False
    assert json.loads(result.content[0].text) == {"user_id": "alice", "session_id": "s-1"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "token",
    [None, "garbage", token_for("alice", ttl_seconds=-120)],
    ids=["missing", "garbage", "expired"],
)
async def test_requests_without_valid_token_get_401(toy, token: str | None) -> None:  # type: ignore[no-untyped-def]
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(toy.url + "/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == 401


def test_healthz_metrics(toy) -> None:  # type: ignore[no-untyped-def]
    assert httpx.get(toy.url + "/healthz").json() == {"status": "ok"}
    httpx.get(toy.url + "/readyz")
    metrics = httpx.get(toy.url + "/metrics").text
    assert 'http_server_requests_total{method="GET",route="/readyz",service="toy-tools",status="200"}' in metrics


def test_readyz_unhealthy_when_dependency_stops_and_recovers(pg_dsn: str, tmp_path: Path) -> None:
    redis_port = free_port()
    redis_cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "", "--appendonly", "no"]
    redis_proc = subprocess.Popen(redis_cmd, stdout=subprocess.DEVNULL)
    port = free_port()
    env = {
        "TOY_PORT": str(port),
        "TOY_DATABASE_URL": pg_dsn,
        "TOY_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "PYTHONPATH": str(HERE),
    }
    try:
        with run_service("toy_server", env, port) as service:
            assert _wait_status(service.url, 200)
            redis_proc.terminate()
            redis_proc.wait(10)
            body = _wait_status(service.url, 503)
            assert body and body["checks"]["redis"].startswith("error") and body["checks"]["postgres"] == "ok"
            redis_proc = subprocess.Popen(redis_cmd, stdout=subprocess.DEVNULL)
            assert _wait_status(service.url, 200)
    finally:
        redis_proc.terminate()


def _wait_status(url: str, status: int, timeout: float = 20) -> dict | None:  # type: ignore[type-arg]
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = httpx.get(url + "/readyz", timeout=5)
        if response.status_code == status:
            return response.json()  # type: ignore[no-any-return]
        time.sleep(0.2)
    return None


@pytest.mark.asyncio
async def test_unknown_tool_is_an_error_not_a_crash(toy) -> None:  # type: ignore[no-untyped-def]
    async with mcp_client(toy.url + "/mcp", token_for("bob")) as session:
        try:
            result = await session.call_tool("no_such_tool", {})
            assert result.is_error
        except McpError:
            pass
        again = await session.call_tool("whoami", {})
    assert json.loads(again.content[0].text)["user_id"] == "bob"


@pytest.mark.asyncio
async def test_huge_arguments_do_not_come_back_as_huge_errors(toy) -> None:  # type: ignore[no-untyped-def]
    async with mcp_client(toy.url + "/mcp", token_for("carol")) as session:
        result = await session.call_tool("check_name", {"name": "x" * 1_000_000})
        assert result.is_error
        text = result.content[0].text
        assert "name: 'xxx" in text
        assert len(text) < 2_100
        assert "error truncated" in text
        wrong_type = await session.call_tool("check_name", {"name": ["y" * 1000] * 1000})
        assert wrong_type.is_error
        assert len(wrong_type.content[0].text) < 2_100
        again = await session.call_tool("whoami", {})
    assert json.loads(again.content[0].text)["user_id"] == "carol"
