"""raster-tools against a STAC API (searched with pystac-client) instead of a static catalog.

The API is a small real HTTP server speaking STAC API (landing page, /collections,
/search with collections, bbox and datetime filters) over the built demo catalog.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pystac
import pytest
from raster_test_helpers import call, call_error, connect

from stacgis_common.testing import free_port, run_service

pytestmark = pytest.mark.asyncio(loop_scope="session")

CONFORMANCE = [
    "https://api.stacspec.org/v1.0.0/core",
    "https://api.stacspec.org/v1.0.0/collections",
    "https://api.stacspec.org/v1.0.0/item-search",
]


def _overlaps(item: dict[str, Any], bbox: list[float] | None, interval: str | None) -> bool:
    if bbox:
        w, s, e, n = item["bbox"]
        if bbox[2] < w or bbox[0] > e or bbox[3] < s or bbox[1] > n:
            return False
    if interval:
        start, _, end = interval.partition("/")
        props = item["properties"]
        item_start = props.get("start_datetime") or props["datetime"]
        item_end = props.get("end_datetime") or props["datetime"]
        if end not in ("", "..") and item_start > end:
            return False
        if start not in ("", "..") and item_end < start:
            return False
    return True


class StacApi:
    def __init__(self, catalog_path: Path) -> None:
        catalog = pystac.Catalog.from_file(str(catalog_path))
        catalog.make_all_asset_hrefs_absolute()
        self.collections: dict[str, dict[str, Any]] = {}
        self.items: dict[str, list[dict[str, Any]]] = {}
        for collection in catalog.get_all_collections():
            self.collections[collection.id] = {**collection.to_dict(include_self_link=False), "links": []}
            self.items[collection.id] = [
                {**i.to_dict(include_self_link=False), "links": []} for i in collection.get_items()
            ]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/":
                    self._send(api.landing())
                elif parts.path == "/conformance":
                    self._send({"conformsTo": CONFORMANCE})
                elif parts.path == "/collections":
                    self._send({"collections": list(api.collections.values()), "links": []})
                elif parts.path.startswith("/collections/"):
                    found = api.collections.get(parts.path.split("/")[2])
                    self._send(found or {"code": "NotFound"}, 200 if found else 404)
                elif parts.path == "/search":
                    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                    body: dict[str, Any] = {
                        "collections": query.get("collections", "").split(",") if query.get("collections") else [],
                        "bbox": [float(v) for v in query["bbox"].split(",")] if query.get("bbox") else None,
                        "datetime": query.get("datetime"),
                        "limit": int(query.get("limit", 100)),
                    }
                    self._send(api.search(body))
                else:
                    self._send({"code": "NotFound"}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                self._send(api.search(body))

            def _send(self, body: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)

    def landing(self) -> dict[str, Any]:
        return {
            "type": "Catalog",
            "id": "test-api",
            "description": "STAC API over the demo catalog",
            "stac_version": "1.1.0",
            "conformsTo": CONFORMANCE,
            "links": [
                {"rel": "self", "href": f"{self.url}/", "type": "application/json"},
                {"rel": "root", "href": f"{self.url}/", "type": "application/json"},
                {"rel": "conformance", "href": f"{self.url}/conformance", "type": "application/json"},
                {"rel": "data", "href": f"{self.url}/collections", "type": "application/json"},
                {"rel": "search", "href": f"{self.url}/search", "type": "application/geo+json", "method": "GET"},
                {"rel": "search", "href": f"{self.url}/search", "type": "application/geo+json", "method": "POST"},
            ],
        }

    def search(self, body: dict[str, Any]) -> dict[str, Any]:
        features = [
            item
            for cid in body.get("collections") or list(self.items)
            for item in self.items.get(cid, [])
            if _overlaps(item, body.get("bbox"), body.get("datetime"))
        ]
        return {"type": "FeatureCollection", "features": features[: int(body.get("limit") or 100)], "links": []}


@pytest.fixture(scope="session")
def stac_api(demo_data: Path) -> Iterator[StacApi]:
    api = StacApi(demo_data)
    thread = threading.Thread(target=api.httpd.serve_forever, daemon=True)
    thread.start()
    yield api
    api.httpd.shutdown()


@pytest.fixture(scope="session")
def api_backed_service(stac_api: StacApi, stac_dir: Path) -> Iterator[str]:
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": f"{stac_api.url}/",
        "RASTER_ALLOWED_LOCAL_ROOTS": json.dumps([str(stac_dir)]),
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url


@pytest.fixture(scope="session")
def api_service_without_roots(stac_api: StacApi) -> Iterator[str]:
    port = free_port()
    env = {"RASTER_PORT": str(port), "RASTER_STAC_URL": f"{stac_api.url}/", "RASTER_LOG_LEVEL": "WARNING"}
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url


async def test_collections_and_time_series_come_from_the_api(api_backed_service: str) -> None:
    async with connect(api_backed_service) as mcp:
        listing = await call(mcp, "list_raster_collections")
        assert len(listing["collections"]) == 12
        series = await call(
            mcp,
            "get_timeseries",
            collection_id="bcsd-temperature-1999",
            lon=-83.5,
            lat=35.6,
            start="1999-04",
            end="1999-06",
        )
        assert [p["time"][:7] for p in series["points"]] == ["1999-04", "1999-05", "1999-06"]
        stats = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem", bbox=[5.7, 49.4, 6.6, 50.2])
        assert (stats["statistics"]["min"], stats["statistics"]["max"]) == (141.0, 547.0)
        info = await call(mcp, "get_raster_info", collection_id="nlcd-puerto-rico")
        assert info["bands"][0]["classes"]["42"] == "Evergreen Forest"


async def test_assets_outside_the_allowed_roots_are_not_read(api_service_without_roots: str) -> None:
    async with connect(api_service_without_roots) as mcp:
        message = await call_error(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=6.1, lat=49.6)
        assert "outside the allowed roots" in message
        listing = await call(mcp, "list_raster_collections")  # the catalog itself still answers
        assert len(listing["collections"]) == 12
