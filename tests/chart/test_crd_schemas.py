"""The custom resources the chart renders (ServiceMonitor, PrometheusRule, HTTPRoute) against their CRD
schemas: kubernetes-validate has no schemas for them, the npm kubernetes-models packages do
(tests/chart/crd-models, installed by `make setup`)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from typing import Any

import pytest

from .conftest import MONITORING_API, REPO, Rendered, Renderer, load_values

MODELS = REPO / "tests" / "chart" / "crd-models"
CUSTOM_KINDS = {"ServiceMonitor", "PrometheusRule", "HTTPRoute"}
ROUTE: dict[str, Any] = {
    "ingress": {"enabled": False},
    "httpRoute": {
        "enabled": True,
        "hostnames": ["stacgis.example.com"],
        "parentRefs": [{"name": "public", "namespace": "gateways", "sectionName": "https"}],
    },
}


def validate(manifests: list[dict[str, Any]]) -> list[list[str]]:
    """Per manifest, the schema errors (empty: valid)."""
    node = shutil.which("node")
    assert node, "node is missing: make setup needs Node.js for the frontend and these schemas"
    assert (MODELS / "node_modules").is_dir(), f"{MODELS}/node_modules is missing: run `make setup`"
    result = subprocess.run(
        [node, str(MODELS / "validate.mjs")],
        input=json.dumps(manifests),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    errors: list[list[str]] = json.loads(result.stdout)
    assert len(errors) == len(manifests)
    return errors


def renders(renderer: Renderer) -> dict[str, Rendered]:
    monitoring = (MONITORING_API,)
    prod_route = {**load_values("prod"), **copy.deepcopy(ROUTE)}
    return {
        "default": renderer.render({}, api_versions=monitoring),
        "prod": renderer.render(load_values("prod"), api_versions=monitoring),
        "route": renderer.render(ROUTE),
        "prod route": renderer.render(prod_route, api_versions=monitoring),
    }


def test_custom_resources_match_their_schemas(renderer: Renderer) -> None:
    docs = [
        (name, d) for name, rendered in renders(renderer).items() for d in rendered.clean() if d["kind"] in CUSTOM_KINDS
    ]
    # Every custom kind is rendered by some values set, so each schema is exercised.
    assert {d["kind"] for _, d in docs} == CUSTOM_KINDS
    errors = validate([d for _, d in docs])
    invalid = [
        f"{name}: {d['kind']} {d['metadata']['name']}: {e}" for (name, d), e in zip(docs, errors, strict=True) if e
    ]
    assert not invalid, "\n".join(invalid)


def test_every_non_core_kind_the_chart_renders_has_a_schema_here(renderer: Renderer) -> None:
    """kubernetes-validate checks the built-in kinds; anything else must be one of the kinds above."""
    builtin = ("v1", "apps/v1", "batch/v1", "autoscaling/v2", "policy/v1", "networking.k8s.io/v1")
    for name, rendered in renders(renderer).items():
        others = {d["kind"] for d in rendered.docs if d["apiVersion"] not in builtin}
        assert others <= CUSTOM_KINDS, f"{name}: {others - CUSTOM_KINDS} rendered without a schema check"


@pytest.mark.parametrize(
    ("kind", "breakage", "message"),
    [
        ("ServiceMonitor", lambda d: d["spec"]["endpoints"][0].__setitem__("interval", 30), "interval"),
        ("PrometheusRule", lambda d: d["spec"]["groups"][0]["rules"][0].__setitem__("for", ["5m"]), "for"),
        ("HTTPRoute", lambda d: d["spec"]["rules"][0]["matches"][0]["path"].__setitem__("type", "Glob"), "type"),
    ],
)
def test_the_schemas_refuse_a_broken_object(renderer: Renderer, kind: str, breakage: Any, message: str) -> None:
    """The check can fail: one wrong field in a rendered object is reported with its path."""
    rendered = renderer.render(ROUTE, api_versions=(MONITORING_API,))
    doc = next(d for d in rendered.clean() if d["kind"] == kind)
    breakage(doc)
    ((error,),) = validate([doc])
    assert message in error, error
