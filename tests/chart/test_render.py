"""The chart lints clean and every manifest it renders is valid Kubernetes."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import kubernetes_validate.utils as kv_utils
import pytest
import yaml

from .conftest import (
    CHART,
    KUBE_VERSIONS,
    MONITORING_API,
    NAMESPACE,
    PYTHON_COMPONENTS,
    RELEASE,
    REPO,
    VALUES_FILES,
    Renderer,
    load_values,
    name_of,
)

# The schemas are read from disk on every call; a run validates thousands of manifests.
kv_utils.schema_contents = functools.lru_cache(maxsize=None)(kv_utils.schema_contents)

CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "HTTPRoute"}


@pytest.mark.parametrize("values_set", sorted(VALUES_FILES))
def test_helm_lint_strict(values_set: str) -> None:
    report = helm_python.lint(CHART, load_values(values_set), strict=True, kube_version="v1.31.0")
    problems = [m for m in report["messages"] if m["severity"] >= 1] + report["errors"]
    assert problems == [], problems


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("monitoring", [False, True], ids=["no-crds", "monitoring-crds"])
@pytest.mark.parametrize("values_set", sorted(VALUES_FILES))
def test_manifests_validate_strictly(renderer: Renderer, values_set: str, monitoring: bool, kube_version: str) -> None:
    rendered = renderer.values_set(values_set, monitoring=monitoring, kube_version=kube_version)
    failures = []
    validated = 0
    for doc in rendered.clean():
        if doc["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, kube_version, strict=True)
            validated += 1
        except kubernetes_validate.ValidationError as exc:
            path = "/".join(str(p) for p in exc.path)
            failures.append(f"{doc['kind']}/{doc['metadata']['name']} at {path}: {exc.message}")
    assert failures == []
    assert validated > 40


def test_monitoring_resources_follow_the_crds(renderer: Renderer) -> None:
    without = renderer.values_set("default", monitoring=False)
    assert not without.kinds("ServiceMonitor") and not without.kinds("PrometheusRule")
    with_crds = renderer.values_set("default", monitoring=True)
    assert len(with_crds.kinds("ServiceMonitor")) == 1
    assert len(with_crds.kinds("PrometheusRule")) == 1
    forced = renderer.render({"monitoring": {"force": True}})
    assert len(forced.kinds("ServiceMonitor")) == 1
    off = renderer.render(
        {"monitoring": {"serviceMonitor": {"enabled": False}, "prometheusRule": {"enabled": False}}},
        api_versions=(MONITORING_API,),
    )
    assert not off.kinds("ServiceMonitor") and not off.kinds("PrometheusRule")


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_service_monitor_scrapes_every_python_service(prod: Any) -> None:
    monitor = prod.kinds("ServiceMonitor")[0]
    assert monitor["apiVersion"] == MONITORING_API
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    selector = monitor["spec"]["selector"]["matchLabels"]
    scraped = {
        s["metadata"]["labels"]["app.kubernetes.io/component"]
        for s in prod.kinds("Service")
        if _selects(selector, s["metadata"]["labels"])
    }
    assert scraped == PYTHON_COMPONENTS
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    for component in scraped:
        ports = {p["name"] for p in prod.get("Service", name_of(component))["spec"]["ports"]}
        assert endpoint["port"] in ports


def test_prometheus_rule_carries_the_rule_files(default: Any) -> None:
    rule = default.kinds("PrometheusRule")[0]
    shipped = []
    for path in sorted((CHART / "rules").glob("*.yaml")):
        shipped += yaml.safe_load(path.read_text())["groups"]
    assert rule["spec"]["groups"] == shipped
    for group in rule["spec"]["groups"]:
        assert group["name"] and group["rules"]
        for r in group["rules"]:
            assert ("alert" in r) != ("record" in r)
            assert isinstance(r["expr"], str) and r["expr"].strip()


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed")
def test_rule_files_pass_promtool() -> None:
    files = sorted(str(p) for p in (CHART / "rules").glob("*.yaml"))
    result = subprocess.run(["promtool", "check", "rules", *files], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboards_become_sidecar_configmaps(tmp_path: Path) -> None:
    chart_copy = tmp_path / "stacgis"
    shutil.copytree(CHART, chart_copy)
    dashboard = '{"title": "stacgis overview", "panels": []}'
    (chart_copy / "dashboards" / "Overview_Board.json").write_text(dashboard)
    values = {
        "grafana": {
            "dashboards": {
                "label": "grafana_dashboard",
                "labelValue": "yes",
                "annotations": {"grafana_folder": "stacgis"},
            }
        }
    }
    with helm_python.Chart.load(chart_copy) as copy:
        files = copy.render(values=values, name=RELEASE, namespace=NAMESPACE)
    docs = [
        d
        for path, text in files.items()
        if not path.endswith(".txt")
        for d in yaml.safe_load_all(text)
        if d and d.get("kind") == "ConfigMap"
    ]
    (cm,) = [d for d in docs if d["metadata"]["name"] == name_of("dashboard-overview-board")]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "yes"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "stacgis"}
    assert cm["data"] == {"Overview_Board.json": dashboard}


def test_notes_tell_how_to_reach_the_ui(default: Any, prod: Any, renderer: Renderer) -> None:
    assert "http://stacgis.local/" in default.notes
    assert "https://stacgis.example.com/" in prod.notes
    assert f"helm test {RELEASE}" in default.notes
    no_ingress = renderer.render({"ingress": {"enabled": False}})
    assert f"port-forward svc/{name_of('frontend')}" in no_ingress.notes


HELM = REPO / ".local" / "bin" / "helm"


@pytest.mark.skipif(not HELM.exists(), reason="run scripts/install-helm.sh for the helm binary checks")
@pytest.mark.parametrize("values_set", sorted(VALUES_FILES))
def test_helm_binary_agrees(renderer: Renderer, values_set: str, tmp_path: Path) -> None:
    """The helm CLI lints the chart strictly and renders the same objects as the SDK."""
    env = {**os.environ, **{f"HELM_{k}_HOME": str(tmp_path / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}}
    values_args = [] if VALUES_FILES[values_set] is None else ["-f", str(VALUES_FILES[values_set])]
    lint = subprocess.run(
        [str(HELM), "lint", "--strict", str(CHART), *values_args], capture_output=True, text=True, env=env
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    template = subprocess.run(
        [
            str(HELM),
            "template",
            RELEASE,
            str(CHART),
            "-n",
            NAMESPACE,
            "--api-versions",
            MONITORING_API,
            "--kube-version",
            "1.31.0",
            *values_args,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    cli = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(template.stdout) if d}
    sdk = renderer.values_set(values_set, monitoring=True)
    # helm template leaves out test hooks only with --skip-tests; both include them.
    assert cli == {(d["kind"], d["metadata"]["name"]) for d in sdk.docs}
