"""add_knowledge and the ingest command: chunking, deduplication, replacement, bad input, restarts."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from knowledge_helpers import documents, run_ingest

from stacgis_common.testing import RunningService, call_tool, free_port, run_service

NDWI = """# NDWI: the Normalized Difference Water Index

NDWI highlights open water in multispectral images. McFeeters' version uses the green and near-infrared
bands: NDWI = (Green - NIR) / (Green + NIR).

## Reading NDWI values

Open water is usually above 0.2; vegetation and dry soil are negative because they reflect more
near-infrared than green light.

## Landsat bands

For Landsat 7 ETM+ green is band 2 and near infrared band 4.
"""


@pytest.mark.asyncio
async def test_added_document_is_chunked_found_and_not_added_twice(
    knowledge_server: RunningService, pg_dsn: str
) -> None:
    arguments = {"title": "NDWI", "content": NDWI, "source": "McFeeters 1996", "tags": ["Water", "index"]}
    error, added = await call_tool(knowledge_server.url, "add_knowledge", arguments, user="analyst")
    assert not error, added
    assert added["status"] == "added" and added["chunks"] == 3

    error, found = await call_tool(
        knowledge_server.url,
        "search_knowledge",
        {"query": "how do I find water bodies in a multispectral image?", "limit": 3},
        user="analyst",
    )
    assert not error, found
    top = found["results"][0]
    assert top["document_id"] == added["document_id"]
    assert top["source"] == "McFeeters 1996" and top["tags"] == ["water", "index"]
    assert top["heading"].startswith("NDWI: the Normalized Difference Water Index")

    error, again = await call_tool(knowledge_server.url, "add_knowledge", arguments, user="analyst")
    assert not error, again
    assert again["status"] == "duplicate" and again["document_id"] == added["document_id"]

    connection = await asyncpg.connect(pg_dsn)
    try:
        rows = await connection.fetch(
            "SELECT heading, token_count FROM knowledge.chunks WHERE document_id = $1 ORDER BY ordinal",
            uuid.UUID(added["document_id"]),
        )
        added_by = await connection.fetchval(
            "SELECT added_by FROM knowledge.documents WHERE id = $1", uuid.UUID(added["document_id"])
        )
    finally:
        await connection.close()
    assert [row["heading"] for row in rows] == [
        "NDWI: the Normalized Difference Water Index",
        "NDWI: the Normalized Difference Water Index > Reading NDWI values",
        "NDWI: the Normalized Difference Water Index > Landsat bands",
    ]
    assert added_by == "analyst"


@pytest.mark.asyncio
async def test_long_sections_are_split_within_the_token_bound(knowledge_server: RunningService, pg_dsn: str) -> None:
    paragraphs = "\n\n".join(
        f"Paragraph {n} describes how the statistics of band {n} are area weighted on a geographic grid, "
        f"why overviews are read for large areas, and what the valid fraction of {n} percent means."
        for n in range(40)
    )
    content = f"# Long guide\n\n## Details\n\n{paragraphs}\n"
    error, added = await call_tool(knowledge_server.url, "add_knowledge", {"title": "Long guide", "content": content})
    assert not error, added
    assert added["chunks"] > 5
    connection = await asyncpg.connect(pg_dsn)
    try:
        counts = await connection.fetch(
            "SELECT token_count, content FROM knowledge.chunks WHERE document_id = $1",
            uuid.UUID(added["document_id"]),
        )
    finally:
        await connection.close()
    assert max(row["token_count"] for row in counts) <= 180
    # Paragraphs are never cut in the middle: each chunk starts at a paragraph.
    assert all(row["content"].startswith("Paragraph ") for row in counts)


@pytest.mark.asyncio
async def test_ingest_replaces_changed_files_and_prunes_removed_ones(
    knowledge_server: RunningService, knowledge_env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "field-notes"
    (folder / "sites").mkdir(parents=True)
    note = folder / "sites" / "olinda.md"
    note.write_text("# Olinda field notes\n\nMangroves line the Beberibe river estuary north of Recife.\n")
    first = run_ingest(knowledge_env, folder)
    assert first.returncode == 0 and "field-notes/sites/olinda.md: added" in first.stdout, first.stderr

    note.write_text("# Olinda field notes\n\nSalt marsh and coconut palms line the beach of Casa Caiada.\n")
    second = run_ingest(knowledge_env, folder)
    assert "field-notes/sites/olinda.md: replaced" in second.stdout, second.stdout
    _, result = await call_tool(knowledge_server.url, "search_knowledge", {"query": "Casa Caiada coconut palms beach"})
    sources = [hit for hit in result["results"] if hit["source"] == "field-notes/sites/olinda.md"]
    assert len(sources) == 1 and "Casa Caiada" in sources[0]["chunk"]
    assert sources[0]["tags"] == ["sites"]

    note.unlink()
    pruned = run_ingest(knowledge_env, folder, "--prune")
    assert "field-notes/sites/olinda.md: removed" in pruned.stdout, pruned.stdout
    remaining = {doc["source"] for doc in await documents(knowledge_server.url)}
    assert "field-notes/sites/olinda.md" not in remaining
    # Only the pruned folder's documents go: the knowledge base itself stays.
    assert "knowledge/concepts/ndvi.md" in remaining


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    [
        ("search_knowledge", {"query": ""}, "query"),
        ("search_knowledge", {"query": "x" * 501}, "query"),
        ("search_knowledge", {"query": "ndvi", "limit": 0}, "limit"),
        ("search_knowledge", {"query": "ndvi", "limit": 21}, "limit"),
        ("add_knowledge", {"title": " ", "content": "text"}, "title"),
        ("add_knowledge", {"title": "t" * 201, "content": "text"}, "title"),
        ("add_knowledge", {"title": "Empty", "content": "\n \n"}, "content"),
        ("add_knowledge", {"title": "Huge", "content": "word " * 25_000}, "content"),
        ("add_knowledge", {"title": "Tags", "content": "text", "tags": ["ok", "<script>"]}, "tags"),
        ("add_knowledge", {"title": "Source", "content": "text", "source": ""}, "source"),
    ],
)
async def test_bad_input_is_named_and_stores_nothing(
    knowledge_server: RunningService, tool: str, arguments: dict[str, Any], argument: str
) -> None:
    before = await documents(knowledge_server.url)
    error, message = await call_tool(knowledge_server.url, tool, arguments)
    assert error, message
    assert argument in message
    assert await documents(knowledge_server.url) == before


def test_mcp_without_token_is_refused(knowledge_server: RunningService) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(knowledge_server.url + "/mcp", json=body, headers=headers, timeout=10).status_code == 401


@pytest.mark.asyncio
async def test_restarted_server_keeps_added_knowledge(knowledge_env: dict[str, str]) -> None:
    port = free_port()
    env = {**knowledge_env, "KNOWLEDGE_PORT": str(port)}
    content = "# Sargassum\n\nSargassum seaweed mats drift into the Caribbean from the tropical Atlantic.\n"
    with run_service("stacgis_knowledge", env, port) as first:
        error, added = await call_tool(first.url, "add_knowledge", {"title": "Sargassum", "content": content})
        assert not error, added
        first.kill()
    with run_service("stacgis_knowledge", env, port) as second:
        _, found = await call_tool(second.url, "search_knowledge", {"query": "floating seaweed in the Caribbean"})
    assert found["results"][0]["document_id"] == added["document_id"]
