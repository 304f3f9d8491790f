"""The byte-stable prompt prefix: the first system message and the tool list, and warming it.

A CPU model reads a long prompt slowly but reuses the part it has already read (its KV cache) when
the next prompt starts the same way. So the first system message holds only what is the same for
every run (base prompt and catalogues, in a fixed order) and, with `tool_selection=all`, every run
and step offers every available tool in one fixed order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from .context_sources import ResourceCache
from .context_window import ModelBudget, estimate_tokens
from .llm.base import ChatProvider
from .llm.types import Message, ToolSpec
from .prompts import system_prompt
from .settings import OrchestratorSettings
from .tools.catalog import ToolCatalog
from .tools.pool import ToolPool

log = logging.getLogger(__name__)

# Tools listed before this long after start may still miss a slow server; the warm-up waits up to
# this long for every server's first listing.
WARMUP_LISTING_WAIT_SECONDS = 30.0


def all_tools(catalog: ToolCatalog, pool: ToolPool, settings: OrchestratorSettings) -> list[ToolSpec]:
    """Every available tool, sorted by name: the same list on every step of every run."""
    tools = [
        tool
        for tool in catalog.all()
        if (tool.kind != "mcp" or pool.available(tool))
        and (tool.kind != "frontend" or settings.always_include_frontend_tools)
    ]
    return [tool.spec() for tool in sorted(tools, key=lambda t: t.name)]


async def warm_prefix(
    settings: OrchestratorSettings,
    provider: ChatProvider,
    catalog: ToolCatalog,
    pool: ToolPool,
    resources: ResourceCache,
    budget: ModelBudget,
    headers: Mapping[str, str],
) -> None:
    """One model call with the run prefix (system prompt + tools) and one output token, so the model
    server has it cached before the first user arrives. Failures are logged, never raised."""
    model = settings.llm_model
    try:
        deadline = time.monotonic() + WARMUP_LISTING_WAIT_SECONDS
        while any(not state.listed_at for state in pool.servers.values()) and time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            await pool.refresh_stale()
        texts = await resources.get(headers)
        messages = [Message(role="system", content=system_prompt(texts))]
        tools = all_tools(catalog, pool, settings) if settings.tool_selection == "all" else []
        if not settings.llm_native_tools:
            tools = []
        started = time.perf_counter()
        counted = await provider.warm(messages, tools, model, settings.llm_think)
        budget.calibrate(model, estimate_tokens(messages, tools), counted)
        log.info(
            "warmed the prompt prefix of %s: %s tokens, %d tools, %.1f s",
            model,
            counted if counted is not None else "?",
            len(tools),
            time.perf_counter() - started,
        )
    except asyncio.CancelledError:
        raise
    except Exception as error:
        log.warning("warming the prompt prefix of %s failed: %s: %s", model, type(error).__name__, error)
