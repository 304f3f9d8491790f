"""Fixtures: the real demo catalog, a running raster-tools process and MCP sessions to it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from raster_test_helpers import CACHE_DIR, DATA_DIR, TEST_FEATURES

from stacgis_common.auth import InvalidInternalToken, verify_internal_token
from stacgis_common.http_errors import error_body
from stacgis_common.settings import DEV_TOKEN_SECRET
from stacgis_common.testing import REPO_ROOT, free_port, run_service


@pytest.fixture(scope="session")
def demo_data() -> Path:
    """Build (or reuse) the demo catalog in .local/data of the repository."""
    proc = subprocess.run(
        [sys.executable, "-m", "stacgis_raster.demo_data", "--cache", str(CACHE_DIR), "--out", str(DATA_DIR)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"demo data build failed:\n{proc.stdout}\n{proc.stderr}"
    catalog = DATA_DIR / "stac" / "catalog.json"
    assert catalog.exists()
    return catalog


@pytest.fixture(scope="session")
def stac_dir(demo_data: Path) -> Path:
    return demo_data.parent


class VectorFeatureServer:
    """A real HTTP server answering GET /features/{dataset}/{id} like vector-tools does."""

    def __init__(self) -> None:
        self.seen_users: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                header = self.headers.get("Authorization", "")
                try:
                    identity = verify_internal_token(header.removeprefix("Bearer ").strip(), DEV_TOKEN_SECRET)
                except InvalidInternalToken as error:
                    self._send(401, error_body(None, f"invalid internal token: {error}", "unauthenticated"))
                    return
                outer.seen_users.append(identity.user_id)
                parts = self.path.strip("/").split("/")
                feature = (
                    TEST_FEATURES.get((parts[1], parts[2])) if len(parts) == 3 and parts[0] == "features" else None
                )
                if feature is None:
                    self._send(404, error_body("feature_id", f"feature_id: nothing at {self.path}", "not_found"))
                else:
                    self._send(200, feature)

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/geo+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.port = free_port()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def vector_server() -> Iterator[VectorFeatureServer]:
    server = VectorFeatureServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()


@pytest.fixture(scope="session")
def raster_service(demo_data: Path, vector_server: VectorFeatureServer) -> Iterator[str]:
    port = free_port()
    env = {
        "RASTER_HOST": "127.0.0.1",
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": str(demo_data),
        "RASTER_VECTOR_TOOLS_URL": vector_server.url,
        "RASTER_MAX_GEOMETRY_VERTICES": "5000",
        "RASTER_MAX_POINT_COLLECTIONS": "12",
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url


@pytest.fixture(scope="session")
def stac_api(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real STAC API server (rustac) over the demo catalog; its root URL."""
    port = free_port()
    env = {
        "STAC_API_CATALOG": str(demo_data),
        "STAC_API_DIR": str(tmp_path_factory.mktemp("stac-api")),
        "STAC_API_PORT": str(port),
    }
    with run_service("stacgis_raster.demo_data.stac_api", env, port, ready_path="/conformance") as server:
        yield server.url


@pytest.fixture(scope="session")
def api_backed_service(stac_api: str, stac_dir: Path) -> Iterator[str]:
    port = free_port()
    env = {
        "RASTER_PORT": str(port),
        "RASTER_STAC_URL": f"{stac_api}/",
        # Enough to list every item of the demo collections, as the static catalog does.
        "RASTER_STAC_LISTING_ITEMS": "500",
        "RASTER_ALLOWED_LOCAL_ROOTS": json.dumps([str(stac_dir)]),
        "RASTER_LOG_LEVEL": "WARNING",
    }
    with run_service("stacgis_raster", env, port, ready_path="/readyz") as service:
        yield service.url
