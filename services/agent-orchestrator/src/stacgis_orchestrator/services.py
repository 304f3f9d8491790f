"""The long-lived parts of the service, built once at start-up and shared by every request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from stacgis_common.auth import Identity, mint_for
from stacgis_common.embeddings import EmbeddingsClient, embeddings_client

from .context_sources import ResourceCache
from .context_window import ModelBudget
from .coordination import Coordinator
from .llm.base import ChatProvider
from .llm.ollama import OllamaProvider
from .llm.openai import OpenAIProvider
from .prefix import settle_first_listing, unlisted_servers, warm_prefix
from .run_context import AgentDeps
from .settings import OrchestratorSettings
from .tools.catalog import ToolCatalog
from .tools.pool import ToolPool
from .tools.selection import ToolSelector

log = logging.getLogger(__name__)

# The orchestrator's own identity when it lists tools outside any user's run.
SERVICE_IDENTITY = Identity(user_id="service:agent-orchestrator")


def service_headers(settings: OrchestratorSettings) -> dict[str, str]:
    """Headers of a call the orchestrator makes for itself (listings, the prefix warm-up), not for a
    run: a fresh internal token of its own identity."""
    return {"Authorization": f"Bearer {mint_for(settings, SERVICE_IDENTITY)}"}


def build_provider(settings: OrchestratorSettings) -> ChatProvider:
    if settings.llm_provider == "openai":
        return OpenAIProvider(
            settings.llm_base_url,
            settings.llm_timeout_seconds,
            api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
            temperature=settings.llm_temperature,
            max_tokens=settings.llm_max_output_tokens,
        )
    return OllamaProvider(
        settings.llm_base_url,
        settings.llm_timeout_seconds,
        num_ctx=settings.llm_num_ctx,
        keep_alive=settings.llm_keep_alive or None,
        temperature=settings.llm_temperature,
        num_predict=settings.llm_max_output_tokens,
    )


@dataclass
class Services(AgentDeps):
    """What every run needs (AgentDeps: a run is given this object) and what only the service keeps: the
    embeddings client behind the selector, the first-listing flag and the background tasks."""

    coordinator: Coordinator  # AgentDeps takes Any, so loop tests need no Redis
    embeddings: EmbeddingsClient
    # Set once every tool server has been listed, or the start-up grace has passed.
    tools_listed: asyncio.Event
    _indexer: asyncio.Task[None] | None = None
    _warmer: asyncio.Task[None] | None = None
    _lister: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, settings: OrchestratorSettings) -> Services:
        coordinator = Coordinator(settings.redis_url)
        await coordinator.start()
        pool = ToolPool(settings, lambda: service_headers(settings))
        await pool.start()
        embeddings = embeddings_client(settings)
        catalog = ToolCatalog(pool, settings)
        selector = ToolSelector(embeddings, settings.tool_keyword_weight)
        provider = build_provider(settings)
        services = cls(
            settings=settings,
            provider=provider,
            pool=pool,
            catalog=catalog,
            selector=selector,
            resources=ResourceCache(pool, settings),
            coordinator=coordinator,
            budget=ModelBudget(settings.llm_num_ctx),
            embeddings=embeddings,
            tools_listed=asyncio.Event(),
        )
        services._lister = asyncio.create_task(
            settle_first_listing(pool, settings.tool_listing_grace_seconds, services.tools_listed),
            name="first-tool-listing",
        )
        services._indexer = asyncio.create_task(services._index_tools(), name="tool-embedding-index")
        warmup = settings.llm_warmup if settings.llm_warmup is not None else settings.llm_provider == "ollama"
        if warmup:
            services._warmer = asyncio.create_task(
                warm_prefix(
                    settings,
                    provider,
                    catalog,
                    pool,
                    services.resources,
                    services.budget,
                    service_headers(settings),
                    services.tools_listed,
                ),
                name="prompt-prefix-warmup",
            )
        return services

    async def _index_tools(self) -> None:
        """Embed tool descriptions at start and whenever the tool lists change."""
        indexed_version = -1
        while True:
            if self.catalog.version != indexed_version:
                indexed_version = self.catalog.version
                try:
                    await self.selector.index(self.catalog.mcp_tools())
                except Exception:
                    log.warning("indexing tool descriptions failed", exc_info=True)
            await asyncio.sleep(1.0)

    async def ready_model(self) -> None:
        await self.provider.ready()

    async def ready_tools(self) -> None:
        """Not ready while tool servers that were down at start may still come (see settle_first_listing)."""
        if not self.tools_listed.is_set():
            raise RuntimeError(f"waiting for the first listing of: {', '.join(unlisted_servers(self.pool))}")

    async def aclose(self) -> None:
        for task in (self._lister, self._indexer, self._warmer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.pool.aclose()
        await self.embeddings.aclose()
        await self.provider.aclose()
        await self.coordinator.aclose()
