"""The ingress passes Server-Sent Events on as they are written: answer deltas and heartbeats arrive
one by one through nginx, as they do straight from the gateway, not in a burst at the end."""

from __future__ import annotations

import asyncio
import itertools
import statistics

import pytest

from .client import GATEWAY_DIRECT, INGRESS, ScriptedModel, chat_users
from .conftest import require
from .sse import RunStream

CHUNKS = 16
DELAY_MS = 150
# The gateway's heartbeat (GATEWAY_HEARTBEAT_SECONDS, 15 s by default) during a quiet model.
QUIET_SECONDS = 19.0


def gaps(run: RunStream) -> list[float]:
    times = [event.at for event in run.of("content")]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def paced_rule(tag: str) -> dict[str, object]:
    return {
        "name": f"{tag}-paced",
        "match": {"last_user": f"{tag}-paced"},
        "content": "".join(f"w{index:02d} " for index in range(CHUNKS)),
        "chunk_chars": 4,
        "delay_ms": DELAY_MS,
    }


@pytest.mark.asyncio
async def test_deltas_arrive_one_by_one_through_the_ingress_as_they_do_direct(
    scripted: ScriptedModel, tag: str
) -> None:
    await require()
    await scripted.add(paced_rule(tag))

    async with chat_users(1, INGRESS) as (proxied,), chat_users(1, GATEWAY_DIRECT) as (direct,):
        via_proxy, via_gateway = await asyncio.gather(
            proxied.chat(f"[{tag}-paced] stream please"), direct.chat(f"[{tag}-paced] stream please")
        )

    proxy_gaps, direct_gaps = gaps(via_proxy), gaps(via_gateway)
    print(
        f"\ninter-arrival of {CHUNKS} deltas written {DELAY_MS} ms apart:"
        f"\n  through nginx : median {statistics.median(proxy_gaps) * 1000:6.1f} ms,"
        f" spread {sum(proxy_gaps):5.2f} s"
        f"\n  direct        : median {statistics.median(direct_gaps) * 1000:6.1f} ms,"
        f" spread {sum(direct_gaps):5.2f} s"
    )
    for run in (via_proxy, via_gateway):
        assert run.done()["content"] == run.content
        assert len(run.of("content")) == CHUNKS, run.describe()
    # Held back by a buffer, the deltas would come together: gaps near zero and one large one.
    written_apart = DELAY_MS / 1000
    assert sum(gap > written_apart / 3 for gap in proxy_gaps) >= 0.8 * len(proxy_gaps), proxy_gaps
    assert sum(proxy_gaps) > 0.6 * written_apart * (CHUNKS - 1), proxy_gaps
    assert sum(proxy_gaps) > 0.6 * sum(direct_gaps)


def ping_times(run: RunStream) -> list[float]:
    started = run.events[0].at
    return [comment.at - started for comment in run.comments if comment.comment == "ping"]


@pytest.mark.asyncio
async def test_heartbeats_reach_the_browser_through_the_ingress_while_the_model_is_quiet(
    scripted: ScriptedModel, tag: str
) -> None:
    await require()
    await scripted.add(
        {
            "name": f"{tag}-quiet",
            "match": {"last_user": f"{tag}-quiet"},
            "content": "finally",
            "chunk_chars": 100,
            "delay_ms": QUIET_SECONDS * 1000,
        }
    )

    async with chat_users(1, INGRESS) as (proxied,), chat_users(1, GATEWAY_DIRECT) as (direct,):
        via_proxy, via_gateway = await asyncio.gather(
            proxied.chat(f"[{tag}-quiet] take your time", timeout=QUIET_SECONDS + 30),
            direct.chat(f"[{tag}-quiet] take your time", timeout=QUIET_SECONDS + 30),
        )

    proxy_pings, direct_pings = ping_times(via_proxy), ping_times(via_gateway)
    answer_at = via_proxy.of("content")[0].at - via_proxy.events[0].at
    print(
        f"\n`: ping` heartbeats during a {QUIET_SECONDS:.0f} s silence (answer at {answer_at:.1f} s):"
        f"\n  through nginx : {[round(p, 1) for p in proxy_pings]} s"
        f"\n  direct        : {[round(p, 1) for p in direct_pings]} s"
    )
    for run in (via_proxy, via_gateway):
        assert run.done()["content"] == "finally"
    assert direct_pings, "the gateway itself sent no heartbeat during a quiet run"
    assert proxy_pings, "no heartbeat reached the browser through the ingress during a quiet run"
    # Passed on when written, not held until the answer came.
    assert proxy_pings[0] < answer_at - 1.0
    assert abs(proxy_pings[0] - direct_pings[0]) < 1.0
