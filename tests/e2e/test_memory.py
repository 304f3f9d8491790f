"""Long-term memory across sessions: what a user asked to remember reaches the model in their next
session, and never reaches another user's."""

from __future__ import annotations

import json

import pytest

from .client import ScriptedModel, chat_users, context_text, system_text, wait_until
from .conftest import require


def memory_rules(tag: str) -> list[dict[str, object]]:
    return [
        {
            "name": f"{tag}-saved",
            "match": {"last_user": f"{tag}-remember", "last_tool": "add_memory"},
            "content": "Noted: I will remember that.",
        },
        {
            "name": f"{tag}-save",
            "match": {"last_user": f"{tag}-remember", "step": 0},
            "tool_calls": [
                {
                    "name": "add_memory",
                    "arguments": {"content": "{{last_user:(?i)remember that (.+?)\\s*$}}", "kind": "preference"},
                }
            ],
        },
        {
            "name": f"{tag}-recall",
            "match": {"last_user": f"{tag}-ask"},
            "content": "I will answer in the units you prefer.",
        },
    ]


@pytest.mark.asyncio
async def test_a_memory_reaches_the_users_next_session_and_no_one_else(scripted: ScriptedModel, tag: str) -> None:
    await require("memory-tools")
    await scripted.add(*memory_rules(tag))
    fact = f"I prefer metric units (e2e note {tag})"

    async with chat_users(2) as (alice, bob):
        saved = await alice.chat(f"[{tag}-remember] Remember that {fact}")
        saved.done()
        assert [s["toolName"] for s in saved.tools("tool_start")] == ["add_memory"], saved.describe()
        assert saved.tools("tool_start")[0]["arguments"]["content"] == fact
        assert not saved.of("tool_error"), saved.describe()

        # A new session of the same browser: the memory is in the model's input from the first step, in the
        # run's context message after the cached prompt prefix (never in the shared system prompt).
        later = await alice.chat(f"[{tag}-ask-alice] Which units do I prefer for distances?")
        later.done()
        assert later.session_id != saved.session_id

        async def alice_request_recorded() -> bool:
            return bool(await scripted.requests(f"{tag}-ask-alice"))

        await wait_until(alice_request_recorded, "the model server's record of the second session", 10)
        first_step = (await scripted.requests(f"{tag}-ask-alice"))[0]
        context = context_text(first_step)
        assert fact in context, f"the memory is not in the run's context message:\n{context[:2000]}"
        assert fact not in system_text(first_step), "a user's memory must not enter the shared prompt prefix"

        # Another browser (another anonymous user) asking the same never sees it.
        other = await bob.chat(f"[{tag}-ask-bob] Which units do I prefer for distances?")
        other.done()
        bob_requests = await scripted.requests(f"{tag}-ask-bob")
        assert bob_requests, "the model server recorded no request of the second user"
        for request in bob_requests:
            # Bob's own message carries the tag once; any other occurrence would be Alice's memory.
            seen = json.dumps(request["body"], ensure_ascii=False).replace(f"{tag}-ask-bob", "")
            assert tag not in seen, f"another user's memory reached this user's model input: {system_text(request)}"
