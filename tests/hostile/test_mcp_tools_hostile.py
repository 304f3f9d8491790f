"""Hostile arguments for every tool of every MCP tool server, over the real transport.

Each server runs as its own process (started by its own suite's fixture). For every tool it lists,
hypothesis perturbs a good call with values drawn for the tool's own input schema. Every answer must
be a clean tool error or a valid result: no HTTP 5xx, no protocol error, no traceback or file
content, no request to the canary server, and the server keeps answering a normal call.

Examples per tool: STACGIS_HOSTILE_EXAMPLES (default 60). The examples are derandomised (the same on
every run, so CI is stable); STACGIS_HOSTILE_RANDOM=1 explores new ones.
"""

from __future__ import annotations

import base64
import json
import os
import time
from typing import Any

import httpx
import jwt
import pytest
from hostile_servers import SUMMARY, Canary, server_url
from hostile_values import hostile_for, json_values, path_and_url_tricks
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from known_calls import base_arguments, health_call
from mcp_wire import McpWire, problems_with_call

from stacgis_common.settings import DEV_TOKEN_SECRET
from stacgis_common.testing import mcp_client, token_for

SERVERS = ["raster-tools", "vector-tools", "knowledge-tools", "memory-tools"]
EXAMPLES = int(os.environ.get("STACGIS_HOSTILE_EXAMPLES", "60"))
RANDOM = os.environ.get("STACGIS_HOSTILE_RANDOM") == "1"
# Arguments no schema declares: identity spoofing and prototype tricks must be ignored or refused.
EXTRA_KEYS = ["user_id", "session_id", "__proto__", "constructor", "_meta", "k" * 300]
USER = "hostile-user"


def hostile_arguments(schema: dict[str, Any], base: dict[str, Any], canary_url: str) -> st.SearchStrategy[Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    names = sorted(properties)
    required = sorted(set(schema.get("required") or []) & set(names))
    extra_value = st.one_of(json_values(), st.sampled_from(path_and_url_tricks(canary_url)), st.just("other-user"))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        arguments = dict(base)
        if names:
            chosen = draw(st.sets(st.sampled_from(names), min_size=1, max_size=min(3, len(names))))
            for name in sorted(chosen):
                arguments[name] = draw(hostile_for(name, properties[name], canary_url))
        if not names or draw(st.integers(0, 7)) == 0:
            arguments[draw(st.sampled_from(EXTRA_KEYS))] = draw(extra_value)
        if required and draw(st.integers(0, 11)) == 0:
            arguments.pop(draw(st.sampled_from(required)), None)
        return arguments

    # (Arguments that are not an object at all break the protocol itself: see the wire tests.)
    return build()


def short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, allow_nan=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def assert_normal_call(wire: McpWire, server: str, tools: list[dict[str, Any]]) -> None:
    tool, arguments = health_call(server, tools)
    answer = wire.call_tool(tool, arguments)
    assert answer.result is not None and not answer.result.get("isError"), (
        f"{server} no longer answers a normal {tool} call: HTTP {answer.status} {answer.body[:500]}"
    )


def check_tool(wire: McpWire, tool: dict[str, Any], canary: Canary) -> tuple[list[str], dict[str, Any]]:
    """Run the hostile examples for one tool; return the findings and the tool's figures."""
    name = tool["name"]
    schema = tool.get("inputSchema") or {}
    output_schema = tool.get("outputSchema")
    strategy = hostile_arguments(schema, base_arguments(name, schema), canary.url)
    figures: dict[str, Any] = {"tool": name, "calls": 0, "tool_errors": 0, "results": 0, "slowest_s": 0.0}
    findings: list[str] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not RANDOM,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: bounded time, the example is reported
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments=strategy)
    def run(arguments: Any) -> None:
        started = time.perf_counter()
        try:
            answer = wire.call_tool(name, arguments)
        except httpx.TimeoutException:
            findings.append(f"{name}({short(arguments)}): no answer within {wire.http.timeout.read} s")
            return
        except httpx.TransportError as error:
            findings.append(f"{name}({short(arguments)}): connection failed: {error!r}")
            return
        elapsed = time.perf_counter() - started
        figures["calls"] += 1
        figures["slowest_s"] = max(figures["slowest_s"], elapsed)
        result = answer.result or {}
        figures["tool_errors" if result.get("isError") else "results"] += 1
        problems = problems_with_call(answer, output_schema)
        if problems:
            findings.append(f"{name}({short(arguments)}): {'; '.join(problems)}")

    run()
    return findings, figures


@pytest.fixture(scope="module", params=SERVERS)
def tool_server(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(name, base URL) of each tool server in turn, every test of this module against it."""
    return request.param, server_url(request, request.param)


def test_every_tool_refuses_hostile_arguments_cleanly(tool_server: tuple[str, str], canary: Canary) -> None:
    server, url = tool_server
    wire = McpWire(url, token_for(USER, "hostile-session"))
    try:
        tools = wire.list_tools()
        assert tools, f"{server} lists no tools"
        findings: list[str] = []
        for tool in tools:
            tool_findings, figures = check_tool(wire, tool, canary)
            SUMMARY.append({"server": server, **figures, "findings": len(tool_findings)})
            findings += tool_findings[:5]  # the first few per tool are enough to act on
            # After each tool's examples: still alive and still correct.
            health = httpx.get(url + "/healthz", timeout=10)
            assert health.status_code == 200, f"{server} unhealthy after {tool['name']}: {health.status_code}"
            assert_normal_call(wire, server, tools)
        assert wire.list_tools() == tools, f"{server}'s tool list changed under hostile calls"
    finally:
        wire.close()
    assert not canary.hits, f"hostile ids made a server call the canary: {canary.hits[:10]}"
    assert not findings, f"{len(findings)} hostile calls were not refused cleanly:\n" + "\n".join(findings)


def wire_abuse(tool: str) -> list[tuple[str, str | bytes]]:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    return [
        ("nesting far beyond the parser's limit", "[" * 100_000 + "]" * 100_000),
        ("20 MB string argument", json.dumps({**call, "params": {"name": tool, "arguments": {"q": "A" * 20_000_000}}})),
        (
            "invalid UTF-8",
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":"\xff\xfe"}}}',
        ),
        ("truncated JSON", '{"jsonrpc":"2.0","id":1,"method":"tools/ca'),
        ("not JSON", "hello"),
        ("empty body", ""),
        (
            "a batch of 500 calls",
            json.dumps([{**call, "id": i, "params": {"name": tool, "arguments": {}}} for i in range(500)]),
        ),
        ("params is a list", json.dumps({**call, "params": [tool, {}]})),
        ("arguments is a list", json.dumps({**call, "params": {"name": tool, "arguments": [1, 2]}})),
        ("arguments is a string", json.dumps({**call, "params": {"name": tool, "arguments": "{}"}})),
        ("tool name with path tricks", json.dumps({**call, "params": {"name": "../../etc/passwd", "arguments": {}}})),
        ("tool name of 100k characters", json.dumps({**call, "params": {"name": "t" * 100_000, "arguments": {}}})),
        ("unknown method", json.dumps({**call, "method": "tools/execute", "params": {}})),
        ("id is an object", json.dumps({**call, "id": {"a": 1}, "params": {"name": tool, "arguments": {}}})),
        ("NaN id", '{"jsonrpc":"2.0","id":NaN,"method":"tools/list","params":{}}'),
        ("wrong jsonrpc version", json.dumps({**call, "jsonrpc": "1.0", "params": {"name": tool, "arguments": {}}})),
        (
            "resource read with path tricks",
            json.dumps({**call, "method": "resources/read", "params": {"uri": "file:///etc/passwd"}}),
        ),
        (
            "prompt with a huge argument",
            json.dumps(
                {
                    **call,
                    "method": "prompts/get",
                    "params": {"name": "analysis_prompt", "arguments": {"task": "x" * 1_000_000}},
                }
            ),
        ),
    ]


def test_malformed_protocol_messages_are_refused_without_a_server_error(tool_server: tuple[str, str]) -> None:
    server, url = tool_server
    wire = McpWire(url, token_for(USER))
    try:
        tools = wire.list_tools()
        failures = []
        for label, body in wire_abuse(tools[0]["name"]):
            try:
                answer = wire.post(body)
            except httpx.HTTPError as error:
                failures.append(f"{label}: {error!r}")
                continue
            if answer.status >= 500 or answer.problem:
                failures.append(f"{label}: HTTP {answer.status} {answer.problem or answer.body[:200]!r}")
            if "Traceback (most recent call last)" in answer.body or "root:x:0:0" in answer.body:
                failures.append(f"{label}: the answer leaks internals: {answer.body[:200]!r}")
        assert_normal_call(wire, server, tools)
    finally:
        wire.close()
    assert not failures, "\n".join(failures)


def forged_tokens() -> list[tuple[str, str | None]]:
    now = int(time.time())
    claims = {"iss": "stacgis-gateway", "aud": "stacgis-internal", "sub": "victim", "iat": now, "exp": now + 600}
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return [
        ("no token", None),
        ("garbage", "not-a-jwt"),
        ("alg none", f"{header}.{payload}."),
        ("wrong secret", jwt.encode(claims, "not-the-secret-at-all-but-long-enough", algorithm="HS256")),
        ("expired", jwt.encode({**claims, "iat": now - 7200, "exp": now - 3600}, DEV_TOKEN_SECRET, algorithm="HS256")),
        ("other audience", jwt.encode({**claims, "aud": "somebody-else"}, DEV_TOKEN_SECRET, algorithm="HS256")),
        ("other issuer", jwt.encode({**claims, "iss": "mallory"}, DEV_TOKEN_SECRET, algorithm="HS256")),
        ("empty subject", jwt.encode({**claims, "sub": ""}, DEV_TOKEN_SECRET, algorithm="HS256")),
        ("huge token", "A" * 200_000),
    ]


def test_forged_internal_tokens_are_refused_with_401(tool_server: tuple[str, str]) -> None:
    url = tool_server[1] + "/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    base_headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    statuses: dict[str, int | str] = {}
    for label, token in forged_tokens():
        headers = dict(base_headers)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            statuses[label] = httpx.post(url, json=body, headers=headers, timeout=30).status_code
        except (httpx.RemoteProtocolError, httpx.ReadError):
            statuses[label] = "closed"
    # A header too large for the HTTP server is refused before auth (431 or a closed connection).
    refused = {
        label: status
        for label, status in statuses.items()
        if status not in ({400, 401, 431, "closed"} if label == "huge token" else {401})
    }
    assert not refused, f"forged tokens not refused with 401: {refused}"


@pytest.mark.asyncio
async def test_server_answers_a_normal_sdk_call_after_the_abuse(tool_server: tuple[str, str]) -> None:
    """Runs last for each server: the real MCP client still gets correct answers."""
    server, url = tool_server
    async with mcp_client(url + "/mcp", token_for(USER)) as session:
        listed = await session.list_tools()
        tools = [{"name": t.name, "inputSchema": t.input_schema} for t in listed.tools]
        tool, arguments = health_call(server, tools)
        result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{server} {tool}: {result.content[0].text if result.content else ''}"
    assert result.content, f"{server} {tool} returned nothing"
