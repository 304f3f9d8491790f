"""Dynamic tool selection: per step, the K most relevant MCP tools for what the user asked.

Score = cosine similarity of the query and tool embeddings + `keyword_weight` x the share of the
query's content words found in the tool's name, description and argument names. Embeddings of the
tools are computed once per distinct tool text and reused across refreshes. When the embedding
server fails, ranking falls back to keywords alone rather than failing the run.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import numpy as np

from stacgis_common.embeddings import EmbeddingError, EmbeddingsClient

from .. import metrics
from .registry import RegisteredTool

log = logging.getLogger(__name__)

WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "get",
        "give",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "show",
        "tell",
        "the",
        "this",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "with",
        "you",
        "your",
        "please",
        "there",
        "their",
        "them",
        "than",
        "then",
        "was",
        "were",
        "will",
        "would",
        "could",
        "should",
        "into",
        "about",
        "over",
        "under",
        "all",
        "any",
        "some",
        "much",
        "many",
        "more",
        "most",
    ]
)


def words(text: str) -> set[str]:
    found = set()
    for word in WORD.findall(text.lower().replace("_", " ")):
        if len(word) < 3 or word in STOPWORDS:
            continue
        # A crude stem, enough for "collections"/"collection", "rasters"/"raster".
        found.add(word[:-1] if len(word) > 4 and word.endswith("s") else word)
    return found


@dataclass(frozen=True)
class ScoredTool:
    tool: RegisteredTool
    score: float
    similarity: float
    keyword_score: float


class ToolSelector:
    def __init__(self, embeddings: EmbeddingsClient | None, keyword_weight: float) -> None:
        self.embeddings = embeddings
        self.keyword_weight = keyword_weight
        self._cache: dict[str, np.ndarray] = {}
        self._words: dict[str, set[str]] = {}

    async def index(self, tools: list[RegisteredTool]) -> None:
        """Embed the tools whose text is new (at start and after each refresh that changed them)."""
        texts = [tool.embedding_text() for tool in tools]
        for text in texts:
            self._words.setdefault(text, words(text))
        missing = [text for text in dict.fromkeys(texts) if text not in self._cache]
        if not missing or self.embeddings is None:
            return
        try:
            vectors = await self.embeddings.embed(missing)
        except EmbeddingError as error:
            log.warning("cannot embed tool descriptions, ranking by keywords: %s", error)
            return
        for text, vector in zip(missing, vectors, strict=True):
            self._cache[text] = _unit(np.asarray(vector, dtype=np.float32))

    async def rank(self, query: str, tools: list[RegisteredTool]) -> list[ScoredTool]:
        started = time.perf_counter()
        try:
            await self.index(tools)
            query_vector: np.ndarray | None = None
            if self.embeddings is not None and any(tool.embedding_text() in self._cache for tool in tools):
                try:
                    query_vector = _unit(np.asarray(await self.embeddings.embed_one(query), dtype=np.float32))
                except EmbeddingError as error:
                    log.warning("cannot embed the query, ranking by keywords: %s", error)
            return self.score(query, query_vector, tools)
        finally:
            metrics.TOOL_SELECTION_SECONDS.observe(time.perf_counter() - started)

    def score(self, query: str, query_vector: np.ndarray | None, tools: list[RegisteredTool]) -> list[ScoredTool]:
        query_words = words(query)
        scored = []
        for tool in tools:
            text = tool.embedding_text()
            vector = self._cache.get(text)
            similarity = float(vector @ query_vector) if vector is not None and query_vector is not None else 0.0
            tool_words = self._words.get(text) or words(text)
            overlap = len(query_words & tool_words) / len(query_words) if query_words else 0.0
            keyword = self.keyword_weight * overlap
            scored.append(ScoredTool(tool, similarity + keyword, similarity, keyword))
        scored.sort(key=lambda item: (-item.score, item.tool.name))
        return scored


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
