"""One trace id spans gateway, orchestrator and a tool server, with the parent-child structure intact.

The browser's side is played by this test: it sends a W3C `traceparent` with a fresh trace id on
POST /api/v1/chat/stream, and the scripted model makes the run call a vector-tools tool. Every
service of the running product appends its finished spans to a JSON-lines file (`<PREFIX>TRACE_FILE`,
set for `make up` in deploy/local/stack.env); the test collects the spans of its trace from those files.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .live import ROOT, ScriptedModel, chat
from .traffic import tool_rules

PREFIXES = {
    "chat-gateway": "GATEWAY_",
    "agent-orchestrator": "ORCHESTRATOR_",
    "raster-tools": "RASTER_",
    "vector-tools": "VECTOR_",
    "knowledge-tools": "KNOWLEDGE_",
    "memory-tools": "MEMORY_",
}
MARK = "obs-trace"
TOOL = "search_vector_features"


def stack_env() -> dict[str, str]:
    """The services' environment as scripts/stack.py builds it: stack.env, then the caller's variables."""
    local = os.environ.get("STACGIS_LOCAL_DIR", str(ROOT / ".local"))
    values: dict[str, str] = {}
    for line in (ROOT / "deploy" / "local" / "stack.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().replace("${ROOT}", str(ROOT)).replace("${LOCAL}", local)
    return {**values, **os.environ}


def trace_files() -> dict[str, Path]:
    env = stack_env()
    files = {}
    for service, prefix in PREFIXES.items():
        value = env.get(f"{prefix}TRACE_FILE")
        if value:
            path = Path(value)
            files[service] = path if path.is_absolute() else ROOT / path
    return files


def spans_of(trace_id: str, files: dict[str, Path]) -> list[dict[str, Any]]:
    spans = []
    for path in files.values():
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if trace_id in line:
                try:
                    span = json.loads(line)
                except json.JSONDecodeError:  # a line being written right now
                    continue
                if span.get("trace_id") == trace_id:
                    spans.append(span)
    return spans


def ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    chain = []
    parent = span.get("parent_span_id")
    while parent in by_id:
        span = by_id[parent]
        chain.append(span)
        parent = span.get("parent_span_id")
    return chain


def is_complete(spans: list[dict[str, Any]]) -> bool:
    services = {s["service"] for s in spans}
    has_tool_span = any(s["service"] == "vector-tools" and s["name"].startswith("tools/call") for s in spans)
    return {"chat-gateway", "agent-orchestrator", "vector-tools"} <= services and has_tool_span


@pytest.fixture(scope="module")
def traced_run(stack: None) -> tuple[str, str, list[dict[str, Any]]]:
    files = trace_files()
    missing = sorted(set(PREFIXES) - set(files))
    assert not missing, (
        "spans are not written to files for "
        + ", ".join(missing)
        + ": set <PREFIX>TRACE_FILE=${LOCAL}/traces/<service>.jsonl for every service in deploy/local/stack.env"
    )
    trace_id, root_span = secrets.token_hex(16), secrets.token_hex(8)
    rules = tool_rules("trace", TOOL, {"query": "Lisbon", "limit": 2})
    with ScriptedModel().extra_rules(rules), httpx.Client() as client:
        result = chat(
            client,
            "[obs-trace] where is Lisbon?",
            headers={"traceparent": f"00-{trace_id}-{root_span}-01"},
        )
    assert result.status == 200 and result.names()[-1] == "done", result.names() or result.body
    assert "tool_result" in result.names(), result.names()
    # Spans are written when they end; the gateway's request span ends with the stream.
    deadline = time.monotonic() + 20
    spans = spans_of(trace_id, files)
    while not is_complete(spans) and time.monotonic() < deadline:
        time.sleep(0.5)
        spans = spans_of(trace_id, files)
    time.sleep(1)  # spans still ending after the last file write of interest
    return trace_id, root_span, spans_of(trace_id, files)


def summary(spans: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"  {s['service']:<20} {s['span_id']} <- {s.get('parent_span_id')} {s['kind']:<8} {s['name']}" for s in spans
    )


def test_one_trace_spans_gateway_orchestrator_and_tool_server(traced_run: tuple[str, str, list[dict]]) -> None:
    _, _, spans = traced_run
    services = {s["service"] for s in spans}
    assert {"chat-gateway", "agent-orchestrator", "vector-tools"} <= services, summary(spans)


def test_parent_child_structure_is_intact(traced_run: tuple[str, str, list[dict]]) -> None:
    _, root_span, spans = traced_run
    by_id = {s["span_id"]: s for s in spans}
    assert len(by_id) == len(spans), "span ids repeat"
    # Every span hangs off another span of the trace, or off the caller's (the browser's) span.
    orphans = [s for s in spans if s.get("parent_span_id") not in by_id and s.get("parent_span_id") != root_span]
    assert not orphans, "spans whose parent is not in the trace:\n" + summary(orphans) + "\nall:\n" + summary(spans)
    roots = [s for s in spans if s.get("parent_span_id") == root_span]
    assert roots and all(s["service"] == "chat-gateway" and s["kind"] == "SERVER" for s in roots), summary(spans)


def test_the_tool_call_descends_from_the_agent_run_and_the_chat_request(
    traced_run: tuple[str, str, list[dict]],
) -> None:
    _, root_span, spans = traced_run
    by_id = {s["span_id"]: s for s in spans}
    tool_spans = [s for s in spans if s["service"] == "vector-tools" and s["name"] == f"tools/call {TOOL}"]
    assert tool_spans, summary(spans)
    server_span = tool_spans[0]
    assert server_span["kind"] == "SERVER"
    chain = ancestors(server_span, by_id)
    names = [(s["service"], s["name"]) for s in chain]
    assert any(s["service"] == "agent-orchestrator" and s["name"] == f"execute_tool {TOOL}" for s in chain), names
    assert any(s["service"] == "agent-orchestrator" and s["name"].startswith("invoke_agent") for s in chain), names
    assert any(s["service"] == "chat-gateway" for s in chain), names
    assert chain[-1]["parent_span_id"] == root_span, names
    # The tool's database work is inside the tool call.
    queries = [s for s in spans if s["service"] == "vector-tools" and s["attributes"].get("db.system") == "postgresql"]
    assert any(server_span in ancestors(q, by_id) for q in queries), summary(spans)


def test_model_and_tool_spans_carry_genai_attributes(traced_run: tuple[str, str, list[dict]]) -> None:
    _, _, spans = traced_run
    orchestrator = [s for s in spans if s["service"] == "agent-orchestrator"]
    model_calls = [s for s in orchestrator if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert len(model_calls) >= 2, summary(orchestrator)  # the call that asks for the tool, then the answer
    for call in model_calls:
        attributes = call["attributes"]
        assert call["kind"] == "CLIENT"
        assert attributes.get("gen_ai.request.model")
        assert attributes.get("gen_ai.usage.input_tokens", 0) > 0
        assert attributes.get("gen_ai.usage.output_tokens", 0) > 0
    tool_calls = [s for s in orchestrator if s["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    assert tool_calls and tool_calls[0]["attributes"].get("gen_ai.tool.name") == TOOL
    assert tool_calls[0]["attributes"].get("stacgis.tool.server") == "vector"
    assert tool_calls[0]["status"] != "ERROR"
