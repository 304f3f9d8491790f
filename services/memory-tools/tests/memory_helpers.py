"""Helpers of the memory-tools tests (a distinct module name: test folders share sys.path)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from stacgis_common.testing import call_tool, mcp_client, token_for


def new_user(name: str) -> str:
    """A user id of its own per test, so tests never see each other's memories."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def call(url: str, user: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """One tool call as `user`: (is_error, parsed result or error text)."""
    return await call_tool(url, tool, arguments, user)


async def recent(url: str, user: str) -> list[dict[str, Any]]:
    async with mcp_client(url + "/mcp", token_for(user)) as session:
        read = await session.read_resource("memory://recent")
    return list(json.loads(read.contents[0].text)["memories"])


@contextlib.asynccontextmanager
async def session_with_headers(url: str, user: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An MCP session whose HTTP requests carry extra headers besides the user's token."""
    all_headers = {"Authorization": f"Bearer {token_for(user)}", **headers}
    async with (
        httpx2.AsyncClient(headers=all_headers, timeout=60) as http,
        streamable_http_client(url + "/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session
