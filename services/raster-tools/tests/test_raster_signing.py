"""Assets in private blob storage: raster-tools asks the token endpoint (the wire protocol of
Planetary Computer's `/api/sas/v1/token/{collection}`) for a token per collection and reads the
COG with it; without the token the storage refuses, and the error says so."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import rasterio
from raster_test_helpers import call, call_error, cog, connect

from stacgis_common.testing import free_port, run_service

pytestmark = pytest.mark.asyncio(loop_scope="session")

TOKEN = "st=2026-12-03T00%3A00%3A00Z&se=2026-12-04T00%3A00%3A00Z&sp=rl&sig=c2lnbmF0dXJl"
RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class BlobStorage:
    """Serves one COG with HTTP range requests only to signed URLs, and the token endpoint."""

    def __init__(self, blob: Path) -> None:
        self.blob = blob.read_bytes()
        self.token_requests: list[str] = []
        self.refused = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _serve(self, body: bool) -> None:
                parts = urlsplit(self.path)
                if parts.path.startswith("/api/sas/v1/token/"):
                    outer.token_requests.append(parts.path.rsplit("/", 1)[1])
                    expiry = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z")
                    self._send(200, json.dumps({"msft:expiry": expiry, "token": TOKEN}).encode(), "application/json")
                    return
                if parse_qs(parts.query).get("sig") != ["c2lnbmF0dXJl"]:
                    outer.refused += 1
                    self._send(403, b"AuthenticationFailed", "text/plain")
                    return
                data = outer.blob
                match = RANGE.fullmatch(self.headers.get("Range", ""))
                if match:
                    start = int(match.group(1))
                    end = int(match.group(2)) if match.group(2) else len(data) - 1
                    chunk = data[start : end + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{start + len(chunk) - 1}/{len(data)}")
                else:
                    chunk = data
                    self.send_response(200)
                self.send_header("Content-Type", "image/tiff")
                self.send_header("Content-Length", str(len(chunk)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if body:
                    self.wfile.write(chunk)

            def _send(self, status: int, data: bytes, media_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", media_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)


@pytest.fixture(scope="module")
def storage(stac_dir: Path) -> Iterator[BlobStorage]:
    server = BlobStorage(cog(stac_dir, "luxembourg-dem"))
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()


@pytest.fixture(scope="module")
def private_catalog(stac_dir: Path, storage: BlobStorage, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Luxembourg DEM collection with its asset moved to the blob storage."""
    out = tmp_path_factory.mktemp("private-catalog")
    shutil.copytree(stac_dir / "luxembourg-dem", out / "luxembourg-dem")
    for item_file in (out / "luxembourg-dem").glob("*/*.json"):
        item = json.loads(item_file.read_text())
        item["assets"]["data"]["href"] = f"{storage.url}/blobs/luxembourg-dem.tif"
        item_file.write_text(json.dumps(item))
        (item_file.parent / f"{item_file.stem}.tif").unlink()  # only the blob storage has the data now
    root = {
        "type": "Catalog",
        "id": "private",
        "stac_version": "1.1.0",
        "description": "assets in private blob storage",
        "links": [
            {"rel": "root", "href": "./catalog.json", "type": "application/json"},
            {"rel": "child", "href": "./luxembourg-dem/collection.json", "type": "application/json"},
        ],
    }
    (out / "catalog.json").write_text(json.dumps(root))
    return out / "catalog.json"


def _service(catalog: Path, storage: BlobStorage, signed: bool) -> Any:
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(catalog),
        "RASTER_ALLOWED_REMOTE_HOSTS": json.dumps(["127.0.0.1"]),
        "RASTER_LOG_LEVEL": "WARNING",
    }
    if signed:
        env["RASTER_SAS_TOKEN_URL"] = f"{storage.url}/api/sas/v1/token"
        env["RASTER_SAS_HOSTS"] = json.dumps(["127.0.0.1"])
    return run_service("stacgis_raster", env, port, ready_path="/readyz")


async def test_assets_are_read_with_a_token_fetched_once_per_collection(
    private_catalog: Path, storage: BlobStorage, stac_dir: Path
) -> None:
    with rasterio.open(cog(stac_dir, "luxembourg-dem")) as local:
        data = local.read(1, masked=True)
    with _service(private_catalog, storage, signed=True) as service:
        async with connect(service.url) as mcp:
            first = await call(mcp, "get_raster_statistics", collection_id="luxembourg-dem")
            again = await call(mcp, "query_raster_point", collection_id="luxembourg-dem", lon=6.1, lat=49.6)
    assert (first["statistics"]["min"], first["statistics"]["max"]) == (float(data.min()), float(data.max()))
    assert again["results"][0]["values"]
    assert storage.token_requests == ["luxembourg-dem"]  # cached for the second call


async def test_without_a_token_the_refusal_reaches_the_caller(private_catalog: Path, storage: BlobStorage) -> None:
    refused_before = storage.refused
    with _service(private_catalog, storage, signed=False) as service:
        async with connect(service.url) as mcp:
            message = await call_error(mcp, "get_raster_statistics", collection_id="luxembourg-dem")
    assert "could not read the raster data" in message and "403" in message
    assert storage.refused > refused_before
