"""Shared helpers of the raster-tools tests (paths, MCP call wrappers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stacgis_common.testing import REPO_ROOT, mcp_client, token_for

DATA_DIR = REPO_ROOT / ".local" / "data"
CACHE_DIR = REPO_ROOT / ".local" / "cache"
EXTRACTED = CACHE_DIR / "extracted"
STARS = "r-cran-stars-0.6-0-4/usr/lib/R/site-library/stars"
TERRA = "r-cran-terra-1.7-3-1/usr/lib/R/site-library/terra"

# Features served by the stand-in for vector-tools' internal endpoint.
LUX_CENTRE = {
    "type": "Polygon",
    "coordinates": [[[5.95, 49.55], [6.3, 49.55], [6.3, 49.95], [6.1, 50.0], [5.95, 49.55]]],
}
TEST_FEATURES: dict[tuple[str, str], dict[str, Any]] = {
    ("test-areas", "lux-centre"): {
        "type": "Feature",
        "id": "lux-centre",
        "properties": {"name": "central Luxembourg"},
        "geometry": LUX_CENTRE,
    },
}


def cog(stac_dir: Path, collection_id: str, item_id: str | None = None) -> Path:
    item_id = item_id or collection_id
    return stac_dir / collection_id / item_id / f"{item_id}.tif"


def source_file(relative: str) -> Path:
    """A file as extracted from its package by the builder (independent of the COGs)."""
    path = EXTRACTED / relative
    assert path.exists(), f"{path} missing: the demo-data build extracts it"
    return path


def connect(service_url: str) -> Any:
    """An MCP session to the running server, as user analyst-1 (enter it inside the test)."""
    return mcp_client(f"{service_url}/mcp", token_for("analyst-1", "session-1"))


async def call(session: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured result."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    assert not result.is_error, f"{tool} failed: {text}"
    data = json.loads(text)
    assert data == result.structured_content
    return data


async def call_error(session: Any, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return the error text."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.content[0].text[:300]}"
    return result.content[0].text
