"""A browser that loses its connection mid-run resumes through the ingress with Last-Event-ID and
gets the rest of the run exactly once, in order."""

from __future__ import annotations

import asyncio

import pytest

from .client import ChatUser, ScriptedModel
from .conftest import require
from .sse import TERMINAL, RunStream

CHUNKS = 12


@pytest.mark.asyncio
async def test_a_dropped_stream_resumes_with_the_remaining_events_exactly_once(
    user: ChatUser, scripted: ScriptedModel, tag: str
) -> None:
    await require()
    await scripted.add(
        {
            "name": f"{tag}-long",
            "match": {"last_user": f"{tag}-long"},
            "thinking": "Taking it step by step.",
            "content": "".join(f"part{index:02d} " for index in range(CHUNKS)),
            "chunk_chars": 7,
            "delay_ms": 120,
        }
    )

    before = RunStream()
    async with asyncio.timeout(60):
        async with user.open_stream(f"[{tag}-long] a long answer please") as events:
            async for event in events:
                before.add(event)
                if len(before.of("content")) == 3:
                    break  # the browser drops the connection here
    assert before.events[-1].event == "content" and before.events[-1].id

    after = RunStream()
    async with asyncio.timeout(60):
        async with user.open_resume(before.run_id, before.events[-1].id) as events:
            async for event in events:
                after.add(event)
                if event.event in TERMINAL:
                    break
    assert after.events, "the resumed stream sent nothing"

    # The whole run, read again from its start once it is over.
    full = RunStream()
    async with asyncio.timeout(30):
        async with user.open_resume(before.run_id, None) as events:
            async for event in events:
                full.add(event)
                if event.event in TERMINAL:
                    break

    joined = before.events + after.events
    assert [e.id for e in joined] == [e.id for e in full.events], (
        f"dropped + resumed differs from the whole run:\n{before.describe()}\n--- resumed ---\n{after.describe()}"
    )
    sequence = [int(e.json()["seq"]) for e in joined]
    assert sequence == list(range(sequence[0], sequence[0] + len(sequence))), sequence
    assert {e.json()["runId"] for e in joined} == {before.run_id}
    assert after.done()["content"] == "".join(f"part{index:02d} " for index in range(CHUNKS))
    assert before.content + after.content == after.done()["content"]
    # The run went on while no browser was listening, and the rest of the answer came on resuming.
    assert after.of("content"), after.describe()
