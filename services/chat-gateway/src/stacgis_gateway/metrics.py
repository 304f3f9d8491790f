"""Prometheus metrics of the gateway (the HTTP request metrics come from stacgis_common.telemetry)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# The service name in shared metrics (stacgis_common.telemetry's HTTP and database histograms).
SERVICE = "chat-gateway"

ACTIVE_STREAMS = Gauge("stacgis_gateway_active_streams", "SSE responses open on this replica")
GATE_SLOTS_IN_USE = Gauge(
    "stacgis_gateway_gate_slots_in_use", "Runs holding a gate slot (all replicas; as last seen by this one)"
)
GATE_CAPACITY = Gauge("stacgis_gateway_gate_capacity", "Gate slots in total")
REJECTIONS = Counter(
    "stacgis_gateway_rejections_total",
    "Run requests turned away, by reason (gate_full, session_busy, rate_limited)",
    ["reason"],
)
TIME_TO_FIRST_TOKEN = Histogram(
    "stacgis_gateway_time_to_first_token_seconds",
    "From receiving a chat request to sending the first answer token to the browser",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
EVENTS_SENT = Counter("stacgis_gateway_events_sent_total", "SSE events sent to browsers, by event name", ["event"])
RESUMES = Counter("stacgis_gateway_resumes_total", "Run streams resumed with GET /chat/runs/{id}/events")
RUNS_FINISHED = Counter(
    "stacgis_gateway_runs_finished_total",
    "Runs ended on this replica, by outcome (done, error, cancelled)",
    ["outcome"],
)
RUNS_TAKEN_OVER = Counter(
    "stacgis_gateway_runs_taken_over_total",
    "Runs of a stopped replica that this replica ended (partial answer saved, session and slot freed)",
)
INVALID_EVENTS = Counter(
    "stacgis_gateway_invalid_events_total", "Orchestrator events dropped because they do not parse as AgentEvent"
)
HISTORY_WRITES = Counter(
    "stacgis_gateway_history_writes_total",
    "Finished runs' history writes, by outcome: stored, duplicate, parked (Postgres down, kept in Redis), "
    "flushed (a parked write stored later), failed",
    ["outcome"],
)
