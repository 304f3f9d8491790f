"""Per-tool metrics count outcomes and never swallow the tool's error; a metered server counts every
tool registered on it under its own name, through the SDK's real call path, and leaves its schemas as they
are."""

# String annotations on purpose: the SDK evaluates them in the tool's module, which metering must not change.
from __future__ import annotations

from typing import Annotated, Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from prometheus_client import REGISTRY
from pydantic import Field, SecretStr

from stacgis_common.mcp_app import create_mcp_server
from stacgis_common.settings import ServiceSettings
from stacgis_common.tool_metrics import MeteredMCPServer, ToolMetrics, caused_by

METRICS = ToolMetrics("commontest")
SERVED = ToolMetrics("commontest_served")
MAX_TIMES = 5
Times = Annotated[int, Field(ge=1, le=MAX_TIMES, description="How many times to repeat the word.")]
SETTINGS = ServiceSettings(internal_token_secret=SecretStr("t" * 40))


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_calls_are_counted_by_outcome_and_timed() -> None:
    with METRICS.observe("search"):
        pass
    with pytest.raises(ValueError, match="bad"), METRICS.observe("search"):
        raise ValueError("bad")
    assert sample("commontest_tool_calls_total", tool="search", outcome="ok") == 1
    assert sample("commontest_tool_calls_total", tool="search", outcome="error") == 1
    assert sample("commontest_tool_duration_seconds_count", tool="search") == 2


def test_a_server_may_name_outcomes_by_exception() -> None:
    metrics = ToolMetrics(
        "commontest_named", outcome_of=lambda exc: "timeout" if isinstance(exc, TimeoutError) else "crash"
    )
    for error in (TimeoutError("slow"), KeyError("bug"), KeyError("bug")):
        with pytest.raises(type(error)), metrics.observe("read"):
            raise error
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="timeout") == 1
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="crash") == 2
    assert sample("commontest_named_tool_calls_total", tool="read", outcome="error") == 0


def register(server: MCPServer[Any]) -> None:
    """Two tools, as a service registers them: nothing in them about metrics."""

    @server.tool()
    async def repeat(word: str, times: Times = 2) -> str:
        """Repeat a word; 'refused' is refused, 'slow' times out, 'bug' crashes."""
        if word == "refused":
            raise ToolError("not this word")
        if word == "slow":
            raise ToolError("took too long") from TimeoutError()
        if word == "bug":
            raise KeyError(word)
        return word * times

    @server.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"


async def call(server: MCPServer[Any], tool: str, arguments: dict[str, Any]) -> bool:
    """Call through the SDK's in-process client; whether the answer is an error."""
    async with Client(server) as client:
        return (await client.call_tool(tool, arguments)).is_error


@pytest.mark.asyncio
async def test_every_tool_of_a_metered_server_is_counted_under_its_own_name() -> None:
    server = create_mcp_server("metered-tools", SETTINGS, tool_metrics=SERVED)
    assert isinstance(server, MeteredMCPServer)
    register(server)
    calls = [
        ("repeat", {"word": "ab"}, False),
        ("repeat", {"word": "cd", "times": 3}, False),
        ("repeat", {"word": "refused"}, True),
        ("repeat", {"word": "bug"}, True),
        ("repeat", {"word": "ab", "times": MAX_TIMES + 1}, True),  # refused by the SDK before the tool runs
        ("ping", {}, False),
        ("no_such_tool", {}, True),
    ]
    for tool, arguments, is_error in calls:
        assert await call(server, tool, arguments) is is_error, (tool, arguments)

    known = [(tool, is_error) for tool, _, is_error in calls if tool != "no_such_tool"]
    for tool in ("repeat", "ping"):
        for outcome, wanted in (("ok", False), ("error", True)):
            expected = sum(1 for name, is_error in known if name == tool and is_error is wanted)
            assert sample("commontest_served_tool_calls_total", tool=tool, outcome=outcome) == expected
        assert sample("commontest_served_tool_duration_seconds_count", tool=tool) == sum(
            1 for name, _ in known if name == tool
        )
    # An unknown name is refused without becoming a label.
    assert sample("commontest_served_tool_duration_seconds_count", tool="no_such_tool") == 0


def raster_like_outcome(exc: Exception) -> str:
    """Outcomes named from the SDK's exception: a timeout anywhere in its causes, a crash, else an error."""
    if caused_by(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, UnexpectedToolError):
        return "crash"
    return "error"


@pytest.mark.asyncio
async def test_outcome_of_sees_what_the_tool_raised_behind_the_sdks_error() -> None:
    metrics = ToolMetrics("commontest_named_served", outcome_of=raster_like_outcome)
    server = create_mcp_server("named-tools", SETTINGS, tool_metrics=metrics)
    register(server)
    words = ["slow", "slow", "bug", "refused", "fine"]
    for word in words:
        await call(server, "repeat", {"word": word})
    await call(server, "repeat", {"word": "fine", "times": 0})  # refused by the SDK: an error, not a crash
    expected = {
        "timeout": words.count("slow"),
        "crash": words.count("bug"),
        "error": words.count("refused") + 1,  # and the SDK's refusal
        "ok": words.count("fine"),
    }
    for outcome, count in expected.items():
        assert sample("commontest_named_served_tool_calls_total", tool="repeat", outcome=outcome) == count


@pytest.mark.asyncio
async def test_metering_leaves_every_tool_schema_as_the_plain_server_has_it() -> None:
    plain = create_mcp_server("plain-tools", SETTINGS)
    metered = create_mcp_server("plain-tools", SETTINGS, tool_metrics=ToolMetrics("commontest_schema"))
    assert type(plain) is MCPServer
    for server in (plain, metered):
        register(server)
    listed = [
        [tool.model_dump(mode="json", by_alias=True) for tool in await server.list_tools()]
        for server in (plain, metered)
    ]
    assert listed[0] == listed[1]
    repeat = next(tool for tool in listed[1] if tool["name"] == "repeat")
    assert repeat["inputSchema"]["properties"]["times"]["maximum"] == MAX_TIMES  # the string annotation resolved


def test_caused_by_follows_raise_from_only() -> None:
    try:
        try:
            raise TimeoutError
        except TimeoutError as timeout:
            raise ToolError("slow") from timeout
    except ToolError as error:
        assert caused_by(error, TimeoutError)
        assert caused_by(error, ToolError)
        assert not caused_by(error, KeyError)
    try:
        try:
            raise TimeoutError
        except TimeoutError:
            raise ToolError("while handling, not from") from None
    except ToolError as error:
        assert not caused_by(error, TimeoutError)
