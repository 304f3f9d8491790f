"""Every dashboard panel, run against a real Prometheus that scraped the running product during scripted traffic.

Needs the local product (`make up` with the scripted model); see conftest.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from stacgis_observability.inspect import (
    CLUSTER_METRIC_PREFIXES,
    PanelQuery,
    alert_rules,
    family_of,
    metric_names,
    queries,
    substitute,
)

from .live import ROOT, SERVICES, Prometheus, exported_samples
from .traffic import BAD_CALL, TOOL_CALLS, TrafficReport, describe

DASHBOARDS = sorted((ROOT / "charts" / "stacgis" / "dashboards").glob("*.json"))
RULES = sorted((ROOT / "charts" / "stacgis" / "rules").glob("*.yaml"))
# Series Prometheus makes itself for every target.
PROMETHEUS_MADE = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


def panel_queries(cluster_only: bool) -> list[PanelQuery]:
    found = [q for path in DASHBOARDS for q in queries(json.loads(Path(path).read_text()))]
    return [q for q in found if q.cluster_only == cluster_only]


def finite_points(result: list[dict]) -> int:
    return sum(1 for series in result for _, value in series["values"] if math.isfinite(float(value)))


def test_the_traffic_went_through_as_scripted(traffic: TrafficReport) -> None:
    report = describe(traffic)
    for server, (tool, _) in TOOL_CALLS.items():
        result = traffic.chats[server]
        assert result.status == 200, report
        names = result.names()
        assert "tool_result" in names and names[-1] == "done", f"{server} ({tool}):\n{report}"
    assert "tool_error" in traffic.chats["bad-call"].names(), f"{BAD_CALL[0]} should fail:\n{report}"
    assert traffic.chats["model-error"].names()[-1] == "error", report
    assert traffic.chats["slow"].names()[-1] == "done", report
    assert traffic.busy_status == 409, report
    assert traffic.resumed_events and traffic.resumed_events[-1] == "done", report
    assert traffic.tiles and all(status == 200 for status in traffic.tiles), report
    assert not traffic.problems, report


@pytest.mark.parametrize("query", panel_queries(cluster_only=False), ids=lambda q: q.id)
def test_panel_query_returns_data(query: PanelQuery, prometheus: Prometheus, traffic: TrafficReport) -> None:
    expr = substitute(query.expr)
    result = prometheus.range(expr, traffic.started - 5, traffic.finished, step=1)
    assert finite_points(result) > 0, (
        f"no data for {query.id}\n  {expr}\n  result: {json.dumps(result)[:500]}\ntraffic:\n{describe(traffic)}"
    )


@pytest.mark.parametrize("query", panel_queries(cluster_only=True), ids=lambda q: q.id)
def test_cluster_only_panels_have_no_data_locally(
    query: PanelQuery, prometheus: Prometheus, traffic: TrafficReport
) -> None:
    # If one of these ever had data here, its cluster-only mark would hide a real local check.
    result = prometheus.range(substitute(query.expr), traffic.started - 5, traffic.finished, step=5)
    assert finite_points(result) == 0, f"{query.id} has local data: it should not be marked cluster-only"


def exported_everywhere() -> set[str]:
    names: set[str] = set()
    for service in SERVICES:
        names |= exported_samples(service)
    return names


def test_panels_name_only_metrics_the_services_export(traffic: TrafficReport) -> None:
    exported = exported_everywhere() | PROMETHEUS_MADE
    missing = {}
    for query in panel_queries(cluster_only=False):
        unknown = metric_names(query.expr) - exported
        if unknown:
            missing[query.id] = sorted(unknown)
    assert not missing, f"panels name metrics no service exports: {missing}"


def test_alert_rules_name_only_exported_or_cluster_metrics(traffic: TrafficReport) -> None:
    exported = exported_everywhere() | PROMETHEUS_MADE
    missing = {}
    for path in RULES:
        for rule in alert_rules(yaml.safe_load(path.read_text())):
            names = {n for n in metric_names(rule["expr"]) if not n.startswith(CLUSTER_METRIC_PREFIXES)}
            # A histogram's series (x_bucket) or a counter (x_total) count when the family is exported.
            unknown = {n for n in names - exported if family_of(n, exported) is None}
            if unknown:
                missing[rule["alert"]] = sorted(unknown)
    assert not missing, f"alert rules name metrics no service exports: {missing}"


def test_alert_rules_evaluate_cleanly_on_live_data(prometheus: Prometheus, traffic: TrafficReport) -> None:
    rules = prometheus.rules()
    assert {r["name"] for r in rules} >= {
        "StacgisHighErrorRatio",
        "StacgisGateSaturated",
        "StacgisModelServerUnreachable",
    }
    broken = {r["name"]: r.get("lastError") for r in rules if r.get("health") != "ok"}
    assert not broken, f"rules failing to evaluate: {broken}"
