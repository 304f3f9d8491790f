"""What the reliability suites found, pinned down: many streams at once do not exhaust the Redis pool,
every 503 says when to retry, a run that ends while Postgres is down still reaches the history (exactly
once), bodies that are not JSON get a 422 naming the body, and the run id comes with the stream's headers.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from gateway_helpers import Gateways, chat, database, gateway_env, new_user, resume, user

from stacgis_common.testing import REPO_ROOT, RunningService, error_of, free_port, run_service

sys.path.insert(0, str(REPO_ROOT / "tests" / "load"))

from private_stack import Infra

# More SSE streams than redis-py's default pool (100 connections) holds.
MANY_STREAMS = 130


@pytest.mark.asyncio
async def test_more_streams_than_a_default_redis_pool_all_get_their_events(gateways: Gateways) -> None:
    ann = new_user()
    limits = httpx.Limits(max_connections=MANY_STREAMS + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        first = await chat(client, gateways.a.url, "[slow=6] a slow answer", user(ann), stop_after=1)
        assert first.status == 200, first.body
        streams = await asyncio.gather(
            *(resume(client, gateways.a.url, first.run_id, None, user(ann)) for _ in range(MANY_STREAMS))
        )
    statuses = sorted({s.status for s in streams})
    assert statuses == [200], f"statuses {statuses}: {[s.body for s in streams if s.status != 200][:3]}"
    assert all(s.names[0] == "session" and s.names[-1] == "done" for s in streams)
    assert len({s.content() for s in streams}) == 1


@pytest.mark.asyncio
async def test_redis_down_answers_503_with_retry_after_and_the_gate_keeps_no_slot(
    pg_dsn: str, orchestrator: RunningService
) -> None:
    port = free_port()
    dead_redis = f"redis://127.0.0.1:{free_port()}/0"
    env = gateway_env(port, pg_dsn, dead_redis, orchestrator.url, REDIS_POOL_TIMEOUT_SECONDS="1")
    with run_service("stacgis_gateway", env, port) as gateway:
        async with httpx.AsyncClient(timeout=60) as client:
            answer = await client.post(
                f"{gateway.url}/api/v1/chat/stream", json={"message": "hello"}, headers=user(new_user())
            )
    assert error_of(answer, 503) == {
        "field": None,
        "message": "Redis is unavailable; retry shortly",
        "code": "unavailable",
    }
    assert int(answer.headers["Retry-After"]) > 0


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[Infra]:
    """Postgres (and an unused Redis) of this test only, so it can be stopped; the shared one never is."""
    state = Path(tempfile.mkdtemp(prefix="stacgis-gateway-pg-"))
    infra = Infra(state)
    try:
        infra.up()
        yield infra
    finally:
        infra.down()
        shutil.rmtree(state, ignore_errors=True)


@pytest.mark.asyncio
async def test_a_run_that_ends_while_postgres_is_down_is_stored_once_when_it_is_back(
    private_postgres: Infra, redis_url: str, orchestrator: RunningService
) -> None:
    port = free_port()
    prefix = f"pgdown-{uuid.uuid4().hex[:6]}:"
    env = gateway_env(
        port,
        private_postgres.pg_dsn,
        redis_url,
        orchestrator.url,
        REDIS_KEY_PREFIX=prefix,
        HISTORY_RETRY_SECONDS="1",
        HISTORY_FLUSH_SECONDS="0.5",
        SLOT_TTL_SECONDS="30",
    )
    cara = new_user()
    pending_key = f"{prefix}chat:pending_history"
    keys = redis.Redis.from_url(redis_url, decode_responses=True)
    with run_service("stacgis_gateway", env, port) as gateway:
        async with httpx.AsyncClient(timeout=60) as client:
            first = await chat(client, gateway.url, "before the outage", user(cara))
            assert first.names[-1] == "done"
            started = await chat(
                client, gateway.url, "[slow=3] during the outage", user(cara), first.session_id, stop_after=1
            )
            assert started.names == ["session"], started.body
            private_postgres.crash_postgres()
            second = await resume(client, gateway.url, started.run_id, None, user(cara))
            assert second.names[-1] == "done", second.names
            # The browser saw `done`: the write is parked in Redis, not lost.
            assert keys.hexists(pending_key, second.run_id)

            private_postgres.up()
            url = f"{gateway.url}/api/v1/chat/session/{first.session_id}/history"
            deadline = asyncio.get_running_loop().time() + 60
            while keys.hlen(pending_key) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.25)
            assert keys.hlen(pending_key) == 0, "the parked write was never flushed"
            third = await chat(client, gateway.url, "after the outage", user(cara), session_id=first.session_id)
            assert third.names[-1] == "done"
            history = (await client.get(url, headers=user(cara))).json()["messages"]
    keys.close()
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users == ["before the outage", "[slow=3] during the outage", "after the outage"]
    answers = [m["content"] for m in history if m["role"] == "assistant" and m["content"]]
    assert answers[1] == second.content()
    async with database(private_postgres.pg_dsn) as connection:
        stored = await connection.fetchval("SELECT count(*) FROM gateway.runs WHERE run_id = $1", second.run_id)
    assert stored == 1


@pytest.mark.asyncio
async def test_postgres_down_at_admission_answers_503_with_retry_after_and_frees_the_gate(
    private_postgres: Infra, redis_url: str, orchestrator: RunningService
) -> None:
    port = free_port()
    prefix = f"pgadmit-{uuid.uuid4().hex[:6]}:"
    env = gateway_env(port, private_postgres.pg_dsn, redis_url, orchestrator.url, REDIS_KEY_PREFIX=prefix)
    keys = redis.Redis.from_url(redis_url, decode_responses=True)
    private_postgres.up()  # in case an earlier test left it down
    with run_service("stacgis_gateway", env, port) as gateway:
        private_postgres.crash_postgres()
        try:
            async with httpx.AsyncClient(timeout=60) as client:
                answer = await client.post(
                    f"{gateway.url}/api/v1/chat/stream", json={"message": "a new session"}, headers=user(new_user())
                )
        finally:
            private_postgres.up()
    gate = keys.zcard(f"{prefix}chat:active_slots")
    keys.close()
    assert error_of(answer, 503)["message"] == "Postgres is unavailable; retry shortly"
    assert int(answer.headers["Retry-After"]) > 0
    assert gate == 0


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/chat/stream"),
        ("POST", "/chat/"),
        ("PATCH", f"/chat/session/{uuid.uuid4()}"),
        ("POST", "/chat/approvals/some-approval"),
    ],
)
async def test_a_body_that_is_not_json_text_is_a_422_naming_the_body(
    gateways: Gateways, method: str, path: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.request(
            method,
            f"{gateways.a.url}/api/v1{path}",
            content=b"\xff\xfe\x00not json",
            headers={**user(new_user()), "Content-Type": "application/json"},
        )
    assert error_of(answer, 422, "body")["message"] == "body: the body is not JSON text (UTF-8)"


@pytest.mark.asyncio
async def test_huge_offsets_and_limits_are_422s_naming_the_parameter(gateways: Gateways) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for query, name in ((f"offset={2**70}", "offset"), ("offset=1000001", "offset"), ("limit=201", "limit")):
            answer = await client.get(f"{gateways.a.url}/api/v1/chat/sessions?{query}", headers=user(new_user()))
            assert error_of(answer, 422, name)["code"] == "invalid_argument", query
        answer = await client.get(f"{gateways.a.url}/api/v1/chat/sessions?offset=1000000", headers=user(new_user()))
        assert answer.status_code == 200 and answer.json() == []
        schema = (await client.get(f"{gateways.a.url}/api/v1/openapi.json")).json()
    stream = schema["paths"]["/api/v1/chat/stream"]["post"]["responses"]
    assert "X-Run-Id" in stream["200"]["headers"]
    assert "400" not in stream


@pytest.mark.asyncio
async def test_the_run_id_comes_with_the_stream_headers_so_a_cut_browser_can_resume(gateways: Gateways) -> None:
    dan = new_user()
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream(
            "POST", f"{gateways.a.url}/api/v1/chat/stream", json={"message": "[slow=1] hello"}, headers=user(dan)
        ) as response:
            assert response.status_code == 200
            run_id = response.headers["X-Run-Id"]
        # Cut before reading a single event: the header alone is enough to follow the run.
        resumed = await resume(client, gateways.b.url, run_id, None, user(dan))
    assert resumed.status == 200
    assert resumed.run_id == run_id
    assert resumed.names[0] == "session" and resumed.names[-1] == "done"
