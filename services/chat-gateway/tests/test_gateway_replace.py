"""Regenerate and edit-and-resend: a message naming a question to replace (`replace_turn`) cuts the stored
conversation at that question once its run is admitted, so history, the model's next prompt and a reload hold
only the new turn; a wrong turn or another user's session loses nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from gateway_helpers import Gateways, chat, new_user, user
from test_gateway_map import MAP_STATE

from stacgis_common.testing import error_of


async def _history(client: httpx.AsyncClient, base: str, session_id: str, who: str) -> list[dict[str, Any]]:
    response = await client.get(f"{base}/api/v1/chat/session/{session_id}/history", headers=user(who))
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


async def _title(client: httpx.AsyncClient, base: str, session_id: str, who: str) -> str:
    listed = (await client.get(f"{base}/api/v1/chat/sessions", headers=user(who))).json()
    return str(next(s["title"] for s in listed if s["id"] == session_id))


def _questions(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def _cut_before(messages: list[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    """The messages before the `turn`-th question: what replacing that question keeps."""
    at = [index for index, m in enumerate(messages) if m["role"] == "user"][turn]
    return messages[:at]


async def _sent_history(client: httpx.AsyncClient, gateways: Gateways, run_id: str) -> list[tuple[str, str]]:
    runs = (await client.get(f"{gateways.orchestrator.url}/_scripted/runs")).json()
    sent = next(run for run in runs if run["run_id"] == run_id)["history"]
    return [(m["role"], m.get("content", "")) for m in sent]


@pytest.mark.asyncio
async def test_replacing_a_question_keeps_what_came_before_and_drops_the_rest(gateways: Gateways) -> None:
    mia = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        first = await chat(client, gateways.a.url, "[tool] first question", user(mia))
        session = first.session_id
        for text in ("second question", "third question"):
            assert (await chat(client, gateways.a.url, text, user(mia), session_id=session)).names[-1] == "done"
        map_url = f"{gateways.a.url}/api/v1/chat/session/{session}/map-state"
        assert (await client.put(map_url, json=MAP_STATE, headers=user(mia))).status_code == 200
        other = await chat(client, gateways.a.url, "another conversation", user(mia))
        other_before = await _history(client, gateways.a.url, other.session_id, mia)
        before = await _history(client, gateways.a.url, session, mia)
        assert _questions(before) == ["[tool] first question", "second question", "third question"]

        # Regenerate the second question (through the other replica: the cache must not keep the old turns).
        again = await chat(client, gateways.b.url, "second question", user(mia), session_id=session, replace_turn=1)
        assert again.status == 200 and again.names[-1] == "done", again.body
        after = await _history(client, gateways.a.url, session, mia)
        kept = _cut_before(before, 1)
        assert after[: len(kept)] == kept
        assert [(m["role"], m["content"]) for m in after[len(kept) :]] == [
            ("user", "second question"),
            ("assistant", "Echo: second question"),
        ]
        # The model was given only what came before the replaced question.
        assert await _sent_history(client, gateways, again.run_id) == [(m["role"], m["content"]) for m in kept]

        # Edit the first question: the conversation starts over with it, and is named after it.
        edited = await chat(client, gateways.a.url, "first, edited", user(mia), session_id=session, replace_turn=0)
        assert edited.names[-1] == "done"
        assert await _title(client, gateways.a.url, session, mia) == "first, edited"
        assert await _sent_history(client, gateways, edited.run_id) == []
        assert _questions(await _history(client, gateways.b.url, session, mia)) == ["first, edited"]
        # The next question follows the edited turn only.
        follow = await chat(client, gateways.b.url, "and then?", user(mia), session_id=session)
        assert await _sent_history(client, gateways, follow.run_id) == [
            ("user", "first, edited"),
            ("assistant", "Echo: first, edited"),
        ]

        # A name the user gave stays when the first question is replaced again.
        renamed = await client.patch(
            f"{gateways.a.url}/api/v1/chat/session/{session}", json={"title": "My study"}, headers=user(mia)
        )
        assert renamed.status_code == 200, renamed.text
        again_first = await chat(
            client, gateways.b.url, "first, once more", user(mia), session_id=session, replace_turn=0
        )
        assert again_first.names[-1] == "done"
        assert await _title(client, gateways.a.url, session, mia) == "My study"

        # Nothing else was lost: the map, the other conversation, the list.
        assert (await client.get(map_url, headers=user(mia))).json()["map_state"]["view"] == MAP_STATE["view"]
        assert await _history(client, gateways.a.url, other.session_id, mia) == other_before
        listed = (await client.get(f"{gateways.a.url}/api/v1/chat/sessions", headers=user(mia))).json()
        assert {s["id"] for s in listed} == {session, other.session_id}


@pytest.mark.asyncio
async def test_a_question_to_replace_that_is_not_there_is_refused_and_loses_nothing(gateways: Gateways) -> None:
    noah, eve = new_user(), new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        first = await chat(client, gateways.a.url, "only question", user(noah))
        session = first.session_id
        before = await _history(client, gateways.a.url, session, noah)
        questions = len(_questions(before))
        refusals: list[tuple[dict[str, Any], int]] = [
            ({"session_id": session, "replace_turn": questions}, 422),  # past the last question
            ({"session_id": session, "replace_turn": -1}, 422),
            ({"session_id": session, "replace_turn": "0"}, 422),  # a number, not text
            ({"session_id": session, "replace_turn": True}, 422),
            ({"session_id": None, "replace_turn": 0}, 422),  # nothing to replace in a new conversation
        ]
        for fields, status in refusals:
            response = await client.post(
                f"{gateways.a.url}/api/v1/chat/stream", json={"message": "again", **fields}, headers=user(noah)
            )
            assert error_of(response, status, "replace_turn")["code"] == "invalid_argument", fields
        # Another user cannot cut this conversation: it is not theirs.
        intruder = await chat(client, gateways.a.url, "mine now", user(eve), session_id=session, replace_turn=0)
        assert intruder.error(404)["message"] == "session not found"
        assert await _history(client, gateways.b.url, session, noah) == before
        # The session's run lock was released after each refusal: a valid replacement runs.
        ok = await chat(client, gateways.a.url, "only question, again", user(noah), session_id=session, replace_turn=0)
        assert ok.names[-1] == "done"
        assert _questions(await _history(client, gateways.a.url, session, noah)) == ["only question, again"]
