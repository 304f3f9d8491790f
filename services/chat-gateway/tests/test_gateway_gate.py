"""The concurrency gate across replicas: never over-admits, self-heals after a killed replica; the rate limit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator

import httpx
import pytest
import redis
import redis.asyncio as aioredis
from gateway_helpers import Gateways, chat, gateway_env, new_user, resume, services, user

from stacgis_common.testing import RunningService, error_of, free_port, run_service

REQUESTS = 200


@pytest.mark.asyncio
async def test_200_concurrent_streams_never_exceed_a_gate_of_10(gateways: Gateways, redis_url: str) -> None:
    gate_key = f"{gateways.prefix}chat:active_slots"
    watcher = aioredis.Redis.from_url(redis_url, decode_responses=True)
    peak = 0
    samples = 0
    done = asyncio.Event()

    async def watch() -> None:
        nonlocal peak, samples
        while not done.is_set():
            peak = max(peak, await watcher.zcard(gate_key))
            samples += 1
            await asyncio.sleep(0.01)

    limits = httpx.Limits(max_connections=REQUESTS + 10, max_keepalive_connections=REQUESTS + 10)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        watching = asyncio.create_task(watch())
        results = await asyncio.gather(
            *(
                chat(client, (gateways.a if i % 2 else gateways.b).url, "[slow=2.5][deltas=5] load", user(f"load-{i}"))
                for i in range(REQUESTS)
            )
        )
        done.set()
        await watching
        capacity = (await client.get(f"{gateways.a.url}/api/v1/chat/capacity")).json()

    admitted = [r for r in results if r.status == 200]
    rejected = [r for r in results if r.status == 503]
    assert len(admitted) + len(rejected) == REQUESTS, sorted({r.status for r in results})
    assert samples > 50
    assert peak <= 10, f"{peak} runs were active at once"
    assert peak == 10 and len(admitted) >= 10
    assert len(rejected) >= REQUESTS - 20
    for stream in admitted:
        assert stream.names[0] == "session" and stream.names[-1] == "done"
    for stream in rejected:
        assert stream.headers["retry-after"].isdigit()
        full = stream.error(503)
        assert set(full) == {"field", "message", "code", "active", "max", "available"}
        assert full["code"] == "gate_full" and full["message"] == "all model slots are busy; retry shortly"
        assert full["max"] == 10 and full["available"] == 0
    assert await watcher.zcard(gate_key) == 0
    assert capacity == {"active": 0, "max": 10, "available": 10}
    await watcher.aclose()


# Slot TTL of the replicas the kill tests start: short, so a dead replica's slot goes stale quickly.
KILL_TTL = 2.0


@contextlib.contextmanager
def doomed_and_survivor(
    prefix: str, pg_dsn: str, redis_url: str, orchestrator: RunningService
) -> Iterator[tuple[RunningService, RunningService]]:
    """Two gateway replicas sharing Redis keys under `prefix`: one to kill, one that lives on."""
    settings = {"GATEWAY_REDIS_KEY_PREFIX": prefix, "GATEWAY_SLOT_TTL_SECONDS": str(KILL_TTL)}
    port_doomed, port_survivor = free_port(), free_port()
    with services(
        ("stacgis_gateway", gateway_env(port_doomed, pg_dsn, redis_url, orchestrator.url, **settings), port_doomed),
        ("stacgis_gateway", gateway_env(port_survivor, pg_dsn, redis_url, orchestrator.url, **settings), port_survivor),
    ) as (doomed, survivor):
        yield doomed, survivor


@pytest.mark.asyncio
async def test_slot_of_a_killed_gateway_is_pruned_after_the_ttl(
    pg_dsn: str, redis_url: str, redis_client: redis.Redis, orchestrator: RunningService
) -> None:
    ttl = KILL_TTL
    gate_key = "kill:chat:active_slots"
    frank = new_user()
    with doomed_and_survivor("kill:", pg_dsn, redis_url, orchestrator) as (doomed, survivor):
        async with httpx.AsyncClient(timeout=30) as client:
            started = await chat(client, doomed.url, "[hang] never ends", user(frank), stop_after=2)
            assert started.names == ["session", "content"]
            assert redis_client.zcard(gate_key) == 1
            # While its replica lives, a run keeps its slot past the TTL (it is refreshed), even though
            # every capacity call prunes stale slots.
            await asyncio.sleep(ttl * 1.5)
            assert (await client.get(f"{survivor.url}/api/v1/chat/capacity")).json()["active"] == 1
            doomed.kill()  # SIGKILL: no cleanup at all
            killed_at = time.monotonic()
            assert redis_client.zscore(gate_key, started.run_id) is not None

            first = (await client.get(f"{survivor.url}/api/v1/chat/capacity")).json()
            assert first["active"] == 1  # not yet stale
            while (await client.get(f"{survivor.url}/api/v1/chat/capacity")).json()["active"] != 0:
                assert time.monotonic() - killed_at < ttl + 5, "the dead gateway's slot was never pruned"
                await asyncio.sleep(0.1)
            assert time.monotonic() - killed_at >= ttl - 1.0  # pruned by age, not by accident
            assert redis_client.zcard(gate_key) == 0

            # Resuming on the surviving replica ends the orphaned run for good, and keeps its partial answer.
            tail = await resume(client, survivor.url, started.run_id, started.events[-1].id, user(frank))
            assert tail.names == ["error"] and tail.events[0].data["error"]["code"] == "run_lost"
            history = (
                await client.get(
                    f"{survivor.url}/api/v1/chat/session/{started.session_id}/history", headers=user(frank)
                )
            ).json()
            assert [(m["role"], m["content"]) for m in history["messages"]] == [
                ("user", "[hang] never ends"),
                ("assistant", started.content()),
            ]
            # The session is free again.
            follow = await chat(client, survivor.url, "still there?", user(frank), session_id=started.session_id)
            assert follow.status == 200 and follow.names[-1] == "done"


@pytest.mark.asyncio
async def test_a_killed_gateways_run_is_taken_over_without_anyone_resuming_it(
    pg_dsn: str, redis_url: str, redis_client: redis.Redis, orchestrator: RunningService
) -> None:
    ttl = KILL_TTL
    grace = new_user()
    with doomed_and_survivor("orphan:", pg_dsn, redis_url, orchestrator) as (doomed, survivor):
        async with httpx.AsyncClient(timeout=30) as client:
            started = await chat(client, doomed.url, "[hang] never ends", user(grace), stop_after=2)
            assert started.names == ["session", "content"]
            meta_key = f"orphan:run:{started.run_id}:meta"
            await asyncio.sleep(ttl * 1.5)
            assert redis_client.hget(meta_key, "status") == "running"  # alive while its replica lives
            doomed.kill()  # SIGKILL; no browser follows or resumes the run from here on
            killed_at = time.monotonic()

            # The survivor notices on its own: the run ends with run_lost, its partial answer stored.
            while redis_client.hget(meta_key, "status") != "finished":
                assert time.monotonic() - killed_at < ttl * 4 + 5, "the orphaned run was never taken over"
                await asyncio.sleep(0.1)
            assert time.monotonic() - killed_at >= ttl - 1.0  # by its silence, not by accident
            assert redis_client.hget(meta_key, "outcome") == "error"
            assert redis_client.zscore("orphan:run:live", started.run_id) is None
            history = (
                await client.get(
                    f"{survivor.url}/api/v1/chat/session/{started.session_id}/history", headers=user(grace)
                )
            ).json()
            assert [(m["role"], m["content"]) for m in history["messages"]] == [
                ("user", "[hang] never ends"),
                ("assistant", started.content()),
            ]
            # A browser coming back later reads the end from the run's stream.
            tail = await resume(client, survivor.url, started.run_id, started.events[-1].id, user(grace))
            assert tail.names == ["error"] and tail.events[0].data["error"]["code"] == "run_lost"
            # The session and the user's slot are free again.
            assert (await client.get(f"{survivor.url}/api/v1/chat/capacity")).json()["active"] == 0
            follow = await chat(client, survivor.url, "still there?", user(grace), session_id=started.session_id)
            assert follow.status == 200 and follow.names[-1] == "done"
            metrics = (await client.get(f"{survivor.url}/metrics")).text
            assert "stacgis_gateway_runs_taken_over_total 1.0" in metrics


@pytest.mark.asyncio
async def test_rate_limit_per_user(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> None:
    port = free_port()
    env = gateway_env(
        port, pg_dsn, redis_url, orchestrator.url, GATEWAY_REDIS_KEY_PREFIX="rate:", GATEWAY_RATE_LIMIT_PER_MINUTE="3"
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        async with httpx.AsyncClient(timeout=30) as client:
            grace = new_user()
            statuses = [(await chat(client, gateway.url, "hi", user(grace))).status for _ in range(4)]
            assert statuses == [200, 200, 200, 429]
            limited = await client.post(
                f"{gateway.url}/api/v1/chat/stream", json={"message": "hi"}, headers=user(grace)
            )
            assert int(limited.headers["retry-after"]) >= 1
            assert error_of(limited, 429)["message"] == "at most 3 runs per minute; retry later"
            # Another user is not affected.
            assert (await chat(client, gateway.url, "hi", user(new_user()))).status == 200
            metrics = (await client.get(f"{gateway.url}/metrics")).text
            assert 'stacgis_gateway_rejections_total{reason="rate_limited"} 2.0' in metrics


@pytest.mark.asyncio
async def test_one_user_cannot_take_every_slot(pg_dsn: str, redis_url: str, orchestrator: RunningService) -> None:
    port = free_port()
    env = gateway_env(
        port,
        pg_dsn,
        redis_url,
        orchestrator.url,
        GATEWAY_REDIS_KEY_PREFIX="peruser:",
        GATEWAY_MAX_CONCURRENT_RUNS="10",
        GATEWAY_MAX_CONCURRENT_RUNS_PER_USER="2",
    )
    with run_service("stacgis_gateway", env, port) as gateway:
        async with httpx.AsyncClient(timeout=30) as client:
            hal = new_user()
            # Two runs in two sessions, left running (their streams dropped after the first event).
            running = [await chat(client, gateway.url, "[slow=4] long", user(hal), stop_after=1) for _ in range(2)]
            assert [r.status for r in running] == [200, 200]
            third = await chat(client, gateway.url, "one more", user(hal))
            assert third.headers["retry-after"].isdigit()
            assert third.error(429)["message"] == "at most 2 runs at once per user; wait for one to finish"
            # Others still get in: the slots are not all taken.
            assert (await chat(client, gateway.url, "hi", user(new_user()))).status == 200
            # Once one of the user's runs ends, the user gets in again.
            for run in running:
                tail = await resume(client, gateway.url, run.run_id, run.events[-1].id, user(hal))
                assert tail.names[-1] == "done"
            assert (await chat(client, gateway.url, "again", user(hal))).status == 200
            metrics = (await client.get(f"{gateway.url}/metrics")).text
            assert 'stacgis_gateway_rejections_total{reason="user_concurrency"} 1.0' in metrics
