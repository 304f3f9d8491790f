"""Real embeddings and the model listing endpoints."""

from __future__ import annotations

import math

import httpx
import pytest

pytestmark = pytest.mark.asyncio


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


async def test_embed_gives_384_dims_where_a_paraphrase_is_closer(client: httpx.AsyncClient) -> None:
    texts = [
        "Which rivers flow through Luxembourg?",
        "What are the rivers crossing Luxembourg?",
        "The recipe needs two eggs and a cup of flour.",
    ]

    response = await client.post("/api/embed", json={"model": "all-minilm", "input": texts})

    assert response.status_code == 200
    body = response.json()
    assert body["model"] == "all-minilm"
    query, paraphrase, unrelated = body["embeddings"]
    assert len(query) == len(paraphrase) == len(unrelated) == 384
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3
    assert abs(math.hypot(*query) - 1.0) < 1e-4  # unit length, as Ollama returns them
    assert body["prompt_eval_count"] > 0


async def test_single_string_input_and_latest_tag(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/embed", json={"model": "all-minilm:latest", "input": "elevation of Mont Blanc"})

    embeddings = response.json()["embeddings"]
    assert len(embeddings) == 1 and len(embeddings[0]) == 384


async def test_openai_embeddings_match_ollama_embeddings(client: httpx.AsyncClient) -> None:
    text = "land cover of the Olinda region"
    ollama = (await client.post("/api/embed", json={"model": "all-minilm", "input": [text]})).json()["embeddings"][0]

    response = await client.post("/v1/embeddings", json={"model": "all-minilm", "input": [text, "second"]})

    body = response.json()
    assert body["object"] == "list" and [item["index"] for item in body["data"]] == [0, 1]
    assert cosine(body["data"][0]["embedding"], ollama) > 0.9999


async def test_embedding_errors_are_clear(client: httpx.AsyncClient) -> None:
    unknown = await client.post("/api/embed", json={"model": "nomic-embed-text", "input": "x"})
    chat_model = await client.post("/api/embed", json={"model": "scripted", "input": "x"})
    no_input = await client.post("/api/embed", json={"model": "all-minilm"})

    assert unknown.status_code == 404 and "nomic-embed-text" in unknown.json()["error"]
    assert chat_model.status_code == 400 and "does not support embeddings" in chat_model.json()["error"]
    assert no_input.status_code == 400 and "input" in no_input.json()["error"]


async def test_tags_show_and_version(client: httpx.AsyncClient) -> None:
    tags = (await client.get("/api/tags")).json()["models"]
    names = {model["name"] for model in tags}
    show = (await client.post("/api/show", json={"model": "all-minilm"})).json()
    scripted = (await client.post("/api/show", json={"model": "scripted"})).json()
    missing = await client.post("/api/show", json={"model": "llama3"})
    version = (await client.get("/api/version")).json()

    assert {"scripted:latest", "all-minilm:latest"} <= names
    assert show["capabilities"] == ["embedding"] and show["model_info"]["bert.embedding_length"] == 384
    assert {"completion", "tools", "thinking"} <= set(scripted["capabilities"])
    assert missing.status_code == 404
    assert version["version"].count(".") == 2
