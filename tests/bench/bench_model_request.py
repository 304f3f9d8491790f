"""Building and encoding one model request body, with every tool the product offers.

    .venv/bin/python tests/bench/bench_model_request.py [--iterations N] [--repeats R]

Every model turn of a run sends the offered tools' schemas. Times, per provider (Ollama `/api/chat`,
OpenAI-compatible `/v1/chat/completions`), a first turn's body (the product's system prompt, one user
message, every tool of the MCP catalog snapshot, the frontend and the built-in tools, sorted by name
as `tool_selection=all` offers them):

  before   the body as a dictionary with every tool's entry, encoded whole on each call (what
           `json=` did; the Ollama schemas already sanitised once per spec, the OpenAI ones cleaned
           on each call)
  after    the provider's `_body` with the tools spliced in from the bytes each spec encoded once
           (`llm/wire.py`), then `encode_body`

and the same through httpx's `build_request` (the body plus the request object), checking first
that both give the same bytes. The figure is the median over R repeats of N iterations, in µs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
from bench_model import product_tools

from stacgis_orchestrator.llm import ollama, openai
from stacgis_orchestrator.llm.types import Message, ToolSpec
from stacgis_orchestrator.llm.wire import JSON_HEADERS, encode_body, encode_json
from stacgis_orchestrator.prompts import system_prompt

MODEL = "qwen2.5-coder:1.5b"


def openai_entry_before(spec: ToolSpec) -> dict[str, Any]:
    """The OpenAI tool entry as it was built on every call before (schema cleaned each time)."""
    clean = {key: value for key, value in spec.parameters.items() if key != "x_requires_approval"}
    return {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": clean}}


def median_us(build: Callable[[], object], iterations: int, repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(iterations):
            build()
        runs.append((time.perf_counter() - started) / iterations * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    specs = [tool.spec() for tool in sorted(product_tools(), key=lambda t: t.name)]
    messages = [
        Message(role="system", content=system_prompt({})),
        Message(role="user", content="What is the mean elevation of Luxembourg?"),
    ]
    llama = ollama.OllamaProvider("http://127.0.0.1:1", 60, 8192, "30m", temperature=0.0)
    compatible = openai.OpenAIProvider("http://127.0.0.1:1/v1", 60)

    def ollama_before() -> dict[str, Any]:
        return {
            "model": MODEL,
            "messages": ollama.format_messages(messages),
            "stream": True,
            "options": {"num_ctx": 8192, "temperature": 0.0},
            "tools": ollama.format_tools(specs),
            "keep_alive": "30m",
        }

    def openai_before() -> dict[str, Any]:
        return {
            "model": MODEL,
            "messages": openai.format_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [openai_entry_before(spec) for spec in specs],
            "tool_choice": "auto",
        }

    def ollama_after() -> bytes:
        return encode_body(llama._body(messages, specs, MODEL, None))

    def openai_after() -> bytes:
        return encode_body(compatible._body(messages, specs, MODEL))

    total = sum(len(spec.encoded(ollama.format_tool)) for spec in specs)
    print(f"{len(specs)} tools ({total:,} bytes as Ollama entries), {args.iterations} iterations x {args.repeats}")
    print(f"{'provider':<8} {'what':<22} {'before':>10} {'after':>10} {'ratio':>7}")
    compare("ollama", ollama_before, ollama_after, "/api/chat", args.iterations, args.repeats)
    compare("openai", openai_before, openai_after, "/v1/chat/completions", args.iterations, args.repeats)


def compare(
    name: str,
    before: Callable[[], dict[str, Any]],
    after: Callable[[], bytes],
    path: str,
    iterations: int,
    repeats: int,
) -> None:
    if encode_json(before()) != after():
        raise SystemExit(f"{name}: the bodies differ")
    print(f"{name:<8} {'body, bytes':<22} {len(encode_json(before())):>10,} {len(after()):>10,}")
    client = httpx.Client(base_url="http://127.0.0.1:1")
    pairs: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("build + encode body", lambda: encode_json(before()), after),
        (
            "httpx build_request",
            lambda: client.build_request("POST", path, json=before()),
            lambda: client.build_request("POST", path, content=after(), headers=JSON_HEADERS),
        ),
    ]
    for what, old, new in pairs:
        old_us = median_us(old, iterations, repeats)
        new_us = median_us(new, iterations, repeats)
        print(f"{name:<8} {what:<22} {old_us:>8.1f}µs {new_us:>8.1f}µs {old_us / new_us:>6.1f}x")


if __name__ == "__main__":
    main()
