"""Context read from the tool servers at the start of a run: catalog resources and the user's memories."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from .prompts import parse_memories, summarize_resource
from .settings import OrchestratorSettings
from .tools.pool import ToolPool, ToolUnavailable

log = logging.getLogger(__name__)

# memory-tools caps queries (500 characters by default); the start of a message says what it is about.
MEMORY_QUERY_CHARS = 500
CATALOG_RESOURCE = "collections://list"
RESOURCE_TITLES = {
    CATALOG_RESOURCE: "Raster collections available (ids for the raster tools)",
    "vector://datasets/all": "Vector datasets available",
}


class ResourceCache:
    """Resources such as `collections://list`, summarised and cached: they change rarely and are the
    same for every user."""

    def __init__(self, pool: ToolPool, settings: OrchestratorSettings) -> None:
        self.pool = pool
        self.settings = settings
        # uri -> (read at, text as served, summary for the prompt)
        self._cache: dict[str, tuple[float, str, str]] = {}
        self._lock = asyncio.Lock()

    async def get(self, headers: Mapping[str, str]) -> dict[str, str]:
        async with self._lock:
            now = time.monotonic()
            result: dict[str, str] = {}
            for uri in self.settings.context_resources:
                cached = self._cache.get(uri)
                if cached is None or now - cached[0] > self.settings.resource_cache_seconds:
                    text = await self._fetch(uri, headers)
                    if text is None:
                        if cached is None:
                            continue
                    else:
                        cached = (now, text, summarize_resource(text, self.settings.max_resource_chars))
                        self._cache[uri] = cached
                result[RESOURCE_TITLES.get(uri, uri)] = cached[2]
            return result

    def raw(self, uri: str) -> str | None:
        """A resource as its server sent it, when `get` has read it."""
        cached = self._cache.get(uri)
        return cached[1] if cached else None

    async def _fetch(self, uri: str, headers: Mapping[str, str]) -> str | None:
        if not self.pool.servers_with_resource(uri):
            log.warning("no tool server offers resource %s: the system prompt goes without it", uri)
            return None
        text = await self.pool.read_resource(uri, headers)
        if text is None:
            log.warning("resource %s could not be read: the system prompt goes without it", uri)
            return None
        return text


async def fetch_memories(
    pool: ToolPool, settings: OrchestratorSettings, query: str, headers: Mapping[str, str]
) -> list[str]:
    """The user's most relevant long-term memories, from memory-tools (empty when unavailable)."""
    if settings.memory_limit == 0 or settings.memory_server not in pool.servers:
        return []
    tool = next(
        (t for t in pool.tools() if t.server == settings.memory_server and t.remote_name == settings.memory_tool), None
    )
    if tool is None:
        log.warning(
            "memory server %s offers no %s tool: no long-term memories", settings.memory_server, settings.memory_tool
        )
        return []
    try:
        async with asyncio.timeout(settings.context_timeout_seconds):
            outcome = await pool.call(
                tool, {"query": query[:MEMORY_QUERY_CHARS], "limit": settings.memory_limit}, headers
            )
    except (ToolUnavailable, TimeoutError) as error:
        log.warning("long-term memories unavailable: %s", getattr(error, "message", "timed out"))
        return []
    if outcome.is_error:
        log.warning("long-term memory search failed: %s", outcome.text[:300])
        return []
    return parse_memories(outcome.text)[: settings.memory_limit]
