"""The NetworkPolicies allow exactly the connections of the design, nothing more.

A connection between two pods of the release is open only when the source's
policy allows the egress and the destination's policy allows the ingress; the
graph computed from the rendered policies is compared with the expected one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import RELEASE, Rendered, Renderer, load_values

Edge = tuple[str, str, int]

PORTS = {
    "frontend": 8080,
    "chat-gateway": 8000,
    "agent-orchestrator": 8001,
    "raster-tools": 8011,
    "vector-tools": 8012,
    "knowledge-tools": 8013,
    "memory-tools": 8014,
    "ollama": 11434,
    "postgresql": 5432,
    "redis": 6379,
}
TOOLS = ("raster-tools", "vector-tools", "knowledge-tools", "memory-tools")
EMBEDDERS = ("agent-orchestrator", "vector-tools", "knowledge-tools", "memory-tools")
PYTHON = ("chat-gateway", "agent-orchestrator", *TOOLS)


def e(src: str, dst: str, port: int | None = None) -> Edge:
    return (src, dst, PORTS[dst] if port is None else port)


# The arrows of the design (DESIGN.md, section 1).
DESIGN = {
    e("ingress-controller", "frontend"),
    e("ingress-controller", "chat-gateway"),
    e("ingress-controller", "raster-tools"),
    e("chat-gateway", "agent-orchestrator"),
    *(e("agent-orchestrator", t) for t in TOOLS),
    *(e("chat-gateway", t) for t in TOOLS),  # outside MCP clients at /mcp/<server>
    e("raster-tools", "vector-tools"),  # feature references in geometry arguments
}
BUNDLED_OLLAMA = {
    e("agent-orchestrator", "ollama"),
    # Embeddings for semantic search: the pgvector-backed tool servers embed queries.
    *(e(s, "ollama") for s in ("vector-tools", "knowledge-tools", "memory-tools")),
}
BUNDLED_REDIS = {e("chat-gateway", "redis"), e("agent-orchestrator", "redis")}
BUNDLED_POSTGRES = {e(s, "postgresql") for s in ("chat-gateway", "vector-tools", "knowledge-tools", "memory-tools")}
# Operational edges: hook Jobs and helm test Pods.
JOBS_ON_BUNDLED = {
    e("migrations", "postgresql"),
    e("vector-load", "postgresql"),
    e("knowledge-ingest", "postgresql"),
    e("vector-load", "ollama"),
    e("knowledge-ingest", "ollama"),
    e("model-pull", "ollama"),
}
HELM_TESTS = {e("test", c) for c in ("frontend", *PYTHON)}
MODEL_REGISTRY = {("ollama", "ipBlock:0.0.0.0/0", 443)}
PROMETHEUS = {e("prometheus", c) for c in PYTHON}


def _peer_name(peer: dict[str, Any], known: dict[str, str]) -> str:
    if set(peer) == {"podSelector"}:
        labels = peer["podSelector"]["matchLabels"]
        assert labels["app.kubernetes.io/instance"] == RELEASE
        return str(labels["app.kubernetes.io/component"])
    if "ipBlock" in peer:
        assert "except" not in peer["ipBlock"]
        return f"ipBlock:{peer['ipBlock']['cidr']}"
    key = json.dumps(peer, sort_keys=True)
    assert key in known, f"unexpected peer {peer}"
    return known[key]


def _known_peers(values: dict[str, Any]) -> dict[str, str]:
    np = values.get("networkPolicy", {})
    defaults = {
        "ingressControllerPeers": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "ingress-nginx"}},
            }
        ],
        "prometheusPeers": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
    }
    known = {}
    for key, name in (("ingressControllerPeers", "ingress-controller"), ("prometheusPeers", "prometheus")):
        for peer in np.get(key, defaults[key]):
            known[json.dumps(peer, sort_keys=True)] = name
    otlp = np.get("externalEgress", {}).get("otlp", {}).get("to", [{"namespaceSelector": {}}])
    for peer in otlp:
        known[json.dumps(peer, sort_keys=True)] = "otlp"
    return known


def graph(rendered: Rendered, values: dict[str, Any]) -> set[Edge]:
    policies = rendered.kinds("NetworkPolicy")
    known = _known_peers(values)
    egress: set[Edge] = set()
    ingress: set[Edge] = set()
    for policy in policies:
        labels = policy["spec"]["podSelector"]["matchLabels"]
        component = labels.get("app.kubernetes.io/component")
        if component is None:
            continue  # release-wide: default deny and DNS, checked separately
        for rule in policy["spec"].get("ingress", []):
            for peer in rule["from"]:
                for port in rule["ports"]:
                    ingress.add((_peer_name(peer, known), component, port["port"]))
        for rule in policy["spec"].get("egress", []):
            for peer in rule["to"]:
                for port in rule["ports"]:
                    egress.add((component, _peer_name(peer, known), port["port"]))
    internal = set(PORTS) | {"migrations", "vector-load", "knowledge-ingest", "model-pull", "test", "data-builder"}
    edges = set()
    for src, dst, port in egress | ingress:
        src_ok = src not in internal or (src, dst, port) in egress
        dst_ok = dst not in internal or (src, dst, port) in ingress
        assert src_ok and dst_ok, f"half-open connection {src} -> {dst}:{port}"
        edges.add((src, dst, port))
    return edges


def test_default_graph_is_the_design(default: Rendered) -> None:
    expected = DESIGN | BUNDLED_OLLAMA | BUNDLED_REDIS | BUNDLED_POSTGRES | JOBS_ON_BUNDLED | HELM_TESTS
    expected |= MODEL_REGISTRY | PROMETHEUS
    assert graph(default, {}) == expected


def test_prometheus_reaches_metrics_only_when_scraping(renderer: Renderer) -> None:
    rendered = renderer.values_set("default", monitoring=False)
    assert not any(src == "prometheus" for src, _, _ in graph(rendered, {}))


def test_production_graph_uses_external_stores(prod: Rendered) -> None:
    values = load_values("prod")
    db_users = ("chat-gateway", "vector-tools", "knowledge-tools", "memory-tools", "migrations")
    expected = DESIGN | BUNDLED_OLLAMA | HELM_TESTS | MODEL_REGISTRY | PROMETHEUS | {e("model-pull", "ollama")}
    expected |= {(s, "ipBlock:10.0.0.0/8", 5432) for s in db_users}
    expected |= {(s, "ipBlock:10.0.0.0/8", 6379) for s in ("chat-gateway", "agent-orchestrator")}
    expected |= {(s, "otlp", 4318) for s in PYTHON}
    assert graph(prod, values) == expected


def test_external_llm_and_remote_stac(renderer: Renderer) -> None:
    values = {
        "ollama": {"enabled": False},
        "llm": {"baseUrl": "https://llm.example.com"},
        "rasterTools": {"stac": {"url": "https://stac.example.com/api"}},
        "datasets": {"vector": {"enabled": False}, "knowledge": {"enabled": False}},
    }
    edges = graph(renderer.render(values), values)
    assert not any("ollama" in (src, dst) for src, dst, _ in edges)
    for embedder in EMBEDDERS:
        assert (embedder, "ipBlock:0.0.0.0/0", 443) in edges
    assert ("raster-tools", "ipBlock:0.0.0.0/0", 443) in edges
    assert ("chat-gateway", "ipBlock:0.0.0.0/0", 443) not in edges


@pytest.mark.parametrize("values_set", ["default", "prod"])
def test_every_pod_is_denied_by_default_and_may_resolve_names(renderer: Renderer, values_set: str) -> None:
    rendered = renderer.values_set(values_set)
    policies = rendered.kinds("NetworkPolicy")
    wide = [p for p in policies if "app.kubernetes.io/component" not in p["spec"]["podSelector"]["matchLabels"]]
    deny = [
        p
        for p in wide
        if set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    (dns,) = [p for p in wide if p not in deny]
    assert len(deny) == 1
    dns_ports = {(port["port"], port["protocol"]) for port in dns["spec"]["egress"][0]["ports"]}
    assert dns_ports == {(53, "UDP"), (53, "TCP")}
    selector = deny[0]["spec"]["podSelector"]["matchLabels"]
    components_with_policy = {
        p["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component") for p in policies
    }
    for doc, _ in rendered.workloads():
        template = doc if doc["kind"] == "Pod" else doc["spec"]["template"]
        labels = template["metadata"]["labels"]
        assert selector.items() <= labels.items(), doc["metadata"]["name"]
        if doc["kind"] != "Job" or labels["app.kubernetes.io/component"] != "data-builder":
            # The data builder works offline: default deny plus DNS is all it gets.
            assert labels["app.kubernetes.io/component"] in components_with_policy, doc["metadata"]["name"]


def test_policies_can_be_turned_off(renderer: Renderer) -> None:
    assert renderer.render({"networkPolicy": {"enabled": False}}).kinds("NetworkPolicy") == []
