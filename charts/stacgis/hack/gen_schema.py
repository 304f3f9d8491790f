"""Generate values.schema.json from values.yaml.

The structure and types come from the defaults in values.yaml, descriptions
from each key's "# --" comment, and the constraints Helm should enforce
(enums, ranges, patterns, free-form maps, Kubernetes pass-through objects)
from the tables below. Every object rejects unknown keys unless it is a map
by design (labels, annotations, per-service `config`).

    python charts/stacgis/hack/gen_schema.py          # rewrite the schema
    python charts/stacgis/hack/gen_schema.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parent.parent
VALUES = CHART / "values.yaml"
SCHEMA = CHART / "values.schema.json"

Schema = dict[str, Any]

QUANTITY = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?$"
DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
PASSTHROUGH = "Kubernetes object passed through unchanged; the API server validates it."

STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
QUANTITY_MAP: Schema = {
    "type": "object",
    "additionalProperties": {"type": ["string", "integer", "number"], "pattern": QUANTITY},
}
LABEL_SELECTOR: Schema = {"type": "object", "$comment": PASSTHROUGH}
NETWORK_PEER: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "podSelector": LABEL_SELECTOR,
        "namespaceSelector": LABEL_SELECTOR,
        "ipBlock": {
            "type": "object",
            "additionalProperties": False,
            "required": ["cidr"],
            "properties": {
                "cidr": {"type": "string"},
                "except": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}
NETWORK_PORT: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["port"],
    "properties": {
        "port": {"type": ["integer", "string"]},
        "endPort": {"type": "integer"},
        "protocol": {"enum": ["TCP", "UDP", "SCTP"]},
    },
}
TOLERATION: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string"},
        "operator": {"enum": ["Exists", "Equal"]},
        "value": {"type": "string"},
        "effect": {"enum": ["", "NoSchedule", "PreferNoSchedule", "NoExecute"]},
        "tolerationSeconds": {"type": "integer"},
    },
}
ENV_VAR: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
        "value": {"type": "string"},
        "valueFrom": {"type": "object", "$comment": PASSTHROUGH},
    },
}
RESOURCES: Schema = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "requests": {"description": "Resources the scheduler reserves.", **QUANTITY_MAP},
        "limits": {"description": "Hard limits (memory is enforced, CPU is throttled).", **QUANTITY_MAP},
    },
}
PARENT_REF: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "group": {"type": "string"},
        "kind": {"type": "string"},
        "namespace": {"type": "string"},
        "name": {"type": "string"},
        "sectionName": {"type": "string"},
        "port": {"type": "integer"},
    },
}
CONFIG_MAP: Schema = {
    "type": "object",
    "propertyNames": {"pattern": r"^[A-Za-z][A-Za-z0-9_]*$"},
    "additionalProperties": {"type": ["string", "number", "integer", "boolean", "array", "object"]},
}
ACCESS_MODES: Schema = {
    "type": "array",
    "minItems": 1,
    "items": {"enum": ["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]},
}
STRINGS: Schema = {"type": "array", "items": {"type": "string"}}

# Path patterns (dotted, fnmatch) -> schema replacing the inferred one.
OVERRIDES: dict[str, Schema] = {
    "commonLabels": STRING_MAP,
    "imagePullSecrets": STRINGS,
    "*.podAnnotations": STRING_MAP,
    "*.podLabels": STRING_MAP,
    "*.nodeSelector": STRING_MAP,
    "*.affinity": {"type": "object", "$comment": PASSTHROUGH},
    "*.tolerations": {"type": "array", "items": TOLERATION},
    "*.topologySpreadConstraints": {
        "type": "array",
        "items": {"type": "object", "$comment": PASSTHROUGH},
    },
    "*.extraEnv": {"type": "array", "items": ENV_VAR},
    "*.config": CONFIG_MAP,
    "*resources": RESOURCES,
    "*.accessModes": ACCESS_MODES,
    "ingress.annotations": STRING_MAP,
    "ingress.hosts": STRINGS,
    "grafana.dashboards.annotations": STRING_MAP,
    "monitoring.*.labels": STRING_MAP,
    "httpRoute.parentRefs": {"type": "array", "items": PARENT_REF},
    "httpRoute.hostnames": STRINGS,
    "networkPolicy.*Peers": {"type": "array", "minItems": 1, "items": NETWORK_PEER},
    "networkPolicy.externalEgress.*.to": {"type": "array", "minItems": 1, "items": NETWORK_PEER},
    "networkPolicy.externalEgress.*.ports": {"type": "array", "minItems": 1, "items": NETWORK_PORT},
}

# Path patterns -> keywords merged into the inferred schema.
# Empty (the chart generates one) or a real key: never short, never the public development value.
SECRET = {
    "anyOf": [
        {"const": ""},
        {
            "minLength": 32,
            "not": {
                "enum": [
                    "stacgis-dev-only-internal-token-secret-change-me",
                    "stacgis-dev-only-cookie-secret-change-me",
                ]
            },
        },
    ]
}
CONSTRAINTS: dict[str, Schema] = {
    "secrets.internalTokenSecret": SECRET,
    "secrets.cookieSecret": SECRET,
    # An absolute directory other than / (it replaces what the image has there).
    "secrets.mountPath": {"pattern": r"^/[^\s]*[^\s/]$"},
    "logLevel": {"enum": ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]},
    "image.pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
    "*.image.pullPolicy": {"enum": ["", "Always", "IfNotPresent", "Never"]},
    "*image.tag": {"not": {"const": "latest"}, "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$|^$"},
    "*.image.digest": {"pattern": r"^(sha256:[a-f0-9]{64})?$"},
    "*.image.repository": {"minLength": 1},
    "image.registry": {"pattern": r"^[^\s:/]+(:[0-9]+)?(/[^\s]+)?$|^$"},
    "llm.provider": {"enum": ["ollama", "openai"]},
    "embeddings.provider": {"enum": ["ollama", "openai"]},
    "*.baseUrl": {"pattern": r"^(https?://[^\s]+)?$"},
    "observability.otlpEndpoint": {"pattern": r"^(https?://[^\s]+)?$"},
    "gateway.auth.mode": {"enum": ["anonymous", "trusted-header", "jwt"]},
    "gateway.auth.jwksUrl": {"pattern": r"^(https?://[^\s]+)?$"},
    "gateway.auth.authUrl": {"pattern": r"^(https?://[^\s]+)?$"},
    "postgresql.auth.appUsername": {"pattern": r"^[a-z_][a-z0-9_]{0,62}$"},
    "postgresql.external.appUsername": {"pattern": r"^([a-z_][a-z0-9_]{0,62})?$"},
    "postgresql.external.ownerUrl": {"pattern": r"^(postgres(ql)?://[^\s]+)?$"},
    "postgresql.external.ownerUrlKey": {"pattern": r"^[-._a-zA-Z0-9]+$"},
    "gateway.auth.trustedProxies": {"items": {"type": "string", "pattern": r"^[0-9A-Fa-f:.]+/[0-9]{1,3}$"}},
    "gateway.bodyReadTimeoutSeconds": {"exclusiveMinimum": 0},
    "gateway.bodyDeadlineSeconds": {"exclusiveMinimum": 0},
    "ingress.clientTimeouts.seconds": {"minimum": 1, "maximum": 3600},
    "rasterTools.publicBaseUrl": {"pattern": r"^(https?://[^\s/]+)?$"},
    "rasterTools.trustedProxies": {"items": {"type": "string", "pattern": r"^[0-9A-Fa-f:.]+/[0-9]{1,3}$"}},
    "*.port": {"minimum": 1, "maximum": 65535},
    "*.replicaCount": {"minimum": 0},
    "*.autoscaling.minReplicas": {"minimum": 1},
    "*.autoscaling.maxReplicas": {"minimum": 1},
    "*.autoscaling.target*": {"minimum": 0, "maximum": 1000},
    "*.pdb.maxUnavailable": {"type": ["integer", "string"], "minimum": 0, "pattern": r"^[0-9]+%$"},
    "*.probes.*.*": {"minimum": 1},
    "*.terminationGracePeriodSeconds": {"minimum": 0},
    "*.maxConcurrentRuns": {"minimum": 1},
    "*.maxConcurrentRunsPerUser": {"minimum": 1},
    "*.sessionTtlSeconds": {"minimum": 60},
    "*.maxSteps": {"minimum": 1},
    "*.toolTopK": {"minimum": 1},
    "orchestrator.mapStyleHosts": {
        "items": {"type": "string", "pattern": r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]+)?$"}
    },
    "*.tmpSizeLimit": {"pattern": QUANTITY},
    "*.size": {"pattern": QUANTITY},
    "*.runAsUser": {"minimum": 1},
    "embeddings.dimension": {"minimum": 1, "maximum": 16000},
    "ollama.gpu.count": {"minimum": 1},
    "ollama.gpu.resourceName": {
        "pattern": r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
    },
    "ollama.keepAlive": {"type": ["string", "integer"]},
    "ollama.numParallel": {"minimum": 1},
    "ollama.maxLoadedModels": {"minimum": 1},
    "ollama.contextLength": {"minimum": 0},
    "ollama.models": {"items": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$"}},
    "*.activeDeadlineSeconds": {"minimum": 1},
    "*.backoffLimit": {"minimum": 0},
    "redis.database": {"minimum": 0, "maximum": 15},
    "ingress.streaming.timeoutSeconds": {"minimum": 1},
    "ingress.maxBodySize": {"pattern": r"^[0-9]+[kKmMgG]?$"},
    "ingress.className": {"minLength": 1},
    "httpRoute.apiRequestTimeout": {"pattern": DURATION},
    "monitoring.serviceMonitor.interval": {"pattern": DURATION},
    "monitoring.serviceMonitor.scrapeTimeout": {"pattern": DURATION},
    "grafana.dashboards.label": {"minLength": 1},
    "clusterDomain": {"minLength": 1},
    "rasterTools.data.mountPath": {"pattern": r"^/"},
}

KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):(\s|$)")


def descriptions(text: str) -> dict[tuple[str, ...], str]:
    """Map key paths to the comment block written directly above each key."""
    found: dict[tuple[str, ...], str] = {}
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        match = KEY_LINE.match(line)
        if not match:
            comment = []
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        if comment:
            body = " ".join(c.removeprefix("-- ").removeprefix("--").strip() for c in comment)
            found[tuple(k for _, k in stack)] = body
        comment = []
    return found


def matches(path: tuple[str, ...], pattern: str) -> bool:
    return fnmatch.fnmatchcase(".".join(path), pattern)


def lookup(table: dict[str, Schema], path: tuple[str, ...]) -> Schema | None:
    hits = [schema for pattern, schema in table.items() if matches(path, pattern)]
    if not hits:
        return None
    merged: Schema = {}
    for hit in hits:
        merged.update(hit)
    return merged


def infer(value: Any, path: tuple[str, ...], docs: dict[tuple[str, ...], str]) -> Schema:
    override = lookup(OVERRIDES, path)
    if override is not None:
        schema: Schema = json.loads(json.dumps(override))
    elif isinstance(value, dict):
        schema = {
            "type": "object",
            "additionalProperties": False,
            "properties": {k: infer(v, (*path, k), docs) for k, v in value.items()},
        }
    elif isinstance(value, bool):
        schema = {"type": "boolean"}
    elif isinstance(value, int):
        schema = {"type": "integer"}
    elif isinstance(value, float):
        schema = {"type": "number"}
    elif isinstance(value, str):
        schema = {"type": "string"}
    elif isinstance(value, list):
        item = infer(value[0], (*path, "[]"), docs) if value else {"type": "string"}
        schema = {"type": "array", "items": item}
    else:
        raise SystemExit(f"values.yaml: {'.'.join(path)} has a null default; give it a typed one")
    constraint = lookup(CONSTRAINTS, path)
    if constraint:
        schema.update(constraint)
    if path in docs:
        schema = {"description": docs[path], **schema}
    return schema


def generate() -> str:
    text = VALUES.read_text()
    values = yaml.safe_load(text)
    docs = descriptions(text)
    body = infer(values, (), docs)
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "stacgis chart values",
        **body,
    }
    return json.dumps(schema, indent=2) + "\n"


def main() -> int:
    rendered = generate()
    if "--check" in sys.argv[1:]:
        if SCHEMA.read_text() != rendered:
            print(f"{SCHEMA} is stale: run python {Path(__file__).relative_to(Path.cwd())}")
            return 1
        return 0
    SCHEMA.write_text(rendered)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
