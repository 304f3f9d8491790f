"""Bad input gets a 422 naming the field (never a 500); a missing or dying orchestrator ends the run cleanly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_helpers import chat, gateway_env, new_user, user

from stacgis_common.testing import RunningService, error_of, free_port, run_service

HERE = Path(__file__).parent
POINT = {"type": "Point", "coordinates": [11.5, 48.1]}
FEATURE = {"type": "Feature", "geometry": POINT, "properties": {}}
OPEN_RING = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}
BIG_LINE = {"type": "LineString", "coordinates": [[10 + i / 1000, 48.0] for i in range(400)]}


@dataclass
class Limited:
    gateway: RunningService
    orchestrator_port: int


@pytest.fixture(scope="module")
def limited(pg_dsn: str, redis_url: str) -> Iterator[Limited]:
    """A gateway with small input limits whose orchestrator is not running (yet)."""
    gateway_port, orchestrator_port = free_port(), free_port()
    env = gateway_env(
        gateway_port,
        pg_dsn,
        redis_url,
        f"http://127.0.0.1:{orchestrator_port}",
        GATEWAY_REDIS_KEY_PREFIX="limits:",
        GATEWAY_MAX_MESSAGE_CHARS="200",
        GATEWAY_MAX_BODY_BYTES="8192",
        GATEWAY_MAX_GEOJSON_BYTES="2048",
        GATEWAY_MAX_TITLE_CHARS="40",
    )
    with run_service("stacgis_gateway", env, gateway_port) as gateway:
        yield Limited(gateway, orchestrator_port)


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def _raw(body: Any) -> dict[str, Any]:
    """Request arguments sending `body` as json.dumps writes it (httpx refuses NaN and lone surrogates)."""
    return {"content": json.dumps(body).encode(), "headers": {"Content-Type": "application/json"}}


def spatial(**context: Any) -> dict[str, Any]:
    return {"message": "hi", "session_id": None, "spatial_context": context}


BAD_CHAT_BODIES: dict[str, tuple[Any, str]] = {
    "message too long": ({"message": "x" * 201}, "message"),
    "message blank": ({"message": "   \n "}, "message"),
    "message missing": ({"session_id": None}, "message"),
    "message not text": ({"message": 42}, "message"),
    "message with NUL": ({"message": "a\u0000b"}, "message"),
    "session id not a uuid": ({"message": "hi", "session_id": "../../etc"}, "session_id"),
    "latitude out of range": (
        spatial(map_center={"lat": 91, "lon": 0}),
        "spatial_context.map_center.lat",
    ),
    "longitude out of range": (
        spatial(map_center={"lat": 0, "lon": -180.5}),
        "spatial_context.map_center.lon",
    ),
    "zoom out of range": (spatial(zoom=31), "spatial_context.zoom"),
    "feature is a geometry": (spatial(selected_feature=POINT), "spatial_context.selected_feature"),
    "feature outside the globe": (
        spatial(selected_feature={**FEATURE, "geometry": {"type": "Point", "coordinates": [12, 95]}}),
        "spatial_context.selected_feature",
    ),
    "feature not an object": (spatial(selected_feature="munich"), "spatial_context.selected_feature"),
    "polygon ring not closed": (spatial(drawn_geometry=OPEN_RING), "spatial_context.drawn_geometry"),
    "unknown geometry type": (
        spatial(drawn_geometry={"type": "Circle", "coordinates": [0, 0]}),
        "spatial_context.drawn_geometry",
    ),
    "geometry too large": (spatial(drawn_geometry=BIG_LINE), "spatial_context.drawn_geometry"),
    "message with an unpaired surrogate": ({"message": "hi \ud800 there"}, "message"),
    "NaN inside the selected feature": (
        spatial(selected_feature={**FEATURE, "properties": {"height": float("nan")}}),
        "spatial_context.selected_feature",
    ),
    "Infinity inside the drawn geometry": (
        spatial(drawn_geometry={"type": "Point", "coordinates": [float("inf"), 0]}),
        "spatial_context.drawn_geometry",
    ),
    "deeply nested feature properties": (
        spatial(selected_feature={**FEATURE, "properties": _nested(40)}),
        "spatial_context.selected_feature",
    ),
    "unknown top-level field": ({"message": "hi", "location": {"lat": 1, "lon": 2}}, "location"),
    "unknown spatial context field": (spatial(center={"lat": 1, "lon": 2}), "spatial_context.center"),
    "body too large": ({"message": "hi", "padding": "x" * 9000}, "body"),
    "body not an object": ([1, 2, 3], "body"),
}


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(BAD_CHAT_BODIES))
async def test_bad_chat_input_is_422_naming_the_field(limited: Limited, case: str) -> None:
    body, field = BAD_CHAT_BODIES[case]
    async with httpx.AsyncClient(timeout=10) as client:
        for path in ("/api/v1/chat/stream", "/api/v1/chat/"):
            # json.dumps, not httpx's encoder: it must be able to write NaN and lone surrogates.
            response = await client.post(
                f"{limited.gateway.url}{path}",
                content=json.dumps(body).encode(),
                headers={**user("val"), "Content-Type": "application/json"},
            )
            assert error_of(response, 422, field)["code"] == "invalid_argument", case


@pytest.mark.asyncio
async def test_other_bad_inputs_are_422_naming_the_field(limited: Limited) -> None:
    base = f"{limited.gateway.url}/api/v1"
    session = "00000000-0000-4000-8000-000000000000"
    async with httpx.AsyncClient(timeout=10, headers=user("val")) as client:
        cases: list[tuple[httpx.Response, str]] = [
            (
                await client.post(
                    f"{base}/chat/stream", content=b"{not json", headers={"Content-Type": "application/json"}
                ),
                "body",
            ),
            (await client.patch(f"{base}/chat/session/{session}", json={"title": "   "}), "title"),
            (await client.patch(f"{base}/chat/session/{session}", json={"title": "t" * 41}), "title"),
            (await client.patch(f"{base}/chat/session/{session}", json={}), "title"),
            (await client.get(f"{base}/chat/session/not-a-uuid/history"), "session_id"),
            (await client.delete(f"{base}/chat/session/42"), "session_id"),
            (await client.post(f"{base}/chat/approvals/a1", json={"approved": "yes"}), "approved"),
            (
                await client.post(f"{base}/chat/approvals/a1", json={"approved": True, "reason": "r" * 3000}),
                "reason",
            ),
            (
                await client.post(f"{base}/chat/approvals/a1", **_raw({"approved": True, "reason": "no \udc00"})),
                "reason",
            ),
            (await client.post(f"{base}/chat/approvals/a1", json={"approved": True, "by": "me"}), "by"),
            (await client.patch(f"{base}/chat/session/{session}", **_raw({"title": "a\u0000b"})), "title"),
            (
                await client.get(f"{base}/chat/runs/r1/events", headers={"Last-Event-ID": "garbage"}),
                "Last-Event-ID",
            ),
            (await client.get(f"{base}/chat/runs/bad%20id/events"), "run_id"),
            (await client.get(f"{base}/chat/sessions?limit=0"), "limit"),
            (await client.get(f"{base}/usage?since=yesterday"), "since"),
        ]
    for response, field in cases:
        assert error_of(response, 422, field)["code"] == "invalid_argument", field


@pytest.mark.asyncio
async def test_junk_never_gets_a_500(limited: Limited) -> None:
    # Each with the field its 422 must name.
    junk: list[tuple[Any, str]] = [
        (None, "body"),
        ("", "body"),
        ("null", "body"),
        (0, "body"),
        ([], "body"),
        ({"message": None}, "message"),
        ({"message": ["a"]}, "message"),
        ({"message": "hi", "spatial_context": 5}, "spatial_context"),
        ({"message": "hi", "spatial_context": {"map_center": "here"}}, "spatial_context.map_center"),
        (
            {"message": "hi", "spatial_context": {"map_center": {"lat": "NaN", "lon": 0}}},
            "spatial_context.map_center.lat",
        ),
        (
            {"message": "hi", "spatial_context": {"drawn_geometry": {"type": "Polygon", "coordinates": "x"}}},
            "spatial_context.drawn_geometry",
        ),
        (
            {"message": "hi", "spatial_context": {"selected_feature": {"type": "Feature", "geometry": None}}},
            "spatial_context.selected_feature",
        ),
        ({"message": "\u0000\ud7ff" * 10, "session_id": 7}, "message"),
    ]
    async with httpx.AsyncClient(timeout=10, headers=user("val")) as client:
        for body, field in junk:
            response = await client.post(
                f"{limited.gateway.url}/api/v1/chat/stream",
                content=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            error_of(response, 422, field)


@pytest.mark.asyncio
async def test_orchestrator_down_then_dying_mid_run(limited: Limited) -> None:
    base = limited.gateway.url
    quinn = new_user()
    async with httpx.AsyncClient(timeout=30) as client:
        # Nothing listens on the orchestrator's port.
        down = await chat(client, base, "anyone there?", user(quinn))
        assert down.status == 200
        assert down.names == ["session", "error"]  # the browser still learns its session id
        assert down.events[1].data["error"]["code"] == "orchestrator_unavailable"
        assert [e.data["seq"] for e in down.events] == ["1", "2"]
        assert (await client.get(f"{base}/api/v1/chat/capacity")).json()["active"] == 0
        history = (
            await client.get(f"{base}/api/v1/chat/session/{down.session_id}/history", headers=user(quinn))
        ).json()
        assert [(m["role"], m["content"]) for m in history["messages"]] == [("user", "anyone there?")]
        ready = await client.get(f"{base}/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["orchestrator"].startswith("error")

        # Now an orchestrator that exits in the middle of the answer.
        env = {"ORCH_PORT": str(limited.orchestrator_port), "PYTHONPATH": str(HERE)}
        with run_service("gateway_test_orchestrator", env, limited.orchestrator_port) as mortal:
            dying = await chat(client, base, "[die][deltas=6] half an answer", user(quinn), session_id=down.session_id)
            assert mortal.process.wait(10) == 3
        assert dying.status == 200 and dying.names[0] == "session" and dying.names[-1] == "error"
        assert dying.events[-1].data["error"]["code"] in {"orchestrator_unavailable", "orchestrator_disconnected"}
        partial = dying.content()
        assert partial and "Echo: half an answer".startswith(partial) and partial != "Echo: half an answer"
        assert (await client.get(f"{base}/api/v1/chat/capacity")).json()["active"] == 0
        history = (
            await client.get(f"{base}/api/v1/chat/session/{down.session_id}/history", headers=user(quinn))
        ).json()
        assert [(m["role"], m["content"]) for m in history["messages"]] == [
            ("user", "anyone there?"),
            ("user", "[die][deltas=6] half an answer"),
            ("assistant", partial),
        ]
        usage = (await client.get(f"{base}/api/v1/usage", headers=user(quinn))).json()
        assert usage["runs"] == 2 and usage["failed_runs"] == 2
