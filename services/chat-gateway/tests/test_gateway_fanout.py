"""One reader per gateway process: many streams fan out from one XREAD connection, a slow consumer is
closed at a resumable id without holding back the others, and streams survive the reader's connection
being killed (no gap, no repeat)."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psutil
import pytest
import pytest_asyncio
import redis
from gateway_helpers import Gateways, Stream, chat, new_user, read_stream, resume, stream_id_key, user
from redis.asyncio import Redis
from sse_starlette.sse import AppStatus

from stacgis_gateway.fanout import FINISHED, Delivery, StreamHub
from stacgis_gateway.keys import RedisKeys
from stacgis_gateway.runstore import RunMeta, RunStore
from stacgis_gateway.streaming import PING, tail_run


class Hub:
    """A StreamHub in this process over the test Redis, with a RunStore to write runs through."""

    def __init__(self, url: str, queue_max_events: int = 2000, prefix: str | None = None) -> None:
        self.prefix = prefix or f"hub-{uuid.uuid4().hex[:8]}:"
        keys = RedisKeys(self.prefix)
        self.redis = Redis.from_url(url, decode_responses=True, protocol=2)
        self.reader_name = f"test-reader-{uuid.uuid4().hex[:8]}"
        reader = Redis.from_url(
            url, decode_responses=True, protocol=2, single_connection_client=True, client_name=self.reader_name
        )
        self.runs = RunStore(self.redis, keys, 10_000, 120)
        self.lost: list[str] = []
        self.hub = StreamHub(
            self.redis,
            reader,
            keys,
            self.runs,
            block_seconds=5.0,
            heartbeat_seconds=0.3,
            check_seconds=0.3,
            slot_ttl_seconds=60,
            queue_max_events=queue_max_events,
            read_count=500,
            on_lost=self._lost,
        )

    async def _lost(self, meta: RunMeta) -> None:
        self.lost.append(meta.run_id)

    async def new_run(self) -> str:
        run_id = uuid.uuid4().hex
        await self.runs.create(run_id, "u", "s", "m")
        return run_id

    async def append(self, run_id: str, seq: int, event: str = "content") -> str:
        payload: dict[str, Any] = {"runId": run_id, "seq": str(seq), "step": 1, "content": {"text": f"{seq} "}}
        return await self.runs.append(run_id, event, payload)


@pytest_asyncio.fixture
async def hub(redis_url: str) -> AsyncIterator[Hub]:
    made = Hub(redis_url)
    made.hub.start()
    yield made
    await made.hub.stop()
    await made.redis.aclose()


async def collect(hub: StreamHub, run_id: str, after: str = "0-0") -> list[str]:
    """Entry ids delivered to one follower until the run's final (`done`) entry."""
    ids: list[str] = []
    async with hub.follow(run_id, after) as follower:
        while True:
            delivery = await follower.next()
            ids += [entry.id for entry in delivery.entries]
            if any(entry.event == "done" for entry in delivery.entries) or delivery.closed:
                return ids


@pytest.mark.asyncio
async def test_one_reader_fans_out_every_entry_to_many_followers_in_order(hub: Hub) -> None:
    runs = [await hub.new_run() for _ in range(20)]
    followers = [asyncio.create_task(collect(hub.hub, run_id)) for run_id in runs for _ in range(10)]
    while hub.hub.followers < len(followers):
        await asyncio.sleep(0.01)
    written: dict[str, list[str]] = {run_id: [] for run_id in runs}
    for seq in range(1, 31):
        for run_id in runs:
            written[run_id].append(await hub.append(run_id, seq, "done" if seq == 30 else "content"))
    results = await asyncio.wait_for(asyncio.gather(*followers), 60)
    for index, ids in enumerate(results):
        assert ids == written[runs[index // 10]]  # every entry, once, in order
    # 200 streams, all from the reader's one connection.
    async with hub.redis.client() as admin:
        clients = await admin.client_list()
    assert len([c for c in clients if c["name"] == hub.reader_name]) == 1
    assert hub.hub.followers == 0 and hub.hub.followed_runs == 0


@pytest.mark.asyncio
async def test_a_burst_reaches_every_stream_in_one_write_in_order_each_event_encoded_once(hub: Hub) -> None:
    run_id = await hub.new_run()
    burst: list[tuple[str, str, dict[str, Any]]] = [
        (run_id, "content", {"runId": run_id, "seq": str(seq), "step": 1, "content": {"text": f"{seq} "}})
        for seq in range(1, 6)
    ]
    burst.append((run_id, "done", {"runId": run_id, "seq": "6", "step": 1, "done": {"content": "1 2 3 4 5"}}))
    written = await hub.runs.append_batch(burst)  # one pipeline, read back by one XREAD

    async def first_delivery() -> Delivery:
        async with hub.hub.follow(run_id, "0-0") as follower:
            return await follower.next()

    # Both follow before the reader's next read (the second joins while the first sends the wake-up).
    one, two = await asyncio.wait_for(asyncio.gather(first_delivery(), first_delivery()), 30)
    assert [entry.id for entry in one.entries] == [entry.id for entry in two.entries] == written
    # The SSE bytes of an event are made once and shared by every stream that sends it.
    assert all(a.frame is b.frame for a, b in zip(one.entries, two.entries, strict=True))
    # Through the SSE side: the whole burst is one write per stream, its events in order, each with its id.

    async def writes() -> list[bytes]:
        return [chunk async for chunk in tail_run(hub.hub, run_id, "0-0")]

    chunks = await asyncio.wait_for(asyncio.gather(writes(), writes()), 30)
    for sent in chunks:
        sent = [chunk for chunk in sent if chunk != PING]  # a heartbeat may come first on a busy machine
        assert len(sent) == 1
        lines = sent[0].decode().splitlines()
        assert [line.removeprefix("id: ") for line in lines if line.startswith("id: ")] == written
        names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
        assert names == [event for _, event, _ in burst]


@pytest.mark.asyncio
async def test_streams_end_with_the_id_to_resume_from_when_the_server_is_told_to_stop(hub: Hub) -> None:
    run_id = await hub.new_run()
    written = await hub.append(run_id, 1)
    stream = tail_run(hub.hub, run_id, "0-0")
    chunks = [await asyncio.wait_for(anext(stream), 30)]
    AppStatus.should_exit = True  # what uvicorn's exit sets (through sse-starlette)
    try:
        chunks += await asyncio.wait_for(_rest(stream), 5)  # ended, not left to the server's grace timeout
    finally:
        AppStatus.should_exit = False
    text = b"".join(chunks).decode()
    assert text.startswith(f"id: {written}\n") and text.endswith(
        f": server shutting down; resume with Last-Event-ID {written}\n\n"
    )
    assert hub.hub.followers == 0


async def _rest(stream: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in stream]


@pytest.mark.asyncio
async def test_a_slow_consumer_is_closed_at_a_resumable_id_and_never_holds_back_the_others(redis_url: str) -> None:
    made = Hub(redis_url, queue_max_events=10)
    made.hub.start()
    try:
        run_id = await made.new_run()
        fast = asyncio.create_task(collect(made.hub, run_id))
        slow = tail_run(made.hub, run_id, "0-0")
        first = asyncio.create_task(anext(slow))  # follows, then waits for the first entry
        while made.hub.followers < 2:
            await asyncio.sleep(0.01)
        written = [await made.append(run_id, 1)]
        chunks = [await first]
        # The slow stream now reads nothing while 59 more entries arrive.
        for seq in range(2, 61):
            written.append(await made.append(run_id, seq, "done" if seq == 60 else "content"))
        assert await asyncio.wait_for(fast, 30) == written  # the fast one got everything
        chunks += [chunk async for chunk in slow]
    finally:
        await made.hub.stop()
        await made.redis.aclose()
    text = b"".join(chunks).decode()
    sent = [line.removeprefix("id: ") for line in text.splitlines() if line.startswith("id: ")]
    assert sent == written[: len(sent)] and 1 < len(sent) <= 11  # at most the queue, no gap
    assert text.endswith(f": too far behind; resume with Last-Event-ID {sent[-1]}\n\n")
    # Resuming from that id (a fresh process's reader) gives exactly the rest.
    fresh = Hub(redis_url, prefix=made.prefix)
    fresh.hub.start()
    try:
        rest = await asyncio.wait_for(collect(fresh.hub, run_id, sent[-1]), 30)
    finally:
        await fresh.hub.stop()
        await fresh.redis.aclose()
    assert sent + rest == written


@pytest.mark.asyncio
async def test_followers_carry_on_without_gap_or_repeat_when_the_readers_connection_is_killed(hub: Hub) -> None:
    run_id = await hub.new_run()
    follower = asyncio.create_task(collect(hub.hub, run_id))
    while hub.hub.followers < 1:
        await asyncio.sleep(0.01)
    written = [await hub.append(run_id, seq) for seq in range(1, 6)]
    async with hub.redis.client() as admin:
        for client in await admin.client_list():
            if client["name"] == hub.reader_name:
                await admin.client_kill_filter(_id=client["id"])
    written += [await hub.append(run_id, seq, "done" if seq == 10 else "content") for seq in range(6, 11)]
    assert await asyncio.wait_for(follower, 30) == written


@pytest.mark.asyncio
async def test_a_finished_run_ends_its_followers_and_idle_ones_are_pinged(hub: Hub) -> None:
    run_id = await hub.new_run()
    async with hub.hub.follow(run_id, "0-0") as follower:
        pinged = await asyncio.wait_for(follower.next(), 30)
        assert pinged.ping and not pinged.entries  # nothing written: the timer pinged it
        await hub.runs.finish(run_id, "done")
        ended = await asyncio.wait_for(follower.next(), 30)
        while ended.closed is None:
            ended = await asyncio.wait_for(follower.next(), 30)
        assert ended.closed == FINISHED


@pytest.mark.asyncio
async def test_a_stream_that_cannot_reach_redis_ends_with_an_error_event_not_a_cut_connection(hub: Hub) -> None:
    run_id = await hub.new_run()
    written = await hub.append(run_id, 1)
    # Redis goes away between the chat request and its stream (a restart): the wake-up cannot be sent.
    hub.hub._redis = Redis(host="127.0.0.1", port=_free_port(), socket_connect_timeout=1)
    try:
        text = b"".join([chunk async for chunk in tail_run(hub.hub, run_id, written, check_now=True)]).decode()
    finally:
        await hub.hub._redis.aclose()
        hub.hub._redis = hub.redis
    assert "event: error" in text
    data = json.loads(next(line for line in text.splitlines() if line.startswith("data: "))[len("data: ") :])
    assert data["error"]["code"] == "stream_unavailable"
    assert written in data["error"]["message"]  # says where to resume from


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _blocked_reads(pid: int, admin: redis.Redis) -> list[dict[str, Any]]:
    """The Redis clients of process `pid` blocked in a read (CLIENT LIST flag `b`)."""
    ports = {
        connection.laddr[1]
        for connection in psutil.Process(pid).net_connections(kind="tcp")
        if connection.raddr and connection.raddr[1] == admin.get_connection_kwargs()["port"]
    }
    return [
        client
        for client in admin.client_list()
        if int(client["addr"].rsplit(":", 1)[1]) in ports and "b" in client["flags"]
    ]


@pytest.mark.asyncio
async def test_many_sse_streams_of_one_gateway_share_one_reader_and_every_idle_one_is_pinged(
    gateways: Gateways, redis_url: str
) -> None:
    admin = redis.Redis.from_url(redis_url, decode_responses=True)
    owner = new_user()
    streams = 120
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=streams + 10)) as client:
        first = await chat(client, gateways.a.url, "[hang] wait here", user(owner), stop_after=2)
        assert first.names == ["session", "content"]
        opened = asyncio.Event()
        counts: list[Stream] = []

        async def follow() -> None:
            async with client.stream(
                "GET", f"{gateways.a.url}/api/v1/chat/runs/{first.run_id}/events", headers=user(owner)
            ) as response:
                stream = Stream(response.status_code, response.headers)
                counts.append(stream)
                if len(counts) == streams:
                    opened.set()
                await read_stream(response, stream)

        tasks = [asyncio.create_task(follow()) for _ in range(streams)]
        await asyncio.wait_for(opened.wait(), 60)

        # Every stream gets its two events and then pings from the timer (heartbeat 0.5 s here); bounded,
        # so that a stream that never gets them fails the test instead of hanging the suite.
        async def all_pinged() -> None:
            while any(len(s.events) < 2 or not s.comments for s in counts):
                await asyncio.sleep(0.1)

        try:
            await asyncio.wait_for(all_pinged(), 60)
        except TimeoutError:
            waiting = [(s.status, s.names, s.comments[:1]) for s in counts if len(s.events) < 2 or not s.comments]
            pytest.fail(f"{len(waiting)} of {streams} streams lack two events or a ping after 60 s: {waiting[:5]}")
        assert all(s.comments[0] == "ping" for s in counts)
        # 120 followers, one blocked read: the gateway's reader (no connection is held per stream).
        reader = f"stacgis-gateway-reader-{gateways.a.process.pid}"
        samples = []
        for _ in range(5):
            samples.append([(c["name"], c["cmd"]) for c in _blocked_reads(gateways.a.process.pid, admin)])
            await asyncio.sleep(0.1)
        assert all(len(sample) <= 1 for sample in samples), samples
        assert [(reader, "xread")] in samples
        cancelled = await client.post(f"{gateways.a.url}/api/v1/chat/runs/{first.run_id}/cancel", headers=user(owner))
        assert cancelled.status_code == 202
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
    assert all(s.names == ["session", "content", "done"] for s in counts)
    assert len({json.dumps([e.id for e in s.events]) for s in counts}) == 1
    admin.close()


@pytest.mark.asyncio
async def test_a_stream_survives_its_gateways_reader_being_killed_and_resumes_on_the_other(
    gateways: Gateways, redis_url: str
) -> None:
    kim = new_user()
    admin = redis.Redis.from_url(redis_url, decode_responses=True)
    reader_name = f"stacgis-gateway-reader-{gateways.a.process.pid}"
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream(
            "POST",
            f"{gateways.a.url}/api/v1/chat/stream",
            json={"message": "[slow=2][deltas=12] through a restart"},
            headers=user(kim),
        ) as response:
            stream = Stream(response.status_code, response.headers)
            reading = asyncio.create_task(read_stream(response, stream))
            while len(stream.events) < 3:
                await asyncio.sleep(0.02)
            killed = [c["id"] for c in admin.client_list() if c["name"] == reader_name]
            assert len(killed) == 1
            admin.client_kill_filter(_id=killed[0])
            await asyncio.wait_for(reading, 60)
        assert stream.names[-1] == "done"
        assert stream.seqs() == list(range(1, len(stream.events) + 1))  # no gap, no repeat
        assert stream.content() == "Echo: through a restart"
        ids = [stream_id_key(str(e.id)) for e in stream.events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        # A browser that was cut in the middle resumes on the other gateway from its last id.
        middle = stream.events[5]
        rest = await resume(client, gateways.b.url, stream.run_id, middle.id, user(kim))
        assert [e.id for e in rest.events] == [e.id for e in stream.events[6:]]
    admin.close()
