"""Reading generated dashboards and rules back: panels, their queries, and the metrics they name."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .panels import CLUSTER_ONLY_TAG

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
             "group_right", "inf", "nan", "atan2"}  # fmt: skip

# Exporters that exist only in a cluster; cluster-only panels may use nothing else.
CLUSTER_METRIC_PREFIXES = ("kube_", "container_", "kubelet_", "DCGM_", "node_")


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (label names, functions and keywords excluded)."""
    text = _STRING.sub('""', expr)
    previous = None
    while previous != text:  # nested braces/brackets never occur in selectors, but be thorough
        previous = text
        text = _MATCHERS.sub(" ", text)
        text = _RANGES.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name in _KEYWORDS:
            continue
        names.add(name)
    return names


def family_of(sample_name: str, families: set[str]) -> str | None:
    """The exported metric family a series name belongs to (``x_bucket`` -> ``x`` when ``x`` is a histogram)."""
    if sample_name in families:
        return sample_name
    for suffix in ("_bucket", "_sum", "_count", "_total", "_created"):
        if sample_name.endswith(suffix) and sample_name[: -len(suffix)] in families:
            return sample_name[: -len(suffix)]
    return None


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel: str
    ref_id: str
    expr: str
    cluster_only: bool

    @property
    def id(self) -> str:
        return f"{self.dashboard}/{self.panel}/{self.ref_id}"


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every non-row panel, including those inside collapsed rows."""
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def is_cluster_only(panel: dict[str, Any]) -> bool:
    return CLUSTER_ONLY_TAG in (panel.get("tags") or [])


def queries(dashboard: dict[str, Any]) -> Iterator[PanelQuery]:
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield PanelQuery(
                dashboard=str(dashboard.get("uid")),
                panel=str(panel.get("title")),
                ref_id=str(target.get("refId")),
                expr=str(target.get("expr")),
                cluster_only=is_cluster_only(panel),
            )


def substitute(expr: str, rate_interval: str = "1m", range_: str = "5m") -> str:
    """Replace the Grafana variables the dashboards use, as Grafana would with "All" selected."""
    return (
        expr.replace("$__rate_interval", rate_interval)
        .replace("$__interval", rate_interval)
        .replace("$__range", range_)
        .replace("$namespace", ".*")
    )


def alert_rules(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for group in document.get("groups", []):
        for rule in group.get("rules", []):
            if "alert" in rule:
                yield rule
