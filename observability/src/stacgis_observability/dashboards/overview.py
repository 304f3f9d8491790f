"""Overview: traffic, errors, latency and capacity of the whole product on one screen."""

from __future__ import annotations

from ..panels import (
    NOT_PROBES,
    DashboardSpec,
    PanelSpec,
    Query,
    Row,
    falling,
    quantile,
    rate,
    ratio_or_zero,
    rising,
    sel,
    volume,
)

# 503 is the gateway shedding load when the gate is full: shown under Capacity, not as an error.
SERVER_ERRORS = 'status=~"5..",status!="503"'
SERVICES_JOB = 'job=~".*(chat-gateway|agent-orchestrator|raster-tools|vector-tools|knowledge-tools|memory-tools)"'

traffic = Row(
    "Traffic",
    (
        PanelSpec(
            title="Requests per second by service",
            description=(
                "HTTP requests answered by each service (probes and scrapes excluded), from "
                "http_server_requests_total. The gateway's line is what users send; the others follow from it."
            ),
            unit="reqps",
            queries=(Query(f"sum by (service) ({rate('http_server_requests_total', NOT_PROBES)})", "{{service}}"),),
            thresholds=volume(50),
        ),
        PanelSpec(
            title="Chat runs finished per second by outcome",
            description=(
                "Runs the gateway saw end, by outcome (done, error, cancelled), from "
                "stacgis_gateway_runs_finished_total. A growing error share means users get no answer."
            ),
            unit="ops",
            queries=(Query(f"sum by (outcome) ({rate('stacgis_gateway_runs_finished_total')})", "{{outcome}}"),),
            thresholds=volume(10),
            stack=True,
        ),
        PanelSpec(
            title="Open answer streams",
            description=(
                "SSE responses open right now, summed over gateway replicas (stacgis_gateway_active_streams): "
                "users currently waiting for or reading an answer."
            ),
            unit="short",
            queries=(Query(f"sum({sel('stacgis_gateway_active_streams')})", "streams"),),
            thresholds=volume(100),
            kind="stat",
            width=6,
        ),
        PanelSpec(
            title="SSE events sent per second",
            description=(
                "Events streamed to browsers by event name (content, tool_start, done, ...), from "
                "stacgis_gateway_events_sent_total. content dominates while answers stream."
            ),
            unit="ops",
            queries=(Query(f"sum by (event) ({rate('stacgis_gateway_events_sent_total')})", "{{event}}"),),
            thresholds=volume(500),
            width=18,
        ),
    ),
)

errors = Row(
    "Errors",
    (
        PanelSpec(
            title="Server error ratio by service",
            description=(
                "Share of requests answered with a 5xx status other than 503 per service (probes excluded; 503 "
                "is the gate shedding load, see Capacity). "
                "Above 1% something is failing for users; the StacgisHighErrorRatio alert fires at 5% for 10 minutes."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(
                        rate("http_server_requests_total", NOT_PROBES, SERVER_ERRORS),
                        rate("http_server_requests_total", NOT_PROBES),
                        "service",
                    ),
                    "{{service}}",
                ),
            ),
            thresholds=rising(0.01, 0.05),
            min=0,
        ),
        PanelSpec(
            title="Client error ratio by service",
            description=(
                "Share of 4xx answers (bad input, missing session, rejected by the gate or the rate limit). "
                "A jump usually means a client or a proxy sends something the API refuses."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(
                        rate("http_server_requests_total", NOT_PROBES, 'status=~"4.."'),
                        rate("http_server_requests_total", NOT_PROBES),
                        "service",
                    ),
                    "{{service}}",
                ),
            ),
            thresholds=rising(0.05, 0.2),
            min=0,
        ),
    ),
)

latency = Row(
    "Latency",
    (
        PanelSpec(
            title="p95 time to response headers by service",
            description=(
                "95th percentile of the time each service takes to send response headers "
                "(http_server_request_duration_seconds). For streaming endpoints this is the time to open the stream."
            ),
            unit="s",
            queries=(
                Query(quantile(0.95, "http_server_request_duration_seconds", "service", NOT_PROBES), "{{service}}"),
            ),
            thresholds=rising(0.5, 2),
        ),
        PanelSpec(
            title="Time to first token seen by users",
            description=(
                "From the gateway receiving a chat request to sending the first answer token "
                "(stacgis_gateway_time_to_first_token_seconds): p50 and p95. Includes gate, orchestration, tool "
                "calls before the answer and the model's own time to first token. StacgisHighTimeToFirstToken "
                "fires at p95 > 15 s."
            ),
            unit="s",
            queries=(
                Query(quantile(0.5, "stacgis_gateway_time_to_first_token_seconds"), "p50"),
                Query(quantile(0.95, "stacgis_gateway_time_to_first_token_seconds"), "p95"),
            ),
            thresholds=rising(5, 15),
        ),
    ),
)

endpoints = Row(
    "Endpoints",
    (
        PanelSpec(
            title="Requests per second by endpoint",
            description=(
                "Golden signals per endpoint, traffic: requests per service, method and route template "
                "(http_server_requests_total; probes excluded). /mcp on the tool servers carries every tool call."
            ),
            unit="reqps",
            queries=(
                Query(
                    f"sum by (service, method, route) ({rate('http_server_requests_total', NOT_PROBES)})",
                    "{{service}} {{method}} {{route}}",
                ),
            ),
            thresholds=volume(20),
            width=8,
        ),
        PanelSpec(
            title="Server error ratio by endpoint",
            description=(
                "Golden signals per endpoint, errors: share of 5xx answers other than 503 per service, method "
                "and route (http_server_requests_total). Points at the one failing endpoint behind a service's ratio."
            ),
            unit="percentunit",
            queries=(
                Query(
                    ratio_or_zero(
                        rate("http_server_requests_total", NOT_PROBES, SERVER_ERRORS),
                        rate("http_server_requests_total", NOT_PROBES),
                        "service, method, route",
                    ),
                    "{{service}} {{method}} {{route}}",
                ),
            ),
            thresholds=rising(0.01, 0.05),
            min=0,
            width=8,
        ),
        PanelSpec(
            title="p95 time to response headers by endpoint",
            description=(
                "Golden signals per endpoint, latency: 95th percentile per service, method and route "
                "(http_server_request_duration_seconds). Streaming endpoints count until the stream opens."
            ),
            unit="s",
            queries=(
                Query(
                    quantile(0.95, "http_server_request_duration_seconds", "service, method, route", NOT_PROBES),
                    "{{service}} {{method}} {{route}}",
                ),
            ),
            thresholds=rising(0.5, 2),
            width=8,
        ),
    ),
)

capacity = Row(
    "Capacity",
    (
        PanelSpec(
            title="Concurrency gate usage",
            description=(
                "Gate slots held by running chats over the gate's capacity (stacgis_gateway_gate_slots_in_use / "
                "stacgis_gateway_gate_capacity; every replica sees the shared Redis gate, so the max is taken). "
                "At 100% new chats are queued with 503; StacgisGateSaturated fires at 90% for 10 minutes."
            ),
            unit="percentunit",
            queries=(
                Query(
                    f"max({sel('stacgis_gateway_gate_slots_in_use')}) / max({sel('stacgis_gateway_gate_capacity')})",
                    "gate usage",
                ),
            ),
            thresholds=rising(0.7, 0.9),
            min=0,
            max=1,
            kind="stat",
            width=6,
        ),
        PanelSpec(
            title="Chats turned away per second by reason",
            description=(
                "Chat requests rejected by the gateway (stacgis_gateway_rejections_total): gate_full (capacity), "
                "session_busy (a run is already streaming for the session), rate_limited. Any steady gate_full "
                "means users wait in the queue: add gateway capacity or model throughput."
            ),
            unit="ops",
            queries=(Query(f"sum by (reason) ({rate('stacgis_gateway_rejections_total')})", "{{reason}}"),),
            thresholds=rising(0.01, 0.1),
            width=10,
        ),
        PanelSpec(
            title="Healthy scrape targets per service",
            description=(
                "Replicas of each service whose /metrics Prometheus scraped successfully (up). A drop to 0 means "
                "the service is down (StacgisServiceNoReplicas)."
            ),
            unit="short",
            queries=(Query(f"sum by (job) ({sel('up', SERVICES_JOB)})", "{{job}}"),),
            thresholds=falling(0.5, 1),
            min=0,
            decimals=0,
            width=8,
        ),
    ),
)

DASHBOARD = DashboardSpec(
    uid="stacgis-overview",
    title="stacgis / Overview",
    description="Traffic, errors, latency and capacity of stacgis: start here.",
    file_name="stacgis-overview.json",
    rows=(traffic, errors, latency, endpoints, capacity),
)
