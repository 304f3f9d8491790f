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
import weakref
from collections.abc import Hashable, Mapping

from .context_sources import ResourceCache
from .context_window import ModelBudget, estimate_tokens
from .llm.base import ChatProvider
from .llm.types import Message, ToolSpec
from .prompts import system_prompt
from .settings import OrchestratorSettings
from .tools.catalog import ToolCatalog
from .tools.pool import ToolPool
from .tools.registry import RegisteredTool

log = logging.getLogger(__name__)


# The offered list of each catalogue's current snapshot, with the key it was built for.
_OFFERED: weakref.WeakKeyDictionary[ToolCatalog, tuple[Hashable, tuple[ToolSpec, ...]]] = weakref.WeakKeyDictionary()


def snapshot_key(catalog: ToolCatalog, pool: ToolPool) -> tuple[int, tuple[str, ...]]:
    """What the tools on offer depend on: the listing (its version) and the servers whose circuit is open."""
    return catalog.version, tuple(name for name, server in pool.servers.items() if server.breaker.state == "open")


def all_tools(catalog: ToolCatalog, pool: ToolPool, settings: OrchestratorSettings) -> list[ToolSpec]:
    """Every available tool, sorted by name: the same list on every step of every run. Built once per
    snapshot (`snapshot_key`), so every run and step gets the same `ToolSpec` objects (whose derived
    forms are computed once) instead of rebuilding them before each model call."""
    # The two settings the list is built from (the filter below and `offered_specs`).
    key = (snapshot_key(catalog, pool), settings.place_names, settings.always_include_frontend_tools)
    cached = _OFFERED.get(catalog)
    if cached is None or cached[0] != key:
        tools = [
            tool
            for tool in catalog.all()
            if (tool.kind != "mcp" or pool.available(tool))
            and (tool.kind != "frontend" or settings.always_include_frontend_tools)
        ]
        cached = key, tuple(offered_specs(sorted(tools, key=lambda t: t.name), settings))
        _OFFERED[catalog] = cached
    return list(cached[1])


def offered_specs(tools: list[RegisteredTool], settings: OrchestratorSettings) -> list[ToolSpec]:
    """The tools as the model sees them; with `place_names` off, without their `place` argument."""
    specs = [tool.spec() for tool in tools]
    return specs if settings.place_names else [without_place(spec) for spec in specs]


def without_place(spec: ToolSpec) -> ToolSpec:
    schema = spec.parameters
    properties = schema.get("properties") or {}
    if "place" not in properties:
        return spec
    hidden = {**schema, "properties": {k: v for k, v in properties.items() if k != "place"}}
    if "required" in schema:
        hidden["required"] = [name for name in schema["required"] if name != "place"]
    return ToolSpec(name=spec.name, description=spec.description, parameters=hidden)


def unlisted_servers(pool: ToolPool) -> list[str]:
    return [state.name for state in pool.servers.values() if not state.listed_at]


async def settle_first_listing(pool: ToolPool, grace_seconds: float, settled: asyncio.Event) -> None:
    """Re-list the tool servers that were not up when the orchestrator started, for up to
    `grace_seconds`, then set `settled`. Until then the orchestrator is not ready: a run (or the
    warm-up) that started earlier would get a prompt without those servers' tools and catalogues,
    and a prefix unlike every later one."""
    try:
        deadline = time.monotonic() + grace_seconds
        while unlisted_servers(pool) and time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            await pool.refresh_stale()
        missing = unlisted_servers(pool)
        if missing:
            log.warning("tool servers still not listed after %.0f s: %s", grace_seconds, ", ".join(missing))
    finally:
        settled.set()


async def warm_prefix(
    settings: OrchestratorSettings,
    provider: ChatProvider,
    catalog: ToolCatalog,
    pool: ToolPool,
    resources: ResourceCache,
    budget: ModelBudget,
    headers: Mapping[str, str],
    listed: asyncio.Event,
) -> None:
    """One model call with the run prefix (system prompt + tools) and one output token, so the model
    server has it cached before the first user arrives. Failures are logged, never raised."""
    model = settings.llm_model
    try:
        await listed.wait()
        texts = await resources.get(headers)
        messages = [Message(role="system", content=system_prompt(texts, settings.place_names))]
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
    except Exception as error:  # noqa: BLE001 - warming is an optimisation: any failure is logged and ignored
        log.warning("warming the prompt prefix of %s failed: %s: %s", model, type(error).__name__, error)
