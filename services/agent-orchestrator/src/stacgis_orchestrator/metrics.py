"""Prometheus metrics of the orchestrator; GenAI semantic-convention names where one fits."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

MODEL_LABELS = ["gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model"]
SECONDS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160)

MODEL_DURATION = Histogram(
    "gen_ai_client_operation_duration_seconds",
    "Duration of model calls, from request to the end of the stream",
    [*MODEL_LABELS, "error_type"],
    buckets=SECONDS_BUCKETS,
)
TOKEN_USAGE = Histogram(
    "gen_ai_client_token_usage",
    "Tokens per model call, by direction (input, output)",
    [*MODEL_LABELS, "gen_ai_token_type"],
    buckets=(16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
)
TIME_TO_FIRST_TOKEN = Histogram(
    "gen_ai_server_time_to_first_token_seconds",
    "Time from sending a model request to its first streamed token (thinking, text or tool call)",
    MODEL_LABELS,
    buckets=SECONDS_BUCKETS,
)
MODEL_ERRORS = Counter("stacgis_model_errors_total", "Failed model calls by kind", ["kind"])

STEPS_PER_RUN = Histogram(
    "stacgis_agent_steps_per_run",
    "Agent steps (model calls) per run",
    buckets=(1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50),
)
RUNS = Counter("stacgis_agent_runs_total", "Finished runs by outcome", ["outcome"])
DRAFTS_WITHDRAWN = Counter(
    "stacgis_answers_withdrawn", "Draft answers withdrawn for quoting numbers no tool result gave"
)
REPETITIONS_STOPPED = Counter(
    "stacgis_model_repetitions_stopped", "Model streams stopped because the answer repeated one passage"
)
PREMISE_GAPS = Counter(
    "stacgis_premise_gaps",
    "Answers or calls whose data did not cover the question (kind: variable, period, place, call)",
    ["kind"],
)
for _kind in ("variable", "period", "place", "call"):
    PREMISE_GAPS.labels(_kind)  # exported at 0 from the start, so dashboards and alerts see the series
ACTIVE_RUNS = Gauge("stacgis_agent_active_runs", "Runs in progress on this replica")

TOOL_CALLS = Counter(
    "stacgis_tool_calls_total", "Tool calls by tool, server and outcome", ["tool", "server", "outcome"]
)
TOOL_DURATION = Histogram(
    "stacgis_tool_duration_seconds",
    "Duration of tool calls, retries included",
    ["tool", "server"],
    buckets=SECONDS_BUCKETS,
)
TOOL_SELECTION_SECONDS = Histogram(
    "stacgis_tool_selection_seconds",
    "Time to rank the tools for one step (query embedding included)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
BREAKER_STATE = Gauge(
    "stacgis_circuit_breaker_state", "Circuit breaker per MCP server: 0 closed, 1 half-open, 2 open", ["server"]
)
APPROVALS = Counter("stacgis_approvals_total", "Approval requests by outcome", ["outcome"])
