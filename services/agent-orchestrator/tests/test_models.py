"""`GET /v1/models`: the chat models a run may ask for, as the model server lists them, default first."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from orchestrator_helpers import auth

from conftest import ToolServer, orchestrator, orchestrator_env
from stacgis_common.testing import free_port, run_service

CHAT_MODELS = ["scripted", "scripted-large"]
EMBEDDING_MODEL = "all-minilm"


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_models_are_the_servers_chat_models_with_the_default_first(
    provider: str, tmp_path: Path, redis_url: str, raster: ToolServer
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('{"rules": []}')
    port = free_port()
    server_env = {
        "MODEL_SERVER_PORT": str(port),
        "MODEL_SERVER_RULES_PATH": str(rules),
        # The default second: the list puts it first whatever order the server gives.
        "MODEL_SERVER_SCRIPTED_MODELS": json.dumps(list(reversed(CHAT_MODELS))),
        "MODEL_SERVER_EMBEDDING_MODEL": EMBEDDING_MODEL,
    }
    with run_service("stacgis_model_server", server_env, port) as model_server:
        tags = [m["name"] for m in httpx.get(model_server.url + "/api/tags").json()["models"]]
        env = orchestrator_env(model_server.url, redis_url, {"raster": raster.mcp}, llm_provider=provider)
        with orchestrator(env) as service:
            response = httpx.get(service.url + "/v1/models", headers=auth(), timeout=10)
            refused = httpx.get(service.url + "/v1/models", timeout=10)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["provider"] == provider and body["default"] == CHAT_MODELS[0] and body["listed"] is True
    assert body["models"][0] == CHAT_MODELS[0]
    # Everything the server offers for chat, once; its embedding model is not a chat model.
    offered = {name.removesuffix(":latest") for name in tags}
    assert {name.removesuffix(":latest") for name in body["models"]} == offered - {EMBEDDING_MODEL}
    assert len(body["models"]) == len(set(body["models"]))
    # Ollama names a tag given without one "<name>:latest".
    assert set(CHAT_MODELS) <= {name.removesuffix(":latest") for name in body["models"]}
    assert refused.status_code == 401


def test_a_model_server_that_does_not_answer_leaves_only_the_default(redis_url: str, raster: ToolServer) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with orchestrator(orchestrator_env(dead, redis_url, {"raster": raster.mcp})) as service:
        body = httpx.get(service.url + "/v1/models", headers=auth(), timeout=10).json()
    assert body["listed"] is False and body["models"] == [body["default"]] == ["scripted"]
