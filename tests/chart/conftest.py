"""Render charts/stacgis in-process with Helm's own engine (helm-python-sdk) and
hand the manifests to the tests. Each values set is rendered once per session."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from helm_python import _native

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "stacgis"
DEPLOY = REPO / "deploy"
RELEASE = "demo"
NAMESPACE = "stacgis"
MONITORING_API = "monitoring.coreos.com/v1"
KUBE_VERSIONS = ("1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0")

# values key -> (component label, settings prefix, entry module, container port)
SERVICES: dict[str, tuple[str, str, str, int]] = {
    "gateway": ("chat-gateway", "GATEWAY_", "stacgis_gateway", 8000),
    "orchestrator": ("agent-orchestrator", "ORCHESTRATOR_", "stacgis_orchestrator", 8001),
    "rasterTools": ("raster-tools", "RASTER_", "stacgis_raster", 8011),
    "vectorTools": ("vector-tools", "VECTOR_", "stacgis_vector", 8012),
    "knowledgeTools": ("knowledge-tools", "KNOWLEDGE_", "stacgis_knowledge", 8013),
    "memoryTools": ("memory-tools", "MEMORY_", "stacgis_memory", 8014),
}
SCALABLE = {**{k: v[0] for k, v in SERVICES.items()}, "frontend": "frontend"}
PYTHON_COMPONENTS = {v[0] for v in SERVICES.values()}
DATABASE_COMPONENTS = {"chat-gateway", "vector-tools", "knowledge-tools", "memory-tools"}

VALUES_FILES = {"default": None, "dev": DEPLOY / "values-dev.yaml", "prod": DEPLOY / "values-prod.yaml"}


def load_values(name: str) -> dict[str, Any]:
    path = VALUES_FILES[name]
    return {} if path is None else yaml.safe_load(path.read_text()) or {}


def name_of(component: str) -> str:
    return f"{RELEASE}-stacgis-{component}"


@dataclass
class Rendered:
    """The manifests of one render, indexed for lookups."""

    files: dict[str, str]
    docs: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for path, text in sorted(self.files.items()):
            if path.endswith(".txt"):
                continue
            for doc in yaml.safe_load_all(text):
                if doc:
                    doc.setdefault("metadata", {})["x-source"] = path
                    self.docs.append(doc)

    @property
    def notes(self) -> str:
        return next((t for p, t in self.files.items() if p.endswith("NOTES.txt")), "")

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind: str, name: str) -> dict[str, Any]:
        for doc in self.docs:
            if doc["kind"] == kind and doc["metadata"]["name"] == name:
                return doc
        raise KeyError(f"no {kind} named {name}; have {[d['metadata']['name'] for d in self.kinds(kind)]}")

    def has(self, kind: str, name: str) -> bool:
        return any(d["kind"] == kind and d["metadata"]["name"] == name for d in self.docs)

    def workloads(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(manifest, pod spec) of every Deployment, StatefulSet, Job and Pod."""
        for doc in self.docs:
            if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
                yield doc, doc["spec"]["template"]["spec"]
            elif doc["kind"] == "Pod":
                yield doc, doc["spec"]

    def clean(self) -> list[dict[str, Any]]:
        """Manifests without the bookkeeping key added above."""
        out = copy.deepcopy(self.docs)
        for doc in out:
            doc["metadata"].pop("x-source", None)
        return out


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


@dataclass(frozen=True)
class SecretFile:
    """One file of a container's secrets directory: the Secret and key it comes from."""

    secret: str
    key: str
    optional: bool


def secret_files(spec: dict[str, Any], container: dict[str, Any]) -> tuple[str, dict[str, SecretFile]]:
    """(directory, file name -> source) of the secrets directory STACGIS_SECRETS_DIR names in the container:
    the projected volume mounted there, read-only, readable by owner and group only."""
    directory = env_of(container)["STACGIS_SECRETS_DIR"]["value"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
    assert mount["readOnly"] is True, container["name"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    assert volume["projected"]["defaultMode"] == 0o440
    files: dict[str, SecretFile] = {}
    for source in volume["projected"]["sources"]:
        secret = source["secret"]
        for item in secret["items"]:
            assert item["path"] not in files, item
            files[item["path"]] = SecretFile(secret["name"], item["key"], bool(secret.get("optional")))
    return directory, files


class Renderer:
    """Caches renders of the chart keyed by their inputs."""

    def __init__(self, chart: helm_python.Chart) -> None:
        self.chart = chart
        self._cache: dict[str, Rendered] = {}

    def render(
        self,
        values: dict[str, Any] | None = None,
        *,
        api_versions: tuple[str, ...] = (),
        kube_version: str = "1.31.0",
        upgrade: bool = False,
    ) -> Rendered:
        key = json.dumps([values, api_versions, kube_version, upgrade], sort_keys=True)
        if key not in self._cache:
            # helm_python.Chart.render() does not expose api_versions/kube_version;
            # the native call it wraps takes them (helm template --api-versions / --kube-version).
            opts = {
                "name": RELEASE,
                "namespace": NAMESPACE,
                "kube_version": f"v{kube_version}",
                "api_versions": list(api_versions),
                "is_upgrade": upgrade,
                "is_install": not upgrade,
            }
            raw = _native.call_string("helm_render", self.chart._raw(), json.dumps(values or {}), json.dumps(opts))
            self._cache[key] = Rendered(json.loads(raw))
        return self._cache[key]

    def values_set(self, name: str, *, monitoring: bool = False, kube_version: str = "1.31.0") -> Rendered:
        apis = (MONITORING_API,) if monitoring else ()
        return self.render(load_values(name), api_versions=apis, kube_version=kube_version)


@pytest.fixture(scope="session")
def chart() -> Iterator[helm_python.Chart]:
    with helm_python.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def renderer(chart: helm_python.Chart) -> Renderer:
    return Renderer(chart)


@pytest.fixture(scope="session")
def default(renderer: Renderer) -> Rendered:
    return renderer.values_set("default", monitoring=True)


@pytest.fixture(scope="session")
def dev(renderer: Renderer) -> Rendered:
    return renderer.values_set("dev")


@pytest.fixture(scope="session")
def prod(renderer: Renderer) -> Rendered:
    return renderer.values_set("prod", monitoring=True)


@pytest.fixture(scope="session", params=["default", "dev", "prod"])
def each_set(request: pytest.FixtureRequest, renderer: Renderer) -> tuple[str, Rendered]:
    name: str = request.param
    return name, renderer.values_set(name, monitoring=name != "dev")
