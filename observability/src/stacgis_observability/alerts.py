"""Prometheus alert rules of stacgis, written as data and rendered to plain rule-group YAML.

Every alert links to its section of docs/runbooks.md (the anchor is the alert name in lower case).
Thresholds here are the ones the dashboards draw, so a panel turns red where an alert would fire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RUNBOOK = "docs/runbooks.md"
SERVICES = "chat-gateway|agent-orchestrator|raster-tools|vector-tools|knowledge-tools|memory-tools"
SERVICE_JOBS = f'job=~".+-({SERVICES})"'
CONTAINERS = f'container=~"{SERVICES}|frontend|ollama|postgresql|redis"'
NOT_PROBES = 'route!~"/healthz|/readyz|/metrics"'
# 503 is the gateway's load shedding when the gate is full: StacgisGateSaturated covers it.
SERVER_ERRORS = 'status=~"5..",status!="503"'


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    duration: str
    severity: str
    summary: str
    description: str

    def rule(self) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.duration,
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook_url": f"{RUNBOOK}#{self.name.lower()}",
            },
        }


@dataclass(frozen=True)
class Group:
    name: str
    file_name: str
    alerts: tuple[Alert, ...]
    interval: str | None = None

    def document(self) -> dict[str, Any]:
        group: dict[str, Any] = {"name": self.name}
        if self.interval:
            group["interval"] = self.interval
        group["rules"] = [alert.rule() for alert in self.alerts]
        return {"groups": [group]}


def _requests(*matchers: str) -> str:
    return "http_server_requests_total{" + ",".join((NOT_PROBES, *matchers)) + "}"


AVAILABILITY = Group(
    name="stacgis-availability",
    file_name="stacgis-availability.yaml",
    alerts=(
        Alert(
            name="StacgisServiceDown",
            expr=f"up{{{SERVICE_JOBS}}} == 0",
            duration="5m",
            severity="critical",
            summary="{{ $labels.job }} target {{ $labels.instance }} is down",
            description=(
                "Prometheus has not scraped {{ $labels.instance }} of {{ $labels.job }} for 5 minutes; "
                "the pod is gone, crash-looping or unreachable."
            ),
        ),
        Alert(
            name="StacgisServiceNoReplicas",
            expr=f"sum by (namespace, job) (up{{{SERVICE_JOBS}}}) == 0",
            duration="2m",
            severity="critical",
            summary="{{ $labels.job }} has no healthy replica",
            description=(
                "No replica of {{ $labels.job }} in {{ $labels.namespace }} answers scrapes; "
                "the feature it serves is unavailable."
            ),
        ),
        Alert(
            name="StacgisPodCrashLooping",
            expr=(
                "max by (namespace, pod, container) "
                f'(max_over_time(kube_pod_container_status_waiting_reason{{reason="CrashLoopBackOff",{CONTAINERS}}}[5m]))'
                " >= 1\n"
                "or\n"
                "sum by (namespace, pod, container) "
                f"(increase(kube_pod_container_status_restarts_total{{{CONTAINERS}}}[15m])) > 3"
            ),
            duration="10m",
            severity="critical",
            summary="{{ $labels.container }} in {{ $labels.pod }} is crash-looping",
            description=(
                "Container {{ $labels.container }} of pod {{ $labels.pod }} ({{ $labels.namespace }}) is in "
                "CrashLoopBackOff or restarted more than 3 times in 15 minutes, for 10 minutes."
            ),
        ),
    ),
)

SLO = Group(
    name="stacgis-service-levels",
    file_name="stacgis-service-levels.yaml",
    alerts=(
        Alert(
            name="StacgisHighErrorRatio",
            expr=(
                f"sum by (namespace, service) (rate({_requests(SERVER_ERRORS)}[5m]))\n"
                f"  / sum by (namespace, service) (rate({_requests()}[5m])) > 0.05\n"
                f"and sum by (namespace, service) (rate({_requests()}[5m])) > 0.05"
            ),
            duration="10m",
            severity="critical",
            summary="{{ $labels.service }} answers {{ $value | humanizePercentage }} of requests with 5xx",
            description=(
                "More than 5% of the requests to {{ $labels.service }} ({{ $labels.namespace }}) failed with a "
                "server error for 10 minutes (probes and load-shedding 503s excluded)."
            ),
        ),
        Alert(
            name="StacgisGateSaturated",
            expr=(
                "max by (namespace) (stacgis_gateway_gate_slots_in_use)\n"
                "  / max by (namespace) (stacgis_gateway_gate_capacity) >= 0.9\n"
                "and max by (namespace) (stacgis_gateway_gate_capacity) > 0"
            ),
            duration="10m",
            severity="warning",
            summary="The chat concurrency gate is {{ $value | humanizePercentage }} full",
            description=(
                "At least 90% of the gateway's concurrency slots in {{ $labels.namespace }} have been in use for "
                "10 minutes: new chats are queued (503) or about to be."
            ),
        ),
        Alert(
            name="StacgisHighTimeToFirstToken",
            expr=(
                "histogram_quantile(0.95, sum by (namespace, le) "
                "(rate(stacgis_gateway_time_to_first_token_seconds_bucket[10m]))) > 15"
            ),
            duration="10m",
            severity="warning",
            summary="Users wait {{ $value | humanizeDuration }} (p95) for the first answer token",
            description=(
                "The 95th percentile of the time from a chat request to its first answer token has been above "
                "15 s for 10 minutes in {{ $labels.namespace }}."
            ),
        ),
        Alert(
            name="StacgisCircuitBreakerOpen",
            expr="max by (namespace, server) (stacgis_circuit_breaker_state) >= 2",
            duration="5m",
            severity="warning",
            summary="The circuit breaker to tool server {{ $labels.server }} is open",
            description=(
                "The orchestrator has stopped calling {{ $labels.server }} ({{ $labels.namespace }}) for 5 "
                "minutes after repeated failures; its tools are unavailable to the model."
            ),
        ),
        Alert(
            name="StacgisModelServerUnreachable",
            expr=(
                "sum by (namespace) (rate(stacgis_model_errors_total"
                '{kind=~"model_unavailable|model_timeout"}[5m])) > 0\n'
                "unless sum by (namespace) (rate(gen_ai_client_operation_duration_seconds_count"
                '{error_type=""}[5m])) > 0\n'
                "or\n"
                "max by (namespace, deployment) (kube_deployment_status_replicas_available"
                '{deployment=~".+-ollama"}) == 0'
            ),
            duration="5m",
            severity="critical",
            summary="The LLM server cannot be reached",
            description=(
                "For 5 minutes the orchestrator in {{ $labels.namespace }} could not connect to the model "
                "server and no model call succeeded, or the Ollama Deployment has no available replica. "
                "Every chat fails."
            ),
        ),
        Alert(
            name="StacgisToolFailureRatio",
            expr=(
                'sum by (namespace, server) (rate(stacgis_tool_calls_total{outcome!="ok"}[10m]))\n'
                "  / sum by (namespace, server) (rate(stacgis_tool_calls_total[10m])) > 0.25\n"
                "and sum by (namespace, server) (rate(stacgis_tool_calls_total[10m])) > 0.02"
            ),
            duration="10m",
            severity="warning",
            summary="{{ $value | humanizePercentage }} of calls to tool server {{ $labels.server }} fail",
            description=(
                "More than a quarter of the orchestrator's calls to {{ $labels.server }} "
                "({{ $labels.namespace }}) have not returned ok for 10 minutes."
            ),
        ),
    ),
)

GROUPS: tuple[Group, ...] = (AVAILABILITY, SLO)
