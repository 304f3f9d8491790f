"""Declarative panel and dashboard specs, turned into Grafana JSON with grafana-foundation-sdk.

Dashboards are written as data (``DashboardSpec`` of ``Row`` of ``PanelSpec``) so that every panel
is forced to carry a unit, a description and thresholds, and so tests can reason about them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as common_models
from grafana_foundation_sdk.models import dashboard as dashboard_models

# Panels over metrics that only exist in a cluster (kube-state-metrics, cAdvisor, DCGM exporter)
# carry this tag; the local "every panel returns data" check skips them.
CLUSTER_ONLY_TAG = "stacgis_cluster_only"
CLUSTER_ONLY_NOTE = "Cluster only: reads {source} metrics, which a local run does not have."
DASHBOARD_TAG = "stacgis"

DATASOURCE = dashboard_models.DataSourceRef(type_val="prometheus", uid="${datasource}")

# Label matcher every stacgis series gets, so one Grafana can watch several installs.
NS = 'namespace=~"$namespace"'
# Probe and scrape endpoints: excluded from traffic, error and latency views.
NOT_PROBES = 'route!~"/healthz|/readyz|/metrics"'

Step = tuple[float | None, str]


def sel(metric: str, *matchers: str) -> str:
    """``metric{namespace=~"$namespace",<matchers>}``."""
    return metric + "{" + ",".join((NS, *matchers)) + "}"


def rate(metric: str, *matchers: str) -> str:
    return f"rate({sel(metric, *matchers)}[$__rate_interval])"


def quantile(q: float, histogram: str, by: str = "", *matchers: str) -> str:
    """histogram_quantile over a Prometheus histogram's buckets, grouped by ``by`` (comma list)."""
    group = f"{by}, le" if by else "le"
    return f"histogram_quantile({q}, sum by ({group}) ({rate(histogram + '_bucket', *matchers)}))"


def ratio_or_zero(bad: str, total: str, by: str) -> str:
    """bad/total per ``by`` group, 0 (not "no data") for groups that had traffic but no bad events."""
    return f"(sum by ({by}) ({bad}) or (sum by ({by}) ({total}) * 0)) / sum by ({by}) ({total})"


def rising(warn: float, bad: float) -> tuple[Step, ...]:
    """Thresholds where a higher value is worse."""
    return ((None, "green"), (warn, "orange"), (bad, "red"))


def falling(bad: float, warn: float) -> tuple[Step, ...]:
    """Thresholds where a lower value is worse."""
    return ((None, "red"), (bad, "orange"), (warn, "green"))


def volume(expected_max: float) -> tuple[Step, ...]:
    """Thresholds of a pure volume series: blue, then orange above what one replica is sized for."""
    return ((None, "blue"), (expected_max, "orange"))


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = "__auto"


@dataclass(frozen=True)
class ValueText:
    """Shows ``text`` in ``color`` instead of the number ``value`` (e.g. circuit-breaker states)."""

    value: str
    text: str
    color: str


@dataclass(frozen=True)
class PanelSpec:
    title: str
    description: str
    unit: str
    queries: tuple[Query, ...]
    thresholds: tuple[Step, ...]
    kind: Literal["timeseries", "stat"] = "timeseries"
    # Name of the exporter family for cluster-only panels ("kube-state-metrics", "cAdvisor", ...).
    cluster_only: str | None = None
    width: int = 12
    height: int = 8
    min: float | None = None
    max: float | None = None
    decimals: int | None = None
    mappings: tuple[ValueText, ...] = ()
    stack: bool = False

    def __post_init__(self) -> None:
        if not self.description.strip() or not self.unit or not self.queries:
            raise ValueError(f"panel {self.title!r}: description, unit and at least one query are required")
        if not self.thresholds or self.thresholds[0][0] is not None:
            raise ValueError(f"panel {self.title!r}: thresholds must start with a base step (value None)")
        values = [value for value, _ in self.thresholds[1:]]
        if any(value is None for value in values) or values != sorted(v for v in values if v is not None):
            raise ValueError(f"panel {self.title!r}: threshold values must be increasing numbers")


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[PanelSpec, ...]


@dataclass(frozen=True)
class DashboardSpec:
    uid: str
    title: str
    description: str
    file_name: str
    rows: tuple[Row, ...]
    tags: tuple[str, ...] = field(default_factory=tuple)


class _Tagged(cogbuilder.Builder[dashboard_models.Panel]):
    """Adds panel tags, which the panel-type builders of the SDK do not expose."""

    def __init__(self, inner: cogbuilder.Builder[dashboard_models.Panel], tags: list[str]) -> None:
        self.inner = inner
        self.tags = tags

    def build(self) -> dashboard_models.Panel:
        panel = self.inner.build()
        panel.tags = list(self.tags)
        return panel


def _thresholds(steps: tuple[Step, ...]) -> dashboard_builders.ThresholdsConfig:
    return (
        dashboard_builders.ThresholdsConfig()
        .mode(dashboard_models.ThresholdsMode.ABSOLUTE)
        .steps([dashboard_models.Threshold(value=value, color=color) for value, color in steps])
    )


def _target(query: Query, ref_id: str) -> prometheus.Dataquery:
    # Range queries everywhere: stat panels show the last value and draw the series behind it.
    return (
        prometheus.Dataquery()
        .expr(query.expr)
        .legend_format(query.legend)
        .ref_id(ref_id)
        .datasource(DATASOURCE)
        .range()
    )


def _mappings(spec: PanelSpec) -> list[dashboard_models.ValueMapping]:
    if not spec.mappings:
        return []
    options = {
        m.value: dashboard_models.ValueMappingResult(text=m.text, color=m.color, index=i)
        for i, m in enumerate(spec.mappings)
    }
    return [dashboard_models.ValueMap(options=options)]


def build_panel(spec: PanelSpec, panel_id: int) -> cogbuilder.Builder[dashboard_models.Panel]:
    description = spec.description.strip()
    if spec.cluster_only:
        description = CLUSTER_ONLY_NOTE.format(source=spec.cluster_only) + " " + description
    builder: timeseries.Panel | stat.Panel
    if spec.kind == "stat":
        builder = (
            stat.Panel()
            .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
            .graph_mode(common_models.BigValueGraphMode.AREA)
            .color_mode(common_models.BigValueColorMode.VALUE)
        )
    else:
        builder = (
            timeseries.Panel()
            .line_width(1)
            .fill_opacity(10)
            .legend(
                common_builders.VizLegendOptions()
                .show_legend(True)
                .display_mode(common_models.LegendDisplayMode.LIST)
                .placement(common_models.LegendPlacement.BOTTOM)
            )
        )
        if len(spec.thresholds) > 1:
            builder = builder.thresholds_style(
                common_builders.GraphThresholdsStyleConfig().mode(common_models.GraphTresholdsStyleMode.DASHED)
            )
        if spec.stack:
            builder = builder.stacking(common_builders.StackingConfig().mode(common_models.StackingMode.NORMAL))
    builder = (
        builder.id(panel_id)
        .title(spec.title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(spec.unit)
        .thresholds(_thresholds(spec.thresholds))
        .color_scheme(
            dashboard_builders.FieldColor().mode(
                dashboard_models.FieldColorModeId.THRESHOLDS
                if spec.kind == "stat"
                else dashboard_models.FieldColorModeId.PALETTE_CLASSIC
            )
        )
        .span(spec.width)
        .height(spec.height)
        .targets([_target(q, chr(ord("A") + i)) for i, q in enumerate(spec.queries)])
    )
    if spec.min is not None:
        builder = builder.min(spec.min)
    if spec.max is not None:
        builder = builder.max(spec.max)
    if spec.decimals is not None:
        builder = builder.decimals(spec.decimals)
    if spec.mappings:
        builder = builder.mappings(_mappings(spec))
    tags = [CLUSTER_ONLY_TAG] if spec.cluster_only else []
    return _Tagged(builder, tags) if tags else builder


def _variables() -> list[cogbuilder.Builder[dashboard_models.VariableModel]]:
    datasource = dashboard_builders.DatasourceVariable("datasource").label("Data source").type("prometheus")
    namespace = (
        dashboard_builders.QueryVariable("namespace")
        .label("Namespace")
        .description("Kubernetes namespace of the stacgis release (All also matches series without one).")
        .datasource(DATASOURCE)
        .query({"query": "label_values(up, namespace)", "refId": "namespace"})
        .refresh(dashboard_models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .include_all(True)
        .all_value(".*")
        .multi(False)
    )
    return [datasource, namespace]


def build_dashboard(spec: DashboardSpec) -> dict[str, Any]:
    """The dashboard as Grafana JSON (a dict ready for json.dumps)."""
    builder = (
        dashboard_builders.Dashboard(spec.title)
        .uid(spec.uid)
        .description(spec.description)
        .tags([DASHBOARD_TAG, *spec.tags])
        .editable()
        .timezone("browser")
        .time("now-3h", "now")
        .refresh("30s")
        .tooltip(dashboard_models.DashboardCursorSync.CROSSHAIR)
        .variables(_variables())
        .link(
            dashboard_builders.DashboardLink("stacgis dashboards")
            .type(dashboard_models.DashboardLinkType.DASHBOARDS)
            .tags([DASHBOARD_TAG])
            .as_dropdown(True)
            .include_vars(True)
            .keep_time(True)
        )
    )
    panel_id = 1
    for row in spec.rows:
        builder = builder.with_row(dashboard_builders.Row(row.title).id(panel_id))
        panel_id += 1
        for panel in row.panels:
            builder = builder.with_panel(build_panel(panel, panel_id))
            panel_id += 1
    result: dict[str, Any] = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    return result
