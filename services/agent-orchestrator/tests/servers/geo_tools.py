"""A small but real MCP tool server for the orchestrator's tests, built with the shared bootstrap.

`GEOTOOLS_VARIANT` picks the tool set: `raster` (collections, statistics, slow and large results,
a write tool, an approval-gated tool), `vector` (datasets; its `whoami` collides with raster's) or
`memory` (per-user memories). `/_control/*` routes let tests inject HTTP failures and read which
tool calls arrived, with their trace context.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field
from pydantic_settings import SettingsConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from stacgis_common.arguments import still_loading
from stacgis_common.auth import current_identity
from stacgis_common.http_app import serve
from stacgis_common.mcp_app import build_tool_server_app, create_mcp_server
from stacgis_common.settings import ServiceSettings, load_settings


class GeoToolsSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="GEOTOOLS_", frozen=True)
    variant: str = "raster"
    notes_file: Path | None = None
    memories: str = "{}"
    # vector: what is still being loaded (as vector-tools says during a first load); a search that finds
    # nothing then fails saying so.
    loading: str = ""


settings = load_settings(GeoToolsSettings)
server = create_mcp_server(f"{settings.variant}-tools", settings)
READ_ONLY = ToolAnnotations(readOnlyHint=True)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False)

COLLECTIONS = {
    "landsat-ndvi": {
        "title": "Landsat 7 NDVI, Olinda (Brazil)",
        "units": "NDVI",
        "stats": [-0.21, 0.87, 0.41],
        "keywords": ["ndvi", "vegetation index"],
        "time": "not time-resolved",
    },
    "lux-dem": {
        "title": "Luxembourg elevation model",
        "units": "m",
        "stats": [195.0, 547.0, 370.5],
        "keywords": ["dem", "elevation"],
        "time": "not time-resolved",
    },
    "pr-1999": {
        "title": "Monthly precipitation 1999",
        "units": "mm",
        "stats": [0.0, 412.0, 61.2],
        "keywords": ["precipitation", "rainfall"],
        "time": "1999-01-01T00:00:00Z/1999-12-31T23:59:59Z",
    },
}
CALLS: list[dict[str, Any]] = []
FAILURES: dict[str, Any] = {"count": 0, "status": 503}


def note(line: str) -> None:
    if settings.notes_file is not None:
        with settings.notes_file.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def known_collection(collection_id: str) -> dict[str, Any]:
    if collection_id not in COLLECTIONS:
        raise ToolError(f"collection_id: unknown collection {collection_id!r}; known: {', '.join(sorted(COLLECTIONS))}")
    return COLLECTIONS[collection_id]


if settings.variant == "raster":

    @server.tool(annotations=READ_ONLY)
    def list_raster_collections() -> dict[str, Any]:
        """List the raster collections (satellite imagery, elevation, climate grids) with titles and units."""
        return {
            "collections": [
                {"id": key, "title": value["title"], "units": value["units"]} for key, value in COLLECTIONS.items()
            ]
        }

    @server.tool(annotations=READ_ONLY)
    def get_raster_statistics(
        collection_id: str,
        bbox: Annotated[
            list[float], Field(min_length=4, max_length=4, description="west, south, east, north in degrees")
        ],
        band: int | None = None,
    ) -> dict[str, Any]:
        """Minimum, maximum and mean of a raster collection inside a bounding box."""
        collection = known_collection(collection_id)
        west, south, east, north = bbox
        if west >= east or south >= north:
            raise ToolError("bbox: west must be < east and south < north")
        low, high, mean = collection["stats"]
        return {
            "collection_id": collection_id,
            "band": band or 1,
            "min": low,
            "max": high,
            "mean": mean,
            "units": collection["units"],
        }

    @server.tool(annotations=READ_ONLY)
    def query_raster_point(
        collection_id: str,
        lon: Annotated[float, Field(ge=-180, le=180)],
        lat: Annotated[float, Field(ge=-90, le=90)],
    ) -> dict[str, Any]:
        """The value of a raster collection at one point."""
        collection = known_collection(collection_id)
        return {"collection_id": collection_id, "lon": lon, "lat": lat, "value": collection["stats"][2]}

    @server.tool(annotations=READ_ONLY)
    async def slow_operation(seconds: Annotated[float, Field(ge=0, le=120)]) -> str:
        """Waits, then reports how long it waited (a long computation)."""
        note(f"slow_operation started {seconds}")
        await asyncio.sleep(seconds)
        note(f"slow_operation finished {seconds}")
        return f"waited {seconds} s"

    @server.tool(annotations=READ_ONLY)
    def big_result(chars: Annotated[int, Field(ge=1, le=1_000_000)]) -> str:
        """Returns a long text of the given length."""
        return ("0123456789" * (chars // 10 + 1))[:chars]

    @server.tool(annotations=READ_ONLY)
    def whoami(ctx: Context) -> dict[str, Any]:
        """The caller as the internal token says, and the trace context the request carried."""
        identity = current_identity()
        headers = ctx.headers or {}
        return {
            "user_id": identity.user_id,
            "session_id": identity.session_id,
            "traceparent": headers.get("traceparent"),
        }

    @server.tool(annotations=WRITES)
    def save_note(text: str) -> str:
        """Saves a note (a write: never retried)."""
        note(f"save_note {current_identity().user_id} {text}")
        return f"saved {text!r}"

    @server.tool(annotations=WRITES)
    def delete_collection(collection_id: str) -> str:
        """Deletes a collection for good."""
        known_collection(collection_id)
        note(f"delete_collection {collection_id}")
        return f"deleted {collection_id}"

    # A server can demand approval itself through its schema.
    server._tool_manager.get_tool("delete_collection").parameters["x_requires_approval"] = True  # type: ignore[union-attr]

    @server.resource("collections://list", mime_type="application/json")
    def collections_resource() -> str:
        """Every raster collection."""
        return json.dumps(
            [
                {"id": key, "title": value["title"], "time": value["time"], "keywords": value["keywords"]}
                for key, value in COLLECTIONS.items()
            ]
        )

elif settings.variant == "vector":

    @server.tool(annotations=READ_ONLY)
    def list_vector_datasets() -> dict[str, Any]:
        """List vector datasets: countries, cities."""
        return {"datasets": ["countries", "cities"]}

    @server.tool(annotations=READ_ONLY)
    def search_vector_features(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 5) -> dict[str, Any]:
        """Find places by name: cities with coordinates, countries with bounding boxes."""
        places = {
            "berlin": {"name": "Berlin", "lon": 13.405, "lat": 52.52},
            "paris": {"name": "Paris", "lon": 2.35, "lat": 48.857},
        }
        hits = [value for key, value in places.items() if key in query.lower()]
        if not hits and settings.loading:
            raise ToolError(f"query: no place matches {query!r}. Note: {still_loading(settings.loading)}")
        return {"features": hits[:limit]}

    @server.tool(annotations=READ_ONLY)
    def whoami() -> dict[str, Any]:
        """The vector server's view of the caller."""
        return {"server": "vector", "user_id": current_identity().user_id}

    @server.resource("vector://datasets/all", mime_type="application/json")
    def datasets_resource() -> str:
        """Every vector dataset."""
        return json.dumps(
            [{"id": "countries", "title": "Natural Earth countries"}, {"id": "cities", "title": "GeoNames cities"}]
        )

elif settings.variant == "memory":
    MEMORIES: dict[str, list[str]] = json.loads(settings.memories)

    @server.tool(annotations=READ_ONLY)
    def search_memories(query: str, limit: Annotated[int, Field(ge=1, le=20)] = 5) -> dict[str, Any]:
        """Memories of the calling user relevant to a query."""
        user = current_identity().user_id
        note(f"search_memories {user} {query}")
        return {"memories": [{"id": str(i), "content": text} for i, text in enumerate(MEMORIES.get(user, [])[:limit])]}

    @server.tool(annotations=WRITES)
    def add_memory(content: str) -> str:
        """Remember a fact about the user."""
        MEMORIES.setdefault(current_identity().user_id, []).append(content)
        return "remembered"


class FaultInjection:
    """Fails the next N tool calls with an HTTP status and records every call that arrives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = {}
        headers = {key.decode(): value.decode() for key, value in scope["headers"]}
        if isinstance(payload, dict) and payload.get("method") == "tools/call":
            CALLS.append(
                {
                    "tool": payload.get("params", {}).get("name"),
                    "traceparent": headers.get("traceparent"),
                    "authorization": bool(headers.get("authorization")),
                }
            )
            if FAILURES["count"] > 0:
                FAILURES["count"] -= 1
                await Response("injected failure", status_code=FAILURES["status"])(scope, receive, send)
                return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def control_fail(request: Request) -> JSONResponse:
    body = await request.json()
    FAILURES["count"] = int(body.get("count", 1))
    FAILURES["status"] = int(body.get("status", 503))
    return JSONResponse(FAILURES)


async def control_calls(_: Request) -> JSONResponse:
    return JSONResponse(CALLS)


app = build_tool_server_app(
    server,
    settings,
    extra_routes=[Route("/_control/fail", control_fail, methods=["POST"]), Route("/_control/calls", control_calls)],
)
app.add_middleware(FaultInjection)

if __name__ == "__main__":
    serve(app, settings)
