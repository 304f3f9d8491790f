"""Memories over MCP: per-user isolation, replay and near-duplicate handling, bad input, restarts."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import httpx
import pytest
from memory_helpers import call, new_user, recent, session_with_headers

from stacgis_common.testing import RunningService, free_port, mcp_client, run_service, token_for


@pytest.mark.asyncio
async def test_remember_recall_and_forget(memory_server: RunningService) -> None:
    user = new_user("ana")
    facts = [
        ("I prefer elevations in feet rather than metres", "preference"),
        ("My study area is the Rocky Mountain National Park", "place"),
        ("I work on wildfire risk for the county fire department", "fact"),
    ]
    ids = []
    for content, kind in facts:
        error, added = await call(memory_server.url, user, "add_memory", {"content": content, "kind": kind})
        assert not error and added["status"] == "created", added
        ids.append(added["memory"]["id"])

    error, found = await call(memory_server.url, user, "search_memories", {"query": "which units does she like?"})
    assert not error, found
    assert found["results"][0]["id"] == ids[0]
    assert found["results"][0]["kind"] == "preference"
    error, found = await call(memory_server.url, user, "search_memories", {"query": "where is the area I study?"})
    assert found["results"][0]["id"] == ids[1]

    assert [memory["id"] for memory in await recent(memory_server.url, user)] == list(reversed(ids))

    error, forgotten = await call(memory_server.url, user, "forget_memory", {"memory_id": ids[2]})
    assert not error and forgotten["memory"]["content"] == facts[2][0]
    assert ids[2] not in [memory["id"] for memory in await recent(memory_server.url, user)]
    error, again = await call(memory_server.url, user, "forget_memory", {"memory_id": ids[2]})
    assert error and "memory_id" in again


@pytest.mark.asyncio
async def test_replayed_add_does_not_duplicate_and_near_duplicates_update(memory_server: RunningService) -> None:
    user = new_user("ben")
    arguments = {"content": "I prefer metric units", "kind": "preference"}
    results = [await call(memory_server.url, user, "add_memory", arguments) for _ in range(3)]
    assert [result["status"] for _, result in results] == ["created", "unchanged", "unchanged"]
    assert len({result["memory"]["id"] for _, result in results}) == 1
    assert results[-1][1]["memory"]["times_seen"] == 3

    # Same meaning, other words (cosine about 0.95): the memory is reworded, not doubled.
    error, reworded = await call(memory_server.url, user, "add_memory", {"content": "I like metric units"})
    assert not error, reworded
    assert reworded["status"] == "updated" and reworded["replaced"] == "I prefer metric units"
    assert reworded["memory"]["id"] == results[0][1]["memory"]["id"]
    assert reworded["similarity"] >= 0.9

    # A different fact (cosine about 0.6) is a memory of its own.
    error, other = await call(memory_server.url, user, "add_memory", {"content": "I live in Berlin"})
    assert not error and other["status"] == "created"
    memories = await recent(memory_server.url, user)
    assert sorted(memory["content"] for memory in memories) == ["I like metric units", "I live in Berlin"]


@pytest.mark.asyncio
async def test_memories_of_one_user_are_invisible_to_another(memory_server: RunningService) -> None:
    alice, bob = new_user("alice"), new_user("bob")
    error, secret = await call(
        memory_server.url, alice, "add_memory", {"content": "My field site is the Jacksboro fault in Tennessee"}
    )
    assert not error, secret
    secret_id = secret["memory"]["id"]

    # Crafted arguments naming the other user are not part of any tool's schema and change nothing.
    crafted: list[tuple[str, dict[str, Any]]] = [
        ("search_memories", {"query": "field site Jacksboro fault Tennessee"}),
        ("search_memories", {"query": "Jacksboro fault", "user_id": alice}),
        ("search_memories", {"query": "Jacksboro fault", "user": alice, "identity": {"user_id": alice}}),
    ]
    for tool, arguments in crafted:
        error, result = await call(memory_server.url, bob, tool, arguments)
        assert error or result["results"] == [], (tool, arguments, result)

    # A header a client could set is not an identity either.
    async with session_with_headers(memory_server.url, bob, {"X-User-Id": alice, "X-Forwarded-User": alice}) as session:
        result = await session.call_tool("search_memories", {"query": "Jacksboro fault"})
    assert result.is_error or result.structured_content["results"] == []

    assert await recent(memory_server.url, bob) == []
    error, message = await call(memory_server.url, bob, "forget_memory", {"memory_id": secret_id})
    assert error and "memory_id" in message
    # The same answer as for an id that does not exist: nothing tells Bob that the id is real.
    error, unknown = await call(
        memory_server.url, bob, "forget_memory", {"memory_id": "00000000-0000-4000-8000-000000000000"}
    )
    assert error and unknown == message
    # Bob's identical memory is his own, not an update of Alice's.
    error, bobs = await call(
        memory_server.url, bob, "add_memory", {"content": "My field site is the Jacksboro fault in Tennessee"}
    )
    assert not error and bobs["status"] == "created" and bobs["memory"]["id"] != secret_id

    assert [memory["id"] for memory in await recent(memory_server.url, alice)] == [secret_id]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    [
        ("add_memory", {"content": ""}, "content"),
        ("add_memory", {"content": "   "}, "content"),
        ("add_memory", {"content": "x" * 1001}, "content"),
        ("add_memory", {"content": "fine", "kind": "secret"}, "kind"),
        ("search_memories", {"query": ""}, "query"),
        ("search_memories", {"query": "q" * 501}, "query"),
        ("search_memories", {"query": "units", "limit": 0}, "limit"),
        ("search_memories", {"query": "units", "limit": 51}, "limit"),
        ("forget_memory", {"memory_id": "not-a-uuid"}, "memory_id"),
        ("forget_memory", {"memory_id": ""}, "memory_id"),
    ],
)
async def test_bad_input_is_named_and_changes_nothing(
    memory_server: RunningService, tool: str, arguments: dict[str, Any], argument: str
) -> None:
    user = new_user("carol")
    error, kept = await call(memory_server.url, user, "add_memory", {"content": "I map flood risk in Puerto Rico"})
    assert not error, kept
    before = await recent(memory_server.url, user)
    error, message = await call(memory_server.url, user, tool, arguments)
    assert error, message
    assert argument in message
    assert await recent(memory_server.url, user) == before


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "token", [None, "garbage", token_for("dave", ttl_seconds=-120)], ids=["missing", "garbage", "expired"]
)
async def test_no_valid_token_no_access(memory_server: RunningService, token: str | None) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_memories", "arguments": {"query": "anything"}},
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(memory_server.url + "/mcp", json=body, headers=headers)
    assert response.status_code == 401


@pytest.mark.asyncio
async def test_restarted_server_keeps_memories(memory_env: dict[str, str]) -> None:
    user = new_user("erin")
    port = free_port()
    env = {**memory_env, "MEMORY_PORT": str(port)}
    with run_service("stacgis_memory", env, port) as first:
        error, added = await call(first.url, user, "add_memory", {"content": "I compare NDVI across Olinda parks"})
        assert not error, added
        first.kill()
    with run_service("stacgis_memory", env, port) as second:
        async with mcp_client(second.url + "/mcp", token_for(user)) as session:
            result = await session.call_tool("search_memories", {"query": "vegetation index in parks"})
    assert result.structured_content["results"][0]["id"] == added["memory"]["id"]


def test_other_embedding_dimension_is_refused_with_the_fix(
    memory_server: RunningService, memory_env: dict[str, str]
) -> None:
    # The stored vectors are 384-dimensional (all-minilm): a 768-dimension configuration must not
    # start comparing them, and the message names the command that re-embeds.
    env = {**os.environ, **memory_env, "MEMORY_EMBEDDING_DIMENSION": "768"}
    result = subprocess.run(
        [sys.executable, "-m", "stacgis_memory.migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert "vector(384)" in result.stderr and "--reembed" in result.stderr
    # Rebuilding for the configured model keeps every memory and its search.
    again = subprocess.run(
        [sys.executable, "-m", "stacgis_memory.migrate", "--reembed"],
        env={**os.environ, **memory_env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert again.returncode == 0 and "re-embedded" in again.stdout, again.stderr


@pytest.mark.asyncio
async def test_a_user_with_no_memories_is_answered_without_the_embedding_server(
    memory_server: RunningService, memory_env: dict[str, str]
) -> None:
    # Every run searches memories before its first model call: a new user's search must not wait
    # for an embedding. With the embedding server gone, it still answers (empty); a user who has
    # memories gets the clear error, since their search needs the embedding.
    keeper = new_user("kim")
    error, added = await call(memory_server.url, keeper, "add_memory", {"content": "I map glaciers in the Alps"})
    assert not error, added
    port = free_port()
    env = {**memory_env, "MEMORY_PORT": str(port), "MEMORY_EMBEDDING_BASE_URL": f"http://127.0.0.1:{free_port()}"}
    with run_service("stacgis_memory", env, port) as cut_off:
        error, found = await call(cut_off.url, new_user("newcomer"), "search_memories", {"query": "my study area"})
        assert not error and found["results"] == [] and found["count"] == 0, found
        error, failed = await call(cut_off.url, keeper, "search_memories", {"query": "glaciers"})
        assert error and "embedding server is unavailable" in str(failed)
