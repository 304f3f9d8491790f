"""The python services and Jobs get their secrets as files in a read-only Secret volume (STACGIS_SECRETS_DIR),
never as environment variables; their settings classes, given the files as the kubelet lays them out and the
rendered environment, read the keys and the store URLs from them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from stacgis_common.testing import SERVICE_SETTINGS, settings_class

from .conftest import RELEASE, Rendered, Renderer, load_values, name_of, secret_files

# Container name -> settings class it loads: the six services (and their migrate commands), the data loads.
SETTINGS = {
    **SERVICE_SETTINGS,
    "vector-load": SERVICE_SETTINGS["vector-tools"],
    "knowledge-ingest": SERVICE_SETTINGS["knowledge-tools"],
}

APP_URL = "postgresql://stacgis_app:app-secret@db.internal:5432/stacgis?sslmode=require"
OWNER_URL = "postgresql://stacgis_owner:owner-secret@db.internal:5432/stacgis?sslmode=require"
REDIS_URL = "rediss://:redis-secret@cache.internal:6380/3"
EXTERNAL: dict[str, Any] = {
    "postgresql": {"enabled": False, "external": {"url": APP_URL, "ownerUrl": OWNER_URL, "appUsername": "stacgis_app"}},
    "redis": {"enabled": False, "external": {"url": REDIS_URL}},
}
API_KEY = {"secrets": {"llmApiKey": "sk-" + "k" * 40}}


def python_containers(rendered: Rendered) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(workload, pod spec, container) of every container that loads a service's settings."""
    return [
        (doc, spec, container)
        for doc, spec in rendered.workloads()
        for container in spec["containers"]
        if container["name"] in SETTINGS and doc["kind"] in ("Deployment", "Job")
    ]


@pytest.mark.parametrize("values", [{}, load_values("dev"), load_values("prod"), EXTERNAL, API_KEY])
def test_no_secret_reaches_a_python_container_through_its_environment(renderer: Renderer, values: Any) -> None:
    rendered = renderer.render(values)
    found = python_containers(rendered)
    assert {c["name"] for _, _, c in found} >= {"chat-gateway", "agent-orchestrator", "raster-tools", "memory-tools"}
    for doc, spec, container in found:
        where = f"{doc['kind']}/{doc['metadata']['name']}:{container['name']}"
        directory, files = secret_files(spec, container)
        assert directory == (values.get("secrets", {}).get("mountPath") or "/run/secrets/stacgis"), where
        assert any(name.endswith("_INTERNAL_TOKEN_SECRET") for name in files), where
    given = []
    for doc, spec in rendered.workloads():
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{doc['kind']}/{doc['metadata']['name']}:{container['name']}"
            if any("secretKeyRef" in e.get("valueFrom", {}) for e in container.get("env", [])):
                given.append(where)
            assert not any("secretRef" in e for e in container.get("envFrom", [])), where
    # Nor any other container: the bundled stores and psql of the migrations Job read files too.
    assert not given, given


def test_the_mount_directory_is_a_value(renderer: Renderer) -> None:
    rendered = renderer.render({"secrets": {"mountPath": "/etc/stacgis/secrets"}})
    for _, spec, container in python_containers(rendered):
        assert secret_files(spec, container)[0] == "/etc/stacgis/secrets"


def secret_data(rendered: Rendered) -> dict[tuple[str, str], str]:
    return {
        (secret["metadata"]["name"], key): base64.b64decode(value).decode()
        for secret in rendered.kinds("Secret")
        for key, value in secret.get("data", {}).items()
    }


def lay_out_as_the_kubelet(folder: Path, files: dict[str, str]) -> None:
    """A projected volume's layout: the files in a timestamped folder, `..data` linking to it, and each
    name linking through `..data` (what lets the kubelet swap all of them at once)."""
    real = folder / "..2026_12_06_18_00_00.000000001"
    real.mkdir(parents=True)
    for name, text in files.items():
        (real / name).write_text(text)
    (folder / "..data").symlink_to(real.name)
    for name in files:
        (folder / name).symlink_to(f"..data/{name}")


def load_in_container(
    monkeypatch: pytest.MonkeyPatch, rendered: Rendered, spec: dict[str, Any], container: dict[str, Any], root: Path
) -> BaseSettings:
    """The container's settings as it would load them: its rendered environment (ConfigMaps included) and
    the files of its Secret volume, made from the rendered Secrets."""
    from stacgis_common.settings import load_settings

    cls = settings_class(SETTINGS[container["name"]])
    prefix = str(cls.model_config["env_prefix"])
    directory, sources = secret_files(spec, container)
    data = secret_data(rendered)
    files = {name: data[(f.secret, f.key)] for name, f in sources.items() if (f.secret, f.key) in data}
    assert {name for name, f in sources.items() if not f.optional} <= set(files), container["name"]
    lay_out_as_the_kubelet(root / directory.strip("/"), files)
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    for source in container.get("envFrom", []):
        env.update(rendered.get("ConfigMap", source["configMapRef"]["name"])["data"])
    env["STACGIS_SECRETS_DIR"] = str(root / directory.strip("/"))
    monkeypatch.delenv("STACGIS_ALLOW_DEV_SECRETS", raising=False)
    for field in cls.model_fields:
        monkeypatch.delenv(f"{prefix}{field}".upper(), raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return load_settings(cls)


def secret(settings: BaseSettings, field: str) -> str | None:
    value = getattr(settings, field)
    assert value is None or isinstance(value, SecretStr)
    return None if value is None else value.get_secret_value()


@pytest.mark.parametrize("values", [{}, EXTERNAL, API_KEY], ids=["bundled-stores", "external-stores", "api-key"])
def test_each_container_loads_its_secrets_from_the_mounted_files(
    renderer: Renderer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, values: dict[str, Any]
) -> None:
    rendered = renderer.render(values)
    data = secret_data(rendered)
    app = f"{RELEASE}-stacgis"
    found = python_containers(rendered)
    assert {(doc["kind"], c["name"]) for doc, _, c in found} >= {
        ("Job", "chat-gateway"),
        ("Job", "vector-load"),
        ("Job", "knowledge-ingest"),
        ("Deployment", "agent-orchestrator"),
    }
    for index, (doc, spec, container) in enumerate(found):
        with monkeypatch.context() as patch:
            settings = load_in_container(patch, rendered, spec, container, tmp_path / str(index))
        where = f"{doc['kind']} {doc['metadata']['name']}/{container['name']}"
        job = doc["kind"] == "Job"
        assert secret(settings, "internal_token_secret") == data[(app, "internal-token-secret")], where
        if container["name"] == "chat-gateway":
            assert secret(settings, "cookie_secret") == data[(app, "cookie-secret")], where
        for field in ("llm_api_key", "embedding_api_key"):
            if field in type(settings).model_fields:
                assert secret(settings, field) == data.get((app, "llm-api-key")), (where, field)
        if "database_url" in type(settings).model_fields:
            url = settings.database_url  # type: ignore[attr-defined]
            if values is EXTERNAL:
                assert url == (OWNER_URL if job else APP_URL), where
            else:
                parts = urlsplit(url)
                role, key = ("stacgis", "password") if job else ("stacgis_app", "app-password")
                assert (parts.username, parts.password) == (role, data[(name_of("postgresql"), key)]), where
                assert (parts.hostname, parts.port, parts.path) == (name_of("postgresql"), 5432, "/stacgis"), where
        if "redis_url" in type(settings).model_fields and not job:
            url = settings.redis_url  # type: ignore[attr-defined]
            if values is EXTERNAL:
                assert url == REDIS_URL, where
            else:
                parts = urlsplit(url)
                assert parts.password == data[(name_of("redis"), "password")], where
                assert (parts.hostname, parts.port, parts.path) == (name_of("redis"), 6379, "/0"), where
