"""The conversation a run starts from: the system prompt with the catalog resources (the prefix every
run shares), the history, then this run's context (memories, map, what the catalogue lacks) and the
user's message."""

from __future__ import annotations

import asyncio
import logging
from functools import lru_cache

from .context_sources import CATALOG_RESOURCE, fetch_memories
from .memory import ConversationMemory, consistent_history
from .model_step import ModelStep
from .premises import Catalog, catalogue_gaps
from .prompts import run_context_message, spatial_context_message, system_prompt
from .run_context import AgentDeps, RunContext

log = logging.getLogger(__name__)


async def prepare_memory(context: RunContext, model: ModelStep) -> ConversationMemory:
    """The run's memory, filled; the catalog and the user's memories are recorded in its findings."""
    settings, run, found = context.settings, context.run, context.found
    memory = ConversationMemory(settings.history_window, settings.max_tool_result_chars)
    headers = context.headers()
    resources, found.memories, _ = await asyncio.gather(
        _resources(context.deps, headers),
        fetch_memories(context.deps.pool, settings, run.message, headers),
        model.learn_window(),
    )
    # The prefix: only what every run shares. Per-run context follows the history.
    memory.add_system(system_prompt(resources, settings.place_names))
    found.catalog_text = "\n".join(resources.values())
    found.catalog = parsed_catalog(context.deps.resources.raw(CATALOG_RESOURCE))
    found.catalogue_gaps = catalogue_gaps(run.message, found.catalog) if settings.premise_check else []
    spatial = run.spatial
    spatial_context = spatial_context_message(
        spatial.center, spatial.zoom, spatial.selected_feature, spatial.drawn_geometry
    )
    for message in consistent_history(run.history):
        memory.add(message)
    memory.add_user(
        run_context_message(run.max_steps, found.memories, spatial_context, [g.note for g in found.catalogue_gaps])
    )
    memory.add_user(run.message)
    return memory


@lru_cache(maxsize=4)
def parsed_catalog(text: str | None) -> Catalog:
    """The catalogue of a `collections://list` text, parsed once per text: it changes only when the
    resource does, and parsing it (a regex per variable word per collection) took several ms of
    every run's start. Runs share the result and only read it."""
    return Catalog.from_resource(text)


async def _resources(deps: AgentDeps, headers: dict[str, str]) -> dict[str, str]:
    try:
        await deps.pool.refresh_stale()
        return await deps.resources.get(headers)
    except Exception:
        log.warning("context resources unavailable", exc_info=True)
        return {}
