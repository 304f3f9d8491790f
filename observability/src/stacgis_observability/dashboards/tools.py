"""Tools per server: MCP tool calls as the orchestrator makes them, and the tool servers' own view."""

from __future__ import annotations

from ..panels import (
    DashboardSpec,
    PanelSpec,
    Query,
    Row,
    ValueText,
    quantile,
    rate,
    ratio_or_zero,
    rising,
    sel,
    volume,
)

calls = Row(
    "Tool calls (orchestrator's view)",
    (
        PanelSpec(
            title="Tool calls per second by server and outcome",
            description=(
                "MCP tool calls the orchestrator made, by tool server and outcome (stacgis_tool_calls_total). "
                "ok: answered; error: the tool reported an error (often bad arguments from the model); other "
                "outcomes (timeout, unavailable, rejected) are failures of the server or the breaker."
            ),
            unit="ops",
            queries=(
                Query(f"sum by (server, outcome) ({rate('stacgis_tool_calls_total')})", "{{server}} {{outcome}}"),
            ),
            thresholds=volume(20),
        ),
        PanelSpec(
            title="Tool failure ratio by server",
            description=(
                "Share of tool calls per server whose outcome was not ok (stacgis_tool_calls_total). "
                "StacgisToolFailureRatio fires above 25% for 10 minutes."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(
                        rate("stacgis_tool_calls_total", 'outcome!="ok"'),
                        rate("stacgis_tool_calls_total"),
                        "server",
                    ),
                    "{{server}}",
                ),
            ),
            thresholds=rising(0.05, 0.25),
            min=0,
        ),
        PanelSpec(
            title="p95 tool call latency by server",
            description=(
                "95th percentile of a tool call as the orchestrator times it, network and retries included "
                "(stacgis_tool_duration_seconds)."
            ),
            unit="s",
            queries=(Query(quantile(0.95, "stacgis_tool_duration_seconds", "server"), "{{server}}"),),
            thresholds=rising(2, 10),
        ),
        PanelSpec(
            title="p95 tool call latency by tool",
            description=(
                "95th percentile per tool (stacgis_tool_duration_seconds): spots the one slow tool, e.g. zonal "
                "statistics over a large area or a semantic search with a cold embeddings server."
            ),
            unit="s",
            queries=(Query(quantile(0.95, "stacgis_tool_duration_seconds", "server, tool"), "{{server}}/{{tool}}"),),
            thresholds=rising(2, 10),
        ),
        PanelSpec(
            title="Circuit breaker state by tool server",
            description=(
                "The orchestrator's per-server circuit breaker (stacgis_circuit_breaker_state: 0 closed, "
                "1 half-open, 2 open; worst replica shown). Open means calls to that server fail fast and its "
                "tools are unavailable to the model; StacgisCircuitBreakerOpen fires after 5 minutes."
            ),
            unit="none",
            queries=(Query(f"max by (server) ({sel('stacgis_circuit_breaker_state')})", "{{server}}"),),
            thresholds=rising(1, 2),
            mappings=(
                ValueText("0", "closed", "green"),
                ValueText("1", "half-open", "orange"),
                ValueText("2", "open", "red"),
            ),
            kind="stat",
            min=0,
            max=2,
            width=24,
            height=5,
        ),
    ),
)

MCP = "mcp_server_operation_duration_seconds"
TOOL_CALL = 'mcp_method_name="tools/call"'

servers = Row(
    "Tool servers (server side)",
    (
        PanelSpec(
            title="Tool calls handled per second by server",
            description=(
                "tools/call requests each MCP server handled, by error type (empty: answered), from the MCP "
                f"SDK's server spans ({MCP}_count). tool_error: the tool refused the call, usually arguments "
                "it names in the message."
            ),
            unit="ops",
            queries=(
                Query(
                    f"sum by (service, error_type) ({rate(MCP + '_count', TOOL_CALL)})",
                    "{{service}} {{error_type}}",
                ),
            ),
            thresholds=volume(20),
        ),
        PanelSpec(
            title="p95 server-side tool time by tool",
            description=(
                f"95th percentile of the time a tool server spends on one call, per tool ({MCP}): raster "
                "reads (COG windows, overviews, zonal statistics) on raster-tools, pgvector searches on "
                "vector-, knowledge- and memory-tools. The gap to the orchestrator's view is network and retries."
            ),
            unit="s",
            queries=(
                Query(quantile(0.95, MCP, "service, gen_ai_tool_name", TOOL_CALL), "{{service}}/{{gen_ai_tool_name}}"),
            ),
            thresholds=rising(1, 5),
        ),
    ),
)

raster = Row(
    "raster-tools map tiles",
    (
        PanelSpec(
            title="Map tile latency",
            description=(
                "p50 and p95 of rendering one XYZ map tile from a COG (raster_tile_duration_seconds). The map "
                "feels sluggish above about 250 ms."
            ),
            unit="s",
            queries=(
                Query(quantile(0.5, "raster_tile_duration_seconds"), "p50"),
                Query(quantile(0.95, "raster_tile_duration_seconds"), "p95"),
            ),
            thresholds=rising(0.25, 1),
            width=8,
        ),
        PanelSpec(
            title="Map tiles per second by outcome",
            description=(
                "Tile requests by outcome (raster_tiles_total). A rise in errors usually means an unreadable "
                "asset or a bad rendering parameter."
            ),
            unit="ops",
            queries=(Query(f"sum by (outcome) ({rate('raster_tiles_total')})", "{{outcome}}"),),
            thresholds=volume(100),
            width=8,
        ),
        PanelSpec(
            title="Area reads served from overviews",
            description=(
                "Area reads answered from a COG overview instead of full resolution per second "
                "(raster_overview_reads_total): large areas stay fast at the price of coarser pixels."
            ),
            unit="ops",
            queries=(Query(f"sum({rate('raster_overview_reads_total')})", "overview reads"),),
            thresholds=volume(5),
            width=8,
        ),
    ),
)

DASHBOARD = DashboardSpec(
    uid="stacgis-tools",
    title="stacgis / Tools per server",
    description="MCP tool calls per tool server: rate, failures, latency, circuit breakers, and raster tiles.",
    file_name="stacgis-tools.json",
    rows=(calls, servers, raster),
)
