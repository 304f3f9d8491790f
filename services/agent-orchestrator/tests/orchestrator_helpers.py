"""Helpers for the orchestrator tests (a distinct module name: test folders share sys.path).

Every event read through `RunStream` is checked against the contract: it must parse as
`stacgis.v1.AgentEvent` (unknown fields rejected), its SSE name must be its payload field, its id
its `seq`, and `seq` must count up from 1 without gaps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from google.protobuf import json_format

from stacgis_common.answer import answer_text
from stacgis_common.testing import token_for
from stacgis_proto.v1 import events_pb2


@dataclass
class Event:
    name: str
    id: str
    data: dict[str, Any]
    proto: events_pb2.AgentEvent

    @property
    def payload(self) -> dict[str, Any]:
        key = _camel(self.name)
        value = self.data.get(key, {})
        assert isinstance(value, dict)
        return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def parse_event(name: str, event_id: str, data: str) -> Event:
    proto = events_pb2.AgentEvent()
    json_format.Parse(data, proto)  # strict: unknown fields fail
    assert proto.WhichOneof("payload") == name, f"event name {name!r} but payload {proto.WhichOneof('payload')!r}"
    assert event_id == str(proto.seq), f"SSE id {event_id!r} but seq {proto.seq}"
    return Event(name, event_id, json.loads(data), proto)


class RunStream:
    """Reads one run's SSE response; `until` and `rest` can be mixed, each event is read once."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.events: list[Event] = []
        self._lines = response.aiter_lines()

    async def next(self) -> Event | None:
        name, event_id, data = "", "", []
        async for line in self._lines:
            if line.startswith(":"):
                continue
            if not line:
                if data:
                    event = parse_event(name, event_id, "\n".join(data))
                    expected = len(self.events) + 1
                    assert event.proto.seq == expected, f"seq {event.proto.seq}, expected {expected}"
                    self.events.append(event)
                    return event
                continue
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "id":
                event_id = value
            elif key == "data":
                data.append(value)
        return None

    async def until(self, name: str) -> Event:
        while (event := await self.next()) is not None:
            if event.name == name:
                return event
        raise AssertionError(f"stream ended without a {name} event: {[e.name for e in self.events]}")

    async def rest(self) -> list[Event]:
        while await self.next() is not None:
            pass
        return self.events


def auth(user: str = "alice", session: str | None = "s-1") -> dict[str, str]:
    return {"Authorization": f"Bearer {token_for(user, session)}"}


async def run_events(base_url: str, body: dict[str, Any], user: str = "alice", timeout: float = 60) -> list[Event]:
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=timeout) as client,
        client.stream("POST", "/v1/runs", json=body, headers=auth(user)) as response,
    ):
        assert response.status_code == 200, (await response.aread()).decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        return await RunStream(response).rest()


def names(events: list[Event]) -> list[str]:
    return [event.name for event in events]


def content(events: list[Event]) -> str:
    return answer_text(e.payload for e in events if e.name == "content")


def terminal(events: list[Event]) -> Event:
    assert events, "no events"
    last = events[-1]
    assert last.name in ("done", "error"), names(events)
    assert sum(1 for e in events if e.name in ("done", "error")) == 1, names(events)
    return last


async def set_rules(model_url: str, *rules: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=model_url, timeout=10) as client:
        response = await client.put("/_scripted/rules", json={"rules": list(rules)})
        assert response.status_code == 200, response.text


async def call_then_answer(model_url: str, tag: str, calls: list[dict[str, Any]], answer: str) -> None:
    """Script a run whose model makes `calls` on its first step, then answers `answer` (placeholders
    such as {{tool:NAME:KEY}} quote the results); `tag` is a part of the user's message."""
    await set_rules(
        model_url,
        {"name": f"{tag}-call", "match": {"last_user": tag, "step": 0}, "tool_calls": calls},
        {"name": f"{tag}-answer", "match": {"last_user": tag, "step": 1}, "content": answer},
    )


async def model_requests(model_url: str, contains: str | None = None) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=model_url, timeout=10) as client:
        params = {"contains": contains} if contains else {}
        response = await client.get("/_scripted/requests", params=params)
        response.raise_for_status()
        data = response.json()
        return list(data["requests"] if isinstance(data, dict) else data)
