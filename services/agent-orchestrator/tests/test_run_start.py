"""What a run does before its first model call, against real tool server processes: the work that
only changes with the tool snapshot is done once per snapshot, and a tool call is one HTTP request."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from conftest import ToolServer
from stacgis_common.auth import Identity
from stacgis_common.embeddings import embeddings_client
from stacgis_common.testing import RunningService
from stacgis_orchestrator.context_sources import CATALOG_RESOURCE, ResourceCache
from stacgis_orchestrator.context_window import ModelBudget
from stacgis_orchestrator.events import EventSink
from stacgis_orchestrator.model_step import ModelStep
from stacgis_orchestrator.prefix import all_tools
from stacgis_orchestrator.premises import catalogue_gaps
from stacgis_orchestrator.run_context import AgentDeps, RunContext, RunInput, SpatialInput
from stacgis_orchestrator.run_memory import parsed_catalog, prepare_memory
from stacgis_orchestrator.services import build_provider, service_headers
from stacgis_orchestrator.settings import OrchestratorSettings
from stacgis_orchestrator.tools.catalog import ToolCatalog
from stacgis_orchestrator.tools.mcp_client import ToolServerClient
from stacgis_orchestrator.tools.pool import ToolPool, ToolUnavailable
from stacgis_orchestrator.tools.selection import ToolSelector

MCP_POSTS = re.compile(r'^http_server_requests_total\{[^}]*method="POST"[^}]*route="/mcp"[^}]*\} (\S+)$', re.M)


@pytest_asyncio.fixture
async def deps(model_server: RunningService, raster: ToolServer, memory: ToolServer) -> AsyncIterator[AgentDeps]:
    settings = OrchestratorSettings(
        mcp_servers={"raster": raster.mcp, "memory": memory.mcp},
        llm_base_url=model_server.url,
        llm_model="scripted",
        embedding_base_url=model_server.url,
        resource_cache_seconds=0,  # every run reads the resources again, as a changed catalogue would be
    )
    pool = ToolPool(settings, lambda: service_headers(settings))
    await pool.start()
    embeddings = embeddings_client(settings)
    provider = build_provider(settings)
    yield AgentDeps(
        settings=settings,
        provider=provider,
        pool=pool,
        catalog=ToolCatalog(pool, settings),
        selector=ToolSelector(embeddings, settings.tool_keyword_weight),
        resources=ResourceCache(pool, settings),
        coordinator=None,  # the start of a run reads no cancel flag
        budget=ModelBudget(settings.llm_num_ctx),
    )
    await pool.aclose()
    await embeddings.aclose()
    await provider.aclose()


def run_context(deps: AgentDeps, message: str) -> RunContext:
    run = RunInput("run-start", Identity("alice", "s-1"), message, [], SpatialInput(), 4, "scripted")
    return RunContext(deps, run, EventSink(run.run_id))


def mcp_posts(server: ToolServer) -> float:
    """POST /mcp requests the tool server answered so far (its own /metrics)."""
    return sum(float(value) for value in MCP_POSTS.findall(httpx.get(server.url + "/metrics").text))


@pytest.mark.asyncio
async def test_the_catalogue_is_parsed_once_per_text_of_the_resource(deps: AgentDeps) -> None:
    first = run_context(deps, "mean elevation of Luxembourg")
    await prepare_memory(first, ModelStep(first))
    second = run_context(deps, "snowfall in Paris")
    second_memory = await prepare_memory(second, ModelStep(second))
    raw = deps.resources.raw(CATALOG_RESOURCE)
    assert raw is not None
    served = [item["id"] for item in json.loads(raw)]
    assert sorted(first.found.catalog.collections) == sorted(served) and served
    # The resource was read again for the second run (no cache time), equal: the same parsed catalogue.
    assert second.found.catalog is first.found.catalog
    # What the catalogue lacks is found once, kept in the findings the draft review reads, and told
    # to the model in the run's context (no collection holds snow).
    assert first.found.catalogue_gaps == catalogue_gaps(first.run.message, first.found.catalog) == []
    gaps = catalogue_gaps(second.run.message, second.found.catalog)
    assert [g.kind for g in gaps] == ["variable"] and second.found.catalogue_gaps == gaps
    context_message = second_memory.get_messages()[-2].content
    assert gaps[0].note in context_message
    changed = json.dumps([*json.loads(raw)[:1], {"id": "new-sst", "title": "Sea surface temperature", "time": ""}])
    catalog = parsed_catalog(changed)
    assert sorted(catalog.collections) == sorted([served[0], "new-sst"])
    assert catalog.holders("sea surface temperature")[0].id == "new-sst"


@pytest.mark.asyncio
async def test_the_tools_on_offer_are_built_once_per_snapshot(deps: AgentDeps) -> None:
    first = all_tools(deps.catalog, deps.pool, deps.settings)
    second = all_tools(deps.catalog, deps.pool, deps.settings)
    assert [spec.name for spec in first] == sorted(spec.name for spec in first)
    assert all(a is b for a, b in zip(first, second, strict=True))
    memory_tools = {tool.name for tool in deps.pool.tools() if tool.server == "memory"}
    assert memory_tools and memory_tools <= {spec.name for spec in first}
    # A listing that finds the same tools keeps the snapshot.
    await deps.pool.refresh()
    assert all(a is b for a, b in zip(first, all_tools(deps.catalog, deps.pool, deps.settings), strict=True))
    # An open circuit is a new snapshot: the server's tools are no longer offered.
    breaker = deps.pool.servers["memory"].breaker
    for _ in range(deps.settings.breaker_failure_threshold):
        breaker.record_failure()
    offered = {spec.name for spec in all_tools(deps.catalog, deps.pool, deps.settings)}
    assert offered == {spec.name for spec in first} - memory_tools
    breaker.record_success()
    assert [spec.name for spec in all_tools(deps.catalog, deps.pool, deps.settings)] == [s.name for s in first]


@pytest.mark.asyncio
async def test_a_run_mints_its_internal_token_once(deps: AgentDeps) -> None:
    context = run_context(deps, "mean elevation of Luxembourg")
    first, second = context.headers(), context.headers()
    assert first["Authorization"] == second["Authorization"]
    # Another run has a token of its own (every token is unique: its `jti`).
    assert run_context(deps, "another run").headers()["Authorization"] != first["Authorization"]


@pytest.mark.asyncio
async def test_a_tool_call_through_the_pool_is_one_http_request(deps: AgentDeps, raster: ToolServer) -> None:
    tool = deps.pool.get("get_raster_statistics")
    assert tool is not None
    headers = run_context(deps, "elevation statistics").headers()
    arguments = {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.6, 50.2]}
    await deps.pool.call(tool, arguments, headers)
    before = mcp_posts(raster)
    outcomes = [await deps.pool.call(tool, arguments, headers) for _ in range(5)]
    assert mcp_posts(raster) - before == 5
    assert all(not outcome.is_error for outcome in outcomes), outcomes[0].text
    assert json.loads(outcomes[0].text)["collection_id"] == "lux-dem"


@pytest.mark.asyncio
async def test_a_result_refused_by_a_schema_kept_from_before_a_redeploy_is_checked_against_a_fresh_listing_next(
    deps: AgentDeps,
) -> None:
    tool = deps.pool.get("get_raster_statistics")
    assert tool is not None
    client = deps.pool.servers[tool.server].client
    listed = client._listed[tool.remote_name]
    assert listed.output_schema is not None
    # As if raster-tools had been redeployed since the last listing: the schema kept here asks for a
    # field its results do not have.
    stale = {**listed.output_schema, "required": [*listed.output_schema.get("required", []), "no_such_field"]}
    client._listed[tool.remote_name] = listed.model_copy(update={"output_schema": stale})
    headers = run_context(deps, "elevation statistics").headers()
    arguments = {"collection_id": "lux-dem", "bbox": [5.7, 49.4, 6.6, 50.2]}
    with pytest.raises(ToolUnavailable, match="no_such_field"):
        await deps.pool.call(tool, arguments, headers)
    # The next call does not trust the kept listing until the pool lists the tools again.
    outcome = await deps.pool.call(tool, arguments, headers)
    assert not outcome.is_error and json.loads(outcome.text)["collection_id"] == "lux-dem"


@pytest.mark.asyncio
async def test_a_kept_output_validator_serves_only_the_schema_it_was_compiled_for() -> None:
    from anyio import create_memory_object_stream
    from mcp.client.session import ClientSession
    from mcp_types import CallToolResult, Tool

    def session() -> ClientSession:
        send, receive = create_memory_object_stream[Any](1)
        return ClientSession(receive, send)

    def tool(output: str) -> Tool:
        schema = {"type": "object", "properties": {"value": {"type": output}}, "required": ["value"]}
        return Tool(name="measure", input_schema={"type": "object"}, output_schema=schema)

    def result(value: object) -> CallToolResult:
        return CallToolResult(content=[], structured_content={"value": value})

    client = ToolServerClient("raster", "http://127.0.0.1:9/mcp")
    try:
        client._listed = {"measure": tool("number")}
        first = session()
        client._teach(first, "measure")
        await first.validate_tool_result("measure", result(1.5))
        compiled = first._tool_output_validators["measure"]
        client._listed = {"measure": tool("string")}  # listed again while the call ran: a new schema
        client._learn(first, "measure")
        second = session()
        client._teach(second, "measure")
        assert "measure" not in second._tool_output_validators, "compiled for the old schema"
        await second.validate_tool_result("measure", result("high"))
        client._learn(second, "measure")
        third = session()
        client._teach(third, "measure")
        kept = third._tool_output_validators["measure"]
        assert kept is second._tool_output_validators["measure"] and kept is not compiled
    finally:
        await client.aclose()
