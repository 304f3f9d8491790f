"""A scripted traffic run through the gateway that exercises every metric the dashboards show.

The scripted model server answers by rules keyed on markers like ``[obs-raster]`` in the user's
message, so each chat deterministically calls one tool server, fails a tool call, fails the model
call, or streams slowly enough to provoke a session_busy rejection. Map tiles are fetched the way
the browser does, and one finished run is resumed with Last-Event-ID.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from .live import GATEWAY, SERVICES, Chat, ScriptedModel, chat, read_sse

# One tool call per MCP server: server key (ORCHESTRATOR_MCP_SERVERS) -> (tool, arguments).
TOOL_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "raster": ("list_raster_collections", {}),
    "vector": ("search_vector_features", {"query": "Paris", "limit": 3}),
    "knowledge": ("search_knowledge", {"query": "cloud optimized GeoTIFF overviews"}),
    "memory": ("search_memories", {"query": "favourite region"}),
}
# A call the tool refuses: the run goes on with a tool_error event.
BAD_CALL = ("get_raster_info", {"collection_id": "no-such-collection-obs"})
ROUNDS = 2
# Longer than the test Prometheus' scrape interval (1 s), so each round lands in its own scrape.
SCRAPE_GAP_SECONDS = 2.5


def marker(name: str) -> str:
    return f"[obs-{name}]"


def _pattern(name: str) -> str:
    return re.escape(marker(name))


def tool_rules(name: str, tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": f"obs {name}: call {tool}",
            "match": {"last_user": _pattern(name), "step": 0},
            "thinking": f"I will call {tool}.",
            "tool_calls": [{"name": tool, "arguments": arguments}],
        },
        {
            "name": f"obs {name}: answer",
            "match": {"last_user": _pattern(name), "last_tool": tool},
            "content": f"Here is what {tool} returned.",
            "chunk_chars": 8,
        },
    ]


def scripted_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for server, (tool, arguments) in TOOL_CALLS.items():
        rules += tool_rules(server, tool, arguments)
    rules += tool_rules("bad-call", *BAD_CALL)
    rules.append(
        {
            "name": "obs model-error",
            "match": {"last_user": _pattern("model-error")},
            "error": {"status": 500, "message": "scripted failure for the observability tests"},
        }
    )
    rules.append(
        {
            "name": "obs slow",
            "match": {"last_user": _pattern("slow")},
            "content": "A deliberately slow answer.",
            "chunk_chars": 9,
            "delay_ms": 1200,
        }
    )
    return rules


@dataclass
class TrafficReport:
    started: float
    finished: float = 0.0
    chats: dict[str, Chat] = field(default_factory=dict)
    busy_status: int | None = None
    resumed_events: list[str] = field(default_factory=list)
    tiles: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _slow_chat_and_a_second_one(report: TrafficReport) -> None:
    """A slow run on a session, and meanwhile a second message to the same session (409 session_busy)."""
    holder: dict[str, Any] = {}
    with httpx.Client() as client:

        def slow() -> None:
            body = {"message": f"{marker('slow')} take your time"}
            with client.stream("POST", f"{GATEWAY}/api/v1/chat/stream", json=body, timeout=60) as response:
                events = []
                for event in read_sse(response):
                    events.append(event)
                    started = event.data.get("runStarted") or {}
                    if started.get("sessionId"):
                        holder["session"] = started["sessionId"]
                    if event.name in ("done", "error"):
                        break
                holder["chat"] = Chat(response.status_code, events)

        thread = threading.Thread(target=slow)
        thread.start()
        deadline = time.monotonic() + 20
        while "session" not in holder and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if "session" in holder:
            with httpx.Client(cookies=client.cookies) as second:
                busy = second.post(
                    f"{GATEWAY}/api/v1/chat/stream",
                    json={"message": "are you done?", "session_id": holder["session"]},
                    timeout=30,
                )
                report.busy_status = busy.status_code
        thread.join(60)
    if "chat" in holder:
        report.chats["slow"] = holder["chat"]
    else:
        report.problems.append("the slow chat never started")


def _collection_ids(result: Chat) -> list[str]:
    for event in result.events:
        if event.name == "tool_result":
            text = str((event.data.get("toolResult") or {}).get("result", ""))
            return re.findall(r'"id"\s*:\s*"([^"]+)"', text)
    return []


def _tile_for(lon: float, lat: float, zoom: int) -> tuple[int, int]:
    n = 2**zoom
    x = int((lon + 180) / 360 * n)
    y = int((1 - math.asinh(math.tan(math.radians(lat))) / math.pi) / 2 * n)
    return min(max(x, 0), n - 1), min(max(y, 0), n - 1)


def _fetch_tiles(report: TrafficReport, collection_ids: list[str]) -> None:
    raster = f"http://127.0.0.1:{SERVICES['raster-tools']}"
    for collection in collection_ids[:3]:
        tilejson = httpx.get(f"{raster}/tiles/{collection}/tilejson.json", timeout=30)
        if tilejson.status_code != 200:
            report.problems.append(f"tilejson of {collection}: {tilejson.status_code}")
            continue
        meta = tilejson.json()
        lon, lat = (meta.get("center") or [0.0, 0.0])[:2]
        z = min(int(meta.get("maxzoom", 0)), int(meta.get("minzoom", 0)) + 3)
        x, y = _tile_for(lon, lat, z)
        # The tile at the data's centre and its eastern neighbour (possibly outside the data: empty).
        for column in (x, (x + 1) % 2**z):
            tile = httpx.get(f"{raster}/tiles/{collection}/{z}/{column}/{y}.png", timeout=60)
            report.tiles.append(tile.status_code)


def run_traffic(model: ScriptedModel) -> TrafficReport:
    report = TrafficReport(started=time.time())
    with model.extra_rules(scripted_rules()), httpx.Client() as client:
        # Two rounds: a labelled series appears at its first increment, so a rate over it only moves
        # from the second one on (as in production, where traffic repeats).
        for _ in range(ROUNDS):
            for server in TOOL_CALLS:
                report.chats[server] = chat(client, f"{marker(server)} please use the {server} tools")
            report.chats["bad-call"] = chat(client, f"{marker('bad-call')} describe a collection")
            report.chats["model-error"] = chat(client, f"{marker('model-error')} this one fails")
            time.sleep(SCRAPE_GAP_SECONDS)
        _slow_chat_and_a_second_one(report)

        # Resume the first run after its first event, as a browser that lost the connection does.
        first = report.chats["raster"]
        if first.status == 200 and first.events and first.events[0].id:
            with client.stream(
                "GET",
                f"{GATEWAY}/api/v1/chat/runs/{first.run_id}/events",
                headers={"Last-Event-ID": first.events[0].id},
                timeout=30,
            ) as response:
                report.resumed_events = [event.name for event in read_sse(response)]
        _fetch_tiles(report, _collection_ids(first))
    # Let Prometheus scrape the final state of every counter at least twice.
    time.sleep(3)
    report.finished = time.time()
    return report


def describe(report: TrafficReport) -> str:
    lines = [
        f"{name}: {c.status} {c.names() if c.events else json.dumps(c.body)[:300]}" for name, c in report.chats.items()
    ]
    lines.append(f"second message to a busy session: {report.busy_status}")
    lines.append(f"resumed: {report.resumed_events}; tiles: {report.tiles}; problems: {report.problems}")
    return "\n".join(lines)
