"""search_knowledge over the repository's own knowledge base, with real embeddings."""

from __future__ import annotations

import pytest
from knowledge_helpers import KNOWLEDGE_DIR, documents, run_ingest

from stacgis_common.testing import RunningService, call_tool


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("question", "source"),
    [
        # Paraphrases: none of these uses the document's title words verbatim.
        ("how can I tell from a satellite picture how green the plants are?", "knowledge/concepts/ndvi.md"),
        ("what does a negative vegetation index value mean?", "knowledge/concepts/ndvi.md"),
        ("which map class is number 42 on the land cover map?", "knowledge/concepts/land-cover.md"),
        (
            "which coordinate system measures in metres rather than degrees?",
            "knowledge/concepts/crs-and-projections.md",
        ),
        ("why do pixels near the poles count less in an average?", "knowledge/concepts/statistics.md"),
        ("how high are the mountains in Colorado?", "knowledge/datasets/rmnp-dem.md"),
        ("how tall is the terrain in Luxembourg?", "knowledge/datasets/luxembourg-dem.md"),
        ("is there rainfall data for every month?", "knowledge/datasets/bcsd-1999.md"),
        ("how warm was the ocean water at the end of 1981?", "knowledge/datasets/oisst-sst.md"),
        ("is this spot on land or in the sea?", "knowledge/datasets/global-land-mask.md"),
        ("how do I summarise the values within a polygon such as a state?", "knowledge/concepts/zonal-statistics.md"),
    ],
)
async def test_paraphrased_question_finds_the_right_document(
    knowledge_server: RunningService, question: str, source: str
) -> None:
    error, result = await call_tool(knowledge_server.url, "search_knowledge", {"query": question, "limit": 3})
    assert not error, result
    top = result["results"][0]
    assert top["source"] == source, [hit["source"] for hit in result["results"]]
    assert top["chunk"] and top["heading"].startswith(top["title"])
    assert top["matched_by"]


@pytest.mark.asyncio
async def test_every_knowledge_file_is_a_document_and_reingest_changes_nothing(
    knowledge_server: RunningService, knowledge_env: dict[str, str]
) -> None:
    files = sorted(path for path in KNOWLEDGE_DIR.rglob("*.md"))
    before = await documents(knowledge_server.url)
    ingested = {doc["source"] for doc in before if doc["origin"] == "ingest" and doc["source"].startswith("knowledge/")}
    assert ingested == {f"knowledge/{path.relative_to(KNOWLEDGE_DIR).as_posix()}" for path in files}
    assert all(doc["chunks"] >= 1 for doc in before)
    again = run_ingest(knowledge_env, KNOWLEDGE_DIR)
    assert again.returncode == 0, again.stderr
    assert f"{len(files)} unchanged" in again.stdout
    after = await documents(knowledge_server.url)
    assert [(d["document_id"], d["updated_at"]) for d in after] == [(d["document_id"], d["updated_at"]) for d in before]
