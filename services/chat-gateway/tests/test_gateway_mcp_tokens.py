"""Outside MCP clients through the gateway: personal access tokens created over the API, used by the
MCP SDK's own client at `/mcp/<server>`, refused when revoked, expired, malformed or scoped to another
server, and never a way into another user's memories. Real processes: memory-tools and
knowledge-tools (with the scripted embedding server), gateways in trusted-header and jwt mode."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import httpx
import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gateway_helpers import gateway_env, new_user, user

from stacgis_common.testing import RunningService, error_of, free_port, mcp_client, run_service

ISSUER = "https://login.example.test/"
AUDIENCE = "stacgis"
MAX_DAYS = 30
TOKENS_PER_USER = 3
MCP_BODY_BYTES = 8192
MCP_PER_MINUTE = 40
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def memory_tools(tool_server_env: Any) -> Iterator[RunningService]:
    env = tool_server_env("MEMORY_")
    with run_service("stacgis_memory", env, int(env["MEMORY_PORT"])) as service:
        yield service


@pytest.fixture(scope="module")
def knowledge_tools(tool_server_env: Any) -> Iterator[RunningService]:
    env = tool_server_env("KNOWLEDGE_")
    with run_service("stacgis_knowledge", env, int(env["KNOWLEDGE_PORT"])) as service:
        yield service


def mcp_env(memory: RunningService, knowledge: RunningService) -> dict[str, str]:
    servers = {
        "memory": f"{memory.url}/mcp",
        "knowledge": f"{knowledge.url}/mcp",
        "raster": f"http://127.0.0.1:{free_port()}/mcp",  # nothing listens there
    }
    return {
        "GATEWAY_MCP_SERVERS": json.dumps(servers),
        "GATEWAY_MCP_TOKEN_MAX_DAYS": str(MAX_DAYS),
        "GATEWAY_MCP_TOKENS_PER_USER": str(TOKENS_PER_USER),
        "GATEWAY_MCP_MAX_BODY_BYTES": str(MCP_BODY_BYTES),
        "GATEWAY_MCP_REQUESTS_PER_MINUTE": str(MCP_PER_MINUTE),
    }


@pytest.fixture(scope="module")
def mcp_gateway(
    pg_dsn: str,
    redis_url: str,
    orchestrator: RunningService,
    memory_tools: RunningService,
    knowledge_tools: RunningService,
) -> Iterator[RunningService]:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="mcp:",
        **mcp_env(memory_tools, knowledge_tools),
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        yield gateway


@pytest_asyncio.fixture(loop_scope="session")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as http:
        yield http


async def create_token(
    client: httpx.AsyncClient, base: str, headers: dict[str, str], servers: list[str], days: int = 7
) -> dict[str, Any]:
    response = await client.post(
        f"{base}/api/v1/tokens", json={"name": "my IDE", "servers": servers, "expires_in_days": days}, headers=headers
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def call(base: str, server: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call with the MCP SDK's client through the gateway; the parsed JSON result."""
    async with mcp_client(f"{base}/mcp/{server}", token) as session:
        result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def raw(client: httpx.AsyncClient, base: str, server: str, authorization: str | None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    return await client.post(f"{base}/mcp/{server}", json=LIST_TOOLS, headers=headers)


def challenge(response: httpx.Response) -> str:
    value = response.headers.get("www-authenticate", "")
    assert value.startswith("Bearer "), value
    return value


@pytest.mark.asyncio
async def test_token_lets_the_mcp_client_act_as_its_user(
    mcp_gateway: RunningService, client: httpx.AsyncClient, pg_dsn: str
) -> None:
    alice = user(new_user())
    created = await create_token(client, mcp_gateway.url, alice, ["memory", "memory"])
    token = created["token"]
    assert token.startswith("sgpat_") and created["servers"] == ["memory"] and not created["expired"]

    async with mcp_client(f"{mcp_gateway.url}/mcp/memory", token) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"add_memory", "search_memories", "forget_memory"} <= names
        added = await session.call_tool("add_memory", {"content": "Prefers elevations in feet", "kind": "preference"})
        assert not added.is_error, added.content
    found = await call(mcp_gateway.url, "memory", token, "search_memories", {"query": "elevation units"})
    assert [m["content"] for m in found["results"]] == ["Prefers elevations in feet"]

    # Listed without the token itself; at rest only its SHA-256.
    listed = (await client.get(f"{mcp_gateway.url}/api/v1/tokens", headers=alice)).json()
    assert [item["id"] for item in listed] == [created["id"]]
    assert "token" not in listed[0] and listed[0]["last_used_at"] is not None
    connection = await asyncpg.connect(pg_dsn)
    try:
        row = await connection.fetchrow("SELECT * FROM gateway.access_tokens WHERE id = $1::uuid", created["id"])
    finally:
        await connection.close()
    assert row is not None and bytes(row["token_hash"]) == hashlib.sha256(token.encode()).digest()
    assert token not in json.dumps({key: str(value) for key, value in dict(row).items()})

    # The tool server's answer (one JSON body) comes through, and the client's own credentials never reach it.
    response = await raw(client, mcp_gateway.url, "memory", f"Bearer {token}")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert "add_memory" in response.text


@pytest.mark.asyncio
async def test_a_token_never_reads_another_users_memories(
    mcp_gateway: RunningService, client: httpx.AsyncClient
) -> None:
    alice, bob = user(new_user()), user(new_user())
    alice_token = (await create_token(client, mcp_gateway.url, alice, ["memory"]))["token"]
    bob_token = (await create_token(client, mcp_gateway.url, bob, ["memory"]))["token"]
    added = await call(
        mcp_gateway.url, "memory", alice_token, "add_memory", {"content": "Alice's field site is Olinda"}
    )
    memory_id = added["memory"]["id"]

    seen_by_bob = await call(
        mcp_gateway.url, "memory", bob_token, "search_memories", {"query": "Alice field site Olinda"}
    )
    assert seen_by_bob["results"] == []
    async with mcp_client(f"{mcp_gateway.url}/mcp/memory", bob_token) as session:
        forgotten = await session.call_tool("forget_memory", {"memory_id": memory_id})
        recent = await session.read_resource("memory://recent")
    assert forgotten.is_error
    assert "Olinda" not in json.dumps([content.model_dump() for content in recent.contents])
    still = await call(mcp_gateway.url, "memory", alice_token, "search_memories", {"query": "field site"})
    assert [m["id"] for m in still["results"]] == [memory_id]


@pytest.mark.asyncio
async def test_revoked_expired_malformed_and_missing_tokens_are_refused(
    mcp_gateway: RunningService, client: httpx.AsyncClient, pg_dsn: str
) -> None:
    owner, other = user(new_user()), user(new_user())
    revoked = await create_token(client, mcp_gateway.url, owner, ["memory"])
    expired = await create_token(client, mcp_gateway.url, owner, ["memory"])
    for created in (revoked, expired):
        assert (await raw(client, mcp_gateway.url, "memory", f"Bearer {created['token']}")).status_code == 200

    # Someone else cannot revoke it (404 as for a token that does not exist); its owner can.
    base = f"{mcp_gateway.url}/api/v1/tokens"
    foreign = await client.delete(f"{base}/{revoked['id']}", headers=other)
    assert error_of(foreign, 404) == {"field": None, "message": "token not found", "code": "not_found"}
    assert (await client.delete(f"{base}/{revoked['id']}", headers=owner)).status_code == 204
    assert error_of(await client.delete(f"{base}/{revoked['id']}", headers=owner), 404)["message"] == "token not found"
    connection = await asyncpg.connect(pg_dsn)
    try:
        await connection.execute(
            "UPDATE gateway.access_tokens SET expires_at = now() - interval '1 second' WHERE id = $1::uuid",
            expired["id"],
        )
    finally:
        await connection.close()

    cases = {
        f"Bearer {revoked['token']}": "revoked",
        f"Bearer {expired['token']}": "expired",
        "Bearer sgpat_" + "A" * 43: "unknown",
        "Bearer sgpat_short": "malformed",
        "Bearer " + "x" * 5000: "malformed",
        f"Basic {revoked['token']}": "missing",
        "Bearer": "missing",
        None: "missing",
    }
    for authorization, reason in cases.items():
        response = await raw(client, mcp_gateway.url, "memory", authorization)
        refusal = error_of(response, 401)
        assert reason in refusal["message"] and refusal["code"] == "unauthenticated"
        header = challenge(response)
        assert ("invalid_token" in header) == (reason != "missing")
        assert "resource_metadata" not in header  # no issuer in trusted-header mode
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as its own error type
        await call(mcp_gateway.url, "memory", expired["token"], "search_memories", {"query": "x"})
    listed = (await client.get(base, headers=owner)).json()
    assert {item["id"]: item["expired"] for item in listed} == {expired["id"]: True}


@pytest.mark.asyncio
async def test_a_token_reaches_only_its_servers(mcp_gateway: RunningService, client: httpx.AsyncClient) -> None:
    someone = user(new_user())
    memory_only = (await create_token(client, mcp_gateway.url, someone, ["memory"]))["token"]
    response = await raw(client, mcp_gateway.url, "knowledge", f"Bearer {memory_only}")
    assert error_of(response, 403) == {
        "field": None,
        "message": "this token is not valid for knowledge",
        "code": "forbidden",
    }
    assert 'error="insufficient_scope"' in challenge(response) and 'scope="knowledge"' in challenge(response)

    knowledge = (await create_token(client, mcp_gateway.url, someone, ["knowledge"]))["token"]
    async with mcp_client(f"{mcp_gateway.url}/mcp/knowledge", knowledge) as session:
        assert "search_knowledge" in {tool.name for tool in (await session.list_tools()).tools}
    other_server = await raw(client, mcp_gateway.url, "memory", f"Bearer {knowledge}")
    assert error_of(other_server, 403)["message"] == "this token is not valid for memory"

    # A configured server that is down is a 502; a name that is not configured a 404 (after no auth at all).
    both = (await create_token(client, mcp_gateway.url, user(new_user()), ["raster", "memory"]))["token"]
    down = await raw(client, mcp_gateway.url, "raster", f"Bearer {both}")
    assert error_of(down, 502)["message"] == "MCP server raster is unavailable; retry shortly"
    unknown = await raw(client, mcp_gateway.url, "weather", f"Bearer {both}")
    assert error_of(unknown, 404)["message"].startswith("unknown MCP server; one of: ")
    assert error_of(await raw(client, mcp_gateway.url, "Memory%00", f"Bearer {both}"), 422, "server")


@pytest.mark.asyncio
async def test_token_requests_are_checked(mcp_gateway: RunningService, client: httpx.AsyncClient) -> None:
    base = f"{mcp_gateway.url}/api/v1/tokens"
    someone = user(new_user())
    bad_bodies: list[tuple[dict[str, Any], str]] = [
        ({"name": "x", "servers": ["weather"]}, "servers.0"),
        ({"name": "x", "servers": []}, "servers"),
        ({"name": "x", "servers": ["memory"], "expires_in_days": 0}, "expires_in_days"),
        ({"name": "x", "servers": ["memory"], "expires_in_days": MAX_DAYS + 1}, "expires_in_days"),
        ({"name": "x", "servers": ["memory"], "expires_in_days": "7"}, "expires_in_days"),
        ({"name": "   ", "servers": ["memory"]}, "name"),
        ({"name": "a\u0000b", "servers": ["memory"]}, "name"),
        ({"name": "x" * 101, "servers": ["memory"]}, "name"),
        ({"name": "x", "servers": ["memory"], "scopes": ["admin"]}, "scopes"),
        ({"servers": ["memory"]}, "name"),
    ]
    for body, field in bad_bodies:
        response = await client.post(base, json=body, headers=someone)
        assert error_of(response, 422, field)["code"] == "invalid_argument", body
    anonymous = await client.post(base, json={"name": "x", "servers": ["memory"]})
    assert error_of(anonymous, 401)["message"].startswith("not authenticated")
    assert error_of(await client.delete(f"{base}/not-a-token-id-at-all-no-no-no-no", headers=someone), 422, "token_id")

    for _ in range(TOKENS_PER_USER):
        await create_token(client, mcp_gateway.url, someone, ["memory"])
    refused = await client.post(base, json={"name": "one more", "servers": ["memory"]}, headers=someone)
    assert str(TOKENS_PER_USER) in error_of(refused, 409)["message"]

    # Bodies of outside MCP requests are bounded before anything is forwarded.
    token = (await create_token(client, mcp_gateway.url, user(new_user()), ["memory"]))["token"]
    huge = {**LIST_TOOLS, "params": {"pad": "x" * MCP_BODY_BYTES}}
    response = await client.post(
        f"{mcp_gateway.url}/mcp/memory", json=huge, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    )
    assert error_of(response, 422, "body")["message"].startswith("body: request body is ")


@pytest.mark.asyncio
async def test_one_users_clients_are_rate_limited(mcp_gateway: RunningService, client: httpx.AsyncClient) -> None:
    busy, other = user(new_user()), user(new_user())
    token = (await create_token(client, mcp_gateway.url, busy, ["memory"]))["token"]
    # A fixed one-minute window: over two windows at most twice the limit pass, so one more is refused.
    statuses = []
    for _ in range(2 * MCP_PER_MINUTE + 1):
        response = await raw(client, mcp_gateway.url, "memory", f"Bearer {token}")
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1
            assert error_of(response, 429)["message"].endswith("MCP requests a minute; retry later")
            break
    assert statuses[-1] == 429 and set(statuses[:-1]) == {200}, statuses
    # Someone else is not affected.
    fresh = (await create_token(client, mcp_gateway.url, other, ["memory"]))["token"]
    assert (await raw(client, mcp_gateway.url, "memory", f"Bearer {fresh}")).status_code == 200


# jwt mode: the identity provider is an OAuth authorization server, so the gateway describes itself.


def _token(key: rsa.RSAPrivateKey, subject: str) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 300}
    return jwt.encode(claims, key, algorithm="RS256")


@pytest.mark.asyncio
async def test_jwt_mode_publishes_protected_resource_metadata(
    pg_dsn: str,
    redis_url: str,
    orchestrator: RunningService,
    memory_tools: RunningService,
    knowledge_tools: RunningService,
    mcp_gateway: RunningService,
    client: httpx.AsyncClient,
) -> None:
    metadata = await client.get(f"{mcp_gateway.url}/.well-known/oauth-protected-resource")
    assert error_of(metadata, 404)["message"].startswith("no authorization server")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="mcpjwt:",
        GATEWAY_AUTH_MODE="jwt",
        GATEWAY_JWT_PUBLIC_KEY=pem.decode(),
        GATEWAY_JWT_ISSUER=ISSUER,
        GATEWAY_JWT_AUDIENCE=AUDIENCE,
        GATEWAY_PUBLIC_BASE_URL="https://stacgis.example.test",
        **mcp_env(memory_tools, knowledge_tools),
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        metadata = (await client.get(f"{gateway.url}/.well-known/oauth-protected-resource/mcp/memory")).json()
        assert metadata["resource"] == "https://stacgis.example.test/mcp/memory"
        assert metadata["authorization_servers"] == [ISSUER]
        nope = await client.get(f"{gateway.url}/.well-known/oauth-protected-resource/mcp/nope")
        assert error_of(nope, 404)["message"] == "unknown MCP server"

        refused = await raw(client, gateway.url, "memory", None)
        assert error_of(refused, 401)["message"] == "missing bearer token"
        assert (
            'resource_metadata="https://stacgis.example.test/.well-known/oauth-protected-resource/mcp/memory"'
            in challenge(refused)
        )
        forged = await raw(
            client, gateway.url, "memory", f"Bearer {_token(rsa.generate_private_key(65537, 2048), 'x')}"
        )
        assert error_of(forged, 401)["code"] == "unauthenticated" and 'error="invalid_token"' in challenge(forged)

        # The provider's token works as the user, and so does a PAT that user created with it.
        maria = new_user()
        bearer = _token(key, maria)
        await call(gateway.url, "memory", bearer, "add_memory", {"content": "Maria maps wetlands"})
        pat = await create_token(client, gateway.url, {"Authorization": f"Bearer {bearer}"}, ["memory"])
        found = await call(gateway.url, "memory", pat["token"], "search_memories", {"query": "wetlands"})
        assert [m["content"] for m in found["results"]] == ["Maria maps wetlands"]
