"""The outside-MCP path (`/mcp/<server>` with personal access tokens) through the ingress of a private
stack: malformed, forged and borrowed credentials are a 401 (never a 5xx, never the tool), oversized
and malformed bodies a clean 4xx, identity headers and path tricks never change who or where, and the
SDK's client still works afterwards."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import jwt
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp_wire import PROTOCOL_VERSION, McpWire
from private_stack import PrivateStack
from test_mcp_tools_hostile import wire_abuse

from stacgis_common.settings import DEV_TOKEN_SECRET
from stacgis_common.testing import mcp_client, token_for

EXAMPLES = 60
OWNER = "outside-mcp-owner"
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": PROTOCOL_VERSION,
}


def create_token(stack: PrivateStack, user: str, servers: list[str]) -> str:
    """Created at the gateway itself (it believes the header from loopback; the ingress may drop it)."""
    response = httpx.post(
        f"{stack.gateways[0].url}/api/v1/tokens",
        json={"name": "hostile", "servers": servers, "expires_in_days": 1},
        headers={"X-Forwarded-User": user},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


@pytest.fixture(scope="module")
def memory_token(hostile_stack: PrivateStack) -> str:
    return create_token(hostile_stack, OWNER, ["memory"])


def post(base: str, server: str, authorization: str | bytes | None, **extra: Any) -> httpx.Response:
    headers: dict[str, str | bytes] = dict(HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    headers.update(extra.pop("headers", {}))
    return httpx.post(f"{base}/mcp/{server}", headers=headers, timeout=60, **extra)


def credentials(real: str) -> list[tuple[str, str | bytes]]:
    """Authorization values that must all be refused with 401."""
    now = int(time.time())
    internal = {"iss": "stacgis-gateway", "aud": "stacgis-internal", "sub": OWNER, "iat": now, "exp": now + 600}
    none_header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    none_payload = base64.urlsafe_b64encode(json.dumps(internal).encode()).rstrip(b"=").decode()
    return [
        ("internal token of the owner (valid inside, never outside)", f"Bearer {token_for(OWNER)}"),
        ("internal token signed with the dev secret", f"Bearer {jwt.encode(internal, DEV_TOKEN_SECRET)}"),
        ("alg none", f"Bearer {none_header}.{none_payload}."),
        ("token with one character changed", f"Bearer {real[:-1]}{'A' if real[-1] != 'A' else 'B'}"),
        ("token truncated", f"Bearer {real[:-1]}"),
        ("token with a suffix", f"Bearer {real}x"),
        ("token twice", f"Bearer {real} {real}"),
        ("token lower-cased", f"Bearer {real.lower()}" if real.lower() != real else "Bearer sgpat_"),
        ("prefix only", "Bearer sgpat_"),
        ("SQL in the token", "Bearer sgpat_' OR '1'='1' --" + "a" * 20),
        ("token as Basic", f"Basic {base64.b64encode(f'{OWNER}:{real}'.encode()).decode()}"),
        ("token without scheme", real),
        ("empty bearer", "Bearer"),
        ("64 kB of garbage", "Bearer " + "g" * 65_536),
        ("latin-1 bytes", b"Bearer sgpat_\xe9\xe8\xe0"),
    ]


def test_malformed_and_forged_tokens_are_refused_with_401(hostile_stack: PrivateStack, memory_token: str) -> None:
    base = hostile_stack.base_url
    failures = []
    for label, authorization in credentials(memory_token):
        try:
            response = post(base, "memory", authorization, json=LIST_TOOLS)
        except httpx.HTTPError as error:
            failures.append(f"{label}: {error!r}")
            continue
        # A header too large for the ingress is refused before the gateway (400/431).
        allowed = {400, 401, 431} if len(authorization) > 8192 else {401}
        if response.status_code not in allowed:
            failures.append(f"{label}: HTTP {response.status_code} {response.text[:200]!r}")
        elif response.status_code == 401:
            if not response.headers.get("www-authenticate", "").startswith("Bearer "):
                failures.append(f"{label}: 401 without a Bearer challenge")
            if memory_token in response.text or "Traceback" in response.text:
                failures.append(f"{label}: the answer echoes the token or internals")
    assert not failures, "\n".join(failures)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(
    value=st.one_of(
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=300),
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=43, max_size=43).map(
            lambda tail: "sgpat_" + tail
        ),
    )
)
def test_generated_bearer_values_are_refused_with_401(hostile_stack: PrivateStack, value: str) -> None:
    response = post(hostile_stack.base_url, "memory", f"Bearer {value}", json=LIST_TOOLS)
    assert response.status_code == 401, (value, response.status_code, response.text[:200])


def test_oversized_and_malformed_bodies_get_a_clean_4xx(hostile_stack: PrivateStack, memory_token: str) -> None:
    base = hostile_stack.base_url
    authorization = f"Bearer {memory_token}"
    failures = []
    big = {**LIST_TOOLS, "params": {"pad": "x" * 2_000_000}}
    declared = post(base, "memory", authorization, json=big)
    refusal = declared.json() if declared.headers.get("content-type") == "application/json" else {}
    if declared.status_code != 422 or refusal.get("field") != "body" or not refusal["message"].startswith("body: "):
        failures.append(f"2 MB body: HTTP {declared.status_code} {declared.text[:200]!r}")

    def chunks() -> Any:
        for _ in range(40):
            yield b"x" * 65_536

    chunked = post(base, "memory", authorization, content=chunks())
    if chunked.status_code != 422:
        failures.append(f"2.6 MB chunked body: HTTP {chunked.status_code} {chunked.text[:200]!r}")
    # Without a valid token an oversized body is refused too, and never reaches a tool server.
    anonymous = post(base, "memory", None, json=big)
    if anonymous.status_code not in (401, 422):
        failures.append(f"2 MB body without a token: HTTP {anonymous.status_code}")

    wire = McpWire(base, memory_token)
    wire.url = f"{base}/mcp/memory"
    try:
        for label, body in wire_abuse("search_memories"):
            try:
                answer = wire.post(body)
            except httpx.HTTPError as error:
                failures.append(f"{label}: {error!r}")
                continue
            if answer.status >= 500 or answer.problem:
                failures.append(f"{label}: HTTP {answer.status} {answer.problem or answer.body[:200]!r}")
            if "Traceback (most recent call last)" in answer.body:
                failures.append(f"{label}: the answer leaks internals")
    finally:
        wire.close()
    assert not failures, "\n".join(failures)


def test_identity_headers_and_paths_never_change_who_or_where(hostile_stack: PrivateStack, memory_token: str) -> None:
    base = hostile_stack.base_url
    authorization = f"Bearer {memory_token}"
    # A scoped token reaches no other server, however the path is spelled.
    for path in (
        "knowledge",
        "memory/../knowledge",
        "memory%2F..%2Fknowledge",
        "%6bnowledge",
        "KNOWLEDGE",
        "knowledge%00",
        "knowledge/",
        "memory/x",
    ):
        headers = {**HEADERS, "Authorization": authorization}
        response = httpx.post(f"{base}/mcp/{path}", json=LIST_TOOLS, headers=headers, timeout=30)
        # 400: the ingress refuses an encoded NUL itself; 307: a trailing slash is redirected to the
        # same server without it, where the token is refused again.
        assert response.status_code in (307, 400, 403, 404, 405, 422), (path, response.status_code, response.text[:200])
        if response.status_code == 307:
            assert response.headers["location"].endswith("/mcp/knowledge"), response.headers["location"]
        assert "search_knowledge" not in response.text, path

    # The token's owner is the identity, whatever headers claim otherwise.
    victim = "outside-mcp-victim"
    spoof = {"X-Forwarded-User": victim, "X-Auth-Request-User": victim, "Cookie": f"stacgis_uid={victim}"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "add_memory",
            "arguments": {"content": "Planted through spoofed headers"},
        },
    }
    planted = post(base, "memory", authorization, json=call, headers=spoof)
    assert planted.status_code == 200, planted.text[:300]
    victim_token = create_token(hostile_stack, victim, ["memory"])
    search = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search_memories", "arguments": {"query": "planted spoofed headers"}},
    }
    seen = post(base, "memory", f"Bearer {victim_token}", json=search)
    assert seen.status_code == 200 and "Planted" not in seen.text, seen.text[:300]
    mine = post(base, "memory", authorization, json=search)
    assert mine.status_code == 200 and "Planted through spoofed headers" in mine.text, mine.text[:300]


@pytest.mark.asyncio
async def test_the_sdk_client_still_works_after_the_abuse(hostile_stack: PrivateStack, memory_token: str) -> None:
    async with mcp_client(f"{hostile_stack.base_url}/mcp/memory", memory_token) as session:
        result = await session.call_tool("search_memories", {"query": "field notes"})
    assert not result.is_error, result.content
    assert isinstance(result.structured_content["results"], list)
