"""The generated dashboards: current, complete (unit, description, thresholds on every panel) and valid PromQL.

Needs only promtool, not the running product.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacgis_observability.dashboards import DASHBOARDS
from stacgis_observability.generate import problems
from stacgis_observability.inspect import (
    CLUSTER_METRIC_PREFIXES,
    is_cluster_only,
    metric_names,
    panels,
    queries,
    substitute,
)
from stacgis_observability.panels import CLUSTER_ONLY_TAG, PanelSpec, Query, rising

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "stacgis"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def shipped() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted((CHART / "dashboards").glob("*.json"))}


def all_panels() -> list[tuple[str, dict[str, Any]]]:
    return [(name, panel) for name, board in shipped().items() for panel in panels(board)]


def test_the_chart_ships_exactly_what_the_generator_makes() -> None:
    found = problems(CHART)
    assert not found, "run `.venv/bin/python -m stacgis_observability`:\n" + "\n".join(found)


def test_the_five_dashboards_exist_with_unique_uids() -> None:
    boards = shipped()
    uids = [board["uid"] for board in boards.values()]
    assert len(set(uids)) == len(uids) == 5
    assert set(uids) == {
        "stacgis-overview",
        "stacgis-agent-llm",
        "stacgis-tools",
        "stacgis-data-stores",
        "stacgis-pods-gpu",
    }
    for board in boards.values():
        assert "stacgis" in board["tags"]
        names = [v["name"] for v in board["templating"]["list"]]
        assert names == ["datasource", "namespace"]


@pytest.mark.parametrize(("board", "panel"), all_panels(), ids=lambda v: v if isinstance(v, str) else v["title"])
def test_every_panel_has_unit_description_thresholds_and_queries(board: str, panel: dict[str, Any]) -> None:
    defaults = panel["fieldConfig"]["defaults"]
    assert defaults.get("unit"), "no unit"
    assert len(panel.get("description", "")) > 40, "no real description"
    steps = defaults["thresholds"]["steps"]
    assert steps and steps[0]["value"] is None, "thresholds need a base step"
    assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    targets = panel["targets"]
    assert targets and all(t["expr"].strip() for t in targets)
    assert len({t["refId"] for t in targets}) == len(targets), "refIds must be unique within a panel"
    grid = panel["gridPos"]
    assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24


@pytest.mark.parametrize(("board", "panel"), all_panels(), ids=lambda v: v if isinstance(v, str) else v["title"])
def test_cluster_only_panels_are_marked_and_read_only_cluster_exporters(board: str, panel: dict[str, Any]) -> None:
    names = set().union(*(metric_names(t["expr"]) for t in panel["targets"]))
    from_cluster = {n for n in names if n.startswith(CLUSTER_METRIC_PREFIXES)}
    if is_cluster_only(panel):
        assert panel["description"].startswith("Cluster only:")
        # A stacgis metric hidden in a cluster-only panel would escape the local "returns data" check.
        assert names == from_cluster, f"cluster-only panel reads non-cluster metrics {names - from_cluster}"
    else:
        assert not from_cluster, f"reads cluster-only metrics {from_cluster} but lacks the {CLUSTER_ONLY_TAG} tag"


def test_panel_titles_are_unique_per_dashboard() -> None:
    for name, board in shipped().items():
        titles = [p["title"] for p in panels(board)]
        assert len(titles) == len(set(titles)), name


def test_every_query_is_valid_promql(tmp_path: Path) -> None:
    # promtool parses recording-rule expressions: one rule per panel query, variables as Grafana fills them.
    rules = [
        {"record": f"stacgis:panel_query_{i}", "expr": substitute(q.expr)}
        for i, q in enumerate(q for board in shipped().values() for q in queries(board))
    ]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panel-queries", "rules": rules}]}))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(rules)} rules found" in result.stdout


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (service) (rate(http_server_requests_total{route!~"/healthz|/x"}[$__rate_interval]))',
         {"http_server_requests_total"}),
        ('histogram_quantile(0.95, sum by (le) (rate(a_seconds_bucket{namespace=~"$namespace"}[5m])))',
         {"a_seconds_bucket"}),
        ("max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))",
         {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}),
        ('x / on (pod, container) group_left sum by (pod, container) (y{resource="cpu"}) > 0.5 and z offset 5m',
         {"x", "y", "z"}),
        ("(sum by (s) (a) or (sum by (s) (b) * 0)) / sum by (s) (b) unless c == bool 1e3",
         {"a", "b", "c"}),
    ],
)  # fmt: skip
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_panel_specs_refuse_a_panel_without_unit_description_or_base_threshold() -> None:
    query = (Query("up"),)
    with pytest.raises(ValueError, match="description"):
        PanelSpec(title="t", description=" ", unit="s", queries=query, thresholds=rising(1, 2))
    with pytest.raises(ValueError, match="unit"):
        PanelSpec(title="t", description="d", unit="", queries=query, thresholds=rising(1, 2))
    with pytest.raises(ValueError, match="base step"):
        PanelSpec(title="t", description="d", unit="s", queries=query, thresholds=((1.0, "red"),))
    with pytest.raises(ValueError, match="increasing"):
        PanelSpec(title="t", description="d", unit="s", queries=query, thresholds=rising(2, 1))


def test_generator_and_chart_agree_on_the_dashboard_list() -> None:
    assert sorted(spec.file_name for spec in DASHBOARDS) == sorted(shipped())
