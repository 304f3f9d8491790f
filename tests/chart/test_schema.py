"""values.schema.json rejects what a user could get wrong, and documents every value."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import helm_python
import pytest
import yaml

from .conftest import CHART, REPO, VALUES_FILES, load_values

SCHEMA = json.loads((CHART / "values.schema.json").read_text())

BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "unknown top-level key": ({"replicas": 3}, "replicas"),
    "unknown nested key": ({"gateway": {"autoscaling": {"targetCPU": 50}}}, "targetCPU"),
    "typo in a service block": ({"rasterTools": {"replicaCount": 1, "imagee": {}}}, "imagee"),
    "replica count as text": ({"gateway": {"replicaCount": "two"}}, "replicaCount"),
    "unknown auth mode": ({"gateway": {"auth": {"mode": "basic"}}}, "mode"),
    "unknown LLM provider": ({"llm": {"provider": "vllm"}}, "provider"),
    "latest image tag": ({"ollama": {"image": {"tag": "latest"}}}, "tag"),
    "numeric image tag": ({"gateway": {"image": {"tag": 1.2}}}, "tag"),
    "zero GPUs": ({"ollama": {"gpu": {"count": 0}}}, "count"),
    "GPU resource without vendor": ({"ollama": {"gpu": {"resourceName": "gpu"}}}, "resourceName"),
    "port out of range": ({"vectorTools": {"port": 70000}}, "port"),
    "bad config key": ({"orchestrator": {"config": {"max-steps": 3}}}, "max-steps"),
    "pdb as a word": ({"memoryTools": {"pdb": {"maxUnavailable": "one"}}}, "maxUnavailable"),
    "bad storage size": ({"postgresql": {"persistence": {"size": "20 gigs"}}}, "size"),
    "bad access mode": ({"redis": {"persistence": {"accessModes": ["ReadWriteSometimes"]}}}, "accessModes"),
    "toleration with unknown field": ({"ollama": {"tolerations": [{"key": "a", "effects": "NoSchedule"}]}}, "effects"),
    "env var without name": ({"gateway": {"extraEnv": [{"value": "x"}]}}, "name"),
    "hosts as a string": ({"ingress": {"hosts": "stacgis.example.com"}}, "hosts"),
    "LLM URL without scheme": ({"llm": {"baseUrl": "ollama:11434"}}, "baseUrl"),
    "tile origin without scheme": ({"rasterTools": {"publicBaseUrl": "tiles.example.com"}}, "publicBaseUrl"),
    "trusted proxy as a host name": ({"rasterTools": {"trustedProxies": ["ingress-nginx"]}}, "trustedProxies"),
    "unknown log level": ({"logLevel": "verbose"}, "logLevel"),
    "network peer with unknown selector": ({"networkPolicy": {"dnsPeers": [{"nodeSelector": {}}]}}, "nodeSelector"),
    "map style host that breaks out of the policy": (
        {"orchestrator": {"mapStyleHosts": ["evil.example; script-src *"]}},
        "mapStyleHosts",
    ),
    "embedding dimension zero": ({"embeddings": {"dimension": 0}}, "dimension"),
    "short internal token secret": ({"secrets": {"internalTokenSecret": "hunter2"}}, "internalTokenSecret"),
    "development cookie secret": (
        {"secrets": {"cookieSecret": "stacgis-dev-only-cookie-secret-change-me"}},
        "cookieSecret",
    ),
}


@pytest.mark.parametrize("values, field", list(BAD_VALUES.values()), ids=list(BAD_VALUES))
def test_schema_rejects_bad_values(chart: helm_python.Chart, values: dict[str, Any], field: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as caught:
        chart.render(values=values, name="demo", namespace="stacgis")
    assert field in str(caught.value)


@pytest.mark.parametrize("values_set", sorted(VALUES_FILES))
def test_shipped_values_pass_the_schema(chart: helm_python.Chart, values_set: str) -> None:
    chart.validate_schema(chart.merge_values(load_values(values_set)))


def test_config_maps_accept_any_setting(chart: helm_python.Chart) -> None:
    chart.validate_schema(
        {"orchestrator": {"config": {"MAX_STEPS": 12, "tool_timeout_seconds": 2.5, "extra_servers": {"a": "http://a"}}}}
    )


def _objects(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if node.get("type") == "object" or "properties" in node:
        found.append((path or "<root>", node))
    for key, child in node.get("properties", {}).items():
        found += _objects(child, f"{path}.{key}" if path else key)
    for keyword in ("items", "additionalProperties"):
        child = node.get(keyword)
        if isinstance(child, dict):
            found += _objects(child, f"{path}[{keyword}]")
    return found


def test_every_object_rejects_unknown_keys() -> None:
    """Closed objects everywhere; open only for typed maps and Kubernetes pass-through objects."""
    loose = [
        path
        for path, node in _objects(SCHEMA)
        if node.get("additionalProperties") is not False
        and not isinstance(node.get("additionalProperties"), dict)
        and "$comment" not in node
    ]
    assert loose == []


def _leaves(values: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(values, dict) and values and path[-1:] not in [("config",), ("nodeSelector",)]:
        out = []
        for key, child in values.items():
            out += _leaves(child, (*path, key))
        return out
    return [path]


def test_every_value_is_documented() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    undocumented = []
    for path in _leaves(values):
        node = SCHEMA
        for key in path:
            node = node["properties"][key]
            if "$comment" in node or "properties" not in node:
                break
        if not node.get("description"):
            undocumented.append(".".join(path))
    assert undocumented == []


def test_schema_is_generated_from_values() -> None:
    result = subprocess.run(
        [sys.executable, str(CHART / "hack" / "gen_schema.py"), "--check"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stdout + result.stderr
