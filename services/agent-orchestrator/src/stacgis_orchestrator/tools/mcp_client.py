"""One MCP tool server over streamable HTTP (stateless protocol), through the MCP SDK.

Each server gets one long-lived `httpx2.AsyncClient`, so calls reuse pooled connections (a fresh
client costs ~17 ms here). Each operation opens a light SDK session on it with the protocol version
pinned (no discovery round trip): a failure of one call can never poison another. Per-call headers
(the caller's internal token, W3C trace context) come from a context variable, which the SDK
carries into the task that sends the request.

A fresh SDK session knows no tool, so before validating a result it lists the server's tools again:
one more HTTP round trip per call, more than half of a call's cost over the network. A tool call's
session is therefore given the tool as the last listing here showed it, and the output-schema
validator compiled for it, through the session's private `_absorb_tool_listing` and
`_tool_output_validators` (the SDK's version is pinned in constraints.txt; `test_run_start.py`
fails if a call lists again). The SDK's public way, a response cache shared by the sessions
(`CacheConfig(store=...)`) that `Client.list_tools` serves the listing from, still copies and
absorbs the whole listing and compiles the validator again on every call, and keeps the listing
for a time to live of its own beside the pool's.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import httpx2
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ListToolsResult,
    TextContent,
    TextResourceContents,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

log = logging.getLogger(__name__)

ErrorKind = Literal["unavailable", "timeout", "rejected_token", "protocol"]


@dataclass
class _CallState:
    headers: dict[str, str]
    statuses: list[int] = field(default_factory=list)


_CALL: ContextVar[_CallState | None] = ContextVar("stacgis_mcp_call", default=None)


class _CallHeaders(httpx2.Auth):
    """Adds the current operation's headers (bearer token, traceparent) to each request it sends."""

    def auth_flow(self, request: httpx2.Request) -> Any:
        state = _CALL.get()
        if state is not None:
            for key, value in state.headers.items():
                request.headers[key] = value
        yield request


async def _record_status(response: httpx2.Response) -> None:
    state = _CALL.get()
    if state is not None:
        state.statuses.append(response.status_code)


class ToolServerError(Exception):
    """The server could not be used for this operation (as opposed to a tool reporting an error)."""

    def __init__(self, kind: ErrorKind, message: str, transient: bool, counts_as_failure: bool = True) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.transient = transient
        # Whether the circuit breaker should count it: a protocol error of one call is not an outage.
        self.counts_as_failure = counts_as_failure


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


class ToolServerClient:
    def __init__(self, name: str, url: str, connect_timeout: float = 5.0) -> None:
        self.name = name
        self.url = url
        self.protocol: str | None = None
        # The tools of the last complete listing, and output-schema validators compiled by earlier
        # calls (each holds the schema it was compiled for: `Validator.schema`).
        self._listed: dict[str, Tool] = {}
        self._validators: dict[str, Validator] = {}
        self._http = httpx2.AsyncClient(
            auth=_CallHeaders(),
            event_hooks={"response": [_record_status]},
            timeout=httpx2.Timeout(None, connect=connect_timeout),
            follow_redirects=False,
        )

    @contextlib.asynccontextmanager
    async def _session(self, headers: Mapping[str, str]) -> AsyncIterator[tuple[Client, _CallState]]:
        state = _CallState(headers=dict(headers))
        token = _CALL.set(state)
        try:
            mode = (
                self.protocol
                if self.protocol in MODERN_PROTOCOL_VERSIONS
                else ("auto" if self.protocol is None else "legacy")
            )
            client = Client(streamable_http_client(self.url, http_client=self._http), mode=mode, cache=None)
            async with client:
                if self.protocol is None:
                    self.protocol = client.protocol_version
                yield client, state
        except ToolServerError:
            raise
        except Exception as error:  # noqa: BLE001 - the SDK raises transport failures in exception groups
            raise self._classify(error, state) from None
        finally:
            _CALL.reset(token)

    def _classify(self, error: BaseException, state: _CallState) -> ToolServerError:
        leaves = _leaves(error)
        status = next((s for s in reversed(state.statuses) if s >= 400), None)
        for leaf in leaves:
            if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
                return ToolServerError(
                    "unavailable", f"cannot connect to tool server {self.name!r} at {self.url}", True
                )
            if isinstance(leaf, httpx2.TransportError):
                return ToolServerError(
                    "unavailable", f"the connection to tool server {self.name!r} broke: {type(leaf).__name__}", True
                )
        if status in (401, 403):
            return ToolServerError(
                "rejected_token",
                f"tool server {self.name!r} rejected the internal token ({status}): check the shared secret",
                False,
            )
        if status is not None and status >= 500:
            return ToolServerError(
                "unavailable", f"tool server {self.name!r} answered HTTP {status}", transient=status in (502, 503, 504)
            )
        if status is not None:
            return ToolServerError(
                "unavailable", f"tool server {self.name!r} answered HTTP {status} at {self.url}", False
            )
        mcp_error = next((leaf for leaf in leaves if isinstance(leaf, MCPError)), None)
        if mcp_error is not None:
            return ToolServerError(
                "protocol", f"tool server {self.name!r}: {mcp_error}", False, counts_as_failure=False
            )
        leaf = leaves[0] if leaves else error
        log.warning("unexpected MCP client failure", exc_info=leaf)
        return ToolServerError("unavailable", f"tool server {self.name!r} failed: {type(leaf).__name__}: {leaf}", False)

    async def list_tools(self, headers: Mapping[str, str]) -> list[Tool]:
        async with self._session(headers) as (client, _):
            tools: list[Tool] = []
            cursor: str | None = None
            for _page in range(50):
                result = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                tools.extend(result.tools)
                cursor = result.next_cursor
                if not cursor:
                    break
            self._listed = {tool.name: tool for tool in tools}
            return tools

    async def list_resources(self, headers: Mapping[str, str]) -> list[str]:
        async with self._session(headers) as (client, _):
            # Capabilities are not known on a pinned (discovery-free) session: just ask.
            result = await client.list_resources()
            return [str(resource.uri) for resource in result.resources]

    async def read_resource(self, uri: str, headers: Mapping[str, str]) -> str:
        async with self._session(headers) as (client, _):
            result = await client.read_resource(uri)
            parts = [item.text for item in result.contents if isinstance(item, TextResourceContents)]
            return "\n".join(parts)

    async def call_tool(self, name: str, arguments: dict[str, Any], headers: Mapping[str, str]) -> CallToolResult:
        async with self._session(headers) as (client, _):
            taught = self._teach(client.session, name)
            try:
                result = await client.call_tool(name, arguments)
            except RuntimeError:
                if taught:
                    # A result refused by the schema kept here may come from a server redeployed with
                    # a new one since the last listing: the next call lists the tools itself.
                    self._listed.pop(name, None)
                    self._validators.pop(name, None)
                raise
            self._learn(client.session, name)
            return result

    def _teach(self, session: ClientSession, name: str) -> bool:
        """Give a fresh session the tool as listed (else it lists every tool again to validate the
        result); False when it was never listed here, and the session lists the tools itself."""
        tool = self._listed.get(name)
        if tool is None:
            return False
        session._absorb_tool_listing(ListToolsResult(tools=[tool]), complete=False)
        known = self._validators.get(name)
        if known is not None and tool.output_schema is not None and known.schema == tool.output_schema:
            session._tool_output_validators[name] = known
        return True

    def _learn(self, session: ClientSession, name: str) -> None:
        """Keep the validator the session compiled (checking a schema costs far more than using it).
        It is kept with the schema it holds, not the listing's: a listing during the call may have
        changed the tool's schema."""
        validator = session._tool_output_validators.get(name)
        if validator is not None:
            self._validators[name] = validator

    async def aclose(self) -> None:
        await self._http.aclose()


def result_text(result: CallToolResult) -> str:
    """The text a tool result gives the model; JSON is re-serialised compactly to save tokens."""
    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(_compact(item.text))
        elif isinstance(item, ImageContent):
            parts.append(f"[image: {item.mime_type}]")
        elif isinstance(item, EmbeddedResource):
            resource = item.resource
            parts.append(resource.text if isinstance(resource, TextResourceContents) else f"[resource {resource.uri}]")
        else:
            parts.append(f"[{getattr(item, 'type', 'content')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts)


def _compact(text: str) -> str:
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and "\n" in stripped:
        try:
            return json.dumps(json.loads(stripped), ensure_ascii=False, separators=(",", ":"))
        except ValueError:
            return text
    return text
