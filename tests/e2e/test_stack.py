"""`make up` runs the product the way the chart deploys it: every component ready, the ingress's
routes, the environment variables the chart sets."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import helm_python
import httpx
import pytest
import yaml

from stacgis_common.testing import SERVICE_SETTINGS, settings_class

from .client import COMPONENTS, INGRESS, missing_components
from .conftest import require

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import stack  # noqa: E402  (scripts/stack.py: reads deploy/local/stack.env as `make up` does)

# Deployment name suffix -> settings class of the service.
SETTINGS = SERVICE_SETTINGS
# The chart gives its secrets as files in the directory this names; locally the services keep their
# development defaults, from no directory.
CHART_ONLY = {"STACGIS_SECRETS_DIR"}


@pytest.mark.asyncio
async def test_every_component_of_the_product_is_ready() -> None:
    missing = await missing_components(list(COMPONENTS))
    assert not missing, "not ready: " + "; ".join(f"{name}: {problem}" for name, problem in missing.items())


@pytest.mark.asyncio
async def test_the_ingress_routes_the_app_the_api_and_tiles_like_the_chart() -> None:
    await require("raster-tools", scripted=False)
    async with httpx.AsyncClient(base_url=INGRESS, timeout=30.0) as http:
        page = await http.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert page.headers["cache-control"] == "no-cache"
        asset = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
        assert asset, page.text[:500]
        bundle = await http.get(asset.group(1))
        assert bundle.status_code == 200 and "immutable" in bundle.headers["cache-control"]
        # Client-side routes fall back to the app; API paths never do.
        assert (await http.get("/some/client/route")).text == page.text
        missing_api = await http.get("/api/v1/no-such-endpoint")
        assert missing_api.status_code == 404 and "json" in missing_api.headers["content-type"]

        info = (await http.get("/api/v1/info")).json()
        assert info["model"] and info["provider"], info

        tilejson = await http.get("/tiles/luxembourg-dem/tilejson.json")
        assert tilejson.status_code == 200, tilejson.text[:300]
        template = tilejson.json()["tiles"][0]
        assert template.startswith(f"{INGRESS}/tiles/luxembourg-dem/"), template
        tile = await http.get(template.replace(f"{INGRESS}", "").format(z=8, x=132, y=87))
        assert tile.status_code == 200 and tile.headers["content-type"] == "image/png", tile.text[:300]


def chart_environment() -> dict[str, set[str]]:
    """Environment variable names the chart gives each service's container (ConfigMap and env)."""
    with helm_python.Chart.load(str(ROOT / "charts" / "stacgis")) as chart:
        files = chart.render(values={}, name="e2e", namespace="e2e")
    texts = [text for path, text in files.items() if path.endswith((".yaml", ".yml"))]
    docs = [doc for text in texts for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]
    config_maps = {doc["metadata"]["name"]: doc.get("data") or {} for doc in docs if doc["kind"] == "ConfigMap"}
    names: dict[str, set[str]] = {}
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        service = doc["metadata"]["name"].removeprefix("e2e-stacgis-")
        if service not in SETTINGS:
            continue
        container: dict[str, Any] = doc["spec"]["template"]["spec"]["containers"][0]
        found = {entry["name"] for entry in container.get("env", [])}
        for source in container.get("envFrom", []):
            found |= set(config_maps[source["configMapRef"]["name"]])
        names[service] = found - CHART_ONLY
    return names


def test_stack_env_sets_what_the_chart_sets_under_the_same_names() -> None:
    local = {**stack.read_env_file(ROOT / "deploy" / "local" / "stack.env"), **dict.fromkeys(stack.LLM_VARIABLES)}
    chart = chart_environment()
    assert set(chart) == set(SETTINGS), chart.keys()
    missing = {service: sorted(names - set(local)) for service, names in chart.items() if names - set(local)}
    assert not missing, f"deploy/local/stack.env lacks variables the chart sets: {missing}"


def test_every_variable_in_stack_env_is_a_setting_of_its_service() -> None:
    local = {**stack.read_env_file(ROOT / "deploy" / "local" / "stack.env"), **dict.fromkeys(stack.LLM_VARIABLES)}
    unknown = []
    for target in SETTINGS.values():
        settings = settings_class(target)
        prefix = str(settings.model_config["env_prefix"])
        fields = {f"{prefix}{field}".upper() for field in settings.model_fields}
        unknown += [key for key in local if key.startswith(prefix) and key not in fields]
    assert not unknown, f"no service reads these (misspelt?): {unknown}"


@pytest.mark.asyncio
async def test_make_up_takes_ollama_when_it_answers_and_the_local_model_server_otherwise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = await missing_components(["model-server"])
    assert not missing, f"the local model server is not up: {missing}"
    monkeypatch.delenv("ORCHESTRATOR_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("ORCHESTRATOR_LLM_MODEL", raising=False)
    # The local model server speaks Ollama's API, so under another address it stands in for an Ollama.
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://localhost:11434")
    with_ollama: dict[str, str] = {}
    stack.choose_llm(with_ollama)
    assert with_ollama["ORCHESTRATOR_LLM_BASE_URL"] == "http://localhost:11434"
    assert with_ollama["ORCHESTRATOR_LLM_MODEL"] == with_ollama["GATEWAY_MODEL_LABEL"] == stack.CHART_LLM_MODEL
    assert with_ollama["GATEWAY_PROVIDER_LABEL"] == "ollama"
    assert f"Ollama does not have {stack.CHART_LLM_MODEL}" in capsys.readouterr().out

    monkeypatch.setenv("OLLAMA_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    without: dict[str, str] = {}
    stack.choose_llm(without)
    assert without["ORCHESTRATOR_LLM_BASE_URL"] == "http://127.0.0.1:11434"
    assert without["ORCHESTRATOR_LLM_MODEL"] == without["GATEWAY_MODEL_LABEL"] == stack.LOCAL_LLM_MODEL
    assert without["GATEWAY_PROVIDER_LABEL"] == "stacgis model server"
    assert "does not answer: using the local model server" in capsys.readouterr().out
