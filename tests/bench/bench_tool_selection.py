"""Recall@K of the orchestrator's dynamic tool selection on labelled GIS requests.

    .venv/bin/python tests/bench/bench_tool_selection.py [--embedding-url URL] [--live]

Ranks the product's real MCP tools (the snapshot of their `tools/list` in
stacgis_orchestrator/data/tool_catalog.json, or the running servers with --live) for each request
of stacgis_orchestrator/data/tool_selection_cases.json, embedding with the real all-MiniLM-L6-v2 of
the local model server (started on a free port unless --embedding-url is given). A request counts
its requirements ("this step needs one of these tools"); recall@K is the share of requirements met
by the top K, and "all@K" the share of requests with every requirement met. Scorings compared side
by side, each through the production ToolSelector except the reference formula:

  embeddings       cosine similarity only
  keywords         keyword overlap only (what runs when the embedding server is down)
  w=0.05 / w=0.1   cosine + w x share of the request's content words found in the tool text
  reference        cosine + 0.1 x number of shared words (the formula the design started from)

The default K is the smallest K whose recall reaches the target with the configured scoring.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Callable, Iterator
from importlib import resources
from typing import Any

import numpy as np

from stacgis_common.embeddings import EmbeddingsClient
from stacgis_common.testing import free_port, run_service
from stacgis_orchestrator.context_window import estimate_tokens
from stacgis_orchestrator.llm.schema import sanitize_schema
from stacgis_orchestrator.llm.types import ToolSpec
from stacgis_orchestrator.settings import OrchestratorSettings
from stacgis_orchestrator.tool_snapshot import list_live
from stacgis_orchestrator.tools.registry import RegisteredTool
from stacgis_orchestrator.tools.selection import ScoredTool, ToolSelector, words

KS = (1, 2, 3, 4, 5, 6, 8, 10)
RECALL_TARGET = 0.95


@contextlib.contextmanager
def embedding_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    port = free_port()
    env = {"MODEL_SERVER_PORT": str(port), "MODEL_SERVER_BACKEND": "scripted", "HF_HUB_OFFLINE": "1"}
    with run_service("stacgis_model_server", env, port) as service:
        yield service.url


def load_json(name: str) -> Any:
    return json.loads((resources.files("stacgis_orchestrator") / "data" / name).read_text(encoding="utf-8"))


def catalog_tools(servers: dict[str, Any]) -> list[RegisteredTool]:
    return [
        RegisteredTool(
            name=tool["name"],
            description=tool["description"],
            input_schema=tool["inputSchema"],
            kind="mcp",
            server=server,
            remote_name=tool["name"],
        )
        for server, entry in servers.items()
        for tool in entry["tools"]
    ]


async def live_catalog() -> dict[str, Any]:
    found = await list_live(OrchestratorSettings().mcp_servers, OrchestratorSettings())
    missing = {name: problem for name, problem in found.items() if isinstance(problem, str)}
    if missing:
        raise SystemExit(f"--live: servers not reachable: {missing}")
    return {name: {"source": "live", "tools": tools} for name, tools in found.items()}


def recall(ranked: list[str], needs: list[list[str]], k: int) -> tuple[int, bool]:
    top = set(ranked[:k])
    met = sum(1 for options in needs if top & set(options))
    return met, met == len(needs)


def reference_scores(
    selector: ToolSelector, query: str, query_vector: np.ndarray, tools: list[RegisteredTool]
) -> list[ScoredTool]:
    query_words = words(query)
    scored = []
    for tool in tools:
        vector = selector._cache[tool.embedding_text()]
        similarity = float(vector @ query_vector)
        keyword = 0.1 * len(query_words & words(tool.embedding_text()))
        scored.append(ScoredTool(tool, similarity + keyword, similarity, keyword))
    return sorted(scored, key=lambda item: (-item.score, item.tool.name))


async def run(embedding_url: str, live: bool) -> None:
    cases = load_json("tool_selection_cases.json")["cases"]
    servers = await live_catalog() if live else load_json("tool_catalog.json")["servers"]
    tools = catalog_tools(servers)
    settings = OrchestratorSettings()
    client = EmbeddingsClient("ollama", embedding_url, settings.embedding_model, settings.embedding_dimension)
    base = ToolSelector(client, keyword_weight=0.0)
    started = time.perf_counter()
    await base.index(tools)
    index_seconds = time.perf_counter() - started
    query_vectors: list[np.ndarray] = []
    embed_times = []
    for case in cases:
        t0 = time.perf_counter()
        vector = np.asarray(await client.embed_one(case["request"]), dtype=np.float32)
        embed_times.append(time.perf_counter() - t0)
        query_vectors.append(vector / np.linalg.norm(vector))
    await client.aclose()

    def production(weight: float, use_embeddings: bool = True) -> Callable[[str, np.ndarray], list[ScoredTool]]:
        selector = ToolSelector(None, keyword_weight=weight)
        selector._cache = base._cache
        return lambda query, vector: selector.score(query, vector if use_embeddings else None, tools)

    scorings: dict[str, Callable[[str, np.ndarray], list[ScoredTool]]] = {
        "embeddings": production(0.0),
        "keywords": production(1.0, use_embeddings=False),
        "w=0.05": production(0.05),
        "w=0.1": production(0.1),
        "reference": lambda query, vector: reference_scores(base, query, vector, tools),
    }
    requirements = sum(len(case["needs"]) for case in cases)
    results: dict[str, dict[int, tuple[float, float]]] = {}
    score_times: dict[str, float] = {}
    misses: dict[str, list[str]] = {}
    for name, score in scorings.items():
        per_k: dict[int, tuple[int, int]] = {k: (0, 0) for k in KS}
        t0 = time.perf_counter()
        ranked_all = [
            [item.tool.name for item in score(case["request"], vector)]
            for case, vector in zip(cases, query_vectors, strict=True)
        ]
        score_times[name] = (time.perf_counter() - t0) / len(cases)
        for case, ranked in zip(cases, ranked_all, strict=True):
            for k in KS:
                met, complete = recall(ranked, case["needs"], k)
                per_k[k] = (per_k[k][0] + met, per_k[k][1] + int(complete))
            if not recall(ranked, case["needs"], settings.tool_top_k)[1]:
                misses.setdefault(name, []).append(f"{case['request']!r} -> top: {ranked[:3]}")
        results[name] = {k: (met / requirements, complete / len(cases)) for k, (met, complete) in per_k.items()}

    print(
        f"tool selection: {len(cases)} requests, {requirements} requirements, {len(tools)} MCP tools "
        f"({'live servers' if live else 'tool_catalog.json snapshot'}), embeddings all-minilm at {embedding_url}"
    )
    print(
        f"indexing {len(tools)} tool texts: {index_seconds * 1000:.0f} ms; query embedding p50 "
        f"{statistics.median(embed_times) * 1000:.1f} ms, p95 {np.percentile(embed_times, 95) * 1000:.1f} ms"
    )
    header = "recall@K".ljust(12) + "".join(f"K={k}".rjust(8) for k in KS) + "   rank ms"
    print("\n" + header)
    for name, per_k in results.items():
        print(name.ljust(12) + "".join(f"{per_k[k][0]:8.3f}" for k in KS) + f"{score_times[name] * 1000:10.3f}")
    print("\n" + "all@K".ljust(12) + "".join(f"K={k}".rjust(8) for k in KS))
    for name, per_k in results.items():
        print(name.ljust(12) + "".join(f"{per_k[k][1]:8.3f}" for k in KS))
    # What the model is actually offered: the configured always-included tools plus the top K of the rest.
    always = [name for name in settings.always_include_tools if name in {tool.name for tool in tools}]
    rest = [tool for tool in tools if tool.name not in always]
    offered_selector = ToolSelector(None, keyword_weight=settings.tool_keyword_weight)
    offered_selector._cache = base._cache
    offered: dict[int, tuple[float, float, float]] = {}
    by_name = {tool.name: tool for tool in tools}
    for k in KS:
        met_total = complete_total = 0
        token_counts = []
        for case, vector in zip(cases, query_vectors, strict=True):
            ranked = [item.tool.name for item in offered_selector.score(case["request"], vector, rest)]
            met, complete = recall(always + ranked[:k], case["needs"], len(always) + k)
            met_total, complete_total = met_total + met, complete_total + int(complete)
            specs = [by_name[name].spec() for name in always + ranked[:k]]
            token_counts.append(
                estimate_tokens([], [ToolSpec(s.name, s.description, sanitize_schema(s.parameters)) for s in specs])
            )
        offered[k] = (met_total / requirements, complete_total / len(cases), statistics.mean(token_counts))
    print(f"\noffered = always-included MCP tools {always} + top K of the other {len(rest)}:")
    print("recall@K".ljust(12) + "".join(f"{offered[k][0]:8.3f}" for k in KS))
    print("all@K".ljust(12) + "".join(f"{offered[k][1]:8.3f}" for k in KS))
    print(
        "tokens".ljust(12)
        + "".join(f"{offered[k][2]:8.0f}" for k in KS)
        + "   (estimated prompt tokens of the offered MCP tool schemas, as sent to Ollama)"
    )
    chosen_offered = next((k for k in KS if offered[k][0] >= RECALL_TARGET), None)
    print(f"smallest K with offered recall >= {RECALL_TARGET}: {chosen_offered}")
    configured = f"w={settings.tool_keyword_weight:g}"
    if configured in results:
        chosen = next((k for k in KS if results[configured][k][0] >= RECALL_TARGET), None)
        print(
            f"\nconfigured scoring {configured}: smallest K with recall >= {RECALL_TARGET}: {chosen}; "
            f"configured default tool_top_k = {settings.tool_top_k}"
        )
        for line in misses.get(configured, []):
            print(f"  missed at K={settings.tool_top_k}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedding-url", help="an Ollama-compatible /api/embed server (default: start one)")
    parser.add_argument("--live", action="store_true", help="rank the tools of the running servers")
    options = parser.parse_args()
    with embedding_server(options.embedding_url) as url:
        asyncio.run(run(url, options.live))


if __name__ == "__main__":
    main()
